"""TF1's ``tf.initializers`` namespace and the initializers it adds to the core ones.

Every initializer draws its numbers from the host generator of a random node
(the graph seed and the op's ``seed``), so a seed gives the same initial values
on every backend. New here: ``variance_scaling_initializer`` (TF 1.15
semantics), ``orthogonal_initializer``, ``identity_initializer`` and the
``he_*``/``lecun_*``/``glorot_*`` shorthands.

>>> w = gf.get_variable("w", (784, 256), initializer=gf.initializers.he_normal(seed=1))
"""

from __future__ import annotations

import math

import numpy as np

from gradflow import dtypes
from gradflow.graph import get_default_graph
from gradflow.ops import state_ops
from gradflow.prim.registry import apply
from gradflow.prim.registry import constant as _constant_tensor
from gradflow.variables import (
    Initializer,
    _fans,
    global_variables_initializer,
    local_variables_initializer,
    variables_initializer,
)
from gradflow.variables import constant_initializer as constant
from gradflow.variables import glorot_normal_initializer as glorot_normal
from gradflow.variables import glorot_uniform_initializer as glorot_uniform
from gradflow.variables import ones_initializer as ones
from gradflow.variables import random_normal_initializer as random_normal
from gradflow.variables import random_uniform_initializer as random_uniform
from gradflow.variables import truncated_normal_initializer as truncated_normal
from gradflow.variables import zeros_initializer as zeros

__all__ = [
    "constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
    "he_uniform", "identity", "identity_initializer", "lecun_normal", "lecun_uniform",
    "local_variables", "ones", "orthogonal", "orthogonal_initializer", "random_normal",
    "random_uniform", "truncated_normal", "uniform_unit_scaling",
    "uniform_unit_scaling_initializer", "variables", "variance_scaling",
    "variance_scaling_initializer", "zeros",
]

# The standard deviation of a unit normal truncated to [-2, 2]: dividing by it gives
# the truncated draw the variance asked for.
_TRUNCATED_STDDEV = 0.87962566103423978


def _float_dtype(dtype, what):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{what}: cannot create an initializer for the non-floating dtype "
                        f"{dtype.name}")
    return dtype


def _op_seed(seed, graph):
    """The op seed of a random node, as ``state_ops`` picks it."""
    if seed is not None:
        return int(seed)
    return len(graph.nodes) if graph.seed is not None else None


class variance_scaling_initializer(Initializer):  # noqa: N801 - TF1 name
    """Random values whose variance is ``scale / n`` (TF1 ``tf.variance_scaling_initializer``).

    ``n`` is the fan-in, the fan-out or their mean (``mode``: ``"fan_in"``,
    ``"fan_out"``, ``"fan_avg"``), at least 1; for a conv kernel the fans include
    the receptive field. ``distribution``:

    * ``"truncated_normal"`` (and its TF 1.15 alias ``"normal"``): a normal
      truncated at two standard deviations, widened by 1 / 0.8796... so that the
      truncated values have variance ``scale / n``;
    * ``"untruncated_normal"``: a normal with ``stddev = sqrt(scale / n)``;
    * ``"uniform"``: uniform in ``±sqrt(3 scale / n)``.
    """

    MODES = ("fan_in", "fan_out", "fan_avg")
    DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=dtypes.float32):
        if scale <= 0.0:
            raise ValueError(f"variance_scaling_initializer: scale must be positive, got "
                             f"{scale!r}")
        if mode not in self.MODES:
            raise ValueError(f"variance_scaling_initializer: invalid mode {mode!r}; one of "
                             f"{', '.join(self.MODES)}")
        distribution = str(distribution).lower()
        if distribution not in self.DISTRIBUTIONS:
            raise ValueError(f"variance_scaling_initializer: invalid distribution "
                             f"{distribution!r}; one of {', '.join(self.DISTRIBUTIONS)}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution
        self.seed = seed
        self.dtype = _float_dtype(dtype, "variance_scaling_initializer")

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype if dtype is not None else self.dtype,
                             "variance_scaling_initializer")
        shape = tuple(int(d) for d in shape)
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        variance = self.scale / max(1.0, n[self.mode])
        if self.distribution in ("normal", "truncated_normal"):
            return state_ops.truncated_normal(shape, 0.0, math.sqrt(variance) / _TRUNCATED_STDDEV,
                                              dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return state_ops.random_normal(shape, 0.0, math.sqrt(variance), dtype,
                                           seed=self.seed)
        limit = math.sqrt(3.0 * variance)
        return state_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        """The constructor's arguments, as a dict (Keras's initializer protocol)."""
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, "dtype": self.dtype.name}


