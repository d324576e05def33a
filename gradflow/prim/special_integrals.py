"""The special integrals of ``tf.math.special``: ``dawsn``, ``expint``, ``fresnel_cos``,
``fresnel_sin`` and ``spence``, with TF's gradients.

Each computes in float64 (other float inputs cast up, the result cast back), written once
against the Array API:

- ``dawsn``: its power series (DLMF 7.6.5 through ``exp(-x^2) erfi``) below 0.5,
  Rybicki's sum ``pi^-1/2 sum_{n odd} exp(-(x - n h)^2) / n`` (h = 1/4, error about
  e^-158) up to 7, the asymptotic series (DLMF 7.12.1 for erfi) above.
- ``expint``, the exponential integral ``Ei``: ``gamma + ln x + sum x^k / (k k!)`` (DLMF
  6.6.2) up to 40, the asymptotic series ``e^x / x sum k! / x^k`` above; nan below 0 (as
  TF's).
- ``fresnel_cos``, ``fresnel_sin``: the power series (DLMF 7.6.4, 7.6.6) up to 1.5, the
  continued fraction of ``erfc`` (evaluated by modified Lentz in complex arithmetic on
  pairs of real arrays) above, with ``x^2`` reduced modulo 4 exactly (a Dekker split of
  ``x``) so that the phase ``pi x^2 / 2`` keeps its accuracy for large ``x``.
- ``spence(x) = Li2(1 - x)``: the series of ``Li2`` in ``u = -ln x`` with Bernoulli numbers
  on ``[1/2, 3/2]``, the reflection ``Li2(y) + Li2(1 - y) = pi^2/6 - ln y ln(1 - y)`` below,
  the inversion ``spence(x) + spence(1/x) = -ln(x)^2 / 2`` above; nan below 0.
"""

from __future__ import annotations

import math

from gradflow.prim import call, rules
from gradflow.prim.registry import register
from gradflow.prim.special import _BERNOULLI, _EULER_GAMMA, _full, _in_float64, _poly
from gradflow.prim.special_gamma import _TINY, _until_converged

_EPS = 2.0 ** -53
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)
_RYBICKI_STEP = 0.25
_PI2_OVER_6 = math.pi ** 2 / 6.0


# -- dawsn --------------------------------------------------------------------------------


def _dawsn64(xp, x):
    ax = xp.abs(x)
    small, mid = ax < 0.5, (ax >= 0.5) & (ax < 7.0)
    sx = xp.where(small, ax, 0.0 * ax)
    term, series = sx, sx
    for k in range(1, 25):  # (-2 x^2)^k x / (1 3 ... (2k + 1))
        term = term * (-2.0 * sx * sx) / (2.0 * k + 1.0)
        series = series + term
    mx = xp.where(mid, ax, _full(xp, ax, 1.0))
    rybicki = xp.zeros_like(ax)
    for n in range(-27, 57, 2):  # n h within 6.75 of every x in [0.5, 7)
        d = mx - n * _RYBICKI_STEP
        rybicki = rybicki + xp.exp(-d * d) / n
    rybicki = _ONE_OVER_SQRT_PI * rybicki
    lx = xp.where(small | mid | ~xp.isfinite(ax), _full(xp, ax, 7.0), ax)
    r = 1.0 / (2.0 * lx * lx)
    coeffs = [1.0]
    for k in range(1, 40):
        coeffs.append(coeffs[-1] * (2 * k - 1))
    asym = _poly(r, coeffs[::-1]) / (2.0 * lx)
    out = xp.where(small, series, xp.where(mid, rybicki, asym))
    out = xp.where(ax == math.inf, xp.zeros_like(ax), out)
    return xp.where(xp.isnan(x), x, xp.where(x < 0.0, -out, out))


# -- expint -------------------------------------------------------------------------------


