"""Half-precision ops computed in float32 and rounded once (the NumPy and CuPy backends).

NumPy has no fast loops for ``float16`` products (a 256^3 ``float16`` matmul took 5.6x
the float32 one here) and ``ml_dtypes.bfloat16`` has few: its sums accumulate in
bfloat16 (10,000 ones sum to 256), its matmul returns float32 and ``argmax`` refuses it.
So on NumPy an op that reads a ``float16`` or ``bfloat16`` input and is not elementwise
(a ``compute`` op with one output, no scalar expression and not a view: ``matmul``, the
convolutions and their gradients, the reductions, ``softmax``, the cross entropies,
``argmax``, gathers and their scatter-add gradients...) converts those inputs to
float32, runs the op's own float32 function and rounds its result to the node's dtype
once, as tensor cores and TF's CPU kernels accumulate in float32.

Elementwise ops (``OpDef.scalar``) over ``float16`` keep their inputs: NumPy's float16
loops compute each element in float32 and round it, one ufunc call at a time, as the CUDA
C of fused float16 kernels does (``GF_ROUND_HALF``, ``gradflow.backends.cuda.scalar``).
Over ``bfloat16`` they are widened like the rest: ml_dtypes turns ``bf16_array * 0.5``
into float32 (it does not treat Python numbers as weak), so an op's own steps would mix
precisions. Fused programs over half types run their members' functions in turn, never
as a numba kernel (``gradflow.backends.numpy.fused``), so that fused and unfused graphs
give the same bits. Ops that only move data (``view``, ``shape_noop``, ``pass_through``)
keep their half inputs: they compute nothing.

Speed on this project's 2-core VM (single runs): NumPy's float16 loops and casts are
scalar code here (a float32 to float16 cast of 64k values took 344 us, a float32 add 5
us, a float16 add 899 us; ml_dtypes' bfloat16 cast 47 us), so a float16 MLP step
(784-512-10, batch 128, float32 master weights) took 5.1x the float32 step on NumPy and
the bfloat16 step 1.55x; on torch's CPU 8.6x and 0.75x (2026-11-29).

CuPy (``gradflow.backends.cupy.backend``) follows the same rule, but keeps ``matmul``
native: cuBLAS multiplies half matrices accumulating in float32 and rounds once. CuPy 14's
bfloat16 support is "minimal" (some ufuncs and most of cupyx lack it): widened, a
bfloat16 op needs only float32 from CuPy. Not run on a GPU yet.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gradflow import dtypes


def _is_half(dtype) -> bool:
    return getattr(dtype, "is_half", False)


def widens(node, native=()) -> bool:
    """Whether ``node`` runs in float32 (see the module's docstring); ``native`` names the
    ops a backend keeps in half precision."""
    opdef = node.opdef
    if opdef.kind != "compute" or opdef.outputs != 1 or opdef.view or opdef.shape_noop \
            or opdef.pass_through or opdef.name in native:
        return False
    if opdef.scalar is not None:  # elementwise: float16 runs NumPy's own loops
        return any(t.dtype is dtypes.bfloat16 for t in node.inputs)
    return any(_is_half(t.dtype) for t in node.inputs)


def widened(node, fn, lib=np):
    """``fn`` of ``node`` computed in float32 over its half inputs, its result rounded
    to the node's half dtype (or left as the op made it where that is not half); ``lib``
    is the array library (NumPy, CuPy)."""
    halves = tuple(i for i, t in enumerate(node.inputs) if _is_half(t.dtype))
    rounded = np.dtype(node.dtype.as_numpy_dtype) if _is_half(node.dtype) else None

    def run(*arrays):
        arrays = list(arrays)
        for i in halves:
            arrays[i] = lib.asarray(arrays[i]).astype(np.float32)
        result = fn(*arrays)
        if rounded is not None and getattr(result, "dtype", None) != rounded:
            result = _rounded(lib, lib.asarray(result), rounded)
        return result

    run.__name__ = f"float32_{getattr(fn, '__name__', node.opdef.name)}"
    return run


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _rounded(lib, result, dtype):
    """``result`` (float32) rounded to the half ``dtype``; a bfloat16 NaN keeps its
    payload (ml_dtypes makes every NaN its one quiet NaN; NumPy's float16 keeps them), so
    that ops that only move data (``reverse``, ``gather``...) move NaNs bit for bit."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = result.astype(dtype)
    if dtype != _BFLOAT16 or result.dtype != np.float32:
        return out
    nan = lib.isnan(result)
    if not bool(nan.any()):
        return out
    high = (result.view(np.uint32) >> 16).astype(np.uint16).view(_BFLOAT16)
    return lib.where(nan, high, out)
