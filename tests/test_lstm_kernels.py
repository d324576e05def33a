"""The NumPy backend's LSTM kernels (``numpy_lstm_kernels``): the numba loops and the
NumPy ufunc sequences against the Array API impls of ``gradflow.prim.rnn``, in place, on strided
inputs, with NaN and infinity; the lowerings' ``out=`` and buffer reuse; and whole
LSTM graphs with and without numba."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.numpy import lstm_kernels as numpy_lstm_kernels
from gradflow.backends.numpy import rnn as numpy_rnn
from gradflow.nn import rnn_cell
from gradflow.prim import rnn as prim_rnn

JIT = numpy_lstm_kernels.compiled()
PATHS = [pytest.param(numpy_lstm_kernels.NUMPY, id="numpy"),
         pytest.param(JIT, id="numba",
                      marks=pytest.mark.skipif(JIT is None, reason="numba is not installed"))]
BATCH, UNITS = 5, 7


def _arrays(dtype, seed=0, batch=BATCH, units=UNITS):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((batch, 4 * units)) * 3).astype(dtype)
    a = np.asarray(prim_rnn._lstm_gates_impl(xp, z, 1.0))
    return {"z": z, "a": a, "g4": rng.standard_normal((batch, 4 * units)).astype(dtype),
            "g": rng.standard_normal((batch, units)).astype(dtype),
            "c": (rng.standard_normal((batch, units)) * 2).astype(dtype),
            "h": rng.standard_normal((batch, units)).astype(dtype),
            "p": (rng.standard_normal((batch, units)) * 2).astype(dtype)}


def _cases(v, forget_bias=1.0):
    """``name: (kernel call(kernels, out), reference value, names of same-shape inputs)``."""
    z, a, g4, g, c, h, p = v["z"], v["a"], v["g4"], v["g"], v["c"], v["h"], v["p"]
    half = z.dtype.type(0.5 * forget_bias)
    return {
        "gates_forward": (lambda k, o: k.gates_forward(z, half, o),
                          prim_rnn._lstm_gates_impl(xp, z, forget_bias), ["z"]),
        "gates_backward": (lambda k, o: k.gates_backward(g4, a, o),
                           prim_rnn._lstm_gates_grad_impl(xp, g4, a), ["g4", "a"]),
        "c_forward": (lambda k, o: k.c_forward(a, c, o), prim_rnn._lstm_c_impl(xp, a, c), ["c"]),
        "h_forward": (lambda k, o: k.h_forward(a, c, o), prim_rnn._lstm_h_impl(xp, a, c), ["c"]),
        "c_backward_gates": (lambda k, o: k.c_backward_gates(g, a, c, o),
                             prim_rnn._lstm_c_grad_impl(xp, g, a, c, "gates"), ["a"]),
        "c_backward_state": (lambda k, o: k.c_backward_state(g, a, o),
                             prim_rnn._lstm_c_grad_impl(xp, g, a, c, "state"), ["g"]),
        "h_backward_gates": (lambda k, o: k.h_backward_gates(g, c, o),
                             prim_rnn._lstm_h_grad_impl(xp, g, a, c, "gates"), []),
        "h_backward_state": (lambda k, o: k.h_backward_state(g, a, c, o),
                             prim_rnn._lstm_h_grad_impl(xp, g, a, c, "state"), ["g", "c"]),
        "gates_forward_sum3": (lambda k, o: k.gates_forward_sum3(z, g4, a[0], half, o),
                               prim_rnn._lstm_gates_sum_impl(xp, z, g4, a[0],
                                                            forget_bias=forget_bias),
                               ["z", "g4"]),
        "gates_forward_sum2": (lambda k, o: k.gates_forward_sum2(z, a[0], half, o),
                               prim_rnn._lstm_gates_sum_impl(xp, z, a[0],
                                                            forget_bias=forget_bias), ["z"]),
        "cell_backward": (lambda k, o: k.cell_backward(g, h, a, c, p, o),
                          prim_rnn._lstm_cell_grad_impl(xp, g, h, a, c, p), ["a"]),
    }


def _tolerance(kernels, dtype):
    if dtype == np.float64:
        return 1e-12
    return 1e-6 if kernels is numpy_lstm_kernels.NUMPY else 2e-6  # compiled tanh: 4e-7


# -- every kernel against the Array API impls ------------------------------------------


@pytest.mark.parametrize("kernels", PATHS)
@pytest.mark.parametrize("forget_bias", [1.0, -0.5])
def test_kernels_match_the_impls(kernels, forget_bias):
    v = _arrays(np.float32)
    for name, (call, want, _) in _cases(v, forget_bias).items():
        out = np.full(want.shape, np.nan, np.float32)  # every element must be written
        call(kernels, out)
        np.testing.assert_allclose(out, want, rtol=2e-6, atol=_tolerance(kernels, np.float32),
                                   err_msg=name)


def test_float64_and_other_dtypes_take_numpys_exact_functions():
    assert numpy_lstm_kernels.kernels(np.float64) is numpy_lstm_kernels.NUMPY
    assert numpy_lstm_kernels.kernels(np.float16) is numpy_lstm_kernels.NUMPY
    expected = numpy_lstm_kernels.NUMPY if JIT is None else JIT
    assert numpy_lstm_kernels.kernels(np.float32) is expected
    v = _arrays(np.float64)
    for name, (call, want, _) in _cases(v).items():
        out = np.empty_like(want)
        call(numpy_lstm_kernels.kernels(np.float64), out)
        np.testing.assert_allclose(out, want, rtol=1e-14, atol=1e-15, err_msg=name)


@pytest.mark.parametrize("kernels", PATHS)
def test_kernels_in_place_over_an_input(kernels):
    """``out`` may be an input of the result's shape: the same numbers."""
    for name, (_, want, same_shape) in _cases(_arrays(np.float32)).items():
        for input_name in same_shape:
            v = _arrays(np.float32)
            call = _cases(v)[name][0]
            call(kernels, v[input_name])
            np.testing.assert_allclose(v[input_name], want, rtol=2e-6,
                                       atol=_tolerance(kernels, np.float32),
                                       err_msg=f"{name} in place over {input_name}")


