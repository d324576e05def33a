"""numba kernels of the GRU step's ops for float32 on NumPy (``gradflow/prim/gru.py``).

Imported only where numba is available (``backends/numpy/gru.py`` decides). As the LSTM
kernels (``numpy_lstm_jit``): one pass per op over the batch rows, 1-D views of
each row's gate halves ``r, u`` so LLVM vectorizes the inner loops, ``tanh`` the
same rational approximation (within 4e-7 of NumPy's in float32), only FMA
contraction allowed. Each kernel reads what it needs at ``k`` before it writes
there.
"""

from __future__ import annotations

import numba
import numpy as np

from gradflow.backends.numpy.lstm_jit import _tanh

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"contract"})
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@numba.njit(**_OPTIONS)
def rh_forward(gates, h, out):
    """``out = r * h``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        r, hr, o = gates[b, :n], h[b], out[b]
        for k in range(n):
            o[k] = r[k] * hr[k]


@numba.njit(**_OPTIONS)
def h_forward(gates, zc, h, out):
    """``out = u * h + (1 - u) * tanh(zc)``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        u, zr, hr, o = gates[b, n:], zc[b], h[b], out[b]
        for k in range(n):
            uk = u[k]
            o[k] = uk * hr[k] + (_ONE - uk) * _tanh(zr[k])


@numba.njit(**_OPTIONS)
def rh_grads(g, gates, h, dgates, dh):
    """``dgates = [g h, 0]``, ``dh = g r``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        gr, r, hr, dr, du, dhr = g[b], gates[b, :n], h[b], dgates[b, :n], dgates[b, n:], dh[b]
        for k in range(n):
            gk = gr[k]
            dr[k] = gk * hr[k]
            du[k] = _ZERO
            dhr[k] = gk * r[k]


@numba.njit(**_OPTIONS)
def h_grads(g, gates, zc, h, dgates, dzc, dh):
    """``dgates = [0, g (h - c)]``, ``dzc = g (1 - u)(1 - c^2)``, ``dh = g u`` with
    ``c = tanh(zc)``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        gr, u, zr, hr = g[b], gates[b, n:], zc[b], h[b]
        dr, du, dzr, dhr = dgates[b, :n], dgates[b, n:], dzc[b], dh[b]
        for k in range(n):
            gk, uk, c = gr[k], u[k], _tanh(zr[k])
            dr[k] = _ZERO
            du[k] = gk * (hr[k] - c)
            dzr[k] = gk * (_ONE - uk) * (_ONE - c * c)
            dhr[k] = gk * uk
