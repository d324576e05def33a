"""TF1 contrib's initializers: variance scaling and Xavier/Glorot.

>>> w = gf.get_variable("w", [784, 256], initializer=gf.contrib.layers.xavier_initializer())
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.ops import state_ops
from gradflow.variables import Initializer, _fans

__all__ = ["variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]


class variance_scaling_initializer(Initializer):  # noqa: N801 - TF1 name
    """TF1 contrib's variance scaling: with ``n`` the fan-in, fan-out or their mean
    (``mode``), uniform in ``±sqrt(3 * factor / n)``, or a normal truncated at two
    standard deviations with ``stddev = sqrt(1.3 * factor / n)``."""

    MODES = ("FAN_IN", "FAN_OUT", "FAN_AVG")

    def __init__(self, factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                 dtype=dtypes.float32):
        if mode not in self.MODES:
            raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
        dtype = dtypes.as_dtype(dtype)
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        self.factor, self.mode, self.uniform = float(factor), mode, bool(uniform)
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        fan_in, fan_out = _fans(tuple(shape))
        n = {"FAN_IN": fan_in, "FAN_OUT": fan_out,
             "FAN_AVG": (fan_in + fan_out) / 2.0}[self.mode]
        if self.uniform:
            limit = math.sqrt(3.0 * self.factor / n)
            return state_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)
        stddev = math.sqrt(1.3 * self.factor / n)
        return state_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)


def xavier_initializer(uniform=True, seed=None, dtype=dtypes.float32):
    """Glorot/Xavier: uniform in ``±sqrt(6 / (fan_in + fan_out))``, or (``uniform=False``)
    TF1's truncated normal with ``stddev = sqrt(2.6 / (fan_in + fan_out))``."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform,
                                        seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer
