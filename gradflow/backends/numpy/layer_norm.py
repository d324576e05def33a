"""NumPy lowerings of the fused layer-norm pair (``layer_norm_fwd``, ``layer_norm_bwd``:
``gradflow/prim/layer_norm.py``, made by ``gradflow/passes/layer_norm.py``).

Where numba is there and the rows are C-ordered float32 or float64, each is one numba
kernel (``numpy/layer_norm_jit.py``): the forward reads each row twice and writes
``y``, ``mean`` and ``rstd``; the backward reads each row of ``dy`` and ``x`` twice and
writes ``dx``, adding into ``dgamma`` and ``dbeta``. The unfused plan runs about
fifteen fused-elementwise and reduction kernels for the pair, each a pass over the
[rows, n] arrays. Other dtypes, other layouts and a NumPy without numba take the
primitive's Array API implementation.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cpu.numba_support import get_numba
from gradflow.prim.registry import REGISTRY

FAST = (np.dtype(np.float32), np.dtype(np.float64))


def _jit():
    """The numba kernels (``numpy/layer_norm_jit.py``), or None without numba."""
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import layer_norm_jit  # noqa: PLC0415 - only with numba

    return layer_norm_jit


def _fast(*arrays):
    return all(a.dtype == arrays[0].dtype and a.flags.c_contiguous for a in arrays) \
        and arrays[0].dtype in FAST and arrays[0].ndim >= 1 and arrays[0].size > 0


def _buffer(out, index, shape, dtype):
    o = None if out is None else out[index]
    if o is None or not o.flags.c_contiguous or o.shape != shape or o.dtype != dtype:
        return np.empty(shape, dtype)
    return o


def _into(out, values):
    out = out or (None,) * len(values)
    return tuple(v if o is None else _copied(o, v) for o, v in zip(out, values))


def _copied(out, value):
    np.copyto(out, value)
    return out


def _writes_out(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def lower_layer_norm_fwd(xp, eps, form):
    impl = REGISTRY["layer_norm_fwd"].impl

    def layer_norm_fwd(x, gamma, beta, out=None):
        jit = _jit()
        if jit is None or not _fast(x, gamma, beta):
            return _into(out, impl(np, x, gamma, beta, eps=eps, form=form))
        n = x.shape[-1]
        stats = x.shape[:-1] + (1,)
        y = _buffer(out, 0, x.shape, x.dtype)
        mean = _buffer(out, 1, stats, x.dtype)
        rstd = _buffer(out, 2, stats, x.dtype)
        jit.forward(x.reshape(-1, n), gamma, beta, x.dtype.type(eps), form == "affine",
                    y.reshape(-1, n), mean.reshape(-1), rstd.reshape(-1))
        return y, mean, rstd

    return _writes_out(layer_norm_fwd)


def lower_layer_norm_bwd(xp):
    impl = REGISTRY["layer_norm_bwd"].impl

    def layer_norm_bwd(dy, x, gamma, mean, rstd, out=None):
        jit = _jit()
        if jit is None or not _fast(dy, x, gamma, mean, rstd):
            return _into(out, impl(np, dy, x, gamma, mean, rstd))
        n = x.shape[-1]
        dx = _buffer(out, 0, x.shape, x.dtype)
        sums = np.zeros((2, n))
        jit.backward(dy.reshape(-1, n), x.reshape(-1, n), gamma, mean.reshape(-1),
                     rstd.reshape(-1), dx.reshape(-1, n), sums[0], sums[1])
        dgamma = _buffer(out, 1, (n,), x.dtype)
        dbeta = _buffer(out, 2, (n,), x.dtype)
        dgamma[...] = sums[0]
        dbeta[...] = sums[1]
        return dx, dgamma, dbeta

    return _writes_out(layer_norm_bwd)


LOWERINGS = {"layer_norm_fwd": lower_layer_norm_fwd, "layer_norm_bwd": lower_layer_norm_bwd}
