"""Special functions: TF1's ``erf``, ``erfc``, ``lgamma``, ``digamma`` and ``polygamma``
(primitives, with gradients, computed in float64 from published approximations: see
``gradflow.prim.special``), and the composites ``xlogy`` and ``xdivy``.
"""

from __future__ import annotations

from gradflow.ops.math_ops import _binary_args, divide, equal, log, ones_like
from gradflow.prim import special as _special  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, convert_to_tensor


def erf(x, name=None):
    """The error function ``2/sqrt(pi) int_0^x exp(-t^2) dt``, elementwise (TF1 ``tf.erf``,
    ``tf.math.erf``); a primitive, from Cody's rational approximations.

    >>> gf.erf(gf.constant([0.0, 0.5, -3.0]))   # [0., 0.5204999, -0.9999779]
    """
    return apply("erf", [convert_to_tensor(x)], name=name or "Erf")


def erfc(x, name=None):
    """The complementary error function ``1 - erf(x)``, elementwise (TF1 ``tf.erfc``,
    ``tf.math.erfc``), without the cancellation: ``erfc(26.0)`` is about ``5.7e-296``.

    >>> gf.erfc(gf.constant([0.0, 3.0]))   # [1., 2.209050e-05]
    """
    return apply("erfc", [convert_to_tensor(x)], name=name or "Erfc")


def lgamma(x, name=None):
    """``log|Gamma(x)|``, elementwise (TF1 ``tf.lgamma``, ``tf.math.lgamma``); ``+inf`` at
    0, -1, -2, ... as in TF.

    >>> gf.lgamma(gf.constant([0.5, 1.0, 10.0, -0.5]))   # [0.5723649, 0., 12.801827, 1.2655121]
    """
    return apply("lgamma", [convert_to_tensor(x)], name=name or "Lgamma")


def digamma(x, name=None):
    """The digamma function ``psi(x) = d/dx ln Gamma(x)``, elementwise (TF1 ``tf.digamma``,
    ``tf.math.digamma``); ``nan`` at 0, -1, -2, ... as in TF.

    >>> gf.digamma(gf.constant([1.0, 0.5]))   # [-0.5772157, -1.9635100]
    """
    return apply("digamma", [convert_to_tensor(x)], name=name or "Digamma")


def polygamma(a, x, name=None):
    """The polygamma function ``psi^(a)(x)``, the ``a``-th derivative of digamma, with
    broadcasting (TF1 ``tf.polygamma``, ``tf.math.polygamma``): ``a`` holds non-negative
    integers (``nan`` elsewhere) of the dtype of ``x``; ``a = 0`` is ``digamma``. At the
    poles 0, -1, -2, ... it is ``+inf`` for odd ``a`` and ``nan`` for even ``a``, as TF's.
    Below 0, orders up to 16 (``nan`` beyond). Within a few ulps above 0 up to order 20
    (measured against mpmath; it degrades beyond), within about 20 below 0 away from the
    zeros. A primitive; differentiable in ``x`` only (``polygamma(a + 1, x)``), as in TF.

    >>> gf.polygamma(1.0, gf.constant([1.0, 2.0]))   # trigamma: [1.644934, 0.644934]
    """
    a, x = _binary_args(a, x)
    return apply("polygamma", [a, x], name=name or "Polygamma")


def _zero_where_x_is_zero(x, y, fn, what, name):
    """``fn(x, y')`` with ``y' = 1`` where ``x`` is 0, then 0 there (broadcasting)."""
    x, y = _binary_args(x, y)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: '{x.name}' is {x.dtype.name}; it takes floating-point "
                        "tensors")
    zero = equal(x, 0.0)
    # apply, not gf.where: the condition broadcasts from the right, never picks rows
    safe_y = apply("where", [zero, ones_like(y), y])
    return apply("where", [zero, convert_to_tensor(0.0, like=x), fn(x, safe_y)],
                 name=name or what)


def xlogy(x, y, name=None):
    """``x * log(y)``, and 0 where ``x`` is 0 (whatever ``y``), with broadcasting (TF1
    ``tf.math.xlogy``, TF 1.14 and later). Its gradients are TF's: for ``x``, ``log(y)``
    and 0 where ``x`` is 0; for ``y``, ``x / y`` and 0 where ``x`` is 0. A composite of
    ``where`` and ``log``.

    >>> gf.math.xlogy(gf.constant([0.0, 2.0]), gf.constant([0.0, 3.0]))   # [0., 2.1972246]
    """
    return _zero_where_x_is_zero(x, y, lambda a, b: a * log(b), "xlogy", name)


def xdivy(x, y, name=None):
    """``x / y``, and 0 where ``x`` is 0 (whatever ``y``), with broadcasting (TF1
    ``tf.math.xdivy``, TF 1.14 and later); its gradients are 0 where ``x`` is 0, as TF's.
    A composite of ``where`` and ``divide``.

    >>> gf.math.xdivy(gf.constant([0.0, 3.0]), gf.constant([0.0, 2.0]))   # [0., 1.5]
    """
    return _zero_where_x_is_zero(x, y, divide, "xdivy", name)


def erfinv(x, name=None):
    """The inverse error function: ``erf(erfinv(x)) = x`` on ``[-1, 1]`` (``+-inf`` at
    ``+-1``, nan outside), elementwise (TF1 ``tf.math.erfinv``); a primitive computed in
    float64 by Halley's iteration on ``erf``, differentiable (``sqrt(pi)/2 exp(y^2)``).

    >>> gf.math.erfinv(gf.constant([0.0, 0.5, -0.9]))   # [0., 0.4769363, -1.1630871]
    """
    return apply("erfinv", [convert_to_tensor(x)], name=name or "Erfinv")


def erfcinv(x, name=None):
    """The inverse complementary error function: ``erfc(erfcinv(x)) = x`` on ``[0, 2]``,
    elementwise (TF ``tf.math.erfcinv``), accurate for tiny ``x``; a primitive with its
    gradient.

    >>> gf.math.erfcinv(gf.constant([1.0, 1e-10]))   # [0., 4.5728...]
    """
    return apply("erfcinv", [convert_to_tensor(x)], name=name or "Erfcinv")


def ndtri(x, name=None):
    """The standard normal quantile, the inverse of ``Phi(x) = erfc(-x/sqrt(2))/2`` on
    ``[0, 1]`` (``-inf`` at 0, ``+inf`` at 1), elementwise (TF1 ``tf.math.ndtri``); a
    primitive with its gradient ``sqrt(2 pi) exp(y^2/2)``.

    >>> gf.math.ndtri(gf.constant([0.5, 0.975]))   # [0., 1.959964]
    """
    return apply("ndtri", [convert_to_tensor(x)], name=name or "Ndtri")
