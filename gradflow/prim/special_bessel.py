"""The Bessel functions of orders 0 and 1 that TF1 has (``tf.math.bessel_i0``, ...,
``tf.math.special.bessel_j0``, ...), with TF's gradients.

Each computes in float64 (other float inputs cast up, the result cast back), written once
against the Array API from the classical expansions:

- ``I0``, ``I1`` (and the scaled ``I0e``, ``I1e``): their power series (DLMF 10.25.2; all
  terms positive) up to ``|x| = 30``, the asymptotic expansion (DLMF 10.40.1) above.
- ``K0``, ``K1`` (and ``K0e``, ``K1e``): the series with logarithms (A&S 9.6.13, 9.6.11)
  up to 2; from 2 to 20 the integral ``K_n(x) = int_0^inf exp(-x cosh t) cosh(n t) dt``
  (DLMF 10.32.9) by the trapezoidal rule, which converges geometrically for it (step
  0.07, error about 1e-17); the asymptotic expansion (DLMF 10.40.2) above 20.
- ``J0``, ``J1``, ``Y0``, ``Y1``: the series (A&S 9.1.10, 9.1.11) up to 2; from 2 to 25
  Miller's backward recurrence from order 80, normalized by ``J0 + 2 J2 + 2 J4 + ... = 1``
  (A&S 9.1.46), with ``Y0`` from Neumann's series in the even orders (A&S 9.1.88) and
  ``Y1 = -Y0'`` from the same sums; Hankel's expansion (DLMF 10.17.3) above 25, with the
  phase ``x - pi/4`` taken as ``(cos x + sin x) / sqrt 2`` so that no rounding of ``x``
  enters it.

Accuracy: a few ulps where the functions do not oscillate; ``J`` and ``Y`` within a few
ulps of their largest nearby value (absolute, not relative, next to their zeros beyond the
first, as TF's are).
"""

from __future__ import annotations

import math

from gradflow.prim import call, rules
from gradflow.prim.registry import register
from gradflow.prim.special import _EULER_GAMMA, _full, _in_float64

_SQRT_HALF = math.sqrt(0.5)
_TWO_OVER_PI = 2.0 / math.pi


def _asymptotic_terms(nu, count):
    """``a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k)``, k = 0..count-1 (DLMF
    10.17.1)."""
    out, a = [1.0], 1.0
    for k in range(1, count):
        a = a * (4.0 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)
        out.append(a)
    return out


_A0 = _asymptotic_terms(0, 48)
_A1 = _asymptotic_terms(1, 48)


def _sum_powers(xp, coeffs, t):
    """``sum_k coeffs[k] t^k`` by Horner's rule, ``t`` an array."""
    out = coeffs[-1] + 0.0 * t
    for c in coeffs[-2::-1]:
        out = out * t + c
    return out


# -- I0, I1 -----------------------------------------------------------------------------


def _i_series(xp, x):
    """``(I0(x), I1(x))`` for ``|x| <= 30`` (50 terms: the tail is below 1e-22 there)."""
    y = 0.25 * x * x
    t0, t1 = xp.ones_like(x), 0.5 * x
    s0, s1 = t0, t1
    for k in range(1, 50):
        t0 = t0 * y / (k * k)
        t1 = t1 * y / (k * (k + 1.0))
        s0, s1 = s0 + t0, s1 + t1
    return s0, s1


def _i_scaled_large(xp, ax):
    """``(I0e, I1e)`` at ``|x| >= 30`` from DLMF 10.40.1 (sign of ``I1`` left out)."""
    t = -1.0 / ax
    front = 1.0 / xp.sqrt(2.0 * math.pi * ax)
    return front * _sum_powers(xp, _A0[:30], t), front * _sum_powers(xp, _A1[:30], t)


