"""``tf.nn.static_state_saving_rnn`` against TensorFlow 2.21: the program below (a
user-written cell with a two-part state, a state saver over two variables, sequence
lengths [4, 2]) ran once on ``tensorflow.compat.v1`` in graph mode
(``/tmp/bench/bin/python``) with the cell's variables set to ``cos(0.9 k)``; the
literals are its outputs, final state and gradients of ``sum(outputs[-1]) +
sum(state[1])`` in the kernel and bias in a first run, the last output and state of a
second run (which starts from the state the first one saved), and the saved state
after it, rounded to 6 decimals.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as tf

OUTPUTS = np.array(
    [[[0.11716, -0.249786], [0.97999, 0.931724]],
     [[-0.331073, -0.257799], [0.9973, 0.972553]], [[-0.589592, -0.39685], [0.0, 0.0]],
     [[-0.67162, -0.320528], [0.0, 0.0]]])
STATE = np.array(
    [[[-0.176915, -0.112964], [0.817189, 0.789766]],
     [[-1.028289, -0.608376], [1.512295, 1.463415]]])
GRAD_KERNEL = np.array(
    [[-1.267975, -1.658185], [0.917772, 0.727298], [2.259724, 2.444107],
     [-0.246845, -0.335547], [-0.228943, -0.283182]])
GRAD_BIAS = np.array(
    [2.447379, 2.857388])
LAST_OUTPUT_2 = np.array(
    [[-0.653277, -0.295802], [0.0, 0.0]])
STATE_2 = np.array(
    [[[-0.158435, -0.099983], [0.865305, 0.842138]],
     [[-1.13889, -0.672191], [1.874403, 1.831263]]])
SAVED = np.array(
    [[[-0.158435, -0.099983], [0.865305, 0.842138]],
     [[-1.13889, -0.672191], [1.874403, 1.831263]]])

T, batch, n_in, units = 4, 2, 3, 2


class PairCell(tf.nn.rnn_cell.RNNCell):
    @property
    def state_size(self):
        return (units, units)

    @property
    def output_size(self):
        return units

    def __call__(self, x, state, scope=None):
        with tf.variable_scope(scope or "pair_cell", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("kernel", [n_in + units, units],
                                initializer=tf.constant_initializer(0.0))
            b = tf.get_variable("bias", [units], initializer=tf.constant_initializer(0.0))
        h, c = state
        new = tf.tanh(tf.matmul(tf.concat([x, h], 1), w) + b)
        c = c * 0.5 + new
        return new, (new * tf.sigmoid(c), c)


class Saver:
    def __init__(self):
        self.vars = {n: tf.get_variable(f"saved_{n}", [batch, units], trainable=False,
                                        initializer=tf.constant_initializer(0.1))
                     for n in ("h", "c")}

    def state(self, name):
        return tf.identity(self.vars[name])

    def save_state(self, name, value):
        return tf.assign(self.vars[name], value)


def test_static_state_saving_rnn_as_tensorflow(backend):
    data = np.sin(np.arange(T * batch * n_in, dtype=np.float32)).reshape(T, batch, n_in)
    inputs = [tf.constant(data[t]) for t in range(T)]
    saver = Saver()
    outputs, state = tf.nn.static_state_saving_rnn(PairCell(), inputs, saver, ("h", "c"),
                                                   sequence_length=tf.constant([4, 2]))
    loss = tf.reduce_sum(outputs[-1]) + tf.reduce_sum(state[1])
    tv = tf.trainable_variables()
    assert [v.name for v in tv] == ["rnn/pair_cell/kernel", "rnn/pair_cell/bias"]
    g = tf.gradients(loss, tv)
    with tf.Session(backend=backend) as sess:
        sess.run(tf.global_variables_initializer())
        for v in tv:
            n = int(np.prod(v.shape.as_list()))
            sess.run(v.assign(np.cos(np.arange(n, dtype=np.float32) * 0.9)
                              .reshape(v.shape.as_list())))
        r1 = sess.run([outputs, state, g])
        r2 = sess.run([outputs[-1], state])
        saved = sess.run([saver.vars["h"], saver.vars["c"]])
    got = [r1[0], r1[1], r1[2][0], r1[2][1], r2[0], r2[1], saved]
    want = [OUTPUTS, STATE, GRAD_KERNEL, GRAD_BIAS, LAST_OUTPUT_2, STATE_2, SAVED]
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), b, atol=2e-6)


def test_state_names_must_match_the_state():
    cell = PairCell()
    with pytest.raises(ValueError, match="same type as cell.state_size"):
        tf.nn.static_state_saving_rnn(cell, [tf.zeros([batch, n_in])], Saver(), "h")
