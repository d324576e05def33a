"""Special functions: TF1's ``erf``, ``erfc``, ``lgamma``, ``digamma`` and ``polygamma``,
with gradients, and the composites ``xlogy`` and ``xdivy``.

Each op computes in float64 (float16 and float32 inputs are cast up and the result cast
back to the input's dtype: one code path, correctly rounded float32 results in practice)
from published approximations, written once against the Array API:

- ``erf``, ``erfc``: W. J. Cody, "Rational Chebyshev approximations for the error
  function", Math. Comp. 23 (1969) 631-637, with the coefficients of his SPECFUN routine
  CALERF (netlib), including its split of ``exp(-x^2)`` that keeps ``erfc`` accurate down
  to the subnormal range.
- ``lgamma``: the Taylor series of ``ln Gamma(2 + z)`` (Abramowitz & Stegun 6.1.33, whose
  coefficients are ``zeta(n) - 1``) for ``|z| <= 1/2``, reached by the recurrence
  ``Gamma(x + 1) = x Gamma(x)`` from ``(0, 10.5)``; Stirling's series (A&S 6.1.40) above;
  the reflection formula (A&S 6.1.17) at and below 0. The series keeps the relative error
  small next to the zeros at 1 and 2.
- ``digamma``: below 10 the Taylor series about its positive zero ``x0 = 1.4616...``
  (DLMF 5.4.19; coefficients ``(-1)^(k+1) zeta(k+1, x0)``) on ``[x0 - 1/2, x0 + 1/2]``,
  reached by the recurrence (A&S 6.3.5), which keeps the relative error small next to
  ``x0``; the asymptotic series (A&S 6.3.18) from 10; the reflection formula (A&S 6.3.7)
  at and below 0.
- ``polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x)`` (A&S 6.4.10), with the Hurwitz zeta
  summed directly up to 16 and by Euler-Maclaurin summation beyond; below 0 the reflection
  formula (A&S 6.4.7) with the derivatives of ``cot``.

Measured against mpmath: a few ulps (at most 6) over the real line, except below 0 next
to the zeros of lgamma (-2.457, -2.747, ...) and digamma (-0.504, -1.573, ...), where the
reflection formula cancels (absolute error about 1e-16 there; TF's are no better).

The primitives, their gradients and the approximations live here; TF1's functions over
them (and the composites ``xlogy`` and ``xdivy``) are in ``gradflow.ops.special_ops``.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from gradflow.prim import call, rules
from gradflow.prim.registry import register

# -- constants -----------------------------------------------------------------------


def _bernoulli_even(count):
    """B_2, B_4, ..., B_2count exactly, from sum_{k=0}^{n} C(n+1, k) B_k = 0 (A&S 23.1.7 at
    x = 0; B_2 = 1/6, B_4 = -1/30, ... B_20 = -174611/330 as in A&S table 23.2)."""
    b = [Fraction(1)]
    for n in range(1, 2 * count + 1):
        b.append(-sum(math.comb(n + 1, k) * b[k] for k in range(n)) / (n + 1))
    return tuple(b[2::2])


_BERNOULLI = _bernoulli_even(20)
_EULER_GAMMA = 0.57721566490153286060651209008240243  # A&S 6.1.3
# digamma's positive zero (DLMF 5.4.19), as the nearest double and the rest of it
_X0 = Decimal("1.4616321449683623412626595423257213284681962040064463512959884")
_X0_HI = float(_X0)
_X0_LO = float(_X0 - Decimal(_X0_HI))
_LOG_PI = math.log(math.pi)
_LGAMMA_OVERFLOW = 2.55e305  # ln Gamma is +inf above (Cody's XBIG in SPECFUN's DLGAMA)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zeta_at(s, q):
    """The Hurwitz zeta ``sum_k (q + k)^-s`` of Python floats ``s > 1``, ``q > 0``, for the
    series coefficients below: 20 terms, then Euler-Maclaurin summation."""
    w = q + 20
    terms = [(q + k) ** -s for k in range(20)] + [w ** (1 - s) / (s - 1), w ** -s / 2]
    rising = s  # s (s + 1) ... (s + 2j - 2)
    for j, b in enumerate(_BERNOULLI[:10], 1):
        terms.append(float(b) / math.factorial(2 * j) * rising * w ** (-s - 2 * j + 1))
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return math.fsum(terms)


# ln Gamma(2 + z) = sum_n c_n z^n, c_1 = 1 - gamma, c_n = (-1)^n (zeta(n) - 1) / n (A&S
# 6.1.33 plus ln(1 + z)), and zeta(n) - 1 = zeta(n, 2); 30 terms reach 1e-19 at |z| = 1/2
_LGAMMA_SERIES = (1.0 - _EULER_GAMMA,) + tuple((-1) ** n * _zeta_at(n, 2.0) / n
                                               for n in range(2, 31))
# Stirling's series: B_2k / (2k (2k - 1)), k = 1..8 (A&S 6.1.40)
_STIRLING = tuple(float(b) / (2 * k * (2 * k - 1)) for k, b in enumerate(_BERNOULLI[:8], 1))
# digamma's asymptotic series: B_2k / (2k), k = 1..8 (A&S 6.3.18)
_DIGAMMA_ASYMPTOTIC = tuple(float(b) / (2 * k) for k, b in enumerate(_BERNOULLI[:8], 1))
# digamma about x0: psi(x0 + d) = sum_k (-1)^(k+1) zeta(k + 1, x0) d^k (A&S 6.4.10); the
# nearest pole is 0, so 40 terms reach 1e-18 for |d| <= 1/2
_DIGAMMA_ROOT_SERIES = tuple((-1) ** (k + 1) * _zeta_at(k + 1, _X0_HI) for k in range(1, 41))

# Cody's CALERF coefficients, highest power first, as his Horner loops use them:
# erf(x) = x A(x^2) / B(x^2) for |x| <= 0.46875
_ERF_A = (1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02,
          3.77485237685302021e02, 3.20937758913846947e03)
_ERF_B = (1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
# erfc(x) = exp(-x^2) C(x) / D(x) for 0.46875 < x <= 4
_ERFC_C = (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00,
           6.61191906371416295e01, 2.98635138197400131e02, 8.81952221241769090e02,
           1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03)
_ERFC_D = (1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
           1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
           3.43936767414372164e03, 1.23033935480374942e03)
# erfc(x) = exp(-x^2) / x (1/sqrt(pi) - r P(r) / Q(r)), r = 1/x^2, for x > 4
_ERFC_P = (1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1,
           1.25781726111229246e-1, 1.60837851487422766e-2, 6.58749161529837803e-4)
_ERFC_Q = (1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3)
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1


def _cot_derivative_polynomials(count):
    """Integer coefficients (lowest power first) of P_0..P_{count-1}, where the n-th
    derivative of cot(t) is P_n(cot t): P_0(c) = c, P_{n+1}(c) = -(1 + c^2) P_n'(c)."""
    polys = [[0, 1]]
    for _ in range(count - 1):
        p = polys[-1]
        deriv = [k * p[k] for k in range(1, len(p))]
        nxt = [0] * (len(deriv) + 2)
        for k, c in enumerate(deriv):
            nxt[k] -= c
            nxt[k + 2] -= c
        polys.append(nxt)
    return polys


