"""The CuPy backend's GRU step kernels (``gradflow.backends.cuda.gru``): their CUDA C
text, compiled with g++ (tests/cuda_host.py) and run as a grid of 3 blocks, gives the
numbers of the ops' Array API functions (``gradflow.prim.gru``), float32 and float64."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build_printed, launch, needs_gxx

from gradflow.backends.cuda import gru as cuda_gru
from gradflow.prim import gru as prim_gru

pytestmark = needs_gxx
TOLERANCE = {"float32": 2e-6, "float64": 1e-14}  # libm's tanh against NumPy's
BATCH, UNITS = 4, 7


def _close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def _run(kernels, key, inputs, want, dtype):
    lib, name = kernels[key]
    got = [np.full(w.shape, np.nan, dtype) for w in want]
    launch(lib, name, [*inputs, *got, BATCH, UNITS], blocks=3)
    for g, w in zip(got, want):
        _close(g, w, dtype)


@pytest.fixture(scope="module", params=["float32", "float64"])
def kernels(request, tmp_path_factory):
    dtype = request.param
    return dtype, build_printed(cuda_gru.step_sources(dtype), str(tmp_path_factory.mktemp(dtype)))


def _arrays(dtype, seed):
    rng = np.random.default_rng(seed)

    def u(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, shape).astype(dtype)

    return u, u(BATCH, 2 * UNITS, lo=0.02, hi=0.98), u(BATCH, UNITS)


@pytest.mark.parametrize("terms", [2, 3])
def test_the_forward_kernels_give_the_reference_numbers(kernels, terms):
    dtype, built = kernels
    u, gates, h = _arrays(dtype, terms)
    parts = [u(BATCH, 2 * UNITS) for _ in range(terms - 1)] + [u(2 * UNITS)]
    _run(built, f"gates_step{terms}", parts + [h],
         prim_gru._gru_gates_step_impl(xp, *parts, h), dtype)
    parts = [u(BATCH, UNITS) for _ in range(terms - 1)] + [u(UNITS)]
    _run(built, f"h_step{terms}", parts + [gates, h],
         prim_gru._gru_h_step_impl(xp, *parts, gates, h), dtype)


@pytest.mark.parametrize("terms", [1, 2, 3, 4])
def test_the_candidate_gradient_kernels_give_the_reference_numbers(kernels, terms):
    dtype, built = kernels
    u, gates, h = _arrays(dtype, 10 + terms)
    inputs = [u(BATCH, UNITS) for _ in range(terms)] + [gates, u(BATCH, UNITS), h]
    _run(built, f"h_grads{terms}", inputs, prim_gru._gru_h_grads_impl(xp, *inputs), dtype)


def test_the_gate_gradient_kernel_gives_the_reference_numbers(kernels):
    dtype, built = kernels
    u, gates, h = _arrays(dtype, 20)
    inputs = [u(BATCH, UNITS), u(BATCH, 2 * UNITS), gates, h]
    _run(built, "gates_grad", inputs, prim_gru._gru_gates_grad_impl(xp, *inputs), dtype)


def test_other_dtypes_have_no_kernels():
    assert cuda_gru.step_sources("float16") is None
