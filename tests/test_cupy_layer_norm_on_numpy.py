"""The CuPy backend's layer-norm lowerings (gradflow/backends/cupy/transformer.py), run on
NumPy: the kernels' CUDA C text (gradflow/backends/cuda/transformer.py) compiled by g++
through tests/cuda_host.py's header in place of NVRTC's build, launched as the lowering
launches them, against the primitive's own functions (prim/layer_norm.py), which the
layer-norm pass's tests check against the unfused graph."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

from gradflow.backends.cuda import transformer as cuda_transformer
from gradflow.backends.cupy import transformer as cupy_transformer
from gradflow.prim.registry import REGISTRY

pytestmark = needs_gxx
TOL = {"float16": 2e-2, "float32": 2e-5, "float64": 1e-12}


class _HostKernel:
    def __init__(self, lib, name, launched):
        self.lib, self.name, self.launched = lib, name, launched

    def __call__(self, grid, block, args):
        assert block == (cuda_transformer.BLOCK,) and len(grid) == 1
        launch(self.lib, self.name, list(args), blocks=min(grid[0], 3))
        self.launched.append(self.name.split("_", 2)[-1])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cupy-layer-norm"))
    built = {}
    for dtype in TOL:  # every kind's text is the one module of them all
        printed = cuda_transformer.sources(dtype)
        lib = build(next(iter(printed.values()))[0], folder)
        built[dtype] = {kind: (lib, name) for kind, (_, name) in printed.items()}
    return built


@pytest.fixture
def host_kernels(monkeypatch, built):
    launched = []
    made = {dtype: {kind: _HostKernel(lib, name, launched)
                    for kind, (lib, name) in kernels.items()}
            for dtype, kernels in built.items()}
    monkeypatch.setattr(cupy_transformer._NORM_KERNELS, "get",
                        lambda dtype: made.get(np.dtype(dtype).name))
    return launched


def _inputs(dtype, shape):
    rng = np.random.default_rng(3)
    n = shape[-1]
    x, dy = (rng.normal(size=shape).astype(dtype) for _ in range(2))
    gamma, beta = (rng.normal(size=n).astype(dtype) for _ in range(2))
    return x, dy, gamma, beta


def _close(got, want, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("form", ["affine", "centered"])
@pytest.mark.parametrize("dtype", list(TOL))
def test_the_pair_runs_one_kernel_forward_and_two_backward(host_kernels, dtype, form):
    x, dy, gamma, beta = _inputs(dtype, (2, 5, 300))  # rows wider than the block
    fwd = cupy_transformer.lower_layer_norm_fwd(np, eps=1e-5, form=form)
    bwd = cupy_transformer.lower_layer_norm_bwd(np)
    out = (np.empty_like(x), np.empty((2, 5, 1), cupy_transformer._stats_dtype(dtype)),
           np.empty((2, 5, 1), cupy_transformer._stats_dtype(dtype)))
    y, mean, rstd = fwd(x, gamma, beta, out=out)
    assert y is out[0] and mean is out[1] and rstd is out[2]
    want = REGISTRY["layer_norm_fwd"].impl(np, x, gamma, beta, eps=1e-5, form=form)
    for got, w in zip((y, mean, rstd), want):
        assert got.dtype == w.dtype and got.shape == w.shape
        _close(got, w, dtype)
    assert host_kernels == ["layer_norm"]
    grads = bwd(dy, x, gamma, mean, rstd)
    for got, w in zip(grads, REGISTRY["layer_norm_bwd"].impl(np, dy, x, gamma, *want[1:])):
        assert got.dtype == w.dtype and got.shape == w.shape
        _close(got, w, dtype)
    assert host_kernels == ["layer_norm", "layer_norm_grad", "layer_norm_params_grad"]


def test_other_layouts_take_the_primitives_functions(host_kernels):
    x, dy, gamma, beta = _inputs("float32", (6, 8))
    fwd = cupy_transformer.lower_layer_norm_fwd(np, eps=1e-5, form="centered")
    got = fwd(x, gamma, beta)  # C-ordered: the kernel
    strided = fwd(np.asfortranarray(x), gamma, beta)  # not: the functions
    assert host_kernels == ["layer_norm"]
    for a, b in zip(got, strided):
        _close(a, b, "float32")