@pytest.mark.parametrize("kernels", PATHS)
def test_kernels_on_strided_arrays(kernels):
    """Views with gaps between rows or elements (a slice, every other column)."""
    v = _arrays(np.float32, seed=3)
    strided = {}
    for key, value in v.items():
        wide = np.zeros((value.shape[0] + 2, 2 * value.shape[1]), value.dtype)
        wide[1:-1, ::2] = value
        strided[key] = wide[1:-1, ::2]
    for name, (call, want, _) in _cases(strided).items():
        out = np.full((want.shape[0], 3 * want.shape[1]), np.nan, np.float32)[:, 1::3]
        call(kernels, out)
        np.testing.assert_allclose(out, want, rtol=2e-6, atol=_tolerance(kernels, np.float32),
                                   err_msg=name)


@pytest.mark.parametrize("kernels", PATHS)
def test_nan_propagates_and_large_values_saturate(kernels):
    units = 6
    z = np.zeros((2, 4 * units), np.float32)
    z[0, :] = [np.nan, np.inf, -np.inf, 40.0, -40.0, 1e30] * 4
    z[1, :] = np.linspace(-12, 12, 4 * units)
    out = np.empty_like(z)
    kernels.gates_forward(z, np.float32(0.5), out)
    want = np.asarray(prim_rnn._lstm_gates_impl(xp, z, 1.0))
    assert np.array_equal(np.isnan(out), np.isnan(want))
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-6)
    assert np.all(np.abs(out[~np.isnan(out)]) <= 1)
    c = np.array([[np.nan, np.inf, -np.inf, 30.0, -30.0, 0.0]], np.float32)
    a = np.full((1, 4 * units), 0.5, np.float32)
    h = np.empty_like(c)
    kernels.h_forward(a, c, h)
    np.testing.assert_allclose(h, [[np.nan, 0.5, -0.5, 0.5, -0.5, 0.0]], rtol=0, atol=5e-7)


@pytest.mark.skipif(JIT is None, reason="numba is not installed")
def test_compiled_tanh_is_close_to_numpys():
    x = np.linspace(-12, 12, 200_001).astype(np.float32)
    x = np.concatenate([x, np.float32(2.0) ** np.arange(-30, 8, dtype=np.float32)])
    a = np.full((1, 4 * x.size), 0.5, np.float32)
    got = np.empty((1, x.size), np.float32)
    JIT.h_forward(a * 2, x[None, :], got)  # o = 1: h = tanh(c)
    want = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(got[0], want, rtol=5e-7, atol=4e-7)
    assert np.all(np.abs(got) <= 1)
    JIT.h_forward(a * 2, -x[None, :], got)
    np.testing.assert_allclose(got[0], -want, rtol=5e-7, atol=4e-7)