def _i_all(xp, x):
    """``(I0, I0e, I1, I1e)``, each for every real ``x``."""
    ax = xp.abs(x)
    small = ax <= 30.0
    sx = xp.where(small, x, _full(xp, x, 1.0))
    s0, s1 = _i_series(xp, sx)
    lx = xp.where(small, _full(xp, x, 31.0), ax)
    e0, e1 = _i_scaled_large(xp, lx)
    e1 = xp.where(x < 0.0, -e1, e1)
    scale_down = xp.exp(-xp.where(small, ax, 0.0 * ax))
    # I = Ie exp(|x|), as exp(|x| / 2)^2 so that I stays finite as far as it can
    half_up = xp.exp(0.5 * xp.where(small, 0.0 * ax, lx))
    i0 = xp.where(small, s0, e0 * half_up * half_up)
    i1 = xp.where(small, s1, e1 * half_up * half_up)
    i0e = xp.where(small, s0 * scale_down, e0)
    i1e = xp.where(small, s1 * scale_down, e1)
    inf = ax == math.inf
    zero, big = xp.zeros_like(x), _full(xp, x, math.inf)
    return (xp.where(inf, big, i0), xp.where(inf, zero, i0e),
            xp.where(inf, xp.where(x > 0.0, big, -big), i1), xp.where(inf, zero, i1e))


# -- K0, K1 -------------------------------------------------------------------------------

_K_STEP = 0.07
_K_NODES = 57  # t up to 3.92: exp(-2 (cosh t - 1)) < 1e-18 beyond


def _k_series(xp, x):
    """``(K0, K1)`` for ``0 < x <= 2`` (A&S 9.6.13 and 9.6.11, 25 terms)."""
    y = 0.25 * x * x
    log_half = xp.log(0.5 * x)
    i0, i1 = _i_series(xp, x)
    t0, t1 = xp.ones_like(x), xp.ones_like(x)  # y^k / k!^2, y^k / (k! (k+1)!)
    harmonic = 0.0
    s0 = xp.zeros_like(x)
    s1 = (1.0 - 2.0 * _EULER_GAMMA) + 0.0 * x  # psi(1) + psi(2)
    for k in range(1, 25):
        t0 = t0 * y / (k * k)
        t1 = t1 * y / (k * (k + 1.0))
        harmonic += 1.0 / k
        s0 = s0 + harmonic * t0
        s1 = s1 + (2.0 * harmonic + 1.0 / (k + 1.0) - 2.0 * _EULER_GAMMA) * t1
    k0 = -(log_half + _EULER_GAMMA) * i0 + s0
    k1 = 1.0 / x + log_half * i1 - 0.25 * x * s1
    return k0, k1


def _k_scaled_integral(xp, x):
    """``(K0e, K1e)`` for ``2 <= x <= 20``: ``int_0^inf exp(-x (cosh t - 1)) cosh(n t) dt``
    by the trapezoidal rule."""
    s0 = 0.5 * xp.ones_like(x)
    s1 = 0.5 * xp.ones_like(x)
    for j in range(1, _K_NODES):
        t = j * _K_STEP
        w = xp.exp(-x * (2.0 * math.sinh(0.5 * t) ** 2))  # cosh t - 1, without cancelling
        s0 = s0 + w
        s1 = s1 + w * math.cosh(t)
    return _K_STEP * s0, _K_STEP * s1


def _k_scaled_large(xp, x):
    """``(K0e, K1e)`` for ``x >= 20`` (DLMF 10.40.2)."""
    t = 1.0 / x
    front = xp.sqrt(math.pi / (2.0 * x))
    return front * _sum_powers(xp, _A0[:40], t), front * _sum_powers(xp, _A1[:40], t)


def _k_all(xp, x):
    """``(K0, K0e, K1, K1e)``: inf at and below 0 (as TF's), 0 at inf."""
    small, mid = x <= 2.0, (x > 2.0) & (x <= 20.0)
    sx = xp.where(small & (x > 0.0), x, _full(xp, x, 1.0))
    mx = xp.where(mid, x, _full(xp, x, 3.0))
    lx = xp.where(~small & ~mid & xp.isfinite(x), x, _full(xp, x, 30.0))
    k0s, k1s = _k_series(xp, sx)
    k0m, k1m = _k_scaled_integral(xp, mx)
    k0l, k1l = _k_scaled_large(xp, lx)
    k0e = xp.where(mid, k0m, k0l)
    k1e = xp.where(mid, k1m, k1l)
    down = xp.exp(-xp.where(small, 0.0 * x, xp.where(mid, mx, lx)))
    up = xp.exp(xp.where(small, sx, 0.0 * x))
    out = (xp.where(small, k0s, k0e * down), xp.where(small, k0s * up, k0e),
           xp.where(small, k1s, k1e * down), xp.where(small, k1s * up, k1e))
    fix = [xp.where(x == math.inf, xp.zeros_like(x), v) for v in out]
    # TF's: inf at and below 0
    fix = [xp.where(x <= 0.0, _full(xp, x, math.inf), v) for v in fix]
    return [xp.where(xp.isnan(x), _full(xp, x, math.nan), v) for v in fix]


