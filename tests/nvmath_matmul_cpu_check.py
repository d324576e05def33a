"""The whole life of gradflow.backends.cupy.nvmath_matmul.PlannedMatmul on the CPU (MKL through
nvmath-python), run by tests/test_nvmath_matmul.py in a subprocess of its own so that the
pytest process never loads MKL's OpenMP beside OpenBLAS and numba. Prints one line per
case and exits non-zero at the first wrong result."""

from __future__ import annotations

import itertools

import numpy as np

from gradflow.backends.cupy.nvmath_matmul import PlannedMatmul

TOLERANCE = {"float32": 2e-6, "float64": 1e-14}


def check(out, a, b, ta, tb, bias, what):
    want = np.matmul(a.swapaxes(-1, -2) if ta else a, b.swapaxes(-1, -2) if tb else b)
    if bias is not None:
        want = want + bias
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    rtol = TOLERANCE[str(out.dtype)] * max(1, (a.shape[-2] if ta else a.shape[-1]))
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * scale, err_msg=what)


def fill(rng, *arrays):
    for array in arrays:
        array[...] = rng.standard_normal(array.shape)


def life(dtype, m, k, n, ta, tb, with_bias, rng, batch=()):
    a = np.empty(batch + ((k, m) if ta else (m, k)), dtype)
    b = np.empty(batch + ((n, k) if tb else (k, n)), dtype)
    bias = np.empty(n, dtype) if with_bias else None
    out = np.full(batch + (m, n), np.nan, dtype)  # beta=0 must ignore what out held
    fill(rng, a, b, *([bias] if with_bias else []))
    address = out.ctypes.data
    what = (f"{dtype} {batch} {m}x{k}x{n} transpose_a={ta} transpose_b={tb} "
            f"bias={with_bias}")
    with PlannedMatmul(a, b, out, transpose_a=ta, transpose_b=tb, bias=bias,
                       num_threads=1) as mm:
        for step in range(4):  # new contents in the same buffers before every execute
            if step:
                fill(rng, a, b, *([bias] if with_bias else []))
            result = mm.execute()
            assert result is out and out.ctypes.data == address, what
            check(out, a, b, ta, tb, bias, f"{what} execute {step}")
    print("ok", what)


def main():
    rng = np.random.default_rng(0)
    for dtype, (ta, tb), with_bias in itertools.product(
            ("float32", "float64"), itertools.product((False, True), repeat=2), (False, True)):
        for m, k, n in ((5, 7, 3), (64, 33, 17)):
            life(dtype, m, k, n, ta, tb, with_bias, rng)
    for dtype, (ta, tb) in itertools.product(("float32", "float64"),
                                             itertools.product((False, True), repeat=2)):
        life(dtype, 5, 7, 3, ta, tb, False, rng, batch=(2, 3))  # attention's 4-D products
    for m, k, n in ((1, 1, 1), (4, 0, 3), (0, 5, 3)):  # nvmath refuses empty extents
        life("float32", m, k, n, False, True, True, rng)
    mm = PlannedMatmul(np.ones((2, 2)), np.ones((2, 2)), np.empty((2, 2)), num_threads=1)
    mm.free()
    mm.free()  # a second free is harmless
    print("ok free")


if __name__ == "__main__":
    main()
