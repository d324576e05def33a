"""numba kernels of the LSTM ops for float32 on NumPy: each op in one pass, on one core.

Imported only when numba is available (``numpy_lstm_kernels`` decides); every
kernel compiles on its first call and is cached on disk (``cache=True``).

Each kernel walks the batch rows and, within a row, the ``units`` positions
``k`` of the four gate blocks ``i, j, f, o`` at once, through 1-D views of the
row's blocks (indexing the 2-D arrays at ``b, n + k`` instead keeps LLVM from
vectorizing: it cannot prove the index non-negative). A kernel reads everything
it needs at ``k`` before it writes there, so an output may be the same array as
an input of its shape and the numbers stay right; LLVM's runtime overlap check
then takes the scalar loop, though, which is why the lowerings ask the plan for
buffers apart from their inputs. The inner loops are plain arithmetic, which
LLVM vectorizes: ``tanh`` is a rational function (``_tanh``) instead of a libm
call, and ``error_model="numpy"`` drops Python's division-by-zero check that
would stop vectorization. Only FMA contraction is allowed
(``fastmath={"contract"}``), so NaN and infinity behave as in NumPy.

Running the rows on both cores (``parallel=True`` with ``prange``) measured
slower at the sizes of a char-LSTM (batch 32, 4 x 128 gates: 36 us against
7 us for the forward gates on two cores): waking the threads costs more than
the few microseconds of a pass.
"""

from __future__ import annotations

import numba
import numpy as np

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"contract"})

# tanh(x) ~ x P(x^2) / Q(x^2) on |x| <= 9 (beyond, tanh rounds to +-1 in float32):
# my fit of a [9/8] odd rational (Lawson-reweighted linearized least squares on
# Chebyshev points); its error is 1.9e-8 in exact arithmetic and below 4e-7
# evaluated in float32 (np.tanh: 6e-8), the result clamped to [-1, 1].
_LIMIT = np.float32(9.0)
_P0 = np.float32(0.9999999063580886)
_P1 = np.float32(0.13373197984325025)
_P2 = np.float32(0.003486582225084935)
_P3 = np.float32(2.047183558043448e-05)
_P4 = np.float32(1.3184230079209609e-08)
_Q1 = np.float32(0.4670649484851538)
_Q2 = np.float32(0.025841980481043345)
_Q3 = np.float32(0.0003271385911929903)
_Q4 = np.float32(7.702666196469859e-07)
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)


@numba.njit(inline="always", **_OPTIONS)
def _tanh(x):
    """tanh of a float32, vectorizable; NaN stays NaN (comparisons with NaN are false)."""
    if x > _LIMIT:
        x = _LIMIT
    elif x < -_LIMIT:
        x = -_LIMIT
    s = x * x
    p = (((_P4 * s + _P3) * s + _P2) * s + _P1) * s + _P0
    q = (((_Q4 * s + _Q3) * s + _Q2) * s + _Q1) * s + _ONE
    t = x * p / q
    if t > _ONE:
        t = _ONE
    elif t < -_ONE:
        t = -_ONE
    return t


@numba.njit(inline="always", **_OPTIONS)
def _sigmoid_half(half_x):
    """sigmoid(x) from ``x / 2``: ``tanh(x / 2) / 2 + 1/2``."""
    return _HALF * _tanh(half_x) + _HALF


@numba.njit(inline="always", **_OPTIONS)
def _activate(a, n, k, i, j, f, o, half_forget_bias):
    """Write the four activations of the pre-activations ``i, j, f, o`` at ``k`` of the
    gates row ``a``."""
    a[k] = _sigmoid_half(_HALF * i)
    a[n + k] = _tanh(j)
    a[2 * n + k] = _sigmoid_half(_HALF * f + half_forget_bias)
    a[3 * n + k] = _sigmoid_half(_HALF * o)


@numba.njit(**_OPTIONS)
def gates_forward(z, half_forget_bias, out):
    """``out = [sigmoid(i), tanh(j), sigmoid(f + forget_bias), sigmoid(o)]`` of ``z``."""
    n = out.shape[1] // 4
    for b in range(out.shape[0]):
        zi, zj, zf, zo, a = z[b, :n], z[b, n:2 * n], z[b, 2 * n:3 * n], z[b, 3 * n:], out[b]
        for k in range(n):
            _activate(a, n, k, zi[k], zj[k], zf[k], zo[k], half_forget_bias)


@numba.njit(**_OPTIONS)
def gates_forward_sum3(x, y, row, half_forget_bias, out):
    """``gates_forward`` of ``(x + y) + row``: a step's two products and its bias."""
    n = out.shape[1] // 4
    for b in range(out.shape[0]):
        _gates_row(x[b], y[b], row, half_forget_bias, out[b], n)