def _expint64(xp, x):
    small = x <= 40.0
    sx = xp.where(small & (x > 0.0), x, _full(xp, x, 1.0))
    term, total = xp.ones_like(sx), xp.zeros_like(sx)
    for k in range(1, 140):  # x^k / k!, summed as x^k / (k k!)
        term = term * sx / k
        total = total + term / k
    series = _EULER_GAMMA + xp.log(sx) + total
    lx = xp.where(small | ~xp.isfinite(x), _full(xp, x, 41.0), x)
    t = 1.0 / lx
    asym_sum = _poly(t, [float(math.factorial(k)) for k in range(40, -1, -1)])
    # e^x / x sum, as (e^(x/2))^2 so that Ei stays finite as far as it can
    half = xp.exp(0.5 * lx)
    asym = half * (half * (asym_sum / lx))
    out = xp.where(small, series, asym)
    out = xp.where(x == 0.0, _full(xp, x, -math.inf), out)
    out = xp.where(x == math.inf, _full(xp, x, math.inf), out)
    return xp.where((x < 0.0) | xp.isnan(x), _full(xp, x, math.nan), out)


# -- fresnel ------------------------------------------------------------------------------


def _square_mod_4(xp, x):
    """``x^2 mod 4`` for ``0 <= x < 1e16``, its rounding error only that of the result:
    ``x = hi + lo`` (Dekker's split), each product exact, each reduced exactly."""
    big = x * 134217729.0
    hi = big - (big - x)
    lo = x - hi

    def mod4(v):
        return v - 4.0 * xp.floor(v / 4.0)

    return mod4(mod4(hi * hi) + mod4(2.0 * hi * lo) + lo * lo)


def _fresnel_fraction(xp, x):
    """``(C, S)`` for ``x >= 1.5``, from the continued fraction of ``erfc`` at
    ``sqrt(pi) (1 - i) x / 2`` (modified Lentz, complex numbers as pairs)."""
    big = 1e150
    br, bi = xp.ones_like(x), -math.pi * x * x
    den = br * br + bi * bi
    dr, di = br / den, -bi / den
    state = (br, bi, big + 0.0 * x, 0.0 * x, dr, di, dr, di, xp.ones_like(x))

    def step(state, k):
        br, bi, cr, ci, dr, di, hr, hi, _ = state
        n = 2.0 * k - 1.0
        a = -n * (n + 1.0)
        br = br + 4.0
        pr, pi_ = a * dr + br, a * di + bi  # d = 1 / (a d + b)
        den = pr * pr + pi_ * pi_
        dr, di = pr / den, -pi_ / den
        den = cr * cr + ci * ci  # c = b + a / c
        cr, ci = br + a * cr / den, bi - a * ci / den
        er, ei = cr * dr - ci * di, cr * di + ci * dr
        hr, hi = hr * er - hi * ei, hr * ei + hi * er
        return br, bi, cr, ci, dr, di, hr, hi, xp.abs(er - 1.0) + xp.abs(ei)

    def done(state):
        return state[8] <= _EPS

    hr, hi = _until_converged(xp, state, step, done)[6:8]
    hr, hi = x * (hr + hi), x * (hi - hr)  # (x - i x) h
    phase = (0.5 * math.pi) * _square_mod_4(xp, x)
    cos, sin = xp.cos(phase), xp.sin(phase)
    ur, ui = 1.0 - (cos * hr - sin * hi), -(cos * hi + sin * hr)
    return 0.5 * (ur - ui), 0.5 * (ur + ui)  # (1 + i) / 2 times u


def _fresnel_pair(xp, x):
    ax = xp.abs(x)
    small, mid = ax < 1.5, (ax >= 1.5) & (ax < 1e16)
    sx = xp.where(small, ax, 0.0 * ax)
    u = 0.5 * math.pi * sx * sx
    tc, ts = sx, sx * u / 3.0  # the k = 0 terms of C and S
    c, s = tc, ts
    power_c, power_s = sx, sx * u  # x u^2k / (2k)!, x u^(2k+1) / (2k+1)!
    for k in range(1, 30):
        power_c = power_c * (-u * u) / ((2 * k - 1) * (2 * k))
        power_s = power_s * (-u * u) / ((2 * k) * (2 * k + 1))
        c = c + power_c / (4 * k + 1)
        s = s + power_s / (4 * k + 3)
    fc, fs = _fresnel_fraction(xp, xp.where(mid, ax, _full(xp, ax, 2.0)))
    half = _full(xp, ax, 0.5)
    c = xp.where(small, c, xp.where(mid, fc, half))
    s = xp.where(small, s, xp.where(mid, fs, half))
    c, s = xp.where(x < 0.0, -c, c), xp.where(x < 0.0, -s, s)
    return xp.where(xp.isnan(x), x, c), xp.where(xp.isnan(x), x, s)