# -- the lowerings: out=, buffer reuse, broadcasting -------------------------------------


def _lowerings(v):
    """``(lowering, inputs)`` of every LSTM op on the arrays ``v``."""
    a, g4, g, c, z = v["a"], v["g4"], v["g"], v["c"], v["z"]
    return [(numpy_rnn.lstm_gates(xp, 1.0), (z,)),
            (numpy_rnn.lstm_gates_grad(xp), (g4, a)),
            (numpy_rnn.lstm_c(xp), (a, c)),
            (numpy_rnn.lstm_h(xp), (a, c))] + [
        (lower(xp, wrt), (g, a, c)) for lower in (numpy_rnn.lstm_c_grad, numpy_rnn.lstm_h_grad)
        for wrt in ("gates", "state")]


def test_lowerings_write_into_out_and_reuse_a_released_result():
    v = _arrays(np.float32, seed=4)
    for fn, args in _lowerings(v):
        assert fn.accepts_out and fn.reads_whole_inputs
        first = fn(*args)
        want = first.copy()
        out = np.empty_like(want)
        assert fn(*args, out=out) is out
        np.testing.assert_array_equal(out, want)
        held = fn(*args)  # `first` is still held: a new array, `first` untouched
        assert held is not first
        first[...] = 0
        first_id = id(held)
        del first, held
        again = fn(*args)  # nothing holds the last result any more: written again
        assert id(again) == first_id
        np.testing.assert_array_equal(again, want)
        view = again[1:]
        del again
        assert fn(*args) is not view.base  # a view keeps its base alive


def test_lowerings_broadcast_a_batch_of_one_through_the_impls():
    v = _arrays(np.float32, seed=5)
    c1 = v["c"][:1]
    for lower, impl in ((numpy_rnn.lstm_c(xp), prim_rnn._lstm_c_impl),
                        (numpy_rnn.lstm_h(xp), prim_rnn._lstm_h_impl)):
        want = impl(xp, v["a"], c1)
        out = np.empty(want.shape, np.float32)
        assert lower(v["a"], c1, out=out) is out
        np.testing.assert_allclose(out, want, rtol=1e-6)
    for lower, impl in ((numpy_rnn.lstm_c_grad, prim_rnn._lstm_c_grad_impl),
                        (numpy_rnn.lstm_h_grad, prim_rnn._lstm_h_grad_impl)):
        for wrt in ("gates", "state"):
            want = impl(xp, v["g"], v["a"], c1, wrt)
            np.testing.assert_allclose(lower(xp, wrt)(v["g"], v["a"], c1), want, rtol=1e-6)


# -- whole graphs: with and without numba, float32 against float64 -----------------------


def _lstm_train_numbers(dtype, batch=None, optimize=True, steps=4, units=6):
    """The loss and every gradient of a small LSTM language model, after one Adam step."""
    graph = gf.Graph()
    rng = np.random.default_rng(9)
    with graph.as_default():
        gf.set_random_seed(3)
        ids = gf.placeholder(gf.int32, (batch, steps), name="ids")
        emb = gf.get_variable("emb", initializer=rng.normal(size=(11, 5)).astype(dtype))
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
        cell = rnn_cell.LSTMCell(units, forget_bias=0.7)
        outputs, state = gf.nn.static_rnn(cell, inputs, dtype=gf.as_dtype(dtype))
        w = gf.get_variable("w", initializer=rng.normal(size=(units, 11)).astype(dtype))
        logits = gf.matmul(gf.concat(outputs, 0), w)
        labels = gf.reshape(gf.transpose(ids), (-1,))
        loss = gf.reduce_mean(
            gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = gf.gradients(loss, [emb, w] + cell.trainable_variables)
        train = gf.train.AdamOptimizer(0.05).minimize(loss)
        init = gf.global_variables_initializer()
    feed = {ids: rng.integers(0, 11, (3, steps)).astype(np.int32)}
    with gf.Session(graph=graph, backend="numpy", optimize=optimize) as sess:
        sess.run(init)
        sess.run(train, feed)
        return [np.asarray(r, np.float64) for r in sess.run([loss, state.c] + grads, feed)]


@pytest.mark.parametrize("batch,optimize", [(None, True), (3, True), (None, False)])
def test_lstm_numbers_with_and_without_numba(monkeypatch, batch, optimize):
    with_kernels = _lstm_train_numbers(np.float32, batch, optimize)
    monkeypatch.setattr(numpy_lstm_kernels, "get_numba", lambda: None)
    assert numpy_lstm_kernels.compiled() is None
    assert numpy_lstm_kernels.kernels(np.float32) is numpy_lstm_kernels.NUMPY
    without = _lstm_train_numbers(np.float32, batch, optimize)
    exact = _lstm_train_numbers(np.float64, batch, optimize)
    for k, (got, ufuncs, want) in enumerate(zip(with_kernels, without, exact)):
        np.testing.assert_allclose(got, ufuncs, rtol=1e-4, atol=1e-6, err_msg=f"fetch {k}")
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5, err_msg=f"fetch {k}")