# -- J0, J1, Y0, Y1 -----------------------------------------------------------------------

_MILLER_START = 80


def _jy_series(xp, x):
    """``(J0, J1, Y0, Y1)`` for ``0 < x <= 2`` (A&S 9.1.10, 9.1.11; 25 terms)."""
    y = -0.25 * x * x
    t0, t1 = xp.ones_like(x), xp.ones_like(x)  # (-y)^k / k!^2, (-y)^k / (k! (k+1)!)
    j0, j1 = t0, t1
    s0 = xp.zeros_like(x)
    s1 = (1.0 - 2.0 * _EULER_GAMMA) + 0.0 * x  # psi(1) + psi(2)
    harmonic = 0.0
    for k in range(1, 25):
        t0 = t0 * y / (k * k)
        t1 = t1 * y / (k * (k + 1.0))
        harmonic += 1.0 / k
        j0, j1 = j0 + t0, j1 + t1
        s0 = s0 + harmonic * t0
        s1 = s1 + (2.0 * harmonic + 1.0 / (k + 1.0) - 2.0 * _EULER_GAMMA) * t1
    j1 = 0.5 * x * j1
    log_half = xp.log(0.5 * x)
    y0 = _TWO_OVER_PI * ((log_half + _EULER_GAMMA) * j0 - s0)
    y1 = -_TWO_OVER_PI / x + _TWO_OVER_PI * log_half * j1 - 0.5 * x * s1 / math.pi
    return j0, j1, y0, y1


