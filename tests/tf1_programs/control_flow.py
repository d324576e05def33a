import numpy as np

import gradflow as tf


def main():
    x = tf.placeholder(tf.float32, shape=[3], name="x")
    is_training = tf.placeholder(tf.bool, shape=[], name="is_training")
    scaled = tf.cond(is_training, lambda: x * 2.0, lambda: x - 1.0)
    w = tf.Variable(1.5, name="w")
    i0 = tf.constant(0)
    _, powered = tf.while_loop(lambda i, acc: tf.less(i, 4),
                               lambda i, acc: (tf.add(i, 1), acc * w),
                               [i0, x])
    grad_w = tf.gradients(tf.reduce_sum(powered), [w])[0]
    counter = tf.Variable(0, name="counter")
    increment = tf.assign_add(counter, 1)
    with tf.control_dependencies([increment]):
        read = tf.identity(counter)
    checked = tf.check_numerics(x, "x has NaN")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        value = np.array([1.0, 2.0, 3.0], np.float32)
        out = {
            "train": sess.run(scaled, {x: value, is_training: True}),
            "eval": sess.run(scaled, {x: value, is_training: False}),
            "powered": sess.run(powered, {x: value}),
            "grad_w": sess.run(grad_w, {x: value}),
            "reads": [sess.run(read) for _ in range(3)],
            "checked": sess.run(checked, {x: value}),
        }
        try:
            sess.run(checked, {x: np.array([1.0, np.nan, 0.0], np.float32)})
            out["nan_error"] = None
        except tf.errors.InvalidArgumentError as err:
            out["nan_error"] = str(err)
    return out