@numba.njit(**_OPTIONS)
def gates_forward_sum2(x, row, half_forget_bias, out):
    """``gates_forward`` of ``x + row``."""
    n = out.shape[1] // 4
    for b in range(out.shape[0]):
        _gates_row2(x[b], row, half_forget_bias, out[b], n)


@numba.njit(**_OPTIONS)
def step_forward_sum3(x, y, row, c_prev, half_forget_bias, a, c, h):
    """A whole forward step in one call: ``gates_forward_sum3``, ``c_forward`` and
    ``h_forward``, row by row (the gates of a row are still in L1 when ``c`` and ``h``
    read them). Three loops, as three kernels have them: one loop over all fifteen
    arrays has too many pointers for LLVM's runtime overlap checks and is not
    vectorized (measured 14% slower than three calls)."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        _gates_row(x[b], y[b], row, half_forget_bias, a[b], n)
        _state_row(a[b], c_prev[b], c[b], h[b], n)


@numba.njit(**_OPTIONS)
def step_forward_sum2(x, row, c_prev, half_forget_bias, a, c, h):
    """``step_forward_sum3`` with one full term."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        _gates_row2(x[b], row, half_forget_bias, a[b], n)
        _state_row(a[b], c_prev[b], c[b], h[b], n)


@numba.njit(inline="always", **_OPTIONS)
def _gates_row(x, y, row, half_forget_bias, a, n):
    xi, xj, xf, xo = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
    yi, yj, yf, yo = y[:n], y[n:2 * n], y[2 * n:3 * n], y[3 * n:]
    ri, rj, rf, ro = row[:n], row[n:2 * n], row[2 * n:3 * n], row[3 * n:]
    for k in range(n):
        _activate(a, n, k, (xi[k] + yi[k]) + ri[k], (xj[k] + yj[k]) + rj[k],
                  (xf[k] + yf[k]) + rf[k], (xo[k] + yo[k]) + ro[k], half_forget_bias)


@numba.njit(inline="always", **_OPTIONS)
def _gates_row2(x, row, half_forget_bias, a, n):
    xi, xj, xf, xo = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
    ri, rj, rf, ro = row[:n], row[n:2 * n], row[2 * n:3 * n], row[3 * n:]
    for k in range(n):
        _activate(a, n, k, xi[k] + ri[k], xj[k] + rj[k], xf[k] + rf[k], xo[k] + ro[k],
                  half_forget_bias)


@numba.njit(inline="always", **_OPTIONS)
def _c_row(a, c_prev, c, n):
    ai, aj, af = a[:n], a[n:2 * n], a[2 * n:3 * n]
    for k in range(n):
        c[k] = af[k] * c_prev[k] + ai[k] * aj[k]


@numba.njit(inline="always", **_OPTIONS)
def _h_row(a, c, h, n):
    ao = a[3 * n:]
    for k in range(n):
        h[k] = ao[k] * _tanh(c[k])


@numba.njit(inline="always", **_OPTIONS)
def _state_row(a, c_prev, c, h, n):
    _c_row(a, c_prev, c, n)
    _h_row(a, c, h, n)


@numba.njit(**_OPTIONS)
def gates_backward(g, a, out):
    """``out = g (1 - a)(a + m)``: ``g a (1 - a)`` on the sigmoid blocks, ``g (1 - a^2)``
    on the tanh block ``j``."""
    n = out.shape[1] // 4
    for b in range(out.shape[0]):
        gi, gj, gf, go = g[b, :n], g[b, n:2 * n], g[b, 2 * n:3 * n], g[b, 3 * n:]
        ai, aj, af, ao = a[b, :n], a[b, n:2 * n], a[b, 2 * n:3 * n], a[b, 3 * n:]
        oi, oj, of, oo = out[b, :n], out[b, n:2 * n], out[b, 2 * n:3 * n], out[b, 3 * n:]
        for k in range(n):
            i, j, f, o = ai[k], aj[k], af[k], ao[k]
            oi[k] = gi[k] * (_ONE - i) * i
            oj[k] = gj[k] * (_ONE - j) * (j + _ONE)
            of[k] = gf[k] * (_ONE - f) * f
            oo[k] = go[k] * (_ONE - o) * o


@numba.njit(**_OPTIONS)
def c_forward(a, c_prev, out):
    """``out = f * c_prev + i * j``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        _c_row(a[b], c_prev[b], out[b], n)


@numba.njit(**_OPTIONS)
def h_forward(a, c, out):
    """``out = o * tanh(c)``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        _h_row(a[b], c[b], out[b], n)


