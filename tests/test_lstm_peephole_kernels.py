"""The peephole LSTM cell's NumPy lowerings (``gradflow/backends/numpy/peephole.py``,
numba kernels in ``peephole_jit.py``) against the Array API impls of
``gradflow/prim/lstm_peephole.py``: float32 through the kernels, float64 and the
weightless (clip-only) cell through the impls, results written into ``out``."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.numpy import peephole as numpy_peep
from gradflow.prim import lstm_peephole as prim_peep

BATCH, UNITS = 3, 6


def _arrays(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return dict(z=rng.uniform(-2, 2, (BATCH, 4 * UNITS)).astype(dtype),
                c=rng.uniform(-2, 2, (BATCH, UNITS)).astype(dtype),
                g=rng.uniform(-2, 2, (BATCH, UNITS)).astype(dtype),
                w=[rng.uniform(-1, 1, UNITS).astype(dtype) for _ in range(3)])


def _cases(v, cell_clip):
    attrs = dict(forget_bias=0.7, cell_clip=cell_clip)
    z, c, g, (w_i, w_f, w_o) = v["z"], v["c"], v["g"], v["w"]
    return [("lstm_peep_c", attrs, [z, c, w_i, w_f],
             (prim_peep._peep_c_impl(np, z, c, w_i, w_f, **attrs),)),
            ("lstm_peep_c", attrs, [z, c], (prim_peep._peep_c_impl(np, z, c, **attrs),)),
            ("lstm_peep_h", {}, [z, c, w_o], (prim_peep._peep_h_impl(np, z, c, w_o),)),
            ("lstm_peep_c_grads", attrs, [g, z, c, w_i, w_f],
             prim_peep._peep_c_grads_impl(np, g, z, c, w_i, w_f, **attrs)),
            ("lstm_peep_h_grads", {}, [g, z, c, w_o],
             prim_peep._peep_h_grads_impl(np, g, z, c, w_o))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cell_clip", [None, 0.4])
@pytest.mark.parametrize("into", [False, True])
def test_lowerings_match_the_impls(dtype, cell_clip, into):
    tol = dict(rtol=3e-6, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    for name, attrs, inputs, want in _cases(_arrays(dtype), cell_clip):
        fn = numpy_peep.LOWERINGS[name](np, **attrs)
        out = tuple(np.full_like(w, np.nan) for w in want) if into else None
        got = fn(*inputs, out=out if out is None or len(out) > 1 else out[0])
        got = got if isinstance(got, tuple) else (got,)
        if into:
            assert all(g is o for g, o in zip(got, out)), name
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, name
            np.testing.assert_allclose(g, w, **tol, err_msg=name)


def test_the_clip_holds_values_and_stops_their_gradient():
    v = _arrays(np.float32, seed=1)
    z, c, g, (w_i, w_f, _) = v["z"], v["c"], v["g"], v["w"]
    fn = numpy_peep.LOWERINGS["lstm_peep_c"](np, forget_bias=1.0, cell_clip=0.3)
    held = np.abs(fn(z, c, w_i, w_f)) == np.float32(0.3)
    assert held.any() and not held.all()
    grads = numpy_peep.LOWERINGS["lstm_peep_c_grads"](np, forget_bias=1.0, cell_clip=0.3)
    dz = grads(g, z, c, w_i, w_f)[0]
    assert np.all(dz[:, :UNITS][held] == 0)


@pytest.mark.skipif(get_numba() is None, reason="numba is not installed")
def test_float32_goes_through_the_compiled_kernels(monkeypatch):
    from gradflow.backends.numpy import peephole_jit

    called = []
    real = peephole_jit.c_grads
    monkeypatch.setattr(peephole_jit, "c_grads", lambda *a: (called.append(1), real(*a)))
    v = _arrays(np.float32)
    fn = numpy_peep.LOWERINGS["lstm_peep_c_grads"](np, forget_bias=1.0, cell_clip=None)
    fn(v["g"], v["z"], v["c"], *v["w"][:2])
    assert called


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cell_clip", [None, 0.4])
def test_the_step_lowerings_match_the_impls(dtype, cell_clip):
    v = _arrays(dtype, seed=5)
    rng = np.random.default_rng(6)
    z, c, g, (w_i, w_f, w_o) = v["z"], v["c"], v["g"], v["w"]
    attrs = dict(forget_bias=0.7, cell_clip=cell_clip)
    tol = dict(rtol=3e-6, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    row = rng.uniform(-1, 1, 4 * UNITS).astype(dtype)
    step = numpy_peep.LOWERINGS["lstm_peep_step"](np, **attrs)
    for terms in ([z, z[::-1].copy(), row], [z, row]):
        inputs = terms + [c, w_i, w_f, w_o]
        want = prim_peep._peep_step_impl(np, *inputs, **attrs)
        for got, w in zip(step(*inputs), want):
            np.testing.assert_allclose(got, w, **tol)
    _, c_new, _ = step(z, row, c, w_i, w_f, w_o)
    for count in (1, 2, 4):
        for carry in (False, True):
            parts = [rng.uniform(-1, 1, c.shape).astype(dtype) for _ in range(count)]
            inputs = parts + ([g] if carry else []) + [z, c, c_new, w_i, w_f, w_o]
            grad = numpy_peep.LOWERINGS["lstm_peep_step_grad"](np, **attrs, terms=count,
                                                               carry=carry)
            want = prim_peep._peep_step_grad_impl(np, *inputs, **attrs, terms=count,
                                                  carry=carry)
            out = tuple(np.full_like(w, np.nan) for w in want)
            got = grad(*inputs, out=out)
            assert all(a is b for a, b in zip(got, out))
            for a, w in zip(got, want):
                np.testing.assert_allclose(a, w, **tol)
