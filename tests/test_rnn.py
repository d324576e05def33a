"""Recurrent cells, static_rnn and embedding_lookup: gradients, references, reuse, errors."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf
from gradflow.nn import rnn_cell

BATCH, IN, UNITS, STEPS = 2, 3, 2, 3


# -- helpers ----------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _flat(structure):
    if isinstance(structure, (tuple, list)):
        return [leaf for part in structure for leaf in _flat(part)]
    return [structure]


def _weighted_loss(tensors, rng):
    """``sum_k reduce_sum(t_k * W_k)`` with fixed random ``W_k``: a scalar to differentiate."""
    total = None
    for t in tensors:
        w = gf.constant(rng.normal(size=(BATCH, t.shape[-1])), dtype=t.dtype)
        term = gf.reduce_sum(t * w)
        total = term if total is None else total + term
    return total


def _random_feed(tensors, rng, scale=0.7):
    return {t: rng.uniform(-scale, scale, tuple(BATCH if d is None else d for d in t.shape))
            for t in tensors}


def check_gradients(loss, wrt, feed, backend, eps=1e-6, rtol=1e-5, atol=1e-7):
    """float64 central differences of ``loss`` against ``gf.gradients`` for every
    element of every tensor in ``wrt`` (placeholders or variables, all fed)."""
    grads = gf.gradients(loss, wrt)
    assert all(g is not None for g in grads), [t.name for t, g in zip(wrt, grads) if g is None]
    with gf.Session(backend=backend) as sess:
        analytic = sess.run(grads, feed)
        for t, a in zip(wrt, analytic):
            numeric = numeric_grad(sess, loss, t, feed[t], feed=feed, eps=eps)
            scale = max(1.0, float(np.abs(numeric).max()))
            np.testing.assert_allclose(a, numeric, rtol=rtol, atol=atol * scale,
                                       err_msg=f"gradient of '{t.name}'")


def _inputs(steps=STEPS, size=IN, dtype=gf.float64, batch=None):
    return [gf.placeholder(dtype, (batch, size), name=f"x{t}") for t in range(steps)]


# -- finite-difference gradient checks on every backend ----------------------------


def test_basic_rnn_cell_gradient(backend):
    xs = _inputs()
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    cell = rnn_cell.BasicRNNCell(UNITS)
    outputs, state = gf.nn.static_rnn(cell, xs, initial_state=h0)
    rng = np.random.default_rng(0)
    loss = _weighted_loss(outputs + [state], rng)
    wrt = xs + [h0] + cell.trainable_variables
    check_gradients(loss, wrt, _random_feed(wrt, rng), backend)


@pytest.mark.parametrize("activation", [None, "relu6ish"], ids=["fused", "composite"])
def test_lstm_cell_gradient(backend, activation):
    act = None if activation is None else (lambda x: gf.tanh(x) * 0.5 + gf.sigmoid(x))
    xs = _inputs()
    c0 = gf.placeholder(gf.float64, (None, UNITS), name="c0")
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    cell = rnn_cell.LSTMCell(UNITS, forget_bias=0.5, activation=act)
    outputs, state = gf.nn.static_rnn(cell, xs, initial_state=rnn_cell.LSTMStateTuple(c0, h0))
    rng = np.random.default_rng(1)
    loss = _weighted_loss(outputs + list(state), rng)
    wrt = xs + [c0, h0] + cell.trainable_variables
    check_gradients(loss, wrt, _random_feed(wrt, rng), backend)


def test_multi_rnn_cell_gradient(backend):
    xs = _inputs(steps=2)
    cell = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(UNITS), rnn_cell.BasicRNNCell(UNITS + 1)])
    outputs, state = gf.nn.static_rnn(cell, xs, dtype=gf.float64)
    rng = np.random.default_rng(2)
    loss = _weighted_loss(outputs + _flat(state), rng)
    wrt = xs + cell.trainable_variables
    assert len(cell.trainable_variables) == 4
    check_gradients(loss, wrt, _random_feed(wrt, rng), backend)


def test_embedding_lookup_gradient(backend):
    params = gf.placeholder(gf.float64, (5, 3), name="params")
    ids = gf.constant(np.array([[1, 4, 1], [0, 1, 4]], np.int32))  # repeats: a scatter-add
    emb = gf.nn.embedding_lookup(params, ids)
    assert tuple(emb.shape) == (2, 3, 3)
    rng = np.random.default_rng(3)
    loss = gf.reduce_sum(emb * gf.constant(rng.normal(size=(2, 3, 3))))
    check_gradients(loss, [params], {params: rng.normal(size=(5, 3))}, backend)


# -- values: a NumPy reference, and the same numbers on every backend ---------------------


def _numpy_lstm_step(x, c, h, kernel, bias, forget_bias=1.0):
    z = np.concatenate([x, h], 1) @ kernel + bias
    i, j, f, o = np.split(z, 4, axis=1)
    c_new = _sigmoid(f + forget_bias) * c + _sigmoid(i) * np.tanh(j)
    return c_new, _sigmoid(o) * np.tanh(c_new)


def test_lstm_matches_numpy_reference(backend):
    rng = np.random.default_rng(4)
    xs = _inputs(dtype=gf.float32)
    cell = rnn_cell.LSTMCell(4)
    outputs, state = gf.nn.static_rnn(cell, xs, dtype=gf.float32)
    kernel = rng.normal(0, 0.5, (IN + 4, 16)).astype(np.float32)
    bias = rng.normal(0, 0.5, 16).astype(np.float32)
    x_values = [rng.normal(size=(BATCH, IN)).astype(np.float32) for _ in xs]
    k_var, b_var = cell.trainable_variables
    assert (k_var.name, b_var.name) == ("rnn/lstm_cell/kernel", "rnn/lstm_cell/bias")
    with gf.Session(backend=backend) as sess:
        k_var.load(kernel, sess)
        b_var.load(bias, sess)
        got_outputs, got_state = sess.run([outputs, state], dict(zip(xs, x_values)))
    c = h = np.zeros((BATCH, 4), np.float64)
    for t, x in enumerate(x_values):
        c, h = _numpy_lstm_step(x, c, h, kernel, bias)
        np.testing.assert_allclose(got_outputs[t], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.c, c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state.h, h, rtol=1e-5, atol=1e-6)


def _seeded_model():
    gf.set_random_seed(7)
    ids = gf.placeholder(gf.int32, (None, STEPS), name="ids")
    emb = gf.get_variable("emb", (6, IN), dtype=gf.float64,
                          initializer=gf.random_normal_initializer(seed=1))
    inputs = gf.unstack(gf.nn.embedding_lookup(emb, ids), axis=1)
    cell = rnn_cell.MultiRNNCell([rnn_cell.LSTMCell(UNITS), rnn_cell.LSTMCell(UNITS)])
    outputs, state = gf.nn.static_rnn(cell, inputs, dtype=gf.float64)
    loss = gf.reduce_sum(gf.square(gf.stack(outputs)))
    return ids, [loss] + gf.gradients(loss, gf.trainable_variables())


def test_same_numbers_on_every_backend(backend):
    ids_value = np.array([[1, 2, 1], [5, 0, 1]], np.int32)
    runs = []
    for name in ("numpy", backend):
        with gf.Graph().as_default():
            ids, fetches = _seeded_model()
            with gf.Session(backend=name) as sess:
                sess.run(gf.global_variables_initializer())
                runs.append(sess.run(fetches, {ids: ids_value}))
    for k, (got, want) in enumerate(zip(runs[1], runs[0])):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=f"fetch {k}")


def test_state_carried_between_runs():
    """Truncated BPTT: feeding the final state of one run as the initial state of the
    next gives the same numbers as one run over the whole sequence."""
    rng = np.random.default_rng(5)
    x_values = [rng.normal(size=(BATCH, IN)) for _ in range(4)]
    cell = rnn_cell.LSTMCell(UNITS)
    long_xs = _inputs(steps=4)
    long_out, long_state = gf.nn.static_rnn(cell, long_xs, dtype=gf.float64)
    xs = _inputs(steps=2)
    c0 = gf.placeholder(gf.float64, (None, UNITS), name="c0")
    h0 = gf.placeholder(gf.float64, (None, UNITS), name="h0")
    outputs, state = gf.nn.static_rnn(cell, xs, initial_state=rnn_cell.LSTMStateTuple(c0, h0))
    assert len(gf.trainable_variables()) == 2  # the same cell: the same weights
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        want_out, want_state = sess.run([long_out, long_state], dict(zip(long_xs, x_values)))
        zeros = np.zeros((BATCH, UNITS))
        carried = rnn_cell.LSTMStateTuple(zeros, zeros)
        got = []
        for chunk in (x_values[:2], x_values[2:]):
            feed = dict(zip(xs, chunk))
            feed.update({c0: carried.c, h0: carried.h})
            out, carried = sess.run([outputs, state], feed)
            got += out
    np.testing.assert_allclose(np.stack(got), np.stack(want_out), rtol=1e-12)
    np.testing.assert_allclose(carried.c, want_state.c, rtol=1e-12)
    assert isinstance(carried, rnn_cell.LSTMStateTuple)


def test_zero_state_with_a_tensor_batch_size(backend):
    x = gf.placeholder(gf.float32, (None, IN))
    cell = rnn_cell.LSTMCell(UNITS)
    state = cell.zero_state(gf.shape(x)[0], gf.float32)
    fixed = cell.zero_state(5, gf.float32)
    assert isinstance(state, rnn_cell.LSTMStateTuple)
    assert tuple(fixed.c.shape) == (5, UNITS) and tuple(state.h.shape) == (None, UNITS)
    with gf.Session(backend=backend) as sess:
        c, h = sess.run(state, {x: np.ones((3, IN), np.float32)})
    assert c.shape == h.shape == (3, UNITS) and c.dtype == np.float32 and not c.any()
    multi = rnn_cell.MultiRNNCell([rnn_cell.BasicRNNCell(2), rnn_cell.LSTMCell(3)])
    zs = multi.zero_state(4, gf.float64)
    assert tuple(zs[0].shape) == (4, 2) and tuple(zs[1].c.shape) == (4, 3)


def test_state_not_tuple_and_dynamic_rnn_agree_with_static_rnn():
    rng = np.random.default_rng(6)
    x3 = gf.placeholder(gf.float64, (None, STEPS, IN))
    cell = rnn_cell.LSTMCell(UNITS)
    with gf.variable_scope("model"):
        outputs, state = gf.nn.static_rnn(cell, gf.unstack(x3, axis=1), dtype=gf.float64)
    with gf.variable_scope("model", reuse=True):
        flat_cell = rnn_cell.LSTMCell(UNITS, state_is_tuple=False)
        flat_out, flat_state = gf.nn.static_rnn(flat_cell, gf.unstack(x3, axis=1),
                                                dtype=gf.float64)
    dyn_out, dyn_state = gf.nn.dynamic_rnn(cell, x3, dtype=gf.float64)
    assert flat_cell.state_size == 2 * UNITS
    assert len(gf.trainable_variables()) == 2
    with gf.Session() as sess:
        values = sess.run([gf.stack(outputs, 1), state, gf.stack(flat_out, 1), flat_state,
                           dyn_out, dyn_state], {x3: rng.normal(size=(BATCH, STEPS, IN))})
    out, st, fout, fst, dout, dst = values
    np.testing.assert_allclose(fout, out, rtol=1e-12)
    np.testing.assert_allclose(fst, np.concatenate([st.c, st.h], 1), rtol=1e-12)
    np.testing.assert_allclose(dout, out, rtol=1e-12)
    np.testing.assert_allclose(dst.h, st.h, rtol=1e-12)


# -- variables: names, sharing, counts ------------------------------------------------


def test_variable_names_and_reuse():
    xs = _inputs(dtype=gf.float32)
    cell = rnn_cell.LSTMCell(UNITS)
    gf.nn.static_rnn(cell, xs, dtype=gf.float32)
    gf.nn.static_rnn(cell, xs, dtype=gf.float32)  # the same cell: the same weights
    names = [v.name for v in gf.trainable_variables()]
    assert names == ["rnn/lstm_cell/kernel", "rnn/lstm_cell/bias"]
    assert tuple(gf.trainable_variables()[0].shape) == (IN + UNITS, 4 * UNITS)
    with gf.variable_scope("rnn", reuse=True):  # a new cell shares them by name
        other = rnn_cell.LSTMCell(UNITS)
        other(xs[0], other.zero_state(BATCH, gf.float32))
    with gf.variable_scope(gf.get_variable_scope(), reuse=True):
        third = rnn_cell.LSTMCell(UNITS)
        gf.nn.static_rnn(third, xs, dtype=gf.float32)
    assert other.trainable_variables == third.trainable_variables == gf.trainable_variables()
    gf.nn.static_rnn(rnn_cell.LSTMCell(UNITS), xs, dtype=gf.float32)  # a new cell: new ones
    multi = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(UNITS), rnn_cell.BasicRNNCell(2)])
    gf.nn.static_rnn(multi, xs, dtype=gf.float32, scope="deep")
    names = [v.name for v in gf.trainable_variables()]
    assert names[2:] == ["rnn/lstm_cell_1/kernel", "rnn/lstm_cell_1/bias",
                         "deep/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
                         "deep/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
                         "deep/multi_rnn_cell/cell_1/basic_rnn_cell/kernel",
                         "deep/multi_rnn_cell/cell_1/basic_rnn_cell/bias"]


def test_lstm_graph_is_lean():
    """One step adds a handful of nodes: the input and state matmuls on the two row
    blocks of the kernel, their sum with the bias, and one node per state update."""
    xs = _inputs(steps=10, dtype=gf.float32)
    cell = rnn_cell.LSTMCell(8)
    gf.nn.static_rnn(cell, xs[:1], dtype=gf.float32)
    before = len(gf.get_default_graph().nodes)
    outputs, _ = gf.nn.static_rnn(cell, xs[1:], dtype=gf.float32)
    per_step = (len(gf.get_default_graph().nodes) - before) / 9
    assert per_step <= 10, per_step
    before = len(gf.get_default_graph().nodes)
    gf.gradients(gf.reduce_sum(outputs[-1]), cell.trainable_variables)
    assert (len(gf.get_default_graph().nodes) - before) / 9 <= 24


# -- embedding_lookup --------------------------------------------------------------------


def test_embedding_lookup_values(backend):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[3, 0], [1, 3], [2, 2]], np.int64)
    params = gf.constant(table)
    out = gf.nn.embedding_lookup([params], gf.constant(ids))
    scalar = gf.nn.embedding_lookup(params, 2)
    with gf.Session(backend=backend) as sess:
        got, one = sess.run([out, scalar])
    np.testing.assert_array_equal(got, table[ids])
    np.testing.assert_array_equal(one, table[2])


def test_embedding_lookup_errors():
    params = gf.constant(np.zeros((4, 3), np.float32))
    with pytest.raises(TypeError, match="ids .* must be int32 or int64"):
        gf.nn.embedding_lookup(params, gf.constant([1.0]))
    with pytest.raises(NotImplementedError, match="sharded"):
        gf.nn.embedding_lookup([params, params], gf.constant([1]))


# -- clear errors -------------------------------------------------------------------------


def test_errors_name_the_thing_at_fault():
    cell = rnn_cell.LSTMCell(UNITS)
    with pytest.raises(ValueError, match=r"inputs\[0\] 'bad3d' must be 2-D"):
        gf.nn.static_rnn(cell, [gf.placeholder(gf.float32, (None, 2, IN), name="bad3d")],
                         dtype=gf.float32)
    xs = _inputs(dtype=gf.float32)
    odd = gf.placeholder(gf.float32, (None, IN + 1), name="odd")
    with pytest.raises(ValueError, match=r"inputs\[2\] 'odd' is \(None, 4\)"):
        gf.nn.static_rnn(cell, xs[:2] + [odd], dtype=gf.float32)
    with pytest.raises(TypeError, match="list of"):
        gf.nn.static_rnn(cell, xs[0], dtype=gf.float32)
    with pytest.raises(ValueError, match="initial_state or dtype"):
        gf.nn.static_rnn(cell, xs)
    h = gf.placeholder(gf.float32, (None, UNITS), name="just_h")
    with pytest.raises(ValueError, match="state must be a tuple of 2"):
        gf.nn.static_rnn(cell, xs, initial_state=h)
    wide = gf.placeholder(gf.float32, (None, UNITS + 3), name="wide_c")
    with pytest.raises(ValueError, match=r"state 'wide_c' must have shape \[batch, 2\]"):
        gf.nn.static_rnn(cell, xs, initial_state=(wide, h))
    with pytest.raises(ValueError, match="state must be one tensor"):
        rnn_cell.BasicRNNCell(UNITS)(xs[0], (h, h))
    with pytest.raises(ValueError, match="one state per cell"):
        rnn_cell.MultiRNNCell([rnn_cell.BasicRNNCell(UNITS)] * 2)(xs[0], (h,))
    gf.nn.static_rnn(cell, xs, dtype=gf.float32)
    with pytest.raises(ValueError, match="'odd' have 4 features, but the cell was built for 3"):
        cell(odd, cell.zero_state(BATCH, gf.float32))
    with pytest.raises(NotImplementedError, match="num_proj_shards"):
        rnn_cell.LSTMCell(UNITS, num_proj=3, num_proj_shards=2)
    ints = gf.placeholder(gf.int32, (None, IN), name="int_inputs")
    with pytest.raises(TypeError, match="'int_inputs' must be floating"):
        cell(ints, cell.zero_state(BATCH, gf.float32))


def test_gradient_of_unstack_and_split_is_one_join(backend):
    """Slices tiling a tensor get one stack/concat as gradient, not a sum of padded arrays."""
    x = gf.placeholder(gf.float64, (4, 5, 3))
    steps = gf.unstack(x, axis=1)
    loss = gf.add_n([gf.reduce_sum(p * float(i + 1)) for i, p in enumerate(steps)])
    a, b, c = gf.split(x, [1, 2, 2], axis=1)
    loss2 = gf.reduce_sum(a) + 2.0 * gf.reduce_sum(b) + 3.0 * gf.reduce_sum(c * c)
    some = gf.reduce_sum(steps[1]) + gf.reduce_sum(steps[3])  # not a tiling: summed as before
    grads = gf.gradients(loss, [x]) + gf.gradients(loss2, [x]) + gf.gradients(some, [x])
    assert [g.opdef.name for g in grads[:2]] == ["concat", "concat"]
    v = np.random.default_rng(0).standard_normal((4, 5, 3))
    with gf.Session(backend=backend) as sess:
        g1, g2, g3 = sess.run(grads, {x: v})
    np.testing.assert_allclose(g1, np.broadcast_to(np.arange(1.0, 6.0)[None, :, None], v.shape))
    expected = np.concatenate([np.ones((4, 1, 3)), np.full((4, 2, 3), 2.0), 6 * v[:, 3:]], axis=1)
    np.testing.assert_allclose(g2, expected)
    np.testing.assert_allclose(g3, np.broadcast_to(np.isin(np.arange(5), [1, 3])[None, :, None],
                                                   v.shape))
