"""The transformer kernels' CuPy lowerings on a real GPU (skipped without CuPy and a CUDA
device): the softmax of rows wider than 4,096 (one block per row) against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-13), ("float16", 2e-3)])
def test_a_wide_softmax_and_its_gradient_match_numpy(dtype, tol):
    rng = np.random.default_rng(0)
    value = (rng.normal(size=(6, 50_257)) * 3).astype(dtype)  # GPT-2's vocabulary
    x = gf.placeholder(dtype, value.shape)
    y = gf.nn.softmax(x)
    grad, = gf.gradients(gf.reduce_sum(y * gf.constant(np.arange(value.shape[1]) % 7,
                                                       dtype=dtype)), [x])
    results = {}
    for backend in ("numpy", "cupy"):
        with gf.Session(backend=backend) as sess:
            results[backend] = [np.asarray(r, np.float64) for r in sess.run([y, grad],
                                                                            {x: value})]
    for got, want in zip(results["cupy"], results["numpy"]):
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * np.abs(want).max())
