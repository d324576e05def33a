"""Learning-rate schedules of the global step (TF1 ``tf.train.*_decay``).

Each returns a scalar tensor computed from the step every time a run needs
it, so it can be passed as an optimizer's ``learning_rate``. As in TF1 the
schedule is computed in the dtype of ``learning_rate``: float32 for a Python
number, the tensor's own dtype for a float tensor (float64 for exact tests).
"""

from __future__ import annotations

import math
import numbers

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.math_ops import (
    cast,
    ceil,
    cos,
    equal,
    exp,
    floor,
    less_equal,
    log,
    minimum,
    negative,
    pow,  # noqa: A004
    where,
)
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import convert_to_tensor

# -- helpers -------------------------------------------------------------------------


def _rate_and_step(learning_rate, global_step, what):
    """``learning_rate`` as a float tensor and ``global_step`` cast to its dtype."""
    if global_step is None:
        raise ValueError(f"{what}: global_step is required (e.g. "
                         "gf.train.get_or_create_global_step())")
    if isinstance(learning_rate, Tensor):
        if not learning_rate.dtype.is_floating:
            raise TypeError(f"{what}: learning_rate must be a float tensor, got "
                            f"'{learning_rate.name}' of dtype {learning_rate.dtype.name}")
        rate = learning_rate
    else:
        rate = convert_to_tensor(float(learning_rate), dtype=dtypes.float32)
    return rate, cast(global_step, rate.dtype)


def _number(value, dtype, what, arg, positive=False):
    """A Python number kept as a float (checked), or a tensor cast to ``dtype``."""
    if isinstance(value, Tensor):
        return cast(value, dtype)
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: {arg} must be a number or a tensor, got "
                        f"{type(value).__name__}")
    if positive and value <= 0:
        raise ValueError(f"{what}: {arg} must be positive, got {value}")
    return float(value)


def _named(result, name):
    return identity(result, name=name) if name else result


# -- schedules -----------------------------------------------------------------------