# the reflection of polygamma below 0 covers the orders up to 16
_REFLECTION_ORDERS = 17
_COT_POLYNOMIALS = [[float(c) for c in p[::-1]]  # highest power first, for _poly
                    for p in _cot_derivative_polynomials(_REFLECTION_ORDERS)]
_ZETA_SHIFT = 16  # the Hurwitz zeta sums its terms directly while q + k < 16


# -- Array API helpers ----------------------------------------------------------------


def _poly(z, coeffs):
    """``coeffs[0] z^(n-1) + ... + coeffs[n-1]`` by Horner's rule."""
    out = coeffs[0] * z + coeffs[1]
    for c in coeffs[2:]:
        out = out * z + c
    return out


def _in_float64(fn):
    """An impl computing ``fn(xp, *arrays)`` in float64, returned in the first input's dtype."""
    def impl(xp, *arrays):
        dtype = arrays[0].dtype
        up = [a if a.dtype == xp.float64 else xp.astype(a, xp.float64) for a in arrays]
        out = fn(xp, *up)
        return out if out.dtype == dtype else xp.astype(out, dtype)

    impl.__name__ = fn.__name__
    return impl


def _full(xp, like, value):
    return xp.full_like(like, value)


def _nonpositive_integer(xp, x):
    """Where ``x`` is a pole of Gamma: 0, -1, -2, ... (and -inf)."""
    return (x <= 0.0) & (x == xp.floor(x))


