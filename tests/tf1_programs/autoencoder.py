import os

import gradflow as tf

n_hidden_1 = 128
n_hidden_2 = 32
n_input = 784


def main(mnist, checkpoint_dir, steps=200, batch_size=100, learning_rate=0.01):
    tf.set_random_seed(4)
    X = tf.placeholder("float", [None, n_input], name="X")
    with tf.name_scope("weights"):
        weights = {
            "encoder_h1": tf.Variable(tf.random_normal([n_input, n_hidden_1], stddev=0.1)),
            "encoder_h2": tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2], stddev=0.1)),
            "decoder_h1": tf.Variable(tf.random_normal([n_hidden_2, n_hidden_1], stddev=0.1)),
            "decoder_h2": tf.Variable(tf.random_normal([n_hidden_1, n_input], stddev=0.1)),
        }
    with tf.name_scope("biases"):
        biases = {
            "encoder_b1": tf.Variable(tf.zeros([n_hidden_1])),
            "encoder_b2": tf.Variable(tf.zeros([n_hidden_2])),
            "decoder_b1": tf.Variable(tf.zeros([n_hidden_1])),
            "decoder_b2": tf.Variable(tf.zeros([n_input])),
        }

    def encoder(x):
        with tf.name_scope("encoder"):
            layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["encoder_h1"]),
                                           biases["encoder_b1"]))
            return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["encoder_h2"]),
                                        biases["encoder_b2"]))

    def decoder(x):
        with tf.name_scope("decoder"):
            layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["decoder_h1"]),
                                           biases["decoder_b1"]))
            return tf.nn.sigmoid(tf.add(tf.matmul(layer_1, weights["decoder_h2"]),
                                        biases["decoder_b2"]))

    y_pred = decoder(encoder(X))
    y_true = X
    with tf.name_scope("loss"):
        loss = tf.reduce_mean(tf.pow(y_true - y_pred, 2))
        weight_decay = 1e-5 * tf.add_n([tf.nn.l2_loss(w) for w in weights.values()])
        total_loss = loss + weight_decay
    global_step = tf.Variable(0, trainable=False, name="global_step")
    lr = tf.train.exponential_decay(learning_rate, global_step, 50, 0.5, staircase=True)
    optimizer = tf.train.RMSPropOptimizer(lr).minimize(total_loss, global_step=global_step)
    saver = tf.train.Saver(max_to_keep=3)
    losses, rates = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(steps):
            batch_x, _ = mnist.train.next_batch(batch_size)
            rate = sess.run(lr)
            _, c = sess.run([optimizer, loss], feed_dict={X: batch_x})
            losses.append(c)
            rates.append(rate)
            if (i + 1) % 50 == 0:
                saver.save(sess, os.path.join(checkpoint_dir, "model.ckpt"),
                           global_step=global_step)
        trained = sess.run(weights["decoder_h2"])
        # evaluation in batches, as the tutorials do on a large test set
        total, count = 0.0, 0
        for start in range(0, len(mnist.test.images), 300):
            batch = mnist.test.images[start:start + 300]
            total += sess.run(loss, feed_dict={X: batch}) * len(batch)
            count += len(batch)
    with tf.Session() as sess:
        ckpt = tf.train.get_checkpoint_state(checkpoint_dir)
        if ckpt and ckpt.model_checkpoint_path:
            saver.restore(sess, ckpt.model_checkpoint_path)
        restored = sess.run(weights["decoder_h2"])
        step = tf.train.global_step(sess, global_step)
        restored_loss = sess.run(loss, feed_dict={X: mnist.test.images})
    return {"losses": losses, "rates": rates, "test_loss": total / count,
            "restored_loss": restored_loss, "trained": trained, "restored": restored,
            "step": step, "checkpoint": ckpt.model_checkpoint_path,
            "all_checkpoints": list(ckpt.all_model_checkpoint_paths),
            "names": [y_pred.name, loss.name, weights["encoder_h1"].name]}
