"""The CuPy backend's lowerings of ``gradflow.backends.cuda.transformer``'s kernels.

``softmax`` over the last axis of C-ordered rows wider than ``rows.MAX_COLUMNS`` (a
language model's vocabulary, a long sequence's attention row) is one kernel, one block
of ``BLOCK`` threads per row, where CuPy's own functions take five passes; narrower rows
and other layouts take the op's own CuPy functions, as before.

The layer-norm pair that ``passes/layer_norm.py`` makes (``layer_norm_fwd``,
``layer_norm_bwd``: ``prim/layer_norm.py``) runs the block-per-row kernels: the forward
one kernel (``y``, ``mean``, ``rstd``), the backward two (``dx`` by rows; ``dgamma`` and
``dbeta`` by columns), for C-ordered float16, float32 and float64 rows; other layouts
take the primitive's CuPy functions. The kernels compute ``y`` in GPT-2's order,
``(x - mean) * rstd * gamma + beta``, for contrib's form too (``x * k + (beta - mean *
k)``): the same value to rounding.

GELU is not lowered to ``cuda/transformer.py``'s GELU kernels: the elementwise fusion
already makes its forward one printed kernel and its backward another, as on the CPU,
and with ``passes/gelu.py`` (GPT-2's tanh form to ``gelu_tanh``/``gelu_tanh_grad``,
``prim/gelu.py``) the forward kernel (with the product's bias add) saves only its input
for the backward, which reads that and ``dy``: what the standalone kernels would do,
without a pass of their own over the bias add.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import rows as cuda_rows
from gradflow.backends.cuda import transformer as cuda_transformer
from gradflow.backends.cupy.emit import _Compiled
from gradflow.prim.registry import REGISTRY

_KERNELS = _Compiled(cuda_transformer.sources, "wide softmax rows run CuPy's functions")


def lower_softmax(xp, axis):
    """``softmax``: the block-per-row kernel for C-ordered rows wider than
    ``MAX_COLUMNS`` over the last axis, into ``out``; else the op's CuPy functions."""
    impl = REGISTRY["softmax"].impl

    def softmax(x, out=None):
        cols = x.shape[-1] if x.ndim else 0
        kernels = None
        if axis in (-1, x.ndim - 1) and cols > cuda_rows.MAX_COLUMNS and x.flags.c_contiguous \
                and (out is None or out.flags.c_contiguous):
            kernels = _KERNELS.get(x.dtype)
        if kernels is None:
            y = impl(xp, x, axis)
            if out is None:
                return y
            out[...] = y
            return out
        y = xp.empty_like(x) if out is None else out
        rows = x.size // cols
        kernels["softmax_wide"]((min(rows, 65535),), (cuda_transformer.BLOCK,),
                                (x, y, np.int64(rows), np.int64(cols)))
        return y

    softmax.accepts_out = True
    softmax.reads_whole_inputs = True  # never asked to write over its input
    return softmax


_NORM_KERNELS = _Compiled(cuda_transformer.sources, "layer norm runs CuPy's functions")


def _c_ordered(*arrays):
    return all(a is None or a.flags.c_contiguous for a in arrays)


def _out(xp, out, index, shape, dtype):
    """The plan's buffer of output ``index`` where it is C-ordered, else a new array."""
    o = None if out is None else out[index]
    if o is None or not o.flags.c_contiguous or tuple(o.shape) != tuple(shape) \
            or o.dtype != dtype:
        return xp.empty(tuple(shape), dtype=dtype)
    return o


def _into(out, values):
    out = out or (None,) * len(values)
    result = []
    for o, v in zip(out, values):
        if o is not None:
            o[...] = v
        result.append(v if o is None else o)
    return tuple(result)


def _stats_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) == np.float16 else np.dtype(dtype)


def lower_layer_norm_fwd(xp, eps, form):
    """``layer_norm_fwd``: one block per row writes ``y``, ``mean`` and ``rstd``."""
    impl = REGISTRY["layer_norm_fwd"].impl

    def layer_norm_fwd(x, gamma, beta, out=None):
        kernels = _NORM_KERNELS.get(x.dtype) if x.size and _c_ordered(x, gamma, beta) \
            and gamma.dtype == beta.dtype == x.dtype else None
        if kernels is None:
            return _into(out, impl(xp, x, gamma, beta, eps=eps, form=form))
        cols = x.shape[-1]
        rows = x.size // cols
        stats = tuple(x.shape[:-1]) + (1,)
        y = _out(xp, out, 0, x.shape, x.dtype)
        mean = _out(xp, out, 1, stats, _stats_dtype(x.dtype))
        rstd = _out(xp, out, 2, stats, _stats_dtype(x.dtype))
        kernels["layer_norm"]((min(rows, 65535),), (cuda_transformer.BLOCK,),
                              (x, gamma, beta, y, mean, rstd, np.int64(rows), np.int64(cols),
                               np.float64(eps)))
        return y, mean, rstd

    layer_norm_fwd.accepts_out = True
    layer_norm_fwd.reads_whole_inputs = True
    return layer_norm_fwd


def lower_layer_norm_bwd(xp):
    """``layer_norm_bwd``: ``dx`` one block per row, ``dgamma``/``dbeta`` one thread per
    column."""
    impl = REGISTRY["layer_norm_bwd"].impl

    def layer_norm_bwd(dy, x, gamma, mean, rstd, out=None):
        ok = x.size and _c_ordered(dy, x, gamma, mean, rstd) \
            and dy.dtype == gamma.dtype == x.dtype \
            and mean.dtype == rstd.dtype == _stats_dtype(x.dtype)
        kernels = _NORM_KERNELS.get(x.dtype) if ok else None
        if kernels is None:
            return _into(out, impl(xp, dy, x, gamma, mean, rstd))
        cols = x.shape[-1]
        rows = x.size // cols
        dx = _out(xp, out, 0, x.shape, x.dtype)
        dgamma = _out(xp, out, 1, (cols,), x.dtype)
        dbeta = _out(xp, out, 2, (cols,), x.dtype)
        block = cuda_transformer.BLOCK
        kernels["layer_norm_grad"]((min(rows, 65535),), (block,),
                                   (dy, x, gamma, mean, rstd, dx, np.int64(rows),
                                    np.int64(cols)))
        kernels["layer_norm_params_grad"](((cols + block - 1) // block,), (block,),
                                          (dy, x, mean, rstd, dgamma, dbeta, np.int64(rows),
                                           np.int64(cols)))
        return dx, dgamma, dbeta

    layer_norm_bwd.accepts_out = True
    layer_norm_bwd.reads_whole_inputs = True
    return layer_norm_bwd


LOWERINGS = {"softmax": lower_softmax, "layer_norm_fwd": lower_layer_norm_fwd,
             "layer_norm_bwd": lower_layer_norm_bwd}