def _cot_pi(xp, x):
    """``cot(pi x)`` for finite non-integer ``x``, from ``r = x - round(x)`` (exact): as
    ``cos/sin`` for ``|r| < 1/4``, as ``tan(pi (1/2 - |r|))`` above, whose argument is
    exact there (``cos(pi/2)`` would give 6e-17 for 0)."""
    r = x - xp.round(x)
    a = xp.abs(r)
    by_tan = xp.tan(math.pi * (0.5 - a))
    by_ratio = xp.cos(math.pi * r) / xp.sin(math.pi * xp.where(a < 0.25, r, 0.5 + 0.0 * r))
    return xp.where(a < 0.25, by_ratio, xp.where(r < 0.0, -by_tan, by_tan))


# -- erf and erfc (Cody) --------------------------------------------------------------


def _erf_small(xp, x):
    """Cody's ``x A(x^2) / B(x^2)``: erf for |x| <= 0.46875."""
    x = xp.clip(x, min=-0.46875, max=0.46875)
    t = x * x
    return x * _poly(t, _ERF_A) / _poly(t, _ERF_B)


def _erfc_large(xp, y):
    """erfc(y) for y > 0.46875 (other values give a finite number to throw away)."""
    mid = xp.clip(y, min=0.46875, max=4.0)
    ratio_mid = _poly(mid, _ERFC_C) / _poly(mid, _ERFC_D)
    big = xp.clip(y, min=4.0, max=27.5)  # erfc(27.5) is below the smallest subnormal
    r = 1.0 / (big * big)
    ratio_big = (_ONE_OVER_SQRT_PI - r * _poly(r, _ERFC_P) / _poly(r, _ERFC_Q)) / big
    y = xp.clip(y, min=0.46875, max=27.5)
    # exp(-y^2) as exp(-a^2) exp(-(y - a)(y + a)), a = y rounded down to 1/16: the
    # rounding error of y^2 would cost up to 27^2 ulps
    a = xp.trunc(16.0 * y) / 16.0
    scale = xp.exp(-a * a) * xp.exp(-(y - a) * (y + a))
    return scale * xp.where(y <= 4.0, ratio_mid, ratio_big)


def _erf64(xp, x):
    tail = 1.0 - _erfc_large(xp, xp.abs(x))
    return xp.where(xp.abs(x) <= 0.46875, _erf_small(xp, x), xp.where(x < 0.0, -tail, tail))


def _erfc64(xp, x):
    tail = _erfc_large(xp, xp.abs(x))
    return xp.where(xp.abs(x) <= 0.46875, 1.0 - _erf_small(xp, x),
                    xp.where(x < 0.0, 2.0 - tail, tail))


# -- lgamma -------------------------------------------------------------------------------