def _fresnel_cos64(xp, x):
    return _fresnel_pair(xp, x)[0]


def _fresnel_sin64(xp, x):
    return _fresnel_pair(xp, x)[1]


# -- spence -------------------------------------------------------------------------------

# spence(z) = Li2(1 - z) = u - u^2/4 + sum_k B_2k u^(2k+1) / (2k+1)!, u = -ln z
_SPENCE_SERIES = [0.0, 1.0, -0.25] + [
    v for k, b in enumerate(_BERNOULLI[:15], 1)
    for v in ((float(b) / math.factorial(2 * k + 1)), 0.0)][:-1]


def _spence_near_one(xp, z):
    """spence on ``[1/2, 3/2]`` (other values give a number to throw away)."""
    u = -xp.log(xp.clip(z, min=0.5, max=1.5))
    coeffs = _SPENCE_SERIES[:]
    return _poly(u, coeffs[::-1])


def _spence_below_1_5(xp, z):
    """spence on ``[0, 3/2]``: the reflection below 1/2."""
    near = _spence_near_one(xp, z)
    low = xp.clip(z, min=_TINY, max=0.5)
    reflected = _PI2_OVER_6 - xp.log(low) * xp.log1p(-low) - _spence_near_one(xp, 1.0 - low)
    reflected = xp.where(z == 0.0, _full(xp, z, _PI2_OVER_6), reflected)
    return xp.where(z < 0.5, reflected, near)


def _spence64(xp, z):
    above = z > 1.5
    inv = xp.where(above, 1.0 / xp.where(above, z, xp.ones_like(z)), z)
    base = _spence_below_1_5(xp, inv)
    log_z = xp.log(xp.where(above, z, xp.ones_like(z)))
    out = xp.where(above, -0.5 * log_z * log_z - base, base)
    out = xp.where(z == math.inf, _full(xp, z, -math.inf), out)
    return xp.where((z < 0.0) | xp.isnan(z), _full(xp, z, math.nan), out)


# -- registration -------------------------------------------------------------------------


def _float_unary_infer(shapes, in_dtypes):
    rules.require_floating(in_dtypes[0])
    return shapes[0], in_dtypes[0]


def _half_pi_square(x):
    return call.multiply(0.5 * math.pi, call.square(x))


def _spence_slope(x):
    """``log(x) / (1 - x)``, and -1 at ``x = 1`` (TF's)."""
    one = call.equal(x, 1.0)
    safe = call.where(one, call.multiply(2.0, call.ones_like(x)), x)
    slope = call.divide(call.log(safe), call.subtract(1.0, safe))
    return call.where(one, call.negative(call.ones_like(x)), slope)


_SLOPES = {
    "dawsn": lambda x, y: call.subtract(1.0, call.multiply(2.0, call.multiply(x, y))),
    "expint": lambda x, y: call.divide(call.exp(x), x),
    "fresnel_cos": lambda x, y: call.cos(_half_pi_square(x)),
    "fresnel_sin": lambda x, y: call.sin(_half_pi_square(x)),
    "spence": lambda x, y: _spence_slope(x),
}
_IMPLS = {"dawsn": _dawsn64, "expint": _expint64, "fresnel_cos": _fresnel_cos64,
          "fresnel_sin": _fresnel_sin64, "spence": _spence64}


def _grad_rule(op_name):
    def grad(node, g):
        return [call.multiply(g, _SLOPES[op_name](node.inputs[0], node))]

    return grad


for _name, _fn in _IMPLS.items():
    register(_name, _in_float64(_fn), _float_unary_infer, grad=_grad_rule(_name))
