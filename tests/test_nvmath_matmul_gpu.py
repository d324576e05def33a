"""gradflow.backends.cupy.nvmath_matmul on a GPU (skipped without CuPy, nvmath-python and a
CUDA device): the cuBLASLt path (transposed problem, BIAS epilogue, TF32 option) against
cupy.matmul, and its replay inside a CuPy stream capture with new contents each time."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytest.importorskip("nvmath", reason="nvmath-python is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from gradflow.backends.cupy.nvmath_matmul import PlannedMatmul  # noqa: E402


def _reference(a, b, ta, tb, bias):
    want = cp.asnumpy(a).astype(np.float64)
    other = cp.asnumpy(b).astype(np.float64)
    want = (want.T if ta else want) @ (other.T if tb else other)
    return want if bias is None else want + cp.asnumpy(bias)


@pytest.mark.parametrize("dtype, ta, tb, with_bias", [
    (d, ta, tb, wb) for d in ("float32", "float64")
    for (ta, tb), wb in itertools.product(itertools.product((False, True), repeat=2),
                                          (False, True))])
def test_cuda_planned_matmul_matches_a_float64_product(dtype, ta, tb, with_bias):
    rng = cp.random.default_rng(1)
    m, k, n = 128, 784, 512
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=dtype)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=dtype)
    bias = rng.standard_normal(n, dtype=dtype) if with_bias else None
    out = cp.full((m, n), cp.nan, dtype)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream, PlannedMatmul(a, b, out, transpose_a=ta, transpose_b=tb, bias=bias,
                               stream=stream) as mm:
        for _ in range(3):
            a[...] = rng.standard_normal(a.shape, dtype=dtype)
            assert mm.execute() is out
            stream.synchronize()
            tol = 1e-4 if dtype == "float32" else 1e-10
            np.testing.assert_allclose(cp.asnumpy(out), _reference(a, b, ta, tb, bias),
                                       rtol=tol, atol=tol * 30)


@pytest.mark.parametrize("allow_tf32", [False, True])
def test_a_captured_planned_matmul_replays_with_new_contents(allow_tf32):
    rng = cp.random.default_rng(2)
    a = rng.standard_normal((256, 512), dtype="float32")
    b = rng.standard_normal((10, 512), dtype="float32")
    bias = rng.standard_normal(10, dtype="float32")
    out = cp.zeros((256, 10), "float32")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        mm = PlannedMatmul(a, b, out, transpose_b=True, bias=bias, allow_tf32=allow_tf32,
                           stream=stream)
        mm.execute()  # the first execution may allocate its workspace: keep it out of the graph
        stream.synchronize()
        stream.begin_capture()
        mm.execute()
        graph = stream.end_capture()
        for _ in range(3):
            a[...] = rng.standard_normal(a.shape, dtype="float32")
            bias[...] = rng.standard_normal(bias.shape, dtype="float32")
            stream.synchronize()
            graph.launch(stream)
            stream.synchronize()
            tol = 2e-2 if allow_tf32 else 1e-4  # TF32 keeps 10 mantissa bits
            np.testing.assert_allclose(cp.asnumpy(out), _reference(a, b, False, True, bias),
                                       rtol=tol, atol=tol * 25)
    mm.free()


@pytest.mark.parametrize("ta, tb", list(itertools.product((False, True), repeat=2)))
def test_a_batched_planned_matmul_matches_and_replays_captured(ta, tb):
    """Attention's products: [16, 2, 128, 64] batches of matrices, either transposed,
    planned once, against a float64 product, then replayed inside a stream capture."""
    rng = cp.random.default_rng(3)
    batch, m, k, n = (16, 2), 128, 64, 128
    a = rng.standard_normal(batch + ((k, m) if ta else (m, k)), dtype="float32")
    b = rng.standard_normal(batch + ((n, k) if tb else (k, n)), dtype="float32")
    out = cp.full(batch + (m, n), cp.nan, "float32")

    def want():
        x = cp.asnumpy(a).astype(np.float64)
        y = cp.asnumpy(b).astype(np.float64)
        return (x.swapaxes(-1, -2) if ta else x) @ (y.swapaxes(-1, -2) if tb else y)

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        mm = PlannedMatmul(a, b, out, transpose_a=ta, transpose_b=tb, stream=stream)
        assert mm.execute() is out
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(out), want(), rtol=1e-4, atol=1e-3)
        stream.begin_capture()
        mm.execute()
        graph = stream.end_capture()
        a[...] = rng.standard_normal(a.shape, dtype="float32")
        stream.synchronize()
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(out), want(), rtol=1e-4, atol=1e-3)
    mm.free()