def _lgamma_positive(xp, x):
    """ln Gamma(x) for x > 0 (+inf included)."""
    # x = z + 2 + m with z in [-1/2, 1/2): m = -2 on (0, 1/2), -1 on [1/2, 3/2), ...
    m = xp.clip(xp.floor(x - 1.5), min=-2.0, max=8.0)
    z = xp.clip(x - (m + 2.0), min=-0.5, max=0.5)  # exact where x < 10.5
    series = z * _poly(z, _LGAMMA_SERIES[::-1])  # ln Gamma(2 + z)
    # Gamma(2 + z) = (1 + z) Gamma(1 + z) = (1 + z) z Gamma(z)
    one = xp.ones_like(z)
    down = xp.where(m == -2.0, -(xp.log(xp.where(m == -2.0, x, one)) + xp.log1p(z)),
                    xp.where(m == -1.0, -xp.log1p(z), xp.zeros_like(z)))
    product = one  # (z + 2) (z + 3) ... (z + 1 + m)
    for j in range(8):
        product = product * xp.where(m > j, z + (2.0 + j), one)
    near = series + down + xp.log(product)
    big = xp.clip(x, min=10.5, max=_LGAMMA_OVERFLOW)
    t = 1.0 / big
    stirling = (big * (xp.log(big) - 1.0) - 0.5 * xp.log(big) + _HALF_LOG_2PI
                + t * _poly(t * t, _STIRLING[::-1]))
    stirling = xp.where(x > _LGAMMA_OVERFLOW, _full(xp, x, math.inf), stirling)
    return xp.where(x < 10.5, near, stirling)


def _lgamma64(xp, x):
    pole = _nonpositive_integer(xp, x)
    positive = _lgamma_positive(xp, xp.where(x > 0.0, x, 1.0 - x))
    finite = xp.where((x <= 0.0) & xp.isfinite(x) & ~pole, x, -0.5)
    r = finite - xp.round(finite)  # |sin(pi x)| = |sin(pi r)|, exactly reduced
    # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    reflected = _LOG_PI - xp.log(xp.abs(xp.sin(math.pi * r))) - positive
    out = xp.where(x > 0.0, positive, reflected)
    return xp.where(pole, _full(xp, x, math.inf), out)


# -- digamma ----------------------------------------------------------------------------


def _digamma_positive(xp, x):
    """psi(x) for x > 0 (+inf included)."""
    # below 10: x = x0 + d + m with |d| <= 1/2, and psi(x) = psi(x0 + d) + sum_j 1/(x - j),
    # j = 1..m (A&S 6.3.5): every term positive for m >= 1, so no cancellation; m = -1
    # below 0.96: psi(x) = psi(x + 1) - 1/x
    m = xp.clip(xp.round(x - _X0_HI), min=-1.0, max=9.0)
    d = xp.clip(x - m - _X0_HI, min=-0.5, max=0.5) - _X0_LO
    near = d * _poly(d, _DIGAMMA_ROOT_SERIES[::-1])
    one, zero = xp.ones_like(x), xp.zeros_like(x)
    steps = xp.where(m == -1.0, -1.0 / xp.where(m == -1.0, x, one), zero)
    for j in range(1, 10):
        steps = steps + xp.where(m >= j, 1.0 / xp.where(m >= j, x - float(j), one), zero)
    w = xp.clip(x, min=10.0, max=None)
    t = (1.0 / w) * (1.0 / w)
    asymptotic = xp.log(w) - 0.5 / w - t * _poly(t, _DIGAMMA_ASYMPTOTIC[::-1])
    return xp.where(x < 10.0, near + steps, asymptotic)


def _digamma64(xp, x):
    pole = _nonpositive_integer(xp, x)
    positive = _digamma_positive(xp, xp.where(x > 0.0, x, 1.0 - x))
    finite = xp.where((x <= 0.0) & xp.isfinite(x) & ~pole, x, -0.5)
    reflected = positive - math.pi * _cot_pi(xp, finite)  # psi(x) = psi(1-x) - pi cot(pi x)
    out = xp.where(x > 0.0, positive, reflected)
    return xp.where(pole, _full(xp, x, math.nan), out)


# -- polygamma ------------------------------------------------------------------------


def _hurwitz_zeta(xp, s, q):
    """zeta(s, q) = sum_k (q + k)^-s for s >= 2 and q > 0: the terms with q + k < 16
    summed, the rest by Euler-Maclaurin summation with B_2..B_40 (which keeps s up to
    about 21 within a few ulps)."""
    total, count = xp.zeros_like(q), xp.zeros_like(q)
    for k in range(_ZETA_SHIFT):
        inside = (q + float(k)) < float(_ZETA_SHIFT)
        total = total + xp.where(inside, xp.pow(q + float(k), -s), count * 0.0)
        count = count + xp.astype(inside, q.dtype)
    w = q + count
    head = xp.pow(w, 1.0 - s)  # w^(1-s): w^-s alone would underflow for huge w
    tail = head / (s - 1.0) + 0.5 * head / w
    rising, power = s, head / w / w  # s (s+1) ... (s+2j-2), w^(-s-2j+1)
    for j, b in enumerate(_BERNOULLI, 1):
        tail = tail + (float(b) / math.factorial(2 * j)) * rising * power
        rising = rising * (s + (2 * j - 1)) * (s + 2 * j)
        power = power / w / w
    return total + tail


