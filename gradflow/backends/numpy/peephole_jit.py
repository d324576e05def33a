"""numba kernels of the peephole LSTM cell's ops for float32 on NumPy
(``gradflow/prim/lstm_peephole.py``; lowerings in ``peephole.py``).

As the LSTM kernels (``lstm_jit``): one pass per op over the batch rows, 1-D views of
each row's gate blocks ``i, j, f, o``, the same rational ``tanh``, only FMA contraction
allowed. The weight gradients are summed over the batch rows in order.
"""

from __future__ import annotations

import numba
import numpy as np

from gradflow.backends.numpy.gru_jit import _sum_row  # the same sum of 1 to 4 rows
from gradflow.backends.numpy.lstm_jit import _tanh

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"contract"})
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)


@numba.njit(inline="always", **_OPTIONS)
def _sigmoid(x):
    return _HALF * _tanh(_HALF * x) + _HALF


@numba.njit(inline="always", **_OPTIONS)
def _clipped(c, clip, has_clip):
    if has_clip:
        if c < -clip:
            c = -clip
        if c > clip:
            c = clip
    return c


@numba.njit(**_OPTIONS)
def c_forward(z, c_prev, w_i, w_f, forget_bias, clip, has_clip, out):
    """``out = clip(sigmoid((f + fb) + w_f cp) cp + sigmoid(i + w_i cp) tanh(j))``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        zi, zj, zf, cp, o = z[b, :n], z[b, n:2 * n], z[b, 2 * n:3 * n], c_prev[b], out[b]
        for k in range(n):
            c = _cell_value(zi[k], zj[k], zf[k], cp[k], w_i[k], w_f[k], forget_bias)
            o[k] = _clipped(c, clip, has_clip)


@numba.njit(inline="always", **_OPTIONS)
def _cell_value(zi, zj, zf, cp, wi, wf, forget_bias):
    si = _sigmoid(zi + wi * cp)
    sf = _sigmoid((zf + forget_bias) + wf * cp)
    return sf * cp + si * _tanh(zj)


@numba.njit(**_OPTIONS)
def h_forward(z, c, w_o, out):
    """``out = sigmoid(o + w_o c) tanh(c)``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        zo, cr, o = z[b, 3 * n:], c[b], out[b]
        for k in range(n):
            ck = cr[k]
            o[k] = _sigmoid(zo[k] + w_o[k] * ck) * _tanh(ck)


@numba.njit(**_OPTIONS)
def c_grads(g, z, c_prev, w_i, w_f, forget_bias, clip, has_clip, dz, dc_prev, dw_i, dw_f):
    """Every gradient of ``c_forward``: the gates' ``[dai, dj, daf, 0]``, the state's
    ``g sf + dai w_i + daf w_f`` and the weights' ``sum_b dai cp``, ``sum_b daf cp``
    (``g`` zero where the clip held ``c``)."""
    n = c_prev.shape[1]
    for k in range(n):
        dw_i[k] = _ZERO
        dw_f[k] = _ZERO
    for b in range(c_prev.shape[0]):
        zi, zj, zf, cp, gr = z[b, :n], z[b, n:2 * n], z[b, 2 * n:3 * n], c_prev[b], g[b]
        di, dj, df, do, dcp = dz[b, :n], dz[b, n:2 * n], dz[b, 2 * n:3 * n], dz[b, 3 * n:], \
            dc_prev[b]
        for k in range(n):
            c = cp[k]
            si = _sigmoid(zi[k] + w_i[k] * c)
            sf = _sigmoid((zf[k] + forget_bias) + w_f[k] * c)
            tj = _tanh(zj[k])
            gk = gr[k]
            if has_clip:
                raw = sf * c + si * tj
                if raw < -clip or raw > clip:
                    gk = _ZERO
            dai = gk * tj * (_ONE - si) * si
            daf = gk * c * (_ONE - sf) * sf
            di[k] = dai
            dj[k] = gk * si * (_ONE - tj * tj)
            df[k] = daf
            do[k] = _ZERO
            dcp[k] = (gk * sf + dai * w_i[k]) + daf * w_f[k]
            dw_i[k] += dai * c
            dw_f[k] += daf * c