def _jy_miller(xp, x):
    """``(J0, J1, Y0, Y1)`` for ``2 <= x <= 25`` by backward recurrence."""
    later, now = xp.zeros_like(x), xp.ones_like(x)  # f_{n+1}, f_n for n = 80
    f = {_MILLER_START + 1: later, _MILLER_START: now}
    for n in range(_MILLER_START, 0, -1):
        later, now = now, (2.0 * n / x) * now - later
        f[n - 1] = now
    # 1 = J0 + 2 sum J_2k; Neumann's sums sum (-1)^k J_2k / k, sum (-1)^k (J_2k-1 - J_2k+1) / k
    norm, even, odd = f[0], xp.zeros_like(x), xp.zeros_like(x)
    for k in range(1, _MILLER_START // 2 + 1):
        sign = -1.0 if k % 2 else 1.0
        norm = norm + 2.0 * f[2 * k]
        even = even + (sign / k) * f[2 * k]
        odd = odd + (sign / k) * (f[2 * k - 1] - f[2 * k + 1])
    j0, j1 = f[0] / norm, f[1] / norm
    log_term = xp.log(0.5 * x) + _EULER_GAMMA
    y0 = _TWO_OVER_PI * (log_term * j0 - 2.0 * even / norm)
    y1 = _TWO_OVER_PI * (-j0 / x + log_term * j1 + odd / norm)
    return j0, j1, y0, y1


def _jy_large(xp, x):
    """``(J0, J1, Y0, Y1)`` for ``x >= 25`` (Hankel's expansion, DLMF 10.17.3-4)."""
    t = 1.0 / x
    tt = -t * t
    p0 = _sum_powers(xp, _A0[0::2][:24], tt)
    q0 = t * _sum_powers(xp, _A0[1::2][:24], tt)
    p1 = _sum_powers(xp, _A1[0::2][:24], tt)
    q1 = t * _sum_powers(xp, _A1[1::2][:24], tt)
    c, s = xp.cos(x), xp.sin(x)
    cos0, sin0 = _SQRT_HALF * (c + s), _SQRT_HALF * (s - c)  # of x - pi/4
    cos1, sin1 = _SQRT_HALF * (s - c), -_SQRT_HALF * (s + c)  # of x - 3 pi/4
    front = xp.sqrt(_TWO_OVER_PI / x)
    return (front * (p0 * cos0 - q0 * sin0), front * (p1 * cos1 - q1 * sin1),
            front * (p0 * sin0 + q0 * cos0), front * (p1 * sin1 + q1 * cos1))


def _jy_all(xp, x):
    """``(J0, J1, Y0, Y1)``; ``J`` for every real ``x``, ``Y`` -inf at and below 0 (TF's)."""
    ax = xp.abs(x)
    small, mid = ax <= 2.0, (ax > 2.0) & (ax <= 25.0)
    big = ~small & ~mid & xp.isfinite(ax)
    sx = xp.where(small & (ax > 0.0), ax, _full(xp, x, 1.0))
    parts = [_jy_series(xp, sx), _jy_miller(xp, xp.where(mid, ax, _full(xp, x, 3.0))),
             _jy_large(xp, xp.where(big, ax, _full(xp, x, 30.0)))]
    out = [xp.where(small, a, xp.where(mid, b, xp.where(big, c, 0.0 * x)))
           for a, b, c in zip(*parts)]
    j0, j1, y0, y1 = out
    j0 = xp.where(ax == 0.0, xp.ones_like(x), j0)
    j1 = xp.where(ax == 0.0, 0.0 * x, xp.where(x < 0.0, -j1, j1))
    nan, minus_inf = _full(xp, x, math.nan), _full(xp, x, -math.inf)
    y0, y1 = [xp.where(x <= 0.0, minus_inf, v) for v in (y0, y1)]
    return [xp.where(xp.isnan(x), nan, v) for v in (j0, j1, y0, y1)]


# -- registration -------------------------------------------------------------------------


def _float_unary_infer(shapes, in_dtypes):
    rules.require_floating(in_dtypes[0])
    return shapes[0], in_dtypes[0]


def _pick(fn, index):
    def impl(xp, x):
        return fn(xp, x)[index]

    impl.__name__ = f"{fn.__name__}_{index}"
    return _in_float64(impl)


def _over_x(y, x):
    """``y / x``, and 1/2 at ``x = 0`` (the limit of ``I1 / x``, ``I1e / x``, ``J1 / x``)."""
    at_zero = call.equal(x, 0.0)
    safe = call.where(at_zero, call.ones_like(x), x)
    return call.where(at_zero, call.multiply(0.5, call.ones_like(x)), call.divide(y, safe))


def _b(op, x):
    return call.bind(op, x)


_GRADS = {  # d/dx of each, from the node's input x and output y
    "bessel_i0": lambda x, y: _b("bessel_i1", x),
    "bessel_i0e": lambda x, y: call.subtract(_b("bessel_i1e", x), call.multiply(call.sign(x), y)),
    "bessel_i1": lambda x, y: call.subtract(_b("bessel_i0", x), _over_x(y, x)),
    "bessel_i1e": lambda x, y: call.subtract(
        call.subtract(_b("bessel_i0e", x), call.multiply(call.sign(x), y)), _over_x(y, x)),
    "bessel_k0": lambda x, y: call.negative(_b("bessel_k1", x)),
    "bessel_k0e": lambda x, y: call.subtract(y, _b("bessel_k1e", x)),
    "bessel_k1": lambda x, y: call.negative(call.add(_b("bessel_k0", x), call.divide(y, x))),
    "bessel_k1e": lambda x, y: call.subtract(call.subtract(y, _b("bessel_k0e", x)),
                                             call.divide(y, x)),
    "bessel_j0": lambda x, y: call.negative(_b("bessel_j1", x)),
    "bessel_j1": lambda x, y: call.subtract(_b("bessel_j0", x), _over_x(y, x)),
    "bessel_y0": lambda x, y: call.negative(_b("bessel_y1", x)),
    "bessel_y1": lambda x, y: call.subtract(_b("bessel_y0", x), call.divide(y, x)),
}
_IMPLS = {"bessel_i0": (_i_all, 0), "bessel_i0e": (_i_all, 1), "bessel_i1": (_i_all, 2),
          "bessel_i1e": (_i_all, 3), "bessel_k0": (_k_all, 0), "bessel_k0e": (_k_all, 1),
          "bessel_k1": (_k_all, 2), "bessel_k1e": (_k_all, 3), "bessel_j0": (_jy_all, 0),
          "bessel_j1": (_jy_all, 1), "bessel_y0": (_jy_all, 2), "bessel_y1": (_jy_all, 3)}


def _grad_rule(op_name):
    def grad(node, g):
        return [call.multiply(g, _GRADS[op_name](node.inputs[0], node))]

    return grad


for _name, (_fn, _index) in _IMPLS.items():
    register(_name, _pick(_fn, _index), _float_unary_infer, grad=_grad_rule(_name))