def _decay_terms(what, learning_rate, global_step, decay_steps, decay_rate, staircase):
    """``(rate, global_step / decay_steps (floored with staircase), decay_rate)`` as
    tensors of the rate's dtype: what the exponential-type schedules share."""
    rate, step = _rate_and_step(learning_rate, global_step, what)
    decay_steps = _number(decay_steps, rate.dtype, what, "decay_steps", positive=True)
    decay_rate = _number(decay_rate, rate.dtype, what, "decay_rate")
    p = step / decay_steps
    return rate, (floor(p) if staircase else p), decay_rate


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase``
    the exponent is floored, so the rate drops once every ``decay_steps`` steps.

    >>> lr = gf.train.exponential_decay(1e-3, step, decay_steps=469, decay_rate=0.7)
    """
    rate, exponent, decay_rate = _decay_terms("exponential_decay", learning_rate, global_step,
                                              decay_steps, decay_rate, staircase)
    return _named(rate * pow(convert_to_tensor(decay_rate, like=rate), exponent), name)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)``; with
    ``staircase`` the ratio ``global_step / decay_steps`` is floored."""
    rate, p, decay_rate = _decay_terms("natural_exp_decay", learning_rate, global_step,
                                       decay_steps, decay_rate, staircase)
    return _named(rate * exp(negative(p * decay_rate)), name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``; with
    ``staircase`` the ratio ``global_step / decay_steps`` is floored."""
    rate, p, decay_rate = _decay_terms("inverse_time_decay", learning_rate, global_step,
                                       decay_steps, decay_rate, staircase)
    return _named(rate / (p * decay_rate + 1.0), name)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """From ``learning_rate`` to ``end_learning_rate`` in ``decay_steps`` steps::

        step = min(global_step, decay_steps)
        (learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power
            + end_learning_rate

    and ``end_learning_rate`` after that. With ``cycle=True`` the decay starts
    again instead: ``decay_steps`` becomes the first multiple of itself at or
    above ``global_step`` (``decay_steps`` itself at step 0).
    """
    what = "polynomial_decay"
    rate, step = _rate_and_step(learning_rate, global_step, what)
    decay_steps = _number(decay_steps, rate.dtype, what, "decay_steps", positive=True)
    end = _number(end_learning_rate, rate.dtype, what, "end_learning_rate")
    power = _number(power, rate.dtype, what, "power")
    if cycle:
        # ceil(step / decay_steps), but 1 at step 0 so the first period has its full length
        multiplier = ceil(step / decay_steps)
        multiplier = where(equal(step, 0.0), convert_to_tensor(1.0, like=step), multiplier)
        decay_steps = multiplier * decay_steps
    else:
        step = minimum(step, decay_steps)
    remaining = 1.0 - step / decay_steps
    return _named((rate - end) * pow(remaining, power) + end, name)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """Half a cosine from ``learning_rate`` down to ``alpha * learning_rate`` in
    ``decay_steps`` steps (Loshchilov & Hutter, SGDR), constant after that::

        fraction = min(global_step, decay_steps) / decay_steps
        learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * fraction)) + alpha)
    """
    what = "cosine_decay"
    rate, step = _rate_and_step(learning_rate, global_step, what)
    decay_steps = _number(decay_steps, rate.dtype, what, "decay_steps", positive=True)
    alpha = _number(alpha, rate.dtype, what, "alpha")
    fraction = minimum(step, decay_steps) / decay_steps
    cosine = (cos(fraction * math.pi) + 1.0) * 0.5
    return _named(rate * (cosine * (1.0 - alpha) + alpha), name)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): the first period lasts
    ``first_decay_steps`` steps, each later one ``t_mul`` times longer than the
    last, and period ``i`` (from 0) starts at ``m_mul ** i * learning_rate``;
    within a period the rate follows ``cosine_decay`` down to ``alpha`` times
    ``learning_rate``.
    """
    what = "cosine_decay_restarts"
    rate, step = _rate_and_step(learning_rate, global_step, what)
    first = _number(first_decay_steps, rate.dtype, what, "first_decay_steps", positive=True)
    t_mul = _number(t_mul, rate.dtype, what, "t_mul", positive=True)
    m_mul = _number(m_mul, rate.dtype, what, "m_mul")
    alpha = _number(alpha, rate.dtype, what, "alpha")
    fraction = step / first

    def equal_periods():
        restart = floor(fraction)
        return restart, fraction - restart

    def done(i, t):
        # the periods before restart i sum to (1 - t^i) / (1 - t) first periods
        return (1.0 - pow(t, i)) / (1.0 - t)

    def growing_periods(t):
        log_t = log(t) if isinstance(t, Tensor) else math.log(t)
        restart = floor(log(1.0 - fraction * (1.0 - t)) / log_t)
        # TF1's formula alone can land one period off where a restart falls exactly on
        # a step (log(243) / log(3) rounds below 5); check against the period sums
        restart = where(less_equal(done(restart + 1.0, t), fraction), restart + 1.0, restart)
        restart = where(less_equal(done(restart, t), fraction), restart, restart - 1.0)
        return restart, (fraction - done(restart, t)) / pow(t, restart)

    if not isinstance(t_mul, Tensor):
        restart, within = equal_periods() if t_mul == 1.0 else growing_periods(t_mul)
    else:  # both branches, the one for t_mul's value selected at run time
        same = equal(t_mul, 1.0)
        # the growing branch runs with t = 2 where t_mul is 1, so it makes no NaN
        t = where(same, convert_to_tensor(2.0, like=t_mul), t_mul)
        (r1, w1), (r2, w2) = equal_periods(), growing_periods(t)
        restart, within = where(same, r1, r2), where(same, w1, w2)
    cosine = pow(m_mul, restart) * 0.5 * (cos(within * math.pi) + 1.0)
    return _named(rate * (cosine * (1.0 - alpha) + alpha), name)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """A cosine of ``num_periods`` periods over ``decay_steps`` steps, damped by a
    line that falls to zero (Bello et al., 2017)::

        step = min(global_step, decay_steps)
        linear = (decay_steps - step) / decay_steps
        cosine = 0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps))
        learning_rate * ((alpha + linear) * cosine + beta)
    """
    what = "linear_cosine_decay"
    rate, step = _rate_and_step(learning_rate, global_step, what)
    decay_steps = _number(decay_steps, rate.dtype, what, "decay_steps", positive=True)
    num_periods = _number(num_periods, rate.dtype, what, "num_periods")
    alpha = _number(alpha, rate.dtype, what, "alpha")
    beta = _number(beta, rate.dtype, what, "beta")
    step = minimum(step, decay_steps)
    linear = (decay_steps - step) / decay_steps
    fraction = step / decay_steps
    cosine = (cos(fraction * (2.0 * math.pi) * num_periods) + 1.0) * 0.5
    return _named(rate * ((linear + alpha) * cosine + beta), name)


