"""What the distributions share: their parameters as tensors of one floating dtype,
their batch shapes (static and at run time), and the normal distribution's ``ndtr``
and ``log_ndtr``."""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reshape
from gradflow.ops.index_ops import concat, shape
from gradflow.ops.math_ops import abs as abs_
from gradflow.ops.math_ops import cast, log, maximum, minimum, square, where, zeros_like
from gradflow.ops.special_ops import erf, erfc
from gradflow.prim import rules
from gradflow.prim.registry import convert_to_tensor

_HALF_SQRT_2 = 0.5 * math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def float_params(what, **params):
    """The parameters as tensors of one floating dtype: that of the first tensor among
    them, else float32 (Python numbers)."""
    dtype = next((convert_to_tensor(v).dtype for v in params.values()
                  if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor")), dtypes.float32)
    if not dtype.is_floating:
        raise TypeError(f"{what}: parameters must be floating, got {dtype.name}")
    out = []
    for key, value in params.items():
        try:
            out.append(convert_to_tensor(value, dtype=dtype, name=key))
        except TypeError as err:
            raise TypeError(f"{what}: {key} must be {dtype.name}: {err}") from None
    return out


def static_batch(*tensors):
    """The broadcast of the tensors' static shapes, as a tuple (``None`` for unknown
    dimensions), or None where a rank is unknown."""
    out = ()
    for t in tensors:
        if t.shape is None:
            return None
        out = tuple(rules.broadcast_shapes(out, tuple(t.shape)))
    return out


def dynamic_batch(*tensors):
    """The broadcast shape of the tensors at run time, a 1-D int32 tensor."""
    total = zeros_like(tensors[0])
    for t in tensors[1:]:
        total = total + zeros_like(t)
    return shape(total)


def draw_shape(n, dist):
    """``[n] + dist``'s batch shape, for a random op: ints where the graph knows them,
    scalar tensors (of ``batch_shape_tensor``) elsewhere, or a 1-D tensor where the
    batch's rank is unknown (``n`` a Python int or a scalar tensor)."""
    batch = dist._batch_shape()
    if batch is None:
        lead = [n] if isinstance(n, int) else reshape(cast(n, dtypes.int32), [1])
        return concat([lead, dist.batch_shape_tensor()], 0)
    if None not in batch:
        return [n, *batch]
    dynamic = dist.batch_shape_tensor()
    return [n] + [d if d is not None else dynamic[i] for i, d in enumerate(batch)]


def ndtr(x):
    """The standard normal CDF, from ``erf`` near 0 and ``erfc`` in the tails."""
    w = x * _HALF_SQRT_2
    z = abs_(w)
    y = where(z < _HALF_SQRT_2, 1.0 + erf(w), where(w > 0.0, 2.0 - erfc(z), erfc(z)))
    return 0.5 * y


def _log_ndtr_tail(x):
    """``log ndtr(x)`` for very negative ``x``: the asymptotic expansion
    ``-x^2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x^2 + 3/x^4 - 15/x^6)``."""
    x2 = square(x)
    series = 1.0 - 1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2)
    return -0.5 * x2 - log(-x) - _HALF_LOG_2PI + log(series)


def log_ndtr(x):
    """``log ndtr(x)``, accurate in both tails: ``-ndtr(-x)`` above the upper cut,
    the asymptotic series below the lower one (-20 in float64, -10 otherwise)."""
    lower, upper = (-20.0, 8.0) if x.dtype is dtypes.float64 else (-10.0, 5.0)
    middle = log(ndtr(maximum(x, lower)))
    return where(x > upper, -ndtr(-x), where(x > lower, middle,
                                             _log_ndtr_tail(minimum(x, lower))))
