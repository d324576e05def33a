"""TF1's ``tf.math.special`` namespace (TF 1.15 and later; ``tf.compat.v1.math.special``):
the Bessel functions of orders 0 and 1, Dawson's integral, the exponential integral, the
Fresnel integrals and Spence's function, primitives in float64 with TF's gradients
(``gradflow.ops.special_series_ops``)."""

from gradflow.ops.special_series_ops import (  # noqa: F401 - in __all__
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
    bessel_j0,
    bessel_j1,
    bessel_k0,
    bessel_k0e,
    bessel_k1,
    bessel_k1e,
    bessel_y0,
    bessel_y1,
    dawsn,
    expint,
    fresnel_cos,
    fresnel_sin,
    spence,
)

__all__ = """bessel_i0 bessel_i0e bessel_i1 bessel_i1e bessel_j0 bessel_j1 bessel_k0 bessel_k0e
bessel_k1 bessel_k1e bessel_y0 bessel_y1 dawsn expint fresnel_cos fresnel_sin
spence""".split()