@numba.njit(**_OPTIONS)
def h_grads(g, z, c, w_o, dz, dc, dw_o):
    """Every gradient of ``h_forward``: the gates' ``[0, 0, 0, dao]``, the state's
    ``g so (1 - tanh(c)^2) + dao w_o``, the weight's ``sum_b dao c``."""
    n = c.shape[1]
    for k in range(n):
        dw_o[k] = _ZERO
    for b in range(c.shape[0]):
        zo, cr, gr, dr, dzr = z[b, 3 * n:], c[b], g[b], dc[b], dz[b]
        for k in range(3 * n):
            dzr[k] = _ZERO
        do = dz[b, 3 * n:]
        for k in range(n):
            ck, gk = cr[k], gr[k]
            so = _sigmoid(zo[k] + w_o[k] * ck)
            tc = _tanh(ck)
            dao = gk * tc * (_ONE - so) * so
            do[k] = dao
            dr[k] = gk * so * (_ONE - tc * tc) + dao * w_o[k]
            dw_o[k] += dao * ck


@numba.njit(**_OPTIONS)
def step_forward(x, y, row, terms, c_prev, w_i, w_f, w_o, forget_bias, clip, has_clip, z, c,
                 h):
    """A whole step: ``z = (x + y) + row`` (``x + row`` when ``terms`` is 2), then
    ``c_forward`` and ``h_forward`` of it, row by row."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        xr, yr, zr = x[b], y[b], z[b]
        if terms == 3:
            for k in range(4 * n):
                zr[k] = (xr[k] + yr[k]) + row[k]
        else:
            for k in range(4 * n):
                zr[k] = xr[k] + row[k]
        cp, cr, hr = c_prev[b], c[b], h[b]
        for k in range(n):
            ck = _clipped(_cell_value(zr[k], zr[n + k], zr[2 * n + k], cp[k], w_i[k], w_f[k],
                                      forget_bias), clip, has_clip)
            cr[k] = ck
            hr[k] = _sigmoid(zr[3 * n + k] + w_o[k] * ck) * _tanh(ck)


@numba.njit(**_OPTIONS)
def step_backward(t0, t1, t2, t3, terms, dc_next, carry, z, c_prev, c, w_i, w_f, w_o,
                  forget_bias, clip, has_clip, dz, dc_prev, dw_i, dw_f, dw_o):
    """A whole backward step: the output's gradient ``g`` (the first ``terms`` of ``t0..t3``
    summed left to right; ``dc_prev`` holds it, then the cell state's gradient), ``h_grads``
    of it, plus ``dc_next`` (where ``carry``), ``c_grads`` of that, the gates' gradients in
    one ``dz``. Several loops a row, each over few enough arrays for LLVM to vectorize (one
    loop over all of them was slower than the four kernels it stands for)."""
    n = c.shape[1]
    for k in range(n):
        dw_i[k] = _ZERO
        dw_f[k] = _ZERO
        dw_o[k] = _ZERO
    for b in range(c.shape[0]):
        dcp = dc_prev[b]
        _sum_row(t0[b], t1[b], t2[b], t3[b], terms, dcp, n)
        zi, zj, zf, zo = z[b, :n], z[b, n:2 * n], z[b, 2 * n:3 * n], z[b, 3 * n:]
        di, dj, df, do = dz[b, :n], dz[b, n:2 * n], dz[b, 2 * n:3 * n], dz[b, 3 * n:]
        cr, cp = c[b], c_prev[b]
        for k in range(n):
            gk, ck = dcp[k], cr[k]
            so = _sigmoid(zo[k] + w_o[k] * ck)
            tc = _tanh(ck)
            dao = gk * tc * (_ONE - so) * so
            do[k] = dao
            dcp[k] = gk * so * (_ONE - tc * tc) + dao * w_o[k]
            dw_o[k] += dao * ck
        if carry:
            dn = dc_next[b]
            for k in range(n):
                dcp[k] = dcp[k] + dn[k]
        for k in range(n):
            gc, pk = dcp[k], cp[k]
            si = _sigmoid(zi[k] + w_i[k] * pk)
            sf = _sigmoid((zf[k] + forget_bias) + w_f[k] * pk)
            tj = _tanh(zj[k])
            if has_clip:
                raw = sf * pk + si * tj
                if raw < -clip or raw > clip:
                    gc = _ZERO
            dai = gc * tj * (_ONE - si) * si
            daf = gc * pk * (_ONE - sf) * sf
            di[k] = dai
            dj[k] = gc * si * (_ONE - tj * tj)
            df[k] = daf
            dcp[k] = (gc * sf + dai * w_i[k]) + daf * w_f[k]
            dw_i[k] += dai * pk
            dw_f[k] += daf * pk


