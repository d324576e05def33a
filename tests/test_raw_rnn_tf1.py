"""``tf.nn.raw_rnn`` against TensorFlow 2.21: the program below (TF1's documented
``loop_fn`` pattern: inputs read from a TensorArray until each sequence's length, an
Elman cell, and a cell with a two-part state and a ``loop_state`` that sums the
outputs) ran once on ``tensorflow.compat.v1`` in graph mode (``/tmp/bench/bin/python``),
with every variable set to ``cos(0.7 k) / 2``; the literals are its outputs, final
states, final loop state and the gradients of ``sum(out_pair^2) + sum(state_rnn) +
sum(loop_pair)`` in the variables (``rnn/rnn/kernel``, ``rnn/rnn/bias``,
``lstm/rnn/kernel``, ``lstm/rnn/bias``), rounded to 6 figures. The cells are duck-typed
(callable, ``output_size``, ``state_size``), as TF's raw_rnn accepts them: TF 2.21's own
``rnn_cell`` classes need Keras 2.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as tf

OUT_RNN = np.array(
    [[[0.103205, -0.011579, -0.120695, -0.172217], [0.710486, 0.581072, 0.126977, -0.437221],
      [0.517822, 0.4945, 0.250297, -0.149681]],
     [[0.069668, 0.023533, -0.033763, -0.075062], [0.72025, 0.671904, 0.325078, -0.289684],
      [0.656522, 0.667078, 0.418128, -0.123471]],
     [[0.046082, 0.010923, -0.029397, -0.055846], [0.667922, 0.606588, 0.262842, -0.283769],
      [0.727953, 0.731463, 0.462986, -0.163845]],
     [[0.06205, 0.046225, 0.008631, -0.033043], [0.0, 0.0, 0.0, 0.0],
      [0.770841, 0.769155, 0.489355, -0.196943]],
     [[0.119664, 0.118839, 0.062329, -0.023931], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
STATE_RNN = np.array(
    [[0.119664, 0.118839, 0.062329, -0.023931], [0.667922, 0.606588, 0.262842, -0.283769],
     [0.770841, 0.769155, 0.489355, -0.196943]])
OUT_PAIR = np.array(
    [[[0.103205, -0.011579, -0.120695, -0.172217], [0.710486, 0.581072, 0.126977, -0.437221],
      [0.517822, 0.4945, 0.250297, -0.149681]],
     [[0.062098, -0.003487, -0.06741, -0.099455], [0.708232, 0.60544, 0.187494, -0.389704],
      [0.637958, 0.62493, 0.351029, -0.170561]],
     [[0.040632, -0.002646, -0.044673, -0.06564], [0.654301, 0.532997, 0.125675, -0.380854],
      [0.709973, 0.688587, 0.384948, -0.220738]],
     [[0.058225, 0.036072, -0.003088, -0.040789], [0.0, 0.0, 0.0, 0.0],
      [0.756498, 0.726841, 0.39894, -0.269085]],
     [[0.114726, 0.108819, 0.051841, -0.029872], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
STATE_PAIR = np.array(
    [[[0.062176, 0.057807, 0.02622, -0.014265], [0.501216, 0.387651, 0.070687, -0.127641],
      [0.598982, 0.569849, 0.267491, -0.10536]],
     [[0.16821, 0.125034, 0.023159, -0.089872], [1.18604, 0.980985, 0.251166, -0.685011],
      [1.3357, 1.28918, 0.710459, -0.440804]]])
LOOP_PAIR = np.array(
    [-0.085933, 4.26923, 7.33858])
GRADS = [np.array(g) for g in (
    [[[-1.08309, 0.32695, -0.1789, 0.05763], [-0.00322, -0.14813, -0.2773, -0.06674],
      [1.42502, 0.03616, 2.49915, 0.26458], [1.26553, 0.12222, 2.27538, 0.34313],
      [0.54548, 0.19973, 1.04069, 0.34787], [-0.61046, 0.12331, -1.01582, 0.07029]],
     [4.50966, -0.57224, 5.59079, 0.52485],
     [[-0.39744, 0.29096, 1.1174, -0.35239], [-0.42442, 0.25281, -2.37294, 0.84764],
      [5.9346, 2.03509, 7.31474, 1.60964], [4.96525, 1.7239, 6.26516, 1.33075],
      [1.50872, 0.55345, 2.0827, 0.39339], [-1.68963, -0.50584, -1.90969, -0.41833]],
     [26.021, 6.83077, 26.6098, 5.6527]])]

T, batch, n_in, units = 5, 3, 2, 4
data = np.sin(np.arange(T * batch * n_in, dtype=np.float32)).reshape(T, batch, n_in)

class Cell:
    """A duck-typed cell: Elman (state h) or a two-part state (h, c)."""
    def __init__(self, units, pair):
        self.units, self.pair = units, pair
        self.output_size = units
        self.state_size = (units, units) if pair else units
    def zero_state(self, batch, dtype):
        z = tf.zeros([batch, self.units], dtype)
        return (z, z) if self.pair else z
    def __call__(self, x, state):
        h = state[0] if self.pair else state
        w = tf.get_variable("kernel", [n_in + self.units, self.units])
        b = tf.get_variable("bias", [self.units])
        new = tf.tanh(tf.matmul(tf.concat([x, h], 1), w) + b)
        if self.pair:
            c = state[1] * 0.5 + new
            return new, (new * tf.sigmoid(c), c)
        return new, new


def program(cell_kind):
    seq_len = tf.constant([5, 3, 4])
    inputs = tf.constant(data)
    inputs_ta = tf.TensorArray(tf.float32, size=T).unstack(inputs)
    cell = Cell(units, cell_kind == "lstm")

    def loop_fn(time, cell_output, cell_state, loop_state):
        emit_output = cell_output
        if cell_output is None:
            next_cell_state = cell.zero_state(batch, tf.float32)
            next_loop_state = tf.zeros([batch]) if cell_kind == "lstm" else None
        else:
            next_cell_state = cell_state
            next_loop_state = (loop_state + tf.reduce_sum(cell_output, 1)
                           if cell_kind == "lstm" else None)
        elements_finished = time >= seq_len
        finished = tf.reduce_all(elements_finished)
        next_input = tf.cond(finished, lambda: tf.zeros([batch, n_in], tf.float32),
                             lambda: inputs_ta.read(time))
        return elements_finished, next_input, next_cell_state, emit_output, next_loop_state

    with tf.variable_scope(cell_kind):
        out_ta, final_state, final_loop = tf.nn.raw_rnn(cell, loop_fn)
    outputs = out_ta.stack()
    return outputs, final_state, final_loop

o1, s1, l1 = program("rnn")
o2, s2, l2 = program("lstm")
assert l1 is None


def _assign_all(sess, variables):
    for v in variables:
        n = int(np.prod(v.shape.as_list()))
        value = np.cos(np.arange(n, dtype=np.float32) * 0.7).reshape(v.shape.as_list()) * 0.5
        sess.run(v.assign(value))


def test_raw_rnn_as_tensorflow(backend):
    o1, s1, l1 = program("rnn")
    o2, s2, l2 = program("lstm")
    assert l1 is None
    variables = tf.global_variables()
    assert [v.name for v in variables] == ["rnn/rnn/kernel", "rnn/rnn/bias", "lstm/rnn/kernel",
                                           "lstm/rnn/bias"]
    loss = tf.reduce_sum(o2 * o2) + tf.reduce_sum(s1) + tf.reduce_sum(l2)
    grads = tf.gradients(loss, variables)
    with tf.Session(backend=backend) as sess:
        _assign_all(sess, variables)
        r = sess.run([o1, s1, o2, s2, l2, grads])
    for got, want in zip(r[:5], [OUT_RNN, STATE_RNN, OUT_PAIR, STATE_PAIR, LOOP_PAIR]):
        np.testing.assert_allclose(np.asarray(got, dtype=float), want, rtol=1e-4, atol=2e-6)
    for got, want in zip(r[5], GRADS):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


def test_raw_rnn_checks_its_cell():
    with pytest.raises(TypeError, match="must be an RNNCell"):
        tf.nn.raw_rnn(object(), lambda *a: None)
