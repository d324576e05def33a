"""The initializers of TF1's core (``tf.zeros_initializer``, ``tf.glorot_uniform_initializer``
...): each is called with a shape and a dtype and builds the tensor that gives a variable
its first value. ``gradflow.variables`` exports them under their TF1 names.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow import dtypes
from gradflow.ops import state_ops
from gradflow.prim.registry import constant, filled_to_shape


class Initializer:
    """Base class: ``init(shape, dtype)`` returns an initial-value tensor."""

    def __call__(self, shape, dtype=dtypes.float32, partition_info=None):
        raise NotImplementedError


class zeros_initializer(Initializer):
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return constant(np.zeros(shape), dtype=dtype or self.dtype)


class ones_initializer(zeros_initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return constant(np.ones(shape), dtype=dtype or self.dtype)


class constant_initializer(Initializer):
    def __init__(self, value=0, dtype=dtypes.float32):
        self.value, self.dtype = value, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        """``value`` laid out as ``shape`` by TF1's rule: a value of that many elements
        is reshaped, a shorter list's last element fills the rest."""
        return constant(filled_to_shape(self.value, shape, "constant_initializer"),
                        dtype=dtype or self.dtype)


class random_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                       seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                          seed=self.seed)


class random_uniform_initializer(Initializer):
    def __init__(self, minval=0.0, maxval=1.0, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype,
                                        seed=self.seed)


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class glorot_uniform_initializer(Initializer):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))`` (TF1's default for get_variable)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, fan_out = _fans(tuple(shape))
        limit = math.sqrt(3.0 / max(1.0, (fan_in + fan_out) / 2.0))
        return state_ops.random_uniform(shape, -limit, limit, dtype or self.dtype,
                                        seed=self.seed)


class glorot_normal_initializer(glorot_uniform_initializer):
    """Truncated normal with ``stddev = sqrt(2 / (fan_in + fan_out))`` (corrected)."""

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, fan_out = _fans(tuple(shape))
        stddev = math.sqrt(1.0 / max(1.0, (fan_in + fan_out) / 2.0)) / 0.87962566103423978
        return state_ops.truncated_normal(shape, 0.0, stddev, dtype or self.dtype,
                                          seed=self.seed)


class he_normal_initializer(glorot_uniform_initializer):
    """Truncated normal with ``stddev = sqrt(2 / fan_in)`` (corrected), for ReLU nets."""

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, _ = _fans(tuple(shape))
        stddev = math.sqrt(2.0 / max(1.0, fan_in)) / 0.87962566103423978
        return state_ops.truncated_normal(shape, 0.0, stddev, dtype or self.dtype,
                                          seed=self.seed)
