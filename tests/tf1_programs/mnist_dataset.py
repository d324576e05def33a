"""Softmax regression on MNIST-shaped data through tf.data, as the TF 1.x tutorials
wrote it: the arrays go in through placeholders fed when the iterator is
initialized, and each epoch runs until tf.errors.OutOfRangeError."""

import numpy as np

import gradflow as tf


def main(train_images, train_labels, test_images, test_labels, epochs=3, batch_size=100,
         buffer_size=10000, learning_rate=0.5, seed=0):
    tf.reset_default_graph()
    images_placeholder = tf.placeholder(tf.float32, [None, 784])
    labels_placeholder = tf.placeholder(tf.int64, [None])
    batch_size_placeholder = tf.placeholder(tf.int64, [])

    dataset = tf.data.Dataset.from_tensor_slices((images_placeholder, labels_placeholder))
    dataset = dataset.shuffle(buffer_size=buffer_size, seed=seed)
    dataset = dataset.map(lambda image, label: (image, tf.one_hot(label, 10)))
    dataset = dataset.batch(batch_size_placeholder)
    dataset = dataset.prefetch(1)
    iterator = dataset.make_initializable_iterator()
    x, y = iterator.get_next()

    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    logits = tf.matmul(x, W) + b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

    epoch_losses, steps = [], 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(epochs):
            sess.run(iterator.initializer, feed_dict={images_placeholder: train_images,
                                                      labels_placeholder: train_labels,
                                                      batch_size_placeholder: batch_size})
            total, batches = 0.0, 0
            while True:
                try:
                    _, batch_loss = sess.run([train_op, loss])
                    total += batch_loss
                    batches += 1
                except tf.errors.OutOfRangeError:
                    break
            steps += batches
            epoch_losses.append(total / batches)
            print("Epoch %d, loss %.4f" % (epoch + 1, total / batches))
        sess.run(iterator.initializer, feed_dict={images_placeholder: test_images,
                                                  labels_placeholder: test_labels,
                                                  batch_size_placeholder: len(test_images)})
        test_accuracy = sess.run(accuracy)
        weights = sess.run(W)
    print("Test accuracy:", test_accuracy)
    return {"losses": epoch_losses, "accuracy": test_accuracy, "W": weights, "steps": steps,
            "dtype": np.asarray(test_accuracy).dtype}
