"""numba kernels of the NumPy layer-norm pair (``numpy/layer_norm.py``): one pass per row
forward, one backward, on one core.

``forward(x, gamma, beta, eps, affine, y, mean, rstd)`` reads each row of ``x`` [rows, n]
twice (its mean, then the squared deviations) and writes ``y`` in the order of the
unfused ops (``affine``: contrib's ``x * k + (beta - mean * k)`` with ``k = rstd *
gamma``; else GPT-2's ``(x - mean) * rstd * gamma + beta``). ``backward(dy, x, gamma,
mean, rstd, dx, dgamma, dbeta)`` writes ``dx`` row by row and adds each row into the
``dgamma`` and ``dbeta`` accumulators (float64, zeroed by the caller). Sums add in
order where NumPy adds pairwise, and the float32 rows' sums are taken in float64, so
float32 results differ from the unfused graph's in the last bits. Imported only where
numba is available; compiles on first call per dtype, cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"contract", "reassoc"})


@numba.njit(**_OPTIONS)
def forward(x, gamma, beta, eps, affine, y, mean, rstd):
    rows, n = x.shape
    for r in range(rows):
        xr = x[r]
        total = 0.0
        for j in range(n):
            total += xr[j]
        mu = xr.dtype.type(total / n)
        sq = 0.0
        for j in range(n):
            d = xr[j] - mu
            sq += d * d
        var = xr.dtype.type(sq / n)
        inv = xr.dtype.type(1) / np.sqrt(var + eps)
        mean[r], rstd[r] = mu, inv
        yr = y[r]
        if affine:
            for j in range(n):
                k = inv * gamma[j]
                yr[j] = xr[j] * k + (beta[j] - mu * k)
        else:
            for j in range(n):
                yr[j] = (xr[j] - mu) * inv * gamma[j] + beta[j]


@numba.njit(**_OPTIONS)
def backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta):
    rows, n = x.shape
    for r in range(rows):
        xr, dr, out = x[r], dy[r], dx[r]
        mu, inv = mean[r], rstd[r]
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            xhat = (xr[j] - mu) * inv
            g = dr[j] * gamma[j]
            s1 += g
            s2 += g * xhat
            dgamma[j] += dr[j] * xhat
            dbeta[j] += dr[j]
        m1 = xr.dtype.type(s1 / n)
        m2 = xr.dtype.type(s2 / n)
        for j in range(n):
            xhat = (xr[j] - mu) * inv
            out[j] = inv * (dr[j] * gamma[j] - m1 - xhat * m2)
