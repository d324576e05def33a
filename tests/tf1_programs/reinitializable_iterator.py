"""Train and validation sets through one reinitializable iterator
(tf.data.Iterator.from_structure + make_initializer), as the TF 1.x programmer's
guide showed it: a small regression net, validated after every epoch."""

import gradflow as tf


def main(train_x, train_y, val_x, val_y, epochs=4, batch_size=32, learning_rate=0.02):
    tf.reset_default_graph()
    tf.set_random_seed(1)
    train_dataset = tf.data.Dataset.from_tensor_slices((train_x, train_y))
    train_dataset = train_dataset.shuffle(len(train_x)).batch(batch_size)
    val_dataset = tf.data.Dataset.from_tensor_slices((val_x, val_y)).batch(batch_size)

    iterator = tf.data.Iterator.from_structure(train_dataset.output_types,
                                               train_dataset.output_shapes)
    features, targets = iterator.get_next()
    train_init_op = iterator.make_initializer(train_dataset)
    val_init_op = iterator.make_initializer(val_dataset)

    hidden = tf.layers.dense(features, 16, activation=tf.nn.tanh)
    prediction = tf.layers.dense(hidden, 1)
    loss = tf.reduce_mean(tf.square(prediction - targets))
    train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)

    history = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(epochs):
            sess.run(train_init_op)
            train_batches = 0
            while True:
                try:
                    sess.run(train_op)
                    train_batches += 1
                except tf.errors.OutOfRangeError:
                    break
            sess.run(val_init_op)
            val_sum, val_count = 0.0, 0
            while True:
                try:
                    batch_loss, batch_targets = sess.run([loss, targets])
                    val_sum += batch_loss * len(batch_targets)
                    val_count += len(batch_targets)
                except tf.errors.OutOfRangeError:
                    break
            history.append({"train_batches": train_batches, "val_loss": val_sum / val_count,
                            "val_count": val_count})
            print("epoch", epoch, "validation loss", val_sum / val_count)
    return history
