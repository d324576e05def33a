"""Half-precision ops on the NumPy backend: products, reductions and the other
non-elementwise ops computed in float32 and rounded once.

NumPy has no fast loops for ``float16`` products (a 256^3 ``float16`` matmul took 5.6x
the float32 one here) and ``ml_dtypes.bfloat16`` has few: its sums accumulate in
bfloat16 (10,000 ones sum to 256), its matmul returns float32 and ``argmax`` refuses it.
So on this backend an op that reads a ``float16`` or ``bfloat16`` input and is not
elementwise (a ``compute`` op with one output, no scalar expression and not a view:
``matmul``, the convolutions and their gradients, the reductions, ``softmax``, the
cross entropies, ``argmax``, gathers and their scatter-add gradients...) converts those
inputs to float32, runs the op's own float32 function and rounds its result to the
node's dtype once, as tensor cores and TF's CPU kernels accumulate in float32.

Elementwise ops (``OpDef.scalar``) over ``float16`` keep their inputs: NumPy's float16
loops compute each element in float32 and round it, one ufunc call at a time, as the CUDA
C of fused float16 kernels does (``GF_ROUND_HALF``, ``gradflow.backends.cuda.scalar``).
Over ``bfloat16`` they are widened like the rest: ml_dtypes turns ``bf16_array * 0.5``
into float32 (it does not treat Python numbers as weak), so an op's own steps would mix
precisions. Fused programs over half types run their members' functions in turn, never
as a numba kernel (``gradflow.backends.numpy.fused``), so that fused and unfused graphs
give the same bits. Ops that only move data (``view``, ``shape_noop``,
``pass_through``) keep their half inputs: they compute nothing.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gradflow import dtypes


def _is_half(dtype) -> bool:
    return getattr(dtype, "is_half", False)


def widens(node) -> bool:
    """Whether the NumPy backend runs ``node`` in float32 (see the module's docstring)."""
    opdef = node.opdef
    if opdef.kind != "compute" or opdef.outputs != 1 or opdef.view or opdef.shape_noop \
            or opdef.pass_through:
        return False
    if opdef.scalar is not None:  # elementwise: float16 runs NumPy's own loops
        return any(t.dtype is dtypes.bfloat16 for t in node.inputs)
    return any(_is_half(t.dtype) for t in node.inputs)


def widened(node, fn):
    """``fn`` of ``node`` computed in float32 over its half inputs, its result rounded
    to the node's half dtype (or left as the op made it where that is not half)."""
    halves = tuple(i for i, t in enumerate(node.inputs) if _is_half(t.dtype))
    rounded = node.dtype.as_numpy_dtype if _is_half(node.dtype) else None

    def run(*arrays):
        arrays = list(arrays)
        for i in halves:
            arrays[i] = np.asarray(arrays[i]).astype(np.float32)
        result = fn(*arrays)
        if rounded is not None and getattr(result, "dtype", None) != rounded:
            result = _rounded(np.asarray(result), rounded)
        return result

    run.__name__ = f"float32_{getattr(fn, '__name__', node.opdef.name)}"
    return run


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _rounded(result, dtype):
    """``result`` (float32) rounded to the half ``dtype``; a bfloat16 NaN keeps its
    payload (ml_dtypes makes every NaN its one quiet NaN; NumPy's float16 keeps them), so
    that ops that only move data (``reverse``, ``gather``...) move NaNs bit for bit."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = result.astype(dtype)
    if dtype != _BFLOAT16 or result.dtype != np.float32:
        return out
    nan = np.isnan(result)
    if not nan.any():
        return out
    high = (result.view(np.uint32) >> 16).astype(np.uint16).view(_BFLOAT16)
    return np.where(nan, high, out)