def piecewise_constant(x, boundaries, values, name=None):
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` after the last boundary.

    ``x`` is a scalar tensor (usually the global step); the boundaries are
    compared in its dtype, so for an integer step they must be integers. The
    values must share one dtype (Python floats give float32, Python ints
    int32; floats and ints mixed give float32).

    >>> lr = gf.train.piecewise_constant(step, [1000, 2000], [0.1, 0.01, 0.001])
    """
    what = "piecewise_constant"
    boundaries, values = list(boundaries), list(values)
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"{what}: values must have one more element than boundaries, got "
                         f"{len(values)} values for {len(boundaries)} boundaries")
    x = convert_to_tensor(x)
    if x.shape is not None and len(x.shape) != 0:
        raise ValueError(f"{what}: x must be a scalar, got '{x.name}' of shape {x.shape}")
    bounds = [_boundary(b, x, i, what) for i, b in enumerate(boundaries)]
    known = [b for b in boundaries if not isinstance(b, Tensor)]
    if any(later < earlier for earlier, later in zip(known, known[1:])):
        raise ValueError(f"{what}: boundaries must be in increasing order, got {boundaries}")
    tensors = _values(values, what)
    result = tensors[-1]
    for bound, value in zip(reversed(bounds), reversed(tensors[:-1])):
        result = where(less_equal(x, bound), value, result)
    return _named(result, name)


piecewise_constant_decay = piecewise_constant


def _boundary(b, x, index, what):
    """Boundary ``index`` as a tensor of ``x``'s dtype."""
    if isinstance(b, Tensor):
        if b.dtype is x.dtype:
            return b
        if b.dtype.is_integer and x.dtype.is_integer:  # TF1 casts int32 <-> int64 here
            return cast(b, x.dtype)
        raise ValueError(f"{what}: boundaries[{index}] ('{b.name}', {b.dtype.name}) must "
                         f"have the dtype of x ('{x.name}', {x.dtype.name})")
    if not isinstance(b, numbers.Real):
        raise TypeError(f"{what}: boundaries[{index}] must be a number or a tensor, got "
                        f"{type(b).__name__}")
    if x.dtype.is_integer and b != int(b):
        raise ValueError(f"{what}: boundaries[{index}] = {b!r} is not an integer, but x "
                         f"('{x.name}') is {x.dtype.name}")
    return convert_to_tensor(int(b) if x.dtype.is_integer else float(b), like=x)


def _values(values, what):
    """The values as scalar tensors of one dtype."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    if tensors:
        dtype = tensors[0].dtype
    elif any(isinstance(v, float) for v in values):
        dtype = dtypes.float32
    else:
        dtype = dtypes.int32
    out = []
    for i, v in enumerate(values):
        if isinstance(v, Tensor):
            if v.dtype is not dtype:
                raise ValueError(f"{what}: values must all have one dtype, but values[{i}] "
                                 f"('{v.name}') is {v.dtype.name} and '{tensors[0].name}' "
                                 f"is {dtype.name}")
            out.append(v)
        elif tensors:  # a Python number beside tensors takes their dtype, if it fits
            try:
                out.append(convert_to_tensor(v, like=tensors[0]))
            except TypeError as err:
                raise ValueError(f"{what}: values[{i}]: {err}") from None
        else:
            out.append(convert_to_tensor(v, dtype=dtype))
    if any(t.shape is not None and len(t.shape) != 0 for t in out):
        shapes = [t.shape for t in out]
        raise ValueError(f"{what}: values must be scalars, got shapes {shapes}")
    return out


__all__ = [
    "cosine_decay", "cosine_decay_restarts", "exponential_decay", "inverse_time_decay",
    "linear_cosine_decay", "natural_exp_decay", "piecewise_constant",
    "piecewise_constant_decay", "polynomial_decay",
]
