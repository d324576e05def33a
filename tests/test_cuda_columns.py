"""The CuPy backend's column sums (``gradflow.backends.cuda.columns``): their CUDA C
text, compiled with g++ (tests/cuda_host.py) and run as a grid of 3 blocks, sums a
bias gradient as the float64 reference does (to rounding), with the same bits for a
grid of one block as of three; and ``cupy_emit.lower_unbroadcast`` around it, with
NumPy in CuPy's place: the passes it launches, and the op's own function where the
summed axes are not leading ones."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

from gradflow.backends.cuda import columns as cuda_columns
from gradflow.prim.registry import REGISTRY

pytestmark = needs_gxx


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("columns"))
    return {dtype: {k: (build(text, directory), name)
                    for k, (text, name) in cuda_columns.column_sum_source(dtype).items()}
            for dtype in ("float32", "float64")}


def test_passes_cut_rows_into_parts_down_to_one():
    assert cuda_columns.passes(1) == [1]
    assert cuda_columns.passes(64) == [64, 1]
    assert cuda_columns.passes(65) == [65, 2, 1]
    assert cuda_columns.passes(128 * 28 * 28) == [100352, 1568, 25, 1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows, cols", [(1, 5), (64, 3), (200, 32), (1000, 7)])
def test_one_pass_sums_each_part_of_each_column(kernels, rows, cols, dtype):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, cols)).astype(dtype)
    part = cuda_columns.PART_ROWS
    parts = -(-rows // part)
    lib, name = kernels[dtype]["sum"]
    got = {}
    for blocks in (1, 3):
        got[blocks] = np.full((parts, cols), 7, dtype)
        launch(lib, name, [x, got[blocks], rows, cols, part], blocks=blocks)
    np.testing.assert_array_equal(got[1], got[3])
    want = [x[p * part:(p + 1) * part].astype(np.float64).sum(0) for p in range(parts)]
    np.testing.assert_allclose(got[1], np.array(want), rtol=1e-5 if dtype == "float32"
                               else 1e-13, atol=1e-5 if dtype == "float32" else 1e-12)


class _HostKernel:
    def __init__(self, lib, name, launched):
        self.lib, self.name, self.launched = lib, name, launched

    def __call__(self, grid, block, args):
        launch(self.lib, self.name, list(args), blocks=min(grid[0], 3))
        self.launched.append(int(args[2]))  # the rows of this pass


@pytest.mark.parametrize("g_shape, x_shape, launches", [
    ((128, 28, 28, 32), (32,), [100352, 1568, 25]),  # a convolution's bias gradient
    ((50, 10), (10,), [50]),
    ((3, 1, 5, 4), (1, 5, 4), [3]),  # x's leading 1 is summed too
    ((70, 3), (), [210, 4]),  # a scalar: one column
    ((2, 3, 4), (3, 1), []),  # an inner axis: the op's function
    ((6, 4), (6, 4), []),  # nothing to sum
])
@pytest.mark.parametrize("with_out", [False, True])
def test_unbroadcast_on_cupy_sums_leading_axes_by_kernel(kernels, monkeypatch, g_shape,
                                                         x_shape, launches, with_out):
    from gradflow.backends.cupy import emit as cupy_emit

    launched = []
    host = {d: {k: _HostKernel(lib, name, launched) for k, (lib, name) in made.items()}
            for d, made in kernels.items()}
    monkeypatch.setitem(__import__("sys").modules, "cupy",
                        type("cupy", (), {"copyto": staticmethod(np.copyto)}))
    monkeypatch.setattr(cupy_emit._COLUMN_KERNELS, "get",
                        lambda dtype: host.get(np.dtype(dtype).name))
    rng = np.random.default_rng(len(g_shape))
    g = rng.standard_normal(g_shape).astype(np.float32)
    x = np.empty(x_shape, np.float32)
    out = np.full(x_shape, 7, np.float32) if with_out else None
    got = cupy_emit.lower_unbroadcast(xp)(g, x, out=out)
    assert got.shape == x_shape and (out is None or got is out)
    want = REGISTRY["unbroadcast"].impl(xp, g.astype(np.float64), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert launched == launches
