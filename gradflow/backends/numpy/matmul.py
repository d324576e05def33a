"""NumPy lowering of ``matmul``, with or without a transposed operand.

A float32 product of two matrices large enough goes to oneDNN where it is
installed (``onednn_matmul``: faster than OpenBLAS on the products of training
steps, and it reads a transposed operand in place). The rest goes to NumPy.
There, OpenBLAS is markedly slower on ``g @ b.T`` with few rows in ``g`` and a wide
``b`` (the backward ``dgates @ kernel.T`` of an RNN step: 32 x 512 times
512 x 192) than on the same product computed as ``(b @ g.T).T``; the result
is then copied to C order, which costs little next to the product. The swap
is used only where it was measured to help: at most ``SWAP_MAX_ROWS`` rows in
``g``, fewer than the product's columns, and an inner dimension of at least
``SWAP_MIN_INNER`` (on the 2-core AVX-512 VM: 32x512 times 512x128 took 46
against 76 us swapped; with an inner dimension of 10, the logits' gradient
times the last layer, the swap doubled the time, and at 128 rows it gained
nothing). Everything else is ``np.matmul`` on the views.

Every variant writes into ``out=`` when the plan gives it a buffer, so the
products of a training step reuse the plan's memory instead of fresh pages.
Such a buffer is never one of the product's own inputs (``reads_whole_inputs``:
the memory plan does not compute a matmul in place over an input).
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import KeptArrays
from gradflow.backends.cpu.threads import uses_blas
from gradflow.backends.onednn import matmul as onednn_matmul

SWAP_MAX_ROWS = 64
SWAP_MIN_INNER = 128


def _writes_out(fn):
    fn = uses_blas(fn)
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def product_into(a, b, out):
    """``a @ b`` (views of the operands, transposed as the op says) into ``out``:
    oneDNN's for float32 matrices large enough, else NumPy's."""
    done = onednn_matmul.multiply(a, b, out)
    return np.matmul(a, b, out=out) if done is None else done


def lower_matmul(xp, transpose_a, transpose_b):
    product = _lower_matmul(transpose_a, transpose_b)
    kept = KeptArrays(np.empty)  # the float32 copies of half operands and their product

    @_writes_out
    def matmul(a, b, out=None):
        if a.dtype.itemsize != 2 or a.dtype.kind in "iub":
            return product(a, b, out)
        # 16-bit floats (mixed precision): NumPy has no BLAS for them (float16 products
        # run ~100x slower than float32's); multiply in float32 and round the result, as
        # GPU tensor cores accumulate half products in float32
        wide_a = kept.get_array("a", a.shape, np.float32)
        wide_b = kept.get_array("b", b.shape, np.float32)
        np.copyto(wide_a, a)
        np.copyto(wide_b, b)
        if out is None:
            out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                           + _product_shape(a, b, transpose_a, transpose_b), a.dtype)
        wide = product(wide_a, wide_b, kept.get_array("out", out.shape, np.float32))
        with np.errstate(over="ignore"):  # a value past the half's range is inf, as on a GPU
            np.copyto(out, wide, casting="unsafe")
        return out

    return matmul


def _product_shape(a, b, transpose_a, transpose_b):
    rows = a.shape[-1] if transpose_a else a.shape[-2]
    cols = b.shape[-2] if transpose_b else b.shape[-1]
    return (rows, cols)


def _lower_matmul(transpose_a, transpose_b):
    if not transpose_a and not transpose_b:
        @_writes_out
        def matmul(a, b, out=None):
            return product_into(a, b, out)

        return matmul
    if transpose_a and transpose_b:
        @_writes_out
        def matmul_at_bt(a, b, out=None):
            return product_into(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), out)

        return matmul_at_bt
    if transpose_a:
        @_writes_out
        def matmul_at(a, b, out=None):
            return product_into(np.swapaxes(a, -1, -2), b, out)

        return matmul_at

    kept = KeptArrays(np.empty)  # the swapped product's buffer, when it writes into out=

    @_writes_out
    def matmul_bt(a, b, out=None):  # a @ b.T
        done = onednn_matmul.multiply(a, np.swapaxes(b, -1, -2), out)
        if done is not None:
            return done
        if a.ndim == 2 and b.ndim == 2 and a.shape[0] < b.shape[0] \
                and a.shape[0] <= SWAP_MAX_ROWS and a.shape[1] >= SWAP_MIN_INNER:
            if out is None:
                return np.ascontiguousarray(np.matmul(b, a.T).T)
            product = kept.get_array("swapped", (b.shape[0], a.shape[0]), out.dtype)
            np.copyto(out, np.matmul(b, a.T, out=product).T)
            return out
        return np.matmul(a, np.swapaxes(b, -1, -2), out=out)

    return matmul_bt
