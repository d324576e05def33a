"""TF1's ``tf.contrib.layers``, for what gradflow has: the Xavier / variance-scaling
initializers, the L1/L2 regularizers, ``fully_connected`` and ``flatten``.

``fully_connected`` makes TF1's variables ``<scope>/weights`` and
``<scope>/biases`` (default scope ``fully_connected``, then
``fully_connected_1``...), puts them in ``GraphKeys.MODEL_VARIABLES`` as TF1
does, and applies ``relu`` unless told otherwise.

>>> h = gf.contrib.layers.fully_connected(x, 256,
...         weights_regularizer=gf.contrib.layers.l2_regularizer(1e-4))
"""

from __future__ import annotations

import math
import numbers

from gradflow import dtypes
from gradflow import layers as _core_layers
from gradflow.graph import get_default_graph
from gradflow.ops import state_ops
from gradflow.ops.array_ops import matmul, reduce_sum, reshape
from gradflow.ops.math_ops import abs as _abs
from gradflow.ops.math_ops import add, multiply, relu
from gradflow.ops.nn_ops import bias_add, l2_loss
from gradflow.ops.normalization_ops import contrib_batch_norm as batch_norm
from gradflow.ops.registry import constant, convert_to_tensor
from gradflow.variables import (
    GraphKeys,
    Initializer,
    _fans,
    add_to_collection,
    add_to_collections,
    get_collection,
    get_variable,
    variable_scope,
    zeros_initializer,
)

__all__ = ["apply_regularization", "batch_norm", "flatten", "fully_connected", "l1_l2_regularizer",
           "l1_regularizer", "l2_regularizer", "sum_regularizer",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]


# -- initializers ---------------------------------------------------------------------


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


# -- regularizers: each maps a weight tensor to a scalar penalty (or None) -----------


def _check_scale(scale):
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        return scale != 0.0
    return True  # a tensor


def _scaled(scale, penalty, weights, scope, default):
    graph = get_default_graph()
    with graph.name_scope(scope or default):
        factor = convert_to_tensor(scale, dtype=weights.dtype) \
            if not isinstance(scale, numbers.Real) else \
            constant(float(scale), dtype=weights.dtype, name="scale")
        return multiply(factor, penalty(weights), name="value")


def l2_regularizer(scale, scope=None):
    """``weights -> scale * l2_loss(weights)`` (``sum(w ** 2) / 2``); scale 0 turns it off."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: _scaled(scale, l2_loss, convert_to_tensor(weights), scope,
                                   "l2_regularizer")


def l1_regularizer(scale, scope=None):
    """``weights -> scale * sum(|weights|)``; scale 0 turns it off."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: _scaled(scale, lambda w: reduce_sum(_abs(w)),
                                   convert_to_tensor(weights), scope, "l1_regularizer")


def sum_regularizer(regularizer_list, scope=None):
    """A regularizer that adds the penalties of ``regularizer_list`` (``None`` ones
    skipped)."""
    regularizer_list = [r for r in regularizer_list if r is not None]
    if not regularizer_list:
        return None

    def total(weights):
        penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
        if not penalties:
            return None
        with get_default_graph().name_scope(scope or "sum_regularizer"):
            out = penalties[0]
            for p in penalties[1:]:
                out = add(out, p)
            return out

    return total


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of ``l1_regularizer(scale_l1)`` and ``l2_regularizer(scale_l2)``."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)],
                           scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """The sum of ``regularizer(w)`` over ``weights_list`` (default: the
    ``GraphKeys.WEIGHTS`` collection), also added to
    ``GraphKeys.REGULARIZATION_LOSSES``."""
    if not weights_list:
        weights_list = get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with get_default_graph().name_scope("get_regularization_penalty"):
        penalties = []
        for w in weights_list:
            p = regularizer(w)
            p = constant(0.0, dtype=convert_to_tensor(w).dtype) if p is None else p
            if p.shape is not None and len(p.shape) != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a "
                                 f"Tensor with rank {len(p.shape)}.")
            penalties.append(p)
        total = penalties[0]
        for p in penalties[1:]:
            total = add(total, p)
    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total


# -- layers -----------------------------------------------------------------------------


def _collections(variables_collections, key):
    """TF1: the extra collections of one variable of a layer (a list for all, or a
    dict by variable kind), on top of the global and model variables."""
    extra = variables_collections.get(key) if isinstance(variables_collections, dict) \
        else variables_collections
    if isinstance(extra, str):
        extra = [extra]
    return [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES] + list(extra or ())


_ZEROS = zeros_initializer()


def fully_connected(inputs, num_outputs, activation_fn=relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None, biases_initializer=_ZEROS,
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """``activation_fn(inputs @ weights + biases)`` over the last axis of ``inputs``.

    ``weights_initializer`` defaults to ``xavier_initializer()``;
    ``biases_initializer=None`` (or a ``normalizer_fn``) leaves the biases out;
    ``normalizer_fn(outputs, **normalizer_params)`` runs before the activation.
    """
    if not isinstance(num_outputs, numbers.Integral) or isinstance(num_outputs, bool):
        raise ValueError(f"num_outputs type should be one of int, got {type(num_outputs)}")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) < 2 or x.shape[-1] is None:
        raise ValueError(f"fully_connected: '{x.name}' must have rank >= 2 and a known last "
                         f"axis, got shape {x.shape}")
    depth, num_outputs = int(x.shape[-1]), int(num_outputs)
    with variable_scope(scope, default_name="fully_connected", reuse=reuse):
        weights = get_variable(
            "weights", (depth, num_outputs), dtype=x.dtype,
            initializer=weights_initializer if weights_initializer is not None
            else xavier_initializer(),
            regularizer=weights_regularizer, trainable=trainable,
            collections=_collections(variables_collections, "weights"))
        out = _core_layers.last_axis_product(x, weights)
        if normalizer_fn is None and biases_initializer is not None:
            biases = get_variable("biases", (num_outputs,), dtype=x.dtype,
                                  initializer=biases_initializer,
                                  regularizer=biases_regularizer, trainable=trainable,
                                  collections=_collections(variables_collections, "biases"))
            out = bias_add(out, biases)
        if normalizer_fn is not None:
            out = normalizer_fn(out, **(normalizer_params or {}))
        if activation_fn is not None:
            out = activation_fn(out)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out


def flatten(inputs, outputs_collections=None, scope=None):
    """Reshape to ``[batch, k]``, keeping the first axis (the others must be known)."""
    with get_default_graph().name_scope(scope or "Flatten"):
        out = _core_layers.flatten(inputs)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out
