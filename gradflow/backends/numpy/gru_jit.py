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
_HALF = np.float32(0.5)
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
def h_grads(t0, t1, t2, t3, terms, gates, zc, h, dgates, dzc, dh):
    """``g = ((t0 + t1) + t2) + t3`` (its first ``terms`` terms; ``dh`` holds it
    meanwhile), then ``dgates = [0, g (h - c)]``, ``dzc = g (1 - u)(1 - c^2)``,
    ``dh = g u`` with ``c = tanh(zc)``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        dhr = dh[b]
        _sum_row(t0[b], t1[b], t2[b], t3[b], terms, dhr, n)
        u, zr, hr = gates[b, n:], zc[b], h[b]
        dr, du, dzr = dgates[b, :n], dgates[b, n:], dzc[b]
        for k in range(n):
            gk, uk, c = dhr[k], u[k], _tanh(zr[k])
            dr[k] = _ZERO
            du[k] = gk * (hr[k] - c)
            dzr[k] = gk * (_ONE - uk) * (_ONE - c * c)
            dhr[k] = gk * uk


@numba.njit(inline="always", **_OPTIONS)
def _sum_row(t0, t1, t2, t3, terms, out, n):
    for k in range(n):
        out[k] = t0[k]
    if terms > 1:
        for k in range(n):
            out[k] = out[k] + t1[k]
    if terms > 2:
        for k in range(n):
            out[k] = out[k] + t2[k]
    if terms > 3:
        for k in range(n):
            out[k] = out[k] + t3[k]


@numba.njit(**_OPTIONS)
def gates_step(x, y, row, terms, h, gates, rh):
    """``gates = sigmoid((x + y) + row)`` (``x + row`` when ``terms`` is 2), ``rh = r h``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        xr, yr, a = x[b], y[b], gates[b]
        if terms == 3:
            for k in range(2 * n):
                a[k] = _HALF * _tanh(_HALF * ((xr[k] + yr[k]) + row[k])) + _HALF
        else:
            for k in range(2 * n):
                a[k] = _HALF * _tanh(_HALF * (xr[k] + row[k])) + _HALF
        r, hr, o = a[:n], h[b], rh[b]
        for k in range(n):
            o[k] = r[k] * hr[k]


@numba.njit(**_OPTIONS)
def h_step(x, y, row, terms, gates, h, zc, h_new):
    """``zc = (x + y) + row`` (``x + row`` when ``terms`` is 2), ``h_new = u h + (1 - u)
    tanh(zc)``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        xr, yr, z = x[b], y[b], zc[b]
        if terms == 3:
            for k in range(n):
                z[k] = (xr[k] + yr[k]) + row[k]
        else:
            for k in range(n):
                z[k] = xr[k] + row[k]
        u, hr, o = gates[b, n:], h[b], h_new[b]
        for k in range(n):
            uk = u[k]
            o[k] = uk * hr[k] + (_ONE - uk) * _tanh(z[k])


@numba.njit(**_OPTIONS)
def gates_grad(drh, dgh, gates, h, dz, dh):
    """``dz = ((dgh + [drh h, 0]) s)(1 - s)`` (``s`` the gates), ``dh = drh r``."""
    n = h.shape[1]
    for b in range(h.shape[0]):
        dr, hr, r, u = drh[b], h[b], gates[b, :n], gates[b, n:]
        gr, gu, zr, zu, dhr = dgh[b, :n], dgh[b, n:], dz[b, :n], dz[b, n:], dh[b]
        for k in range(n):
            rk = r[k]
            zr[k] = ((gr[k] + dr[k] * hr[k]) * rk) * (_ONE - rk)
            dhr[k] = dr[k] * rk
        for k in range(n):
            uk = u[k]
            zu[k] = ((gu[k] + _ZERO) * uk) * (_ONE - uk)
