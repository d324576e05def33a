import numpy as np

import gradflow as tf


def main(images):
    x = tf.placeholder(tf.float32, [None, 4, 3], name="x")
    is_training = tf.placeholder_with_default(False, shape=(), name="is_training")
    n_features = x.get_shape()[1].value * x.get_shape()[2].value
    dims = x.get_shape().as_list()
    flat = tf.reshape(x, [tf.shape(x)[0], -1])
    with tf.name_scope("dense"):
        W = tf.Variable(tf.reshape(tf.range(n_features * 2, dtype=tf.float32) / 10.0,
                                   [n_features, 2]), name="W")
        b = tf.Variable(tf.zeros([2]), name="b")
        logits = tf.matmul(flat, W) + b
    keep_prob = tf.cond(is_training, lambda: tf.constant(0.5), lambda: tf.constant(1.0))
    dropped = tf.nn.dropout(logits, keep_prob)
    state = tf.zeros([tf.shape(x)[0], 2])
    total = tf.add(dropped, state, name="total")
    ones = tf.ones(tf.stack([tf.shape(x)[0], 1]), dtype=tf.int32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        fetched = sess.run({"logits": logits, "total": total, "ones": ones},
                           feed_dict={"x:0": images})
        by_name = sess.run("dense/add:0", feed_dict={x: images})
        trained = sess.run(dropped, feed_dict={x: images, is_training: True})
        batches = [sess.run(total, feed_dict={x: images[i:i + 2]})
                   for i in range(0, len(images), 2)]
        weights = sess.run(W.name)
    return {"n_features": n_features, "dims": dims, "fetched": fetched, "by_name": by_name,
            "trained": trained, "batches": np.concatenate(batches), "W": weights,
            "flat_shape": flat.get_shape().as_list(), "state_shape": state.get_shape(),
            "names": [W.name, b.name, logits.name]}
