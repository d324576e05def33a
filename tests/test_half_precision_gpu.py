"""float16 and bfloat16 on the GPU (skipped without CuPy and a CUDA device): the CPU
checks of tests/test_half_precision.py and tests/test_custom_getter.py on CuPy and on
torch's CUDA device. Not run where they were written (no GPU was lent): CuPy 14's
bfloat16 support ("minimal", through ml_dtypes) is what these check first.

Tolerance: 8 eps of the half type against float32 rounded once (cuBLAS and CuPy's
reductions are expected to accumulate half inputs in float32; a failure of ``sum`` or
``matmul`` here says they do not).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_custom_getter import _train
from test_half_precision import EPS, HALVES, _all_bits, _inputs, _ops

import gradflow as gf

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


DEVICES = [pytest.param(("cupy", None), id="cupy"),
           pytest.param(("torch", "cuda"), id="torch-cuda", marks=pytest.mark.skipif(
               not _torch_cuda(), reason="PyTorch without CUDA"))]


@pytest.mark.parametrize("where", DEVICES)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_half_ops_on_the_gpu_match_float32_rounded_once(where, dtype):
    backend, device = where
    values = _inputs(dtype)
    with gf.Graph().as_default():
        single, composite = _ops(values, dtype)
        with gf.Session(backend=backend, device=device) as sess:
            got = sess.run({**single, **composite})
    with gf.Graph().as_default():
        ref_single, ref_composite = _ops(values, gf.float32)
        with gf.Session(backend="numpy") as sess:
            ref = sess.run({**ref_single, **ref_composite})
    tol = 8 * EPS[dtype.name]
    for name, value in got.items():
        assert np.asarray(value).dtype == dtype.as_numpy_dtype, name
        want = np.asarray(ref[name]).astype(dtype.as_numpy_dtype).astype(np.float32)
        np.testing.assert_allclose(np.asarray(value).astype(np.float32), want, rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(want).max())),
                                   err_msg=f"{name} ({dtype.name} on {backend})")


@pytest.mark.parametrize("where", DEVICES)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_gpu_feeds_and_fetches_keep_every_bit(where, dtype):
    backend, device = where
    bits = _all_bits(dtype)
    with gf.Graph().as_default():
        x = gf.placeholder(dtype, [None])
        moved = gf.reverse(gf.reverse(x, [0]), [0])
        with gf.Session(backend=backend, device=device) as sess:
            fed, out = sess.run([x, moved], {x: bits})
    for got in (fed, out):
        np.testing.assert_array_equal(got.view(np.uint16), bits.view(np.uint16))


@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_cupy_fused_half_programs_give_the_unfused_bits(dtype):
    """float16 runs as one printed CUDA kernel rounding after every op; bfloat16 is never
    printed (its members run in turn)."""
    r = np.random.RandomState(2)
    values = [r.randn(64, 64).astype(dtype.as_numpy_dtype) for _ in range(2)]
    results = []
    for optimize in (True, False):
        with gf.Graph().as_default():
            x, y = (gf.constant(v) for v in values)
            z = (x * y + 0.3) * y - x / (1.0 + y * y)
            w = gf.maximum(z, x) * 3.0 + gf.square(y)
            with gf.Session(backend="cupy", optimize=optimize) as sess:
                results.append(sess.run([z, w]))
    for fused, unfused in zip(*results):
        np.testing.assert_array_equal(fused.view(np.uint16), unfused.view(np.uint16))


@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_float32_master_weights_train_on_cupy(dtype):
    first32, last32 = _train("cupy", gf.float32)
    first, last = _train("cupy", dtype)
    assert last32 < first32 / 3 and last < first / 3
    assert abs(last - last32) <= 0.02 * last32, (last, last32)


@pytest.mark.parametrize("where", DEVICES)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_gpu_sums_and_products_accumulate_in_float32(where, dtype):
    """As on NumPy (tests/test_half_precision.py): a half accumulator would stop at 2048
    (float16) or 256 (bfloat16). CuPy keeps half matmul native: this checks that cuBLAS
    accumulates it in float32."""
    backend, device = where
    with gf.Graph().as_default():
        total = gf.reduce_sum(gf.ones([10000], dtype))
        dot = gf.matmul(gf.ones([1, 3000], dtype), gf.ones([3000, 1], dtype))
        with gf.Session(backend=backend, device=device) as sess:
            got_total, got_dot = sess.run([total, dot])
    assert float(got_total) == (10000.0 if dtype is gf.float16 else 9984.0)
    assert float(got_dot[0, 0]) == (3000.0 if dtype is gf.float16 else 3008.0)
