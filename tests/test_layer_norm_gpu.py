"""The layer-norm pair's CuPy lowerings on a real GPU (skipped without CuPy and a CUDA
device): BERT's contrib layer norm and GPT-2's norm with their gradients, through the
pass and cuda/transformer.py's kernels, against the NumPy backend's numbers; the kernels
compiled (not the fallback functions)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def _gpt2_norm(x):
    g = gf.get_variable("g", [x.shape[-1]], initializer=gf.constant_initializer(1.3),
                        dtype=x.dtype)
    b = gf.get_variable("b", [x.shape[-1]], initializer=gf.constant_initializer(0.2),
                        dtype=x.dtype)
    u = gf.reduce_mean(x, axis=-1, keepdims=True)
    s = gf.reduce_mean(gf.square(x - u), axis=-1, keepdims=True)
    return (x - u) * gf.rsqrt(s + 1e-5) * g + b


# contrib's float16 layer norm takes moments in float32 (casts around them): not fused
@pytest.mark.parametrize("norm,dtype,tol", [
    ("contrib", "float32", 2e-5), ("contrib", "float64", 1e-12), ("gpt2", "float32", 2e-5),
    ("gpt2", "float64", 1e-12), ("gpt2", "float16", 2e-2)])
def test_the_pair_on_the_gpu_gives_numpys_numbers(norm, dtype, tol):
    from gradflow.backends.cupy import transformer as cupy_transformer

    rng = np.random.default_rng(0)
    value = rng.normal(size=(64, 768)).astype(dtype)  # BERT-base's width: 3 strides a row
    x = gf.placeholder(dtype, value.shape)
    y = gf.contrib.layers.layer_norm(x, begin_norm_axis=-1) if norm == "contrib" \
        else _gpt2_norm(x)
    weights = gf.constant(rng.normal(size=value.shape).astype(dtype))
    loss = gf.reduce_sum(gf.cast(y * weights, gf.float32))
    fetches = [y] + gf.gradients(loss, [x] + gf.trainable_variables())
    results = {}
    for backend in ("numpy", "cupy"):
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            results[backend] = [np.asarray(r, np.float64) for r in sess.run(fetches,
                                                                            {x: value})]
    assert cupy_transformer._NORM_KERNELS.made.get(dtype) is not None
    for got, want in zip(results["cupy"], results["numpy"]):
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * np.abs(want).max())