def _factorial(xp, n):
    """n! for integer-valued n >= 0 (exact up to 22!, exp(lgamma) above 30)."""
    out = xp.ones_like(n)
    for j in range(2, 31):
        out = out * (1.0 + (j - 1.0) * xp.clip(n - (j - 1.0), min=0.0, max=1.0))
    big = n > 30.0
    from_lgamma = xp.exp(_lgamma_positive(xp, xp.where(big, n, out) + 1.0))
    return xp.where(big, from_lgamma, out)


def _polygamma64(xp, n, x):
    n, x = xp.broadcast_arrays(n, x)
    valid = (n >= 0.0) & (n == xp.floor(n))
    order = xp.where(valid & (n >= 1.0), n, xp.ones_like(n))  # the orders >= 1 computed
    odd = order - 2.0 * xp.floor(order / 2.0)  # 1 for odd n: (-1)^n = 1 - 2 odd
    u = xp.where(x > 0.0, x, 1.0 - x)
    # psi^(n)(u) = (-1)^(n+1) n! zeta(n+1, u)
    positive = (2.0 * odd - 1.0) * _factorial(xp, order) * _hurwitz_zeta(xp, order + 1.0, u)
    # psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1) P_n(cot(pi x)) (A&S 6.4.7)
    pole = _nonpositive_integer(xp, x)
    c = _cot_pi(xp, xp.where((x <= 0.0) & xp.isfinite(x) & ~pole, x, -0.5))
    cot_term = xp.zeros_like(c)
    for k in range(1, _REFLECTION_ORDERS):
        value = math.pi ** (k + 1) * _poly(c, _COT_POLYNOMIALS[k])
        cot_term = xp.where(order == k, value, cot_term)
    reflected = (1.0 - 2.0 * odd) * positive - cot_term
    out = xp.where(x > 0.0, positive, reflected)
    out = xp.where((x <= 0.0) & (order >= _REFLECTION_ORDERS), _full(xp, x, math.nan), out)
    # at a pole: TF's zeta(n+1, q) is +inf for an even n+1 and nan for an odd one
    out = xp.where(pole, xp.where(odd == 1.0, _full(xp, x, math.inf), _full(xp, x, math.nan)),
                   out)
    out = xp.where(n == 0.0, _digamma64(xp, x), out)
    return xp.where(valid, out, _full(xp, x, math.nan))


# -- registration -------------------------------------------------------------------------


def _float_unary_infer(shapes, in_dtypes):
    rules.require_floating(in_dtypes[0])
    return shapes[0], in_dtypes[0]


def _polygamma_infer(shapes, in_dtypes):
    dtype = rules.same_dtype(in_dtypes)
    rules.require_floating(dtype, "order a and argument x")
    return rules.broadcast_shapes(shapes[0], shapes[1]), dtype


def _erf_slope(x):
    """2/sqrt(pi) exp(-x^2): the derivative of erf."""
    return call.multiply(_TWO_OVER_SQRT_PI, call.exp(call.negative(call.square(x))))


def _polygamma(a, x):
    """The node ``polygamma(a, x)``, named as ``gf.polygamma`` names it."""
    return call.polygamma(a, x, name="Polygamma")


register("erf", _in_float64(_erf64), _float_unary_infer,
         grad=lambda n, g: [call.multiply(g, _erf_slope(n.inputs[0]))])
register("erfc", _in_float64(_erfc64), _float_unary_infer,  # d erfc = -d erf
         grad=lambda n, g: [call.multiply(call.negative(g), _erf_slope(n.inputs[0]))])
