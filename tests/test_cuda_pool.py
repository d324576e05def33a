"""The CuPy backend's max pooling kernels (``gradflow.backends.cuda.pool``): their CUDA
C text, compiled with g++ (tests/cuda_host.py) and run as a grid of 3 blocks, gives
the bits of the ops' Array API functions (``gradflow.prim.conv``): the pool, its gradient and
the gradient through a ReLU, with ties (the first maximum takes the gradient), NaN,
``-inf``, padding and overlapping windows; and the CuPy lowerings around them, with
NumPy in CuPy's place."""

from __future__ import annotations

import types

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build_printed, launch, needs_gxx

from gradflow.backends.cuda import pool as cuda_pool
from gradflow.backends.cupy import im2col_conv
from gradflow.prim.registry import REGISTRY

pytestmark = needs_gxx
CASES = [  # batch, size, window, stride, padding
    (2, 8, 2, 2, "VALID"), (2, 7, 2, 2, "SAME"), (1, 9, 3, 2, "SAME"), (2, 6, 3, 1, "SAME"),
    (1, 7, 3, 2, "VALID"), (1, 5, 1, 1, "VALID"),
]
TILED = [(2, 6, 2, 2, "SAME"), (1, 9, 3, 3, "VALID")]  # more windows tiling the images


def _images(rng, n, size, c, dtype):
    x = np.round(rng.standard_normal((n, size, size, c)) * 2).astype(dtype)  # many ties
    x[0, 1, 1, 0] = np.nan
    x[-1, 0, :, -1] = -np.inf
    return x


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """``kernels(dtype name, fixed)``: ``{kind: (lib, name)}``, the text specialized to
    the sizes ``fixed`` built by g++ once."""
    directory, made = str(tmp_path_factory.mktemp("pool")), {}

    def get(dtype, fixed):
        key = (dtype, tuple(fixed))
        if key not in made:
            made[key] = build_printed(cuda_pool.pool_sources(dtype, key[1]), directory)
        return made[key]

    return get


@pytest.mark.parametrize("width", ["", "_i32"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES + TILED, ids=str)
def test_the_pool_kernels_give_the_references_bits(kernels, case, dtype, width):
    n, size, k, s, padding = case
    rng = np.random.default_rng(size)
    x = _images(rng, n, size, 3, dtype)
    attrs = {"ksize": (k, k), "strides": (s, s), "padding": padding}
    geo = im2col_conv.geometry(x.shape, (k, k), (s, s), padding)
    sizes = geo.sizes()
    ninf = np.dtype(dtype).type(-np.inf)
    want = REGISTRY["max_pool"].impl(xp, x, **attrs)
    lib, name = kernels(dtype, sizes[1:])["pool" + width]
    got = np.full(want.shape, 7, dtype)
    launch(lib, name, [x, got, *sizes, ninf], blocks=3)
    np.testing.assert_array_equal(got, want)
    g = rng.standard_normal(want.shape).astype(dtype)
    g.reshape(-1)[::5] = -0.0  # a pixel's sum is 0 + g: +0, as the reference's
    assert cuda_pool.tiles(geo) or case not in TILED
    kinds = ["grad", "grad_tiled"] if cuda_pool.tiles(geo) else ["grad"]
    for kind in kinds:
        lib, name = kernels(dtype, sizes[1:])[kind + width]
        for op, relu in (("max_pool_grad", 0), ("max_pool_relu_grad", 1)):
            with np.errstate(invalid="ignore"):
                want = REGISTRY[op].impl(xp, g, x, **attrs)
            got = np.full(x.shape, 7, dtype)
            launch(lib, name, [g, x, got, *sizes, ninf, relu], blocks=3)
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {kind}")
            assert not np.signbit(got[got == 0]).any(), f"{op} {kind}: -0"


def test_other_dtypes_have_no_kernels():
    assert cuda_pool.pool_sources("float16", (8, 8, 3, 2, 2, 2, 2, 0, 0, 4, 4)) is None


class _HostKernel:
    def __init__(self, lib, name, launched):
        self.lib, self.name, self.launched = lib, name, launched

    def __call__(self, grid, block, args):
        launch(self.lib, self.name, list(args), blocks=min(grid[0], 3))
        self.launched.append(self.name)


def _on_host(kernels, monkeypatch):
    """``cupy_emit`` with NumPy in CuPy's place and the g++-built kernels in NVRTC's;
    the names of the kernels launched, in order."""
    from gradflow.backends.cupy import emit as cupy_emit

    launched = []

    def get(dtype, fixed):
        if np.dtype(dtype).name not in ("float32", "float64"):
            return None
        return {k: _HostKernel(lib, name, launched)
                for k, (lib, name) in kernels(np.dtype(dtype).name, fixed).items()}

    monkeypatch.setitem(__import__("sys").modules, "cupy",
                        types.SimpleNamespace(empty=np.empty, copyto=np.copyto))
    monkeypatch.setattr(cupy_emit._POOL_KERNELS, "get", get)
    return cupy_emit, launched


def test_the_cupy_lowerings_launch_one_kernel_per_op(kernels, monkeypatch):
    cupy_emit, launched = _on_host(kernels, monkeypatch)
    rng = np.random.default_rng(0)
    x = _images(rng, 2, 7, 4, "float32")
    attrs = {"ksize": (3, 3), "strides": (2, 2), "padding": "SAME"}
    y = cupy_emit.lower_max_pool(xp, **attrs)(x)
    np.testing.assert_array_equal(y, REGISTRY["max_pool"].impl(xp, x, **attrs))
    g = rng.standard_normal(y.shape).astype(np.float32)
    for op in ("max_pool_grad", "max_pool_relu_grad"):
        out = np.empty_like(x)
        got = getattr(cupy_emit, f"lower_{op}")(xp, **attrs)(g, x, out=out)
        assert got is out
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(got, REGISTRY[op].impl(xp, g, x, **attrs))
    assert launched == ["gf_max_pool_float32_i32"] + ["gf_max_grad_float32_i32"] * 2
    x16 = x.astype(np.float16)  # no kernel: the op's own function
    np.testing.assert_array_equal(cupy_emit.lower_max_pool(xp, **attrs)(x16),
                                  REGISTRY["max_pool"].impl(xp, x16, **attrs))
    assert len(launched) == 3


def test_a_tiled_pool_gradient_launches_over_the_windows(kernels, monkeypatch):
    """2x2 windows at stride 2 over even images: ``grad_tiled``, a grid over ``g``."""
    cupy_emit, launched = _on_host(kernels, monkeypatch)
    grids, grid = [], cupy_emit._grid
    monkeypatch.setattr(cupy_emit, "_grid", lambda total: grids.append(total) or grid(total))
    rng = np.random.default_rng(1)
    x = _images(rng, 2, 8, 4, "float32")
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    g = rng.standard_normal((2, 4, 4, 4)).astype(np.float32)
    got = cupy_emit.lower_max_pool_relu_grad(xp, **attrs)(g, x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, REGISTRY["max_pool_relu_grad"].impl(xp, g, x,
                                                                                **attrs))
    assert launched == ["gf_max_grad_tiled_float32_i32"] and grids == [g.size]
