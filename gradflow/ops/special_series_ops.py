"""TF1's incomplete gamma and beta functions, Hurwitz zeta, Bessel functions and the
other functions of ``tf.math.special``: primitives computed in float64, with TF's
gradients (``gradflow.prim.special_gamma``, ``special_bessel``, ``special_integrals``).
"""

from __future__ import annotations

from gradflow.ops.math_ops import _binary_args
from gradflow.prim import special_bessel as _bessel  # noqa: F401 - registers primitives
from gradflow.prim import special_gamma as _gamma  # noqa: F401 - registers primitives
from gradflow.prim import special_integrals as _integrals  # noqa: F401 - registers primitives
from gradflow.prim.registry import apply, convert_to_tensor


def igamma(a, x, name=None):
    """The regularized lower incomplete gamma function ``P(a, x) = gamma(a, x) / Gamma(a)``
    with broadcasting (TF1 ``tf.igamma``, ``tf.math.igamma``): nan where ``a <= 0`` or
    ``x < 0``. Differentiable in both ``a`` and ``x``, as TF's.

    >>> gf.igamma(gf.constant([1.0, 2.5]), gf.constant([1.0, 2.0]))   # [0.6321206, 0.4505841]
    """
    a, x = _binary_args(a, x)
    return apply("igamma", [a, x], name=name or "Igamma")


def igammac(a, x, name=None):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, with
    broadcasting and without the cancellation (TF1 ``tf.igammac``, ``tf.math.igammac``).

    >>> gf.igammac(gf.constant([3.0]), gf.constant([40.0]))   # [3.5728659e-15]
    """
    a, x = _binary_args(a, x)
    return apply("igammac", [a, x], name=name or "Igammac")


def betainc(a, b, x, name=None):
    """The regularized incomplete beta function ``I_x(a, b)``, with broadcasting (TF1
    ``tf.betainc``, ``tf.math.betainc``): nan where ``a <= 0``, ``b <= 0`` or ``x`` is
    outside ``[0, 1]``. Differentiable in ``x`` only, as TF's.

    >>> gf.betainc(gf.constant([2.0]), gf.constant([3.0]), gf.constant([0.2]))   # [0.1808]
    """
    a = convert_to_tensor(a)
    b, x = convert_to_tensor(b, like=a), convert_to_tensor(x, like=a)
    return apply("betainc", [a, b, x], name=name or "Betainc")


def zeta(x, q, name=None):
    """The Hurwitz zeta function ``sum_k (q + k)^-x``, with broadcasting (TF1 ``tf.zeta``,
    ``tf.math.zeta``): ``inf`` at ``x = 1`` and at ``q = 0, -1, ...``; nan for ``x < 1``
    and for a negative ``q`` with a non-integer ``x``. Differentiable in ``q`` only
    (``-x zeta(x + 1, q)``), as TF's.

    >>> gf.zeta(gf.constant([2.0]), gf.constant([1.0]))   # [1.644934] = pi^2 / 6
    """
    x, q = _binary_args(x, q)
    return apply("zeta", [x, q], name=name or "Zeta")


def _unary(op_name, tf_name, doc):
    def fn(x, name=None):
        return apply(op_name, [convert_to_tensor(x)], name=name or tf_name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc
    return fn


bessel_i0 = _unary("bessel_i0", "BesselI0", """The modified Bessel function ``I0(x)`` of
the first kind, elementwise (TF1 ``tf.math.bessel_i0``, ``tf.math.special.bessel_i0``).

>>> gf.math.bessel_i0(gf.constant([0.0, 1.0]))   # [1., 1.2660659]
""")
bessel_i0e = _unary("bessel_i0e", "BesselI0e", """The exponentially scaled ``I0``:
``exp(-|x|) I0(x)``, elementwise (TF1 ``tf.math.bessel_i0e``), finite for every ``x``.

>>> gf.math.bessel_i0e(gf.constant([0.0, 1.0]))   # [1., 0.4657596]
""")
bessel_i1 = _unary("bessel_i1", "BesselI1", """The modified Bessel function ``I1(x)`` of
the first kind, elementwise (TF1 ``tf.math.bessel_i1``, ``tf.math.special.bessel_i1``).

