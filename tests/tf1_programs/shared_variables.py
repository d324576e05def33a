import numpy as np

import gradflow as tf


def layer(x, size):
    w = tf.get_variable("w", [int(x.get_shape()[1]), size],
                        initializer=tf.random_normal_initializer(stddev=0.1, seed=3))
    b = tf.get_variable("b", [size], initializer=tf.constant_initializer(0.0))
    return tf.nn.relu(tf.matmul(x, w) + b)


def tower(x):
    with tf.variable_scope("layer1"):
        h = layer(x, 8)
    with tf.variable_scope("layer2"):
        return layer(h, 4)


def main():
    a = tf.placeholder(tf.float32, [None, 5])
    b = tf.placeholder(tf.float32, [None, 5])
    with tf.variable_scope("model") as scope:
        out_a = tower(a)
        scope.reuse_variables()
        out_b = tower(b)
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        out_c = tower(a)
    names = [v.name for v in tf.global_variables()]
    batch = np.arange(10, dtype=np.float32).reshape(2, 5) / 10.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ra, rb, rc = sess.run([out_a, out_b, out_c], {a: batch, b: batch})
    return {"names": names, "a": ra, "b": rb, "c": rc,
            "scope": tf.get_variable_scope().name}