class uniform_unit_scaling_initializer(Initializer):  # noqa: N801 - TF1 name
    """Uniform values in ``±factor * sqrt(3 / n)``, ``n`` the product of every dimension
    but the last (at least 1) (TF1 ``tf.uniform_unit_scaling_initializer``, also
    ``tf.initializers.uniform_unit_scaling``), so that ``x @ W`` keeps the scale of
    ``x``."""

    def __init__(self, factor=1.0, seed=None, dtype=dtypes.float32):
        self.factor = factor
        self.seed = seed
        self.dtype = _float_dtype(dtype, "uniform_unit_scaling_initializer")

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype if dtype is not None else self.dtype,
                             "uniform_unit_scaling_initializer")
        shape = tuple(int(d) for d in shape)
        scale_shape = shape if partition_info is None else partition_info.full_shape
        n = max(float(np.prod([float(d) for d in scale_shape[:-1]])), 1.0)
        limit = math.sqrt(3.0 / n) * self.factor
        return state_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        """The constructor's arguments, as a dict (Keras's initializer protocol)."""
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


def _draw_orthogonal(rng, attrs):
    """An orthogonal matrix from the QR decomposition of a normal one, on the host.

    The signs of ``diag(R)`` are moved into ``Q`` so that ``Q`` is uniformly
    distributed (TF1's fix); a wide shape factors the transpose.
    """
    shape = attrs["shape"]
    rows = math.prod(shape[:-1])
    cols = shape[-1]
    flat = (cols, rows) if rows < cols else (rows, cols)
    a = rng.standard_normal(size=flat)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return (attrs["gain"] * q.reshape(shape)).astype(attrs["dtype"].as_numpy_dtype)


state_ops.HOST_DRAWS["orthogonal"] = _draw_orthogonal


class orthogonal_initializer(Initializer):  # noqa: N801 - TF1 name
    """A (semi-)orthogonal matrix times ``gain`` (TF1 ``tf.orthogonal_initializer``).

    The shape is flattened to ``(prod(shape[:-1]), shape[-1])``; its rows (if
    fewer) or its columns are orthonormal. Drawn on the host, with the seed.
    """

    def __init__(self, gain=1.0, seed=None, dtype=dtypes.float32):
        self.gain, self.seed = float(gain), seed
        self.dtype = _float_dtype(dtype, "orthogonal_initializer")

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype if dtype is not None else self.dtype,
                             "orthogonal_initializer")
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError(f"orthogonal_initializer: the tensor to initialize must be at "
                             f"least two-dimensional, got shape {shape}")
        graph = get_default_graph()
        return apply("random", [], name="orthogonal", graph=graph, shape=shape, dtype=dtype,
                     dist="orthogonal", graph_seed=graph.seed,
                     op_seed=_op_seed(self.seed, graph), gain=self.gain)

    def get_config(self):
        """The constructor's arguments, as a dict (Keras's initializer protocol)."""
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class identity_initializer(Initializer):  # noqa: N801 - TF1 name
    """``gain`` times the identity matrix, for 2-D shapes (TF1 ``tf.initializers.identity``)."""

    def __init__(self, gain=1.0, dtype=dtypes.float32):
        self.gain = float(gain)
        self.dtype = _float_dtype(dtype, "identity_initializer")

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _float_dtype(dtype if dtype is not None else self.dtype,
                             "identity_initializer")
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2:
            raise ValueError(f"identity_initializer: only 2-D shapes are supported, got "
                             f"{shape}")
        return _constant_tensor(self.gain * np.eye(*shape), dtype=dtype)

    def get_config(self):
        """The constructor's arguments, as a dict (Keras's initializer protocol)."""
        return {"gain": self.gain, "dtype": self.dtype.name}


def lecun_normal(seed=None):
    """Truncated normal with variance ``1 / fan_in``."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed=seed)


def lecun_uniform(seed=None):
    """Uniform with variance ``1 / fan_in``: in ``±sqrt(3 / fan_in)``."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed=seed)


def he_normal(seed=None):
    """Truncated normal with variance ``2 / fan_in`` (for ReLU networks)."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed=seed)


def he_uniform(seed=None):
    """Uniform with variance ``2 / fan_in``: in ``±sqrt(6 / fan_in)``."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed=seed)


variance_scaling = variance_scaling_initializer
orthogonal = orthogonal_initializer
identity = identity_initializer
uniform_unit_scaling = uniform_unit_scaling_initializer
# TF1's tf.initializers.variables / global_variables / local_variables build init ops
variables = variables_initializer
global_variables = global_variables_initializer
local_variables = local_variables_initializer
