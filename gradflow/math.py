"""TF1's ``tf.math`` namespace (TF 1.13 and later): the math ops gradflow has, under
the names TF1 programs reach them by (``tf.math.log``, ``tf.math.reduce_sum``, ...)."""

import gradflow as _gf
from gradflow import math_special as special  # noqa: F401 - tf.math.special
from gradflow.ops.math_extra_ops import (  # noqa: F401 - in __all__
    polyval,
    reduce_euclidean_norm,
    reduce_std,
    reduce_variance,
    xlog1py,
)
from gradflow.ops.math_ops import (  # noqa: F401 - in __all__
    cumulative_logsumexp,
    divide_no_nan,
    logical_xor,
    multiply_no_nan,
    nextafter,
    reciprocal_no_nan,
)
from gradflow.ops.nn_ops import zero_fraction  # noqa: F401 - in __all__
from gradflow.ops.special_ops import (  # noqa: F401 - in __all__ (xdivy, xlogy: TF 1.14+)
    erfcinv,
    erfinv,
    ndtri,
    xdivy,
    xlogy,
)
from gradflow.ops.special_series_ops import (  # noqa: F401 - in __all__
    bessel_i0,
    bessel_i0e,
    bessel_i1,
    bessel_i1e,
    betainc,
    igamma,
    igammac,
    zeta,
)

_TOP_LEVEL = """abs add add_n argmax argmin bincount ceil cos count_nonzero cumprod cumsum
digamma divide equal erf erfc exp expm1 floor floordiv floormod greater greater_equal
is_finite is_inf is_nan less less_equal lgamma log log1p logical_and logical_not logical_or maximum
minimum mod multiply negative not_equal polygamma pow reciprocal reduce_all reduce_any
reduce_logsumexp reduce_max reduce_mean reduce_min reduce_prod reduce_sum round rsqrt
segment_max segment_mean segment_min segment_prod segment_sum sigmoid sign sin sqrt
square squared_difference subtract tanh truediv unsorted_segment_max
unsorted_segment_mean unsorted_segment_min unsorted_segment_prod unsorted_segment_sqrt_n
unsorted_segment_sum
acos acosh asin asinh atan atan2 atanh cosh rint sinh tan accumulate_n angle confusion_matrix
conj imag is_non_decreasing is_strictly_increasing lbeta log_sigmoid real scalar_mul
invert_permutation""".split()
_FROM_NN = "in_top_k l2_normalize log_softmax softmax softplus softsign top_k".split()

globals().update({name: getattr(_gf, name) for name in _TOP_LEVEL})
globals().update({name: getattr(_gf.nn, name) for name in _FROM_NN})

__all__ = sorted(_TOP_LEVEL + _FROM_NN + ["logical_xor", "xdivy", "xlogy"] + """
erfcinv erfinv ndtri
cumulative_logsumexp divide_no_nan multiply_no_nan nextafter polyval reciprocal_no_nan
reduce_euclidean_norm reduce_std reduce_variance xlog1py zero_fraction
betainc bessel_i0 bessel_i0e bessel_i1 bessel_i1e igamma igammac special zeta""".split())
