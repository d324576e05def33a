"""The GRU step's NumPy lowerings (``gradflow/backends/numpy/gru.py``, numba kernels
in ``gru_jit.py``) against the Array API impls of ``gradflow/prim/gru.py``: float32
through the kernels (within the compiled tanh's 4e-7), float64 and odd shapes through
the impls, results written into ``out`` when given one."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.numpy import gru as numpy_gru
from gradflow.prim import gru as prim_gru

BATCH, UNITS = 3, 7


def _arrays(dtype, seed=0):
    rng = np.random.default_rng(seed)

    def u(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, shape).astype(dtype)

    return dict(gates=u(BATCH, 2 * UNITS, lo=0.02, hi=0.98), h=u(BATCH, UNITS),
                zc=u(BATCH, UNITS), g=u(BATCH, UNITS), xg=u(BATCH, 2 * UNITS),
                yg=u(BATCH, 2 * UNITS), bg=u(2 * UNITS), xc=u(BATCH, UNITS),
                yc=u(BATCH, UNITS), bc=u(UNITS), t=[u(BATCH, UNITS) for _ in range(4)],
                dgh=u(BATCH, 2 * UNITS))


def _cases(v):
    """``(lowering name, inputs, reference outputs)`` for every lowering."""
    def ref(fn, *args):
        out = fn(np, *args)
        return out if isinstance(out, tuple) else (out,)

    P = prim_gru
    cases = [("gru_rh", [v["gates"], v["h"]], ref(P._gru_rh_impl, v["gates"], v["h"])),
             ("gru_h", [v["gates"], v["zc"], v["h"]],
              ref(P._gru_h_impl, v["gates"], v["zc"], v["h"])),
             ("gru_rh_grads", [v["g"], v["gates"], v["h"]],
              ref(P._gru_rh_grads_impl, v["g"], v["gates"], v["h"])),
             ("gru_gates_grad", [v["g"], v["dgh"], v["gates"], v["h"]],
              ref(P._gru_gates_grad_impl, v["g"], v["dgh"], v["gates"], v["h"]))]
    for k in range(1, 5):
        inputs = v["t"][:k] + [v["gates"], v["zc"], v["h"]]
        cases.append(("gru_h_grads", inputs, ref(P._gru_h_grads_impl, *inputs)))
    for terms in ([v["xg"], v["yg"], v["bg"]], [v["xg"], v["bg"]]):
        inputs = terms + [v["h"]]
        cases.append(("gru_gates_step", inputs, ref(P._gru_gates_step_impl, *inputs)))
    for terms in ([v["xc"], v["yc"], v["bc"]], [v["xc"], v["bc"]]):
        inputs = terms + [v["gates"], v["h"]]
        cases.append(("gru_h_step", inputs, ref(P._gru_h_step_impl, *inputs)))
    return cases


def _check(got, want, dtype):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lowerings_match_the_impls(dtype):
    for name, inputs, want in _cases(_arrays(dtype)):
        _check(numpy_gru.LOWERINGS[name](np)(*inputs), want, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lowerings_write_into_out(dtype):
    for name, inputs, want in _cases(_arrays(dtype, seed=1)):
        out = tuple(np.full_like(w, np.nan) for w in want)
        fn = numpy_gru.LOWERINGS[name](np)
        got = fn(*inputs, out=out if len(out) > 1 else out[0])
        got = got if isinstance(got, tuple) else (got,)
        assert all(g is o for g, o in zip(got, out)), name
        _check(got, want, dtype)


def test_a_multi_output_lowering_fills_the_outputs_it_is_not_given():
    v = _arrays(np.float32, seed=2)
    fn = numpy_gru.LOWERINGS["gru_gates_grad"](np)
    dh = np.empty_like(v["h"])
    dz, got_dh = fn(v["g"], v["dgh"], v["gates"], v["h"], out=(None, dh))
    assert got_dh is dh
    _check((dz, dh), prim_gru._gru_gates_grad_impl(np, v["g"], v["dgh"], v["gates"], v["h"]),
           np.float32)


def test_a_broadcast_batch_and_a_strided_state_take_the_impls():
    v = _arrays(np.float32, seed=3)
    one = v["h"][:1]
    got = numpy_gru.LOWERINGS["gru_h"](np)(v["gates"], v["zc"], one)
    _check(got, (prim_gru._gru_h_impl(np, v["gates"], v["zc"], one),), np.float32)
    wide = np.repeat(v["h"], 2, axis=1)[:, ::2]  # a strided view: the kernels take it too
    got = numpy_gru.LOWERINGS["gru_rh"](np)(v["gates"], wide)
    _check(got, (prim_gru._gru_rh_impl(np, v["gates"], wide),), np.float32)


@pytest.mark.skipif(get_numba() is None, reason="numba is not installed")
def test_float32_goes_through_the_compiled_kernels(monkeypatch):
    from gradflow.backends.numpy import gru_jit

    called = []
    real = gru_jit.h_step
    monkeypatch.setattr(gru_jit, "h_step", lambda *a: (called.append(1), real(*a)))
    v = _arrays(np.float32)
    numpy_gru.LOWERINGS["gru_h_step"](np)(v["xc"], v["yc"], v["bc"], v["gates"], v["h"])
    assert called


def test_saturated_and_nan_values():
    v = _arrays(np.float32, seed=4)
    zc = v["zc"].copy()
    zc[0, 0], zc[1, 1], zc[2, 2] = 80.0, -80.0, np.nan
    got = numpy_gru.LOWERINGS["gru_h"](np)(v["gates"], zc, v["h"])
    want = prim_gru._gru_h_impl(np, v["gates"], zc, v["h"])
    assert np.isnan(got[2, 2]) and np.isnan(want[2, 2])
    _check(np.nan_to_num(got), (np.nan_to_num(want),), np.float32)