@pytest.mark.parametrize("kernels", PATHS)
@pytest.mark.parametrize("terms", [2, 1])
def test_a_whole_step_matches_the_three_ops(kernels, terms):
    v = _arrays(np.float32, seed=5)
    z, g4, row, c_prev = v["z"], v["g4"], v["a"][1], v["c"]
    full = [z, g4][:terms]
    a, c, h = (np.full(s, np.nan, np.float32) for s in (z.shape, c_prev.shape, c_prev.shape))
    half = np.float32(0.5)
    if terms == 2:
        kernels.step_forward_sum3(z, g4, row, c_prev, half, a, c, h)
    else:
        kernels.step_forward_sum2(z, row, c_prev, half, a, c, h)
    want = prim_rnn._lstm_step_impl(xp, *full, row, c_prev, forget_bias=1.0)
    tol = _tolerance(kernels, np.float32)
    for got, expect in zip((a, c, h), want):
        np.testing.assert_allclose(got, expect, rtol=2e-6, atol=tol)


def test_the_step_lowering_fills_missing_outputs_and_falls_back_for_odd_shapes():
    from gradflow.backends.numpy import rnn as numpy_rnn

    v = _arrays(np.float32, seed=6)
    z, row, c_prev = v["z"], v["a"][0], v["c"]
    step = numpy_rnn.lstm_step(xp, 1.0)
    want = prim_rnn._lstm_step_impl(xp, z, row, c_prev, forget_bias=1.0)
    given = np.empty_like(c_prev)
    got = step(z, row, c_prev, out=(None, given, None))
    assert got[1] is given
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
    one = c_prev[:1]  # a state of batch one broadcasts: the reference impl
    got = step(z, row, one)
    want = prim_rnn._lstm_step_impl(xp, z, row, one, forget_bias=1.0)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kernels", PATHS)
def test_a_whole_backward_step_matches_the_ops_it_stands_for(kernels):
    v = _arrays(np.float32, seed=7)
    dh, dc_next, a, c, c_prev = v["g"], v["h"], v["a"], v["c"], v["p"]
    dz, dc_prev = np.full_like(a, np.nan), np.full_like(c, np.nan)
    kernels.step_backward(dh, dc_next, a, c, c_prev, dz, dc_prev)
    want = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)
    for got, expect in zip((dz, dc_prev), want):
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=4 * _tolerance(kernels,
                                                                                np.float32))


def test_the_backward_step_lowering_falls_back_for_odd_shapes():
    from gradflow.backends.numpy import rnn as numpy_rnn

    v = _arrays(np.float32, seed=8)
    dh, dc_next, a, c, c_prev = v["g"], v["h"], v["a"], v["c"], v["p"]
    step_grad = numpy_rnn.lstm_step_grad(xp)
    want = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)
    given = np.empty_like(a)
    got = step_grad(dh, dc_next, a, c, c_prev, out=(given, None))
    assert got[0] is given
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    got = step_grad(dh, dc_next[:1], a, c, c_prev)  # a broadcast: the reference impl
    want = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next[:1], a, c, c_prev)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)