register("lgamma", _in_float64(_lgamma64), _float_unary_infer,  # d lgamma = digamma
         grad=lambda n, g: [call.multiply(g, call.digamma(n.inputs[0], name="Digamma"))])
register("digamma", _in_float64(_digamma64), _float_unary_infer,  # d digamma = trigamma
         grad=lambda n, g: [call.multiply(g, _polygamma(1.0, n.inputs[0]))])
register("polygamma", _in_float64(_polygamma64), _polygamma_infer, broadcasting=True,
         grad=lambda n, g: [None, call.multiply(
             g, _polygamma(call.add(n.inputs[0], 1.0), n.inputs[1]))])


# -- erfinv, erfcinv, ndtri ------------------------------------------------------------
# A&S 26.2.23: the normal quantile for 0 < q <= 1/2 within 4.5e-4, the start of the
# Halley iterations below
_AS_26_2_23_NUM = (0.010328, 0.802853, 2.515517)
_AS_26_2_23_DEN = (0.001308, 0.189269, 1.432788, 1.0)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_SQRT_2 = math.sqrt(2.0)


def _inverse_erf_pair(xp, a, t):
    """The ``x >= 0`` with ``erf(x) = a`` and ``erfc(x) = t`` (``a + t = 1``, each
    given exactly, so that both ends keep their relative accuracy): four Halley steps on
    ``erf(x) - a`` (``a <= 1/2``) or ``t - erfc(x)``, from ``a sqrt(pi)/2`` or A&S
    26.2.23. ``+inf`` at ``t = 0``; nan outside ``[0, 1]``."""
    small = a <= 0.5
    q = xp.clip(t / 2.0, min=1e-300, max=0.25)  # erfc(x)/2 = Phi(-sqrt(2) x)
    w = xp.sqrt(-2.0 * xp.log(q))
    tail = (w - _poly(w, _AS_26_2_23_NUM) / _poly(w, _AS_26_2_23_DEN)) / _SQRT_2
    x = xp.where(small, a * _SQRT_PI_OVER_2, tail)
    for _ in range(4):
        f = xp.where(small, _erf64(xp, x) - a, t - _erfc64(xp, x))
        u = f / (_TWO_OVER_SQRT_PI * xp.exp(-x * x))
        x = x - u / (1.0 + x * u)
    x = xp.where(t == 0.0, _full(xp, x, math.inf), x)
    return xp.where((a < 0.0) | (t < 0.0) | xp.isnan(a), _full(xp, x, math.nan), x)


def _erfinv64(xp, y):
    a = xp.abs(y)
    x = _inverse_erf_pair(xp, a, 1.0 - a)
    return xp.where(y < 0.0, -x, x)


def _erfcinv64(xp, z):
    upper = z > 1.0  # erfcinv(z) = -erfcinv(2 - z)
    t = xp.where(upper, 2.0 - z, z)
    x = _inverse_erf_pair(xp, 1.0 - t, t)
    return xp.where(upper, -x, x)


def _ndtri64(xp, p):
    # Phi(x) = erfc(-x / sqrt(2)) / 2; 0 - ..., so that ndtri(1/2) is 0, not -0
    return 0.0 - _SQRT_2 * _erfcinv64(xp, 2.0 * p)


def _exp_square(node, scale):
    """``scale * exp(node^2)``: the derivative of an inverse of erf at its result."""
    return call.multiply(scale, call.exp(call.square(node)))


register("erfinv", _in_float64(_erfinv64), _float_unary_infer,  # 1 / erf'(x)
         grad=lambda n, g: [call.multiply(g, _exp_square(n, _SQRT_PI_OVER_2))])
register("erfcinv", _in_float64(_erfcinv64), _float_unary_infer,
         grad=lambda n, g: [call.multiply(g, _exp_square(n, -_SQRT_PI_OVER_2))])
register("ndtri", _in_float64(_ndtri64), _float_unary_infer,  # sqrt(2 pi) exp(x^2 / 2)
         grad=lambda n, g: [call.multiply(g, call.multiply(
             math.sqrt(2.0 * math.pi), call.exp(call.multiply(0.5, call.square(n)))))])