>>> gf.math.bessel_i1(gf.constant([0.0, 1.0]))   # [0., 0.5651591]
""")
bessel_i1e = _unary("bessel_i1e", "BesselI1e", """The exponentially scaled ``I1``:
``exp(-|x|) I1(x)``, elementwise (TF1 ``tf.math.bessel_i1e``).

>>> gf.math.bessel_i1e(gf.constant([1.0]))   # [0.2079104]
""")
bessel_k0 = _unary("bessel_k0", "BesselK0", """The modified Bessel function ``K0(x)`` of
the second kind, elementwise (``tf.math.special.bessel_k0``): inf at and below 0 (as TF).

>>> gf.math.special.bessel_k0(gf.constant([1.0]))   # [0.4210244]
""")
bessel_k0e = _unary("bessel_k0e", "BesselK0e", """The exponentially scaled ``K0``:
``exp(x) K0(x)``, elementwise (``tf.math.special.bessel_k0e``).

>>> gf.math.special.bessel_k0e(gf.constant([1.0]))   # [1.1444631]
""")
bessel_k1 = _unary("bessel_k1", "BesselK1", """The modified Bessel function ``K1(x)`` of
the second kind, elementwise (``tf.math.special.bessel_k1``): inf at and below 0 (as TF).

>>> gf.math.special.bessel_k1(gf.constant([1.0]))   # [0.6019072]
""")
bessel_k1e = _unary("bessel_k1e", "BesselK1e", """The exponentially scaled ``K1``:
``exp(x) K1(x)``, elementwise (``tf.math.special.bessel_k1e``).

>>> gf.math.special.bessel_k1e(gf.constant([1.0]))   # [1.6361535]
""")
bessel_j0 = _unary("bessel_j0", "BesselJ0", """The Bessel function ``J0(x)`` of the first
kind, elementwise (``tf.math.special.bessel_j0``).

>>> gf.math.special.bessel_j0(gf.constant([0.0, 1.0]))   # [1., 0.7651977]
""")
bessel_j1 = _unary("bessel_j1", "BesselJ1", """The Bessel function ``J1(x)`` of the first
kind, elementwise (``tf.math.special.bessel_j1``).

>>> gf.math.special.bessel_j1(gf.constant([1.0]))   # [0.4400506]
""")
bessel_y0 = _unary("bessel_y0", "BesselY0", """The Bessel function ``Y0(x)`` of the second
kind, elementwise (``tf.math.special.bessel_y0``): -inf at and below 0 (as TF).

>>> gf.math.special.bessel_y0(gf.constant([1.0]))   # [0.0882570]
""")
bessel_y1 = _unary("bessel_y1", "BesselY1", """The Bessel function ``Y1(x)`` of the second
kind, elementwise (``tf.math.special.bessel_y1``): -inf at and below 0 (as TF).

>>> gf.math.special.bessel_y1(gf.constant([1.0]))   # [-0.7812128]
""")
dawsn = _unary("dawsn", "Dawsn", """Dawson's integral ``exp(-x^2) int_0^x exp(t^2) dt``,
elementwise (``tf.math.special.dawsn``).

>>> gf.math.special.dawsn(gf.constant([1.0]))   # [0.5380795]
""")
expint = _unary("expint", "Expint", """The exponential integral ``Ei(x) = -PV int_{-x}^inf
exp(-t) / t dt``, elementwise (``tf.math.special.expint``).

>>> gf.math.special.expint(gf.constant([1.0]))   # [1.8951178]
""")
fresnel_cos = _unary("fresnel_cos", "FresnelCos", """The Fresnel integral
``C(x) = int_0^x cos(pi t^2 / 2) dt``, elementwise (``tf.math.special.fresnel_cos``).

>>> gf.math.special.fresnel_cos(gf.constant([1.0]))   # [0.7798934]
""")
fresnel_sin = _unary("fresnel_sin", "FresnelSin", """The Fresnel integral
``S(x) = int_0^x sin(pi t^2 / 2) dt``, elementwise (``tf.math.special.fresnel_sin``).

>>> gf.math.special.fresnel_sin(gf.constant([1.0]))   # [0.4382591]
""")
spence = _unary("spence", "Spence", """Spence's function ``int_1^x log(t) / (1 - t) dt``
(the dilogarithm ``Li2(1 - x)``), elementwise (``tf.math.special.spence``): nan below 0.

>>> gf.math.special.spence(gf.constant([0.0, 1.0, 2.0]))   # [1.644934, 0., -0.8224670]
""")