@numba.njit(**_OPTIONS)
def c_backward_gates(g, a, c_prev, out):
    """The gradient of ``f * c_prev + i * j`` for the gates: ``[g j, g i, g c_prev, 0]``."""
    n = g.shape[1]
    for b in range(out.shape[0]):
        gr, ai, aj, cp = g[b], a[b, :n], a[b, n:2 * n], c_prev[b]
        oi, oj, of, oo = out[b, :n], out[b, n:2 * n], out[b, 2 * n:3 * n], out[b, 3 * n:]
        for k in range(n):
            gk, i, j = gr[k], ai[k], aj[k]
            oi[k] = gk * j
            oj[k] = gk * i
            of[k] = gk * cp[k]
            oo[k] = _ZERO


@numba.njit(**_OPTIONS)
def c_backward_state(g, a, out):
    """The gradient of ``f * c_prev + i * j`` for ``c_prev``: ``g f``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        gr, af, orow = g[b], a[b, 2 * n:3 * n], out[b]
        for k in range(n):
            orow[k] = gr[k] * af[k]


@numba.njit(**_OPTIONS)
def h_backward_gates(g, c, out):
    """The gradient of ``o * tanh(c)`` for the gates: ``[0, 0, 0, g tanh(c)]``."""
    n = g.shape[1]
    for b in range(out.shape[0]):
        orow, oo, gr, cr = out[b], out[b, 3 * n:], g[b], c[b]
        for k in range(3 * n):
            orow[k] = _ZERO
        for k in range(n):
            oo[k] = gr[k] * _tanh(cr[k])


@numba.njit(**_OPTIONS)
def h_backward_state(g, a, c, out):
    """The gradient of ``o * tanh(c)`` for ``c``: ``g o (1 - tanh(c)^2)``."""
    n = out.shape[1]
    for b in range(out.shape[0]):
        gr, ao, cr, orow = g[b], a[b, 3 * n:], c[b], out[b]
        for k in range(n):
            t = _tanh(cr[k])
            orow[k] = gr[k] * ao[k] * (_ONE - t * t)


@numba.njit(**_OPTIONS)
def cell_backward(dc, dh, a, c, c_prev, out):
    """``out = [dc j, dc i, dc c_prev, dh tanh(c)] (1 - a)(a + m)``: the gate gradient of
    one step, as ``c_backward_gates``, ``h_backward_gates`` and ``gates_backward`` give it
    in three passes (the same products in the same order)."""
    n = c.shape[1]
    for b in range(out.shape[0]):
        _gate_grad_row(dc[b], dh[b], c[b], c_prev[b], a[b], out[b], n)


@numba.njit(inline="always", **_OPTIONS)
def _gate_grad_row(dc, dh, c, c_prev, a, out, n):
    ai, aj, af, ao = a[:n], a[n:2 * n], a[2 * n:3 * n], a[3 * n:]
    oi, oj, of, oo = out[:n], out[n:2 * n], out[2 * n:3 * n], out[3 * n:]
    for k in range(n):
        d, i, j, f, o = dc[k], ai[k], aj[k], af[k], ao[k]
        oi[k] = d * j * (_ONE - i) * i
        oj[k] = d * i * (_ONE - j) * (j + _ONE)
        of[k] = d * c_prev[k] * (_ONE - f) * f
        oo[k] = dh[k] * _tanh(c[k]) * (_ONE - o) * o


@numba.njit(**_OPTIONS)
def step_backward(dh, dc_next, a, c, c_prev, dz, dc_prev):
    """A whole backward step: ``dc = dh o (1 - tanh(c)^2) + dc_next`` (kept in
    ``dc_prev`` meanwhile), the gate gradient ``dz`` as ``cell_backward`` computes it
    from ``dc``, and ``dc_prev = dc f``; three loops per row, each over few enough
    arrays for LLVM to vectorize."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        step_backward_row(dh[b], dc_next[b], a[b], c[b], c_prev[b], dz[b], dc_prev[b], n)


@numba.njit(**_OPTIONS)
def step_backward_row(dhr, dcn, ar, cr, cpr, dzr, dcr, n):
    """One row of ``step_backward`` (also ``lstm_seq_jit``'s, after its add)."""
    af, ao = ar[2 * n:3 * n], ar[3 * n:]
    for k in range(n):
        t = _tanh(cr[k])
        dcr[k] = dhr[k] * ao[k] * (_ONE - t * t) + dcn[k]
    _gate_grad_row(dcr, dhr, cr, cpr, ar, dzr, n)
    for k in range(n):
        dcr[k] = dcr[k] * af[k]
