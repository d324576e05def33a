"""TF1 recurrent idioms: sequence_length, bidirectional RNNs, tf.contrib.rnn, GRUCell,
DropoutWrapper. Gradients are checked against float64 central differences on every
backend; values against NumPy references written from TF1's formulas."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.nn import rnn_base, rnn_cell

BATCH, IN, UNITS, STEPS = 3, 2, 2, 4
LENGTHS = np.array([4, 2, 0], np.int32)  # a full row, a short one, an empty one


# -- helpers ----------------------------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_step(x, c, h, kernel, bias, forget_bias=1.0):
    z = np.concatenate([x, h], 1) @ kernel + bias
    i, j, f, o = np.split(z, 4, axis=1)
    c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
    return c, np.tanh(c) * _sigmoid(o)


def _lstm_reference(xs, kernel, bias, lengths=None, c0=None, h0=None):
    """Per row: run the LSTM over its first ``lengths[b]`` steps; zeros after."""
    batch = xs[0].shape[0]
    c = np.zeros((batch, UNITS)) if c0 is None else c0.copy()
    h = np.zeros((batch, UNITS)) if h0 is None else h0.copy()
    outs = []
    for t, x in enumerate(xs):
        c_new, h_new = _lstm_step(x, c, h, kernel, bias)
        live = np.ones(batch, bool) if lengths is None else t < lengths
        c = np.where(live[:, None], c_new, c)
        h = np.where(live[:, None], h_new, h)
        outs.append(np.where(live[:, None], h_new, 0.0))
    return outs, c, h


def _reverse_rows(xs, lengths):
    """TF1's reverse_sequence on a list of steps: each row's first lengths[b] reversed."""
    arr = np.stack(xs, 1).copy()
    for b, n in enumerate(lengths):
        arr[b, :n] = arr[b, :n][::-1]
    return [arr[:, t] for t in range(arr.shape[1])]


def _inputs(steps=STEPS, dtype=gf.float64):
    return [gf.placeholder(dtype, (None, IN), name=f"x{t}") for t in range(steps)]


def _loss(tensors, seed=0):
    rng = np.random.default_rng(seed)
    total = None
    for t in tensors:
        w = gf.constant(rng.normal(size=(BATCH, t.shape[-1])), dtype=t.dtype)
        term = gf.reduce_sum(t * w)
        total = term if total is None else total + term
    return total


def _feed(tensors, rng, scale=0.8):
    return {t: rng.uniform(-scale, scale, tuple(BATCH if d is None else d for d in t.shape))
            for t in tensors}


def _check_gradients(loss, wrt, feed, backend, eps=1e-6):
    """gf.gradients of ``loss`` against float64 central differences, every element."""
    grads = gf.gradients(loss, wrt)
    assert all(g is not None for g in grads), [t.name for t, g in zip(wrt, grads) if g is None]
    with gf.Session(backend=backend) as sess:
        analytic = sess.run(grads, feed)
        for t, got in zip(wrt, analytic):
            base = np.asarray(feed[t], np.float64)
            numeric = np.zeros(base.shape)
            for idx in np.ndindex(base.shape):
                plus, minus = base.copy(), base.copy()
                plus[idx] += eps
                minus[idx] -= eps
                numeric[idx] = (float(sess.run(loss, {**feed, t: plus})) -
                                float(sess.run(loss, {**feed, t: minus}))) / (2 * eps)
            scale = max(1.0, float(np.abs(numeric).max()))
            np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7 * scale,
                                       err_msg=f"gradient of '{t.name}'")
    return analytic


# -- static_rnn with sequence_length ------------------------------------------------------


def test_sequence_length_values_match_reference(backend):
    xs = _inputs()
    lengths = gf.placeholder(gf.int32, (None,), name="lengths")
    cell = rnn_cell.BasicLSTMCell(UNITS)
    outputs, state = gf.nn.static_rnn(cell, xs, dtype=gf.float64, sequence_length=lengths)
    rng = np.random.default_rng(1)
    feed = _feed(xs, rng)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        kernel, bias = sess.run(cell.trainable_variables)
        outs, st = sess.run([outputs, state], {**feed, lengths: LENGTHS})
    ref_outs, ref_c, ref_h = _lstm_reference([feed[x] for x in xs], kernel, bias, LENGTHS)
    for got, want in zip(outs, ref_outs):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(st.c, ref_c, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(st.h, ref_h, rtol=1e-10, atol=1e-12)
    # past a row's end: exact zeros out, and the state it had at its last step
    assert not np.any(outs[2][1]) and not np.any(outs[0][2])
    np.testing.assert_array_equal(st.h[2], 0.0)
    np.testing.assert_allclose(st.h[1], outs[1][1], rtol=1e-12)


def test_sequence_length_gradient(backend):
    xs = _inputs()
    c0 = gf.placeholder(gf.float64, (None, UNITS), name="c0")
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    cell = rnn_cell.LSTMCell(UNITS)
    outputs, state = gf.nn.static_rnn(cell, xs, initial_state=rnn_cell.LSTMStateTuple(c0, h0),
                                      sequence_length=LENGTHS)
    loss = _loss(outputs + list(state))
    wrt = xs + [c0, h0] + cell.trainable_variables
    grads = _check_gradients(loss, wrt, _feed(wrt, np.random.default_rng(2)), backend)
    # steps past every row's end do not reach the loss; the empty row's state passes through
    np.testing.assert_array_equal(grads[3][1:], 0.0)  # x3 matters only for the full row
    assert np.any(grads[3][0])


def test_sequence_length_with_multi_rnn_cell_and_dynamic_rnn(backend):
    x3 = gf.placeholder(gf.float64, (None, STEPS, IN), name="x3")
    cell = rnn_cell.MultiRNNCell([rnn_cell.GRUCell(UNITS), rnn_cell.BasicRNNCell(UNITS)])
    out, state = gf.nn.dynamic_rnn(cell, x3, sequence_length=LENGTHS, dtype=gf.float64)
    assert isinstance(state, tuple) and len(state) == 2
    loss = _loss([out[:, t] for t in range(STEPS)] + list(state), seed=3)
    wrt = [x3] + cell.trainable_variables
    _check_gradients(loss, wrt, _feed(wrt, np.random.default_rng(3)), backend)
    with gf.Session(backend=backend) as sess:
        values = sess.run([out, state[1]], _feed([x3], np.random.default_rng(4)))
    np.testing.assert_array_equal(values[0][1, 2:], 0.0)
    np.testing.assert_array_equal(values[0][2], 0.0)
    np.testing.assert_allclose(values[1][1], values[0][1, 1], rtol=1e-12)


def test_sequence_length_errors():
    xs = _inputs()
    cell = rnn_cell.BasicRNNCell(UNITS)
    with pytest.raises(ValueError, match="sequence_length .* must be a vector"):
        gf.nn.static_rnn(cell, xs, dtype=gf.float64, sequence_length=[[1, 2, 3]])
    with pytest.raises(TypeError, match="sequence_length .* must be integer"):
        gf.nn.static_rnn(cell, xs, dtype=gf.float64, sequence_length=[1.0, 2.0, 3.0])
    fixed = [gf.placeholder(gf.float64, (BATCH, IN)) for _ in range(2)]
    with pytest.raises(ValueError, match="has 2 entries, inputs .* have batch 3"):
        gf.nn.static_rnn(cell, fixed, dtype=gf.float64, sequence_length=[1, 2])


# -- bidirectional ------------------------------------------------------------------------


def test_static_bidirectional_rnn_values_and_names(backend):
    xs = _inputs()
    lengths = gf.placeholder(gf.int64, (None,), name="lengths")
    fw, bw = gf.contrib.rnn.BasicLSTMCell(UNITS), gf.contrib.rnn.BasicLSTMCell(UNITS)
    outputs, state_fw, state_bw = gf.nn.static_bidirectional_rnn(
        fw, bw, xs, dtype=gf.float64, sequence_length=lengths)
    names = [v.name for v in gf.trainable_variables()]
    assert names == ["bidirectional_rnn/fw/basic_lstm_cell/kernel",
                     "bidirectional_rnn/fw/basic_lstm_cell/bias",
                     "bidirectional_rnn/bw/basic_lstm_cell/kernel",
                     "bidirectional_rnn/bw/basic_lstm_cell/bias"]
    assert len(outputs) == STEPS and tuple(outputs[0].shape) == (None, 2 * UNITS)
    rng = np.random.default_rng(5)
    feed = _feed(xs, rng)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        kf, bf, kb, bb = sess.run(gf.trainable_variables())
        outs, sf, sb = sess.run([outputs, state_fw, state_bw],
                                {**feed, lengths: LENGTHS.astype(np.int64)})
    steps = [feed[x] for x in xs]
    ref_fw, _, ref_hf = _lstm_reference(steps, kf, bf, LENGTHS)
    rev_out, ref_cb, ref_hb = _lstm_reference(_reverse_rows(steps, LENGTHS), kb, bb, LENGTHS)
    ref_bw = _reverse_rows(rev_out, LENGTHS)
    for t in range(STEPS):
        np.testing.assert_allclose(outs[t], np.concatenate([ref_fw[t], ref_bw[t]], 1),
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sf.h, ref_hf, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sb.c, ref_cb, rtol=1e-10, atol=1e-12)
    # the backward cell's output at step 0 has read row 1's whole (2-step) sequence
    np.testing.assert_allclose(outs[0][1, UNITS:], ref_hb[1], rtol=1e-10)


def test_static_bidirectional_rnn_gradient(backend):
    xs = _inputs(steps=3)
    fw, bw = rnn_cell.BasicRNNCell(UNITS), rnn_cell.GRUCell(UNITS)
    outputs, state_fw, state_bw = gf.nn.static_bidirectional_rnn(
        fw, bw, xs, dtype=gf.float64, sequence_length=np.array([3, 1, 2]))
    loss = _loss(outputs + [state_fw, state_bw], seed=6)
    wrt = xs + fw.trainable_variables + bw.trainable_variables
    _check_gradients(loss, wrt, _feed(wrt, np.random.default_rng(6)), backend)


def test_bidirectional_without_lengths_and_dynamic_agree():
    x3 = gf.placeholder(gf.float64, (None, STEPS, IN), name="x3")
    fw, bw = rnn_cell.LSTMCell(UNITS), rnn_cell.LSTMCell(UNITS)
    outputs, sf, sb = gf.nn.static_bidirectional_rnn(fw, bw, gf.unstack(x3, axis=1),
                                                     dtype=gf.float64, scope="birnn")
    (out_fw, out_bw), (dsf, dsb) = gf.nn.bidirectional_dynamic_rnn(fw, bw, x3,
                                                                   dtype=gf.float64)
    assert len(gf.trainable_variables()) == 4  # the cells keep their weights
    assert gf.trainable_variables()[0].name == "birnn/fw/lstm_cell/kernel"
    rng = np.random.default_rng(7)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        kf, bf, kb, bb = sess.run(gf.trainable_variables())
        feed = {x3: rng.normal(size=(BATCH, STEPS, IN))}
        outs, f, b, h_fw, h_bw = sess.run([outputs, out_fw, out_bw, sb.h, dsb.h], feed)
    steps = [feed[x3][:, t] for t in range(STEPS)]
    ref_bw = _lstm_reference(steps[::-1], kb, bb)[0][::-1]
    for t in range(STEPS):
        np.testing.assert_allclose(outs[t][:, UNITS:], ref_bw[t], rtol=1e-10)
        np.testing.assert_allclose(outs[t], np.concatenate([f[:, t], b[:, t]], 1),
                                   rtol=1e-12)
    np.testing.assert_allclose(h_fw, h_bw, rtol=1e-12)


# -- the TF1 names -----------------------------------------------------------------------


def test_contrib_rnn_and_nn_rnn_cell_names():
    for name in ("BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
                 "LSTMStateTuple", "DropoutWrapper", "RNNCell"):
        assert getattr(gf.contrib.rnn, name) is getattr(gf.nn.rnn_cell, name)
    assert gf.contrib.rnn.static_rnn is gf.nn.static_rnn
    assert gf.contrib.rnn.static_bidirectional_rnn is gf.nn.static_bidirectional_rnn


def test_basic_lstm_cell_has_tf1_layout_and_forget_bias(backend):
    x = gf.placeholder(gf.float64, (None, IN), name="x")
    cell = gf.contrib.rnn.BasicLSTMCell(UNITS, forget_bias=0.5, state_is_tuple=True)
    out, state = cell(x, cell.zero_state(BATCH, gf.float64))
    kernel, bias = cell.trainable_variables
    assert (kernel.name, tuple(kernel.shape)) == ("basic_lstm_cell/kernel",
                                                  (IN + UNITS, 4 * UNITS))
    assert (bias.name, tuple(bias.shape)) == ("basic_lstm_cell/bias", (4 * UNITS,))
    rng = np.random.default_rng(8)
    k, b = rng.normal(size=(IN + UNITS, 4 * UNITS)), rng.normal(size=4 * UNITS)
    xv = rng.normal(size=(BATCH, IN))
    with gf.Session(backend=backend) as sess:
        got_out, got_state = sess.run([out, state], {x: xv, kernel: k, bias: b})
    zeros = np.zeros((BATCH, UNITS))
    c, h = _lstm_step(xv, zeros, zeros, k, b, forget_bias=0.5)
    np.testing.assert_allclose(got_state.c, c, rtol=1e-12)
    np.testing.assert_allclose(got_out, h, rtol=1e-12)


def test_gru_cell_reference_and_names(backend):
    x = gf.placeholder(gf.float64, (None, IN), name="x")
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    cell = gf.nn.rnn_cell.GRUCell(UNITS)
    out, state = cell(x, h0)
    assert out is state
    names = [v.name for v in cell.trainable_variables]
    assert names == ["gru_cell/gates/kernel", "gru_cell/gates/bias",
                     "gru_cell/candidate/kernel", "gru_cell/candidate/bias"]
    rng = np.random.default_rng(9)
    xv, hv = rng.normal(size=(BATCH, IN)), rng.normal(size=(BATCH, UNITS))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        gk, gb, ck, cb = sess.run(cell.trainable_variables)
        got = sess.run(out, {x: xv, h0: hv})
    np.testing.assert_array_equal(gb, 1.0)  # TF1 starts the gate bias at 1
    r, u = np.split(_sigmoid(np.concatenate([xv, hv], 1) @ gk + gb), 2, axis=1)
    cand = np.tanh(np.concatenate([xv, r * hv], 1) @ ck + cb)
    np.testing.assert_allclose(got, u * hv + (1 - u) * cand, rtol=1e-12)
    loss = _loss([out], seed=10)
    wrt = [x, h0] + cell.trainable_variables
    _check_gradients(loss, wrt, _feed(wrt, rng), backend)


def test_dropout_wrapper(backend):
    xs = _inputs(dtype=gf.float32)
    keep = gf.placeholder_with_default(1.0, (), name="keep")
    inner = rnn_cell.BasicLSTMCell(UNITS)
    cell = gf.contrib.rnn.DropoutWrapper(inner, output_keep_prob=keep, state_keep_prob=0.5,
                                         seed=3)
    outputs, state = gf.nn.static_rnn(cell, xs, dtype=gf.float32)
    assert [v.name for v in cell.trainable_variables] == ["rnn/basic_lstm_cell/kernel",
                                                          "rnn/basic_lstm_cell/bias"]
    plain, _ = gf.nn.static_rnn(inner, xs, dtype=gf.float32)  # the same weights
    ones = {x: np.ones((BATCH, IN), np.float32) for x in xs}
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        first = sess.run(outputs[0], ones)
        np.testing.assert_allclose(first, sess.run(plain[0], ones), rtol=1e-6)
        dropped = sess.run(outputs[0], {**ones, keep: 0.5})
    assert np.all((dropped == 0) | np.isclose(dropped, 2 * first, rtol=1e-5))
    with pytest.raises(ValueError, match="input_keep_prob must be in"):
        gf.contrib.rnn.DropoutWrapper(inner, input_keep_prob=1.5)
    with pytest.raises(TypeError, match="must be an RNNCell"):
        gf.contrib.rnn.DropoutWrapper(lambda x, s: (x, s))


# -- dynamic_rnn over a time axis of unknown length (a while_loop) -----------------------


def _cell(kind):
    if kind == "rnn":
        return rnn_cell.BasicRNNCell(UNITS)
    if kind == "lstm":
        return rnn_cell.LSTMCell(UNITS)
    if kind == "basic_lstm":
        return rnn_cell.BasicLSTMCell(UNITS, forget_bias=0.5)
    if kind == "gru":
        return rnn_cell.GRUCell(UNITS)
    return rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(UNITS), rnn_cell.GRUCell(UNITS)])


def _weighted_sum(out, state, steps, seed):
    """A loss that weighs every output element and state leaf differently."""
    rng = np.random.default_rng(seed)
    total = gf.reduce_sum(out * gf.constant(rng.normal(size=(BATCH, steps, UNITS))))
    for leaf in rnn_base._flat(state):
        total = total + gf.reduce_sum(leaf * gf.constant(rng.normal(size=(BATCH, UNITS))))
    return total


@pytest.mark.parametrize("kind", ["rnn", "lstm", "basic_lstm", "gru", "multi"])
def test_dynamic_rnn_while_path_matches_static_path(backend, kind):
    known = gf.placeholder(gf.float64, (None, STEPS, IN), name="known")
    unknown = gf.placeholder(gf.float64, (None, None, IN), name="unknown")
    lengths = gf.placeholder(gf.int32, (None,), name="lengths")
    with gf.variable_scope("net"):
        out_s, state_s = gf.nn.dynamic_rnn(_cell(kind), known, sequence_length=lengths,
                                           dtype=gf.float64)
    names = [v.name for v in gf.trainable_variables()]
    with gf.variable_scope("net", reuse=True):  # another cell object, the same variables
        out_w, state_w = gf.nn.dynamic_rnn(_cell(kind), unknown, sequence_length=lengths,
                                           dtype=gf.float64)
    assert [v.name for v in gf.trainable_variables()] == names
    assert tuple(out_w.shape) == (None, None, UNITS)
    assert type(state_w) is type(state_s)
    variables = gf.trainable_variables()
    loss_s = _weighted_sum(out_s, state_s, STEPS, seed=11)
    loss_w = _weighted_sum(out_w, state_w, STEPS, seed=11)
    grads_s = gf.gradients(loss_s, [known] + variables)
    grads_w = gf.gradients(loss_w, [unknown] + variables)
    xv = np.random.default_rng(12).uniform(-1, 1, (BATCH, STEPS, IN))
    feed = {known: xv, unknown: xv, lengths: LENGTHS}
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        static = sess.run([out_s, rnn_base._flat(state_s), grads_s], feed)
        looped = sess.run([out_w, rnn_base._flat(state_w), grads_w], feed)
    np.testing.assert_allclose(looped[0], static[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(looped[0][1, 2:], 0.0)  # past row 1's end
    np.testing.assert_array_equal(looped[0][2], 0.0)  # the empty row
    for got, want in zip(looped[1] + looped[2], static[1] + static[2]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.any(looped[2][0])


def test_dynamic_rnn_while_path_names_time_major_and_any_length(backend):
    x = gf.placeholder(gf.float64, (None, None, IN), name="x")  # time-major
    cell = rnn_cell.BasicLSTMCell(UNITS)
    out, state = gf.nn.dynamic_rnn(cell, x, time_major=True, dtype=gf.float64)
    assert [v.name for v in gf.trainable_variables()] == ["rnn/basic_lstm_cell/kernel",
                                                          "rnn/basic_lstm_cell/bias"]
    rng = np.random.default_rng(13)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        kernel, bias = sess.run(cell.trainable_variables)
        for steps in (1, 5, 0):
            xv = rng.normal(size=(steps, BATCH, IN))
            outs, st = sess.run([out, state], {x: xv})
            assert outs.shape == (steps, BATCH, UNITS)
            if not steps:  # no step at all: no outputs, the initial (zero) state
                np.testing.assert_array_equal(st.c, 0.0)
                np.testing.assert_array_equal(st.h, 0.0)
                continue
            ref, c, h = _lstm_reference(list(xv), kernel, bias)
            np.testing.assert_allclose(outs, np.stack(ref), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(st.c, c, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(st.h, h, rtol=1e-10, atol=1e-12)


def test_dynamic_rnn_while_path_gradient(backend):
    x = gf.placeholder(gf.float64, (None, None, IN), name="x")
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    cell = rnn_cell.GRUCell(UNITS)
    out, state = gf.nn.dynamic_rnn(cell, x, sequence_length=np.array([3, 1, 0]),
                                   initial_state=h0)
    loss = _weighted_sum(out, state, 3, seed=14)
    wrt = [x, h0] + cell.trainable_variables
    rng = np.random.default_rng(14)
    feed = {x: rng.uniform(-0.8, 0.8, (BATCH, 3, IN)),
            h0: rng.uniform(-0.8, 0.8, (BATCH, UNITS))}
    feed.update({v: rng.uniform(-0.8, 0.8, tuple(v.shape)) for v in cell.trainable_variables})
    grads = _check_gradients(loss, wrt, feed, backend)
    np.testing.assert_array_equal(grads[0][1, 1:], 0.0)  # past row 1's end
    np.testing.assert_array_equal(grads[0][2], 0.0)


def test_dynamic_rnn_while_path_trains_gru_on_batches_of_any_length(backend):
    x = gf.placeholder(gf.float32, (None, None, 2), name="x")
    lengths = gf.placeholder(gf.int32, (None,), name="lengths")
    y = gf.placeholder(gf.float32, (None, 1), name="y")
    _, state = gf.nn.dynamic_rnn(rnn_cell.GRUCell(8), x, sequence_length=lengths,
                                 dtype=gf.float32)
    prediction = gf.layers.dense(state, 1)
    loss = gf.reduce_mean(gf.square(prediction - y))
    train_op = gf.train.AdamOptimizer(0.05).minimize(loss)
    rng = np.random.default_rng(15)

    def batch(steps):  # the target: the mean of the first feature over each row's steps
        xv = rng.uniform(-1, 1, (8, steps, 2)).astype(np.float32)
        n = rng.integers(1, steps + 1, 8).astype(np.int32)
        mask = np.arange(steps)[None, :] < n[:, None]
        target = (xv[:, :, 0] * mask).sum(1) / n
        return {x: xv, lengths: n, y: target[:, None].astype(np.float32)}

    with gf.Session(backend=backend, seed=0) as sess:
        sess.run(gf.global_variables_initializer())
        evaluation = [batch(steps) for steps in (3, 6)]
        before = np.mean([sess.run(loss, f) for f in evaluation])
        for i in range(60):
            sess.run(train_op, batch(2 + i % 5))
        after = np.mean([sess.run(loss, f) for f in evaluation])
    assert after < 0.5 * before, (before, after)


def test_residual_wrapper_adds_the_input_and_passes_the_state(backend):
    rng = np.random.default_rng(5)
    x_value = rng.normal(size=(BATCH, UNITS)).astype(np.float32)
    x = gf.placeholder(gf.float32, (None, UNITS))
    inner = rnn_cell.GRUCell(UNITS)
    cell = gf.nn.rnn_cell.ResidualWrapper(inner)
    state0 = cell.zero_state(BATCH, gf.float32)
    out, state = cell(x, state0)
    plain_out, plain_state = inner(x, state0)  # the same variables, built once
    assert cell.state_size == inner.state_size and cell.output_size == UNITS
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got, got_state, ref, ref_state = sess.run([out, state, plain_out, plain_state],
                                                  {x: x_value})
    np.testing.assert_allclose(got, ref + x_value, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got_state, ref_state)


def test_residual_wrapper_custom_fn_and_errors():
    x = gf.placeholder(gf.float32, (None, UNITS + 3))
    cell = gf.contrib.rnn.ResidualWrapper(rnn_cell.BasicRNNCell(UNITS),
                                          residual_fn=lambda i, o: o * 2.0)
    out, _ = cell(x, cell.zero_state(BATCH, gf.float32))
    assert out.shape[-1] == UNITS
    wrong = gf.contrib.rnn.ResidualWrapper(rnn_cell.BasicRNNCell(UNITS))
    with pytest.raises(ValueError, match=f"has {UNITS + 3} features but the cell's output"):
        wrong(x, wrong.zero_state(BATCH, gf.float32))
    with pytest.raises(TypeError, match="must be an RNNCell"):
        gf.nn.rnn_cell.ResidualWrapper("lstm")


@pytest.mark.parametrize("options", [dict(use_peepholes=True), dict(num_proj=1),
                                     dict(use_peepholes=True, cell_clip=0.2, num_proj=3,
                                          proj_clip=0.25)], ids=["peepholes", "proj", "all"])
def test_lstm_cell_peepholes_clipping_and_projection_as_tf1(backend, options):
    # the same values as TF 2.21's compat.v1 LSTMCell from the same weights (float64, to
    # 1e-16 in a /tmp comparison through dynamic_rnn), here against TF1's equations
    proj = options.get("num_proj")
    out_size = proj or UNITS
    x = gf.placeholder(gf.float64, (None, IN), name="x")
    c0 = gf.placeholder(gf.float64, (None, UNITS), name="c0")
    h0 = gf.placeholder(gf.float64, (None, out_size), name="h0")
    cell = gf.nn.rnn_cell.LSTMCell(UNITS, **options)
    assert cell.state_size == (UNITS, out_size) and cell.output_size == out_size
    out, state = cell(x, rnn_cell.LSTMStateTuple(c0, h0))
    names = [v.name.split("/", 1)[1] for v in cell.trainable_variables]
    assert names == ["kernel", "bias"] + (["w_f_diag", "w_i_diag", "w_o_diag"] if options.get(
        "use_peepholes") else []) + (["projection/kernel"] if proj else [])
    rng = np.random.default_rng(11)
    xv, cv, hv = (rng.normal(size=(BATCH, n)) for n in (IN, UNITS, out_size))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        weights = sess.run(cell.trainable_variables)
        got_out, got_c = sess.run([out, state.c], {x: xv, c0: cv, h0: hv})
    kernel, bias, rest = weights[0], weights[1], list(weights[2:])
    i, j, f, o = np.split(np.concatenate([xv, hv], 1) @ kernel + bias, 4, axis=1)
    f = f + 1.0
    if options.get("use_peepholes"):
        w_f, w_i, w_o = rest[:3]
        i, f = i + w_i * cv, f + w_f * cv
    c = _sigmoid(f) * cv + _sigmoid(i) * np.tanh(j)
    if "cell_clip" in options:
        c = np.clip(c, -options["cell_clip"], options["cell_clip"])
    if options.get("use_peepholes"):
        o = o + w_o * c
    h = _sigmoid(o) * np.tanh(c)
    if proj:
        h = h @ rest[-1]
        if "proj_clip" in options:
            h = np.clip(h, -options["proj_clip"], options["proj_clip"])
    np.testing.assert_allclose(got_c, c, rtol=1e-12)
    np.testing.assert_allclose(got_out, h, rtol=1e-12)
    loss = _loss([out, state.c], seed=12)
    wrt = [x, c0, h0] + cell.trainable_variables
    _check_gradients(loss, wrt, _feed(wrt, rng), backend)
