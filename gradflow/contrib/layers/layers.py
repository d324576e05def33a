"""TF1 contrib's layer functions, each with ``add_arg_scope`` so that
``contrib.framework.arg_scope`` can set their arguments.

``fully_connected`` makes TF1's variables ``<scope>/weights`` and
``<scope>/biases`` (default scope ``fully_connected``, then
``fully_connected_1``...), puts them in ``GraphKeys.MODEL_VARIABLES`` as TF1
does, and applies ``relu`` unless told otherwise; ``conv2d`` does the same
under the default scope ``Conv``.

>>> with arg_scope([fully_connected], weights_regularizer=l2_regularizer(1e-4)):
...     h = fully_connected(x, 256)
"""

from __future__ import annotations

import numbers

from gradflow import layers as _core_layers
from gradflow.contrib.framework import add_arg_scope
from gradflow.contrib.layers.initializers import xavier_initializer
from gradflow.graph import get_default_graph
from gradflow.ops.math_ops import relu
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.normalization_ops import contrib_batch_norm
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import (
    GraphKeys,
    add_to_collections,
    get_variable,
    variable_scope,
    zeros_initializer,
)

__all__ = ["batch_norm", "conv2d", "dropout", "flatten", "fully_connected", "layer_norm"]


def _collections(variables_collections, key):
    """TF1: the extra collections of one variable of a layer (a list for all, or a
    dict by variable kind), on top of the global and model variables."""
    extra = variables_collections.get(key) if isinstance(variables_collections, dict) \
        else variables_collections
    if isinstance(extra, str):
        extra = [extra]
    return [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES] + list(extra or ())


_ZEROS = zeros_initializer()


def _weights(shape, dtype, initializer, regularizer, trainable, variables_collections):
    return get_variable("weights", shape, dtype=dtype,
                        initializer=initializer if initializer is not None
                        else xavier_initializer(),
                        regularizer=regularizer, trainable=trainable,
                        collections=_collections(variables_collections, "weights"))


def _finish(out, num_outputs, activation_fn, normalizer_fn, normalizer_params,
            biases_initializer, biases_regularizer, trainable, variables_collections,
            outputs_collections):
    """What fully_connected and conv2d share after the product: biases (unless a
    normalizer or ``biases_initializer=None``), the normalizer, the activation."""
    if normalizer_fn is None and biases_initializer is not None:
        biases = get_variable("biases", (num_outputs,), dtype=out.dtype,
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


def _num_outputs(num_outputs):
    if not isinstance(num_outputs, numbers.Integral) or isinstance(num_outputs, bool):
        raise ValueError(f"num_outputs type should be one of int, got {type(num_outputs)}")
    return int(num_outputs)


@add_arg_scope
def fully_connected(inputs, num_outputs, activation_fn=relu, normalizer_fn=None,
                    normalizer_params=None, weights_initializer=None,
                    weights_regularizer=None, biases_initializer=_ZEROS,
                    biases_regularizer=None, reuse=None, variables_collections=None,
                    outputs_collections=None, trainable=True, scope=None):
    """``activation_fn(inputs @ weights + biases)`` over the last axis of ``inputs``.

    ``weights_initializer`` defaults to ``xavier_initializer()``;
    ``biases_initializer=None`` (or a ``normalizer_fn``) leaves the biases out;
    ``normalizer_fn(outputs, **normalizer_params)`` runs before the activation.
    Leading dims may be unknown (``[None, None, 128]``).
    """
    num_outputs = _num_outputs(num_outputs)
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) < 2 or x.shape[-1] is None:
        raise ValueError(f"fully_connected: '{x.name}' must have rank >= 2 and a known last "
                         f"axis, got shape {x.shape}")
    with variable_scope(scope, default_name="fully_connected", reuse=reuse):
        weights = _weights((int(x.shape[-1]), num_outputs), x.dtype, weights_initializer,
                           weights_regularizer, trainable, variables_collections)
        return _finish(_core_layers.last_axis_product(x, weights), num_outputs,
                       activation_fn, normalizer_fn, normalizer_params, biases_initializer,
                       biases_regularizer, trainable, variables_collections,
                       outputs_collections)


@add_arg_scope
def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None,
           rate=1, activation_fn=relu, normalizer_fn=None, normalizer_params=None,
           weights_initializer=None, weights_regularizer=None, biases_initializer=_ZEROS,
           biases_regularizer=None, reuse=None, variables_collections=None,
           outputs_collections=None, trainable=True, scope=None):
    """2-D convolution of NHWC ``inputs`` (TF1 ``tf.contrib.layers.conv2d``): variables
    ``<scope>/weights`` ``[kh, kw, in, num_outputs]`` and ``/biases``, default scope
    ``Conv``, ``relu`` unless told otherwise, ``padding`` "SAME" by default.

    >>> h = gf.contrib.layers.conv2d(images, 32, [5, 5])
    """
    from gradflow.ops.conv_ops import conv2d as nn_conv2d

    num_outputs = _num_outputs(num_outputs)
    if data_format not in (None, "NHWC"):
        raise NotImplementedError("contrib.layers.conv2d: only data_format='NHWC' is "
                                  "supported")
    if _core_layers._pair(rate) != (1, 1):
        raise NotImplementedError("contrib.layers.conv2d: rate (dilation) other than 1 is "
                                  "not supported")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) != 4 or x.shape[-1] is None:
        raise ValueError(f"contrib.layers.conv2d: '{x.name}' must be NHWC with known "
                         f"channels, got shape {x.shape}")
    shape = _core_layers._pair(kernel_size) + (int(x.shape[-1]), num_outputs)
    with variable_scope(scope, default_name="Conv", reuse=reuse):
        weights = _weights(shape, x.dtype, weights_initializer, weights_regularizer,
                           trainable, variables_collections)
        stride = _core_layers._pair(stride)
        out = nn_conv2d(x, weights, strides=(1,) + stride + (1,), padding=padding.upper())
        return _finish(out, num_outputs, activation_fn, normalizer_fn, normalizer_params,
                       biases_initializer, biases_regularizer, trainable,
                       variables_collections, outputs_collections)


@add_arg_scope
def dropout(inputs, keep_prob=0.5, noise_shape=None, is_training=True,
            outputs_collections=None, scope=None, seed=None):
    """Dropout keeping each element with ``keep_prob`` while ``is_training`` (a bool or
    a bool tensor), the identity otherwise (TF1 ``tf.contrib.layers.dropout``).

    >>> h = gf.contrib.layers.dropout(h, keep_prob=0.8, is_training=is_training)
    """
    with get_default_graph().name_scope(scope or "Dropout"):
        out = _core_layers.dropout(inputs, rate=_rate(keep_prob), noise_shape=noise_shape,
                                   seed=seed, training=is_training)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out


def _rate(keep_prob):
    """``1 - keep_prob``, for a number or a tensor."""
    if isinstance(keep_prob, numbers.Real):
        if not 0.0 < keep_prob <= 1.0:
            raise ValueError(f"dropout: keep_prob must be in (0, 1], got {keep_prob}")
        return 1.0 - float(keep_prob)
    from gradflow.ops.math_ops import subtract

    return subtract(1.0, convert_to_tensor(keep_prob))


@add_arg_scope
def flatten(inputs, outputs_collections=None, scope=None):
    """Reshape to ``[batch, k]``, keeping the first axis (the others must be known)."""
    with get_default_graph().name_scope(scope or "Flatten"):
        out = _core_layers.flatten(inputs)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out


batch_norm = add_arg_scope(contrib_batch_norm)


@add_arg_scope
def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True,
               begin_norm_axis=1, begin_params_axis=-1, scope=None):
    """Layer normalization (TF1 ``tf.contrib.layers.layer_norm``): each example
    normalized over the axes from ``begin_norm_axis`` on (mean and variance of those
    axes, epsilon 1e-12, 1e-3 for float16), then scaled by ``gamma`` and shifted by
    ``beta`` (variables ``<scope>/gamma`` and ``/beta``, default scope ``LayerNorm``,
    of the input's shape from ``begin_params_axis`` on).

    >>> h = gf.contrib.layers.layer_norm(h, begin_norm_axis=-1, begin_params_axis=-1)
    """
    from gradflow import dtypes
    from gradflow.nn import batch_normalization, moments
    from gradflow.variables import ones_initializer

    x = convert_to_tensor(inputs)
    if x.shape is None:
        raise ValueError(f"layer_norm: '{x.name}' has an unknown rank")
    rank = len(x.shape)
    norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    params_axis = begin_params_axis + rank if begin_params_axis < 0 else begin_params_axis
    if not (0 <= norm_axis < rank and 0 <= params_axis < rank):
        raise ValueError(f"layer_norm: begin_norm_axis ({begin_norm_axis}) and "
                         f"begin_params_axis ({begin_params_axis}) must be axes of '{x.name}' "
                         f"(rank {rank})")
    params_shape = tuple(x.shape[params_axis:])
    if None in params_shape:
        raise ValueError(f"layer_norm: '{x.name}' has shape {x.shape}; the axes from "
                         f"begin_params_axis ({begin_params_axis}) on must be known")
    with variable_scope(scope, default_name="LayerNorm", reuse=reuse):
        def param(name, initializer, wanted):
            if not wanted:
                return None
            return get_variable(name, params_shape, dtype=x.dtype, initializer=initializer,
                                trainable=trainable,
                                collections=_collections(variables_collections, name))

        beta = param("beta", _ZEROS, center)
        gamma = param("gamma", ones_initializer(), scale)
        mean, variance = moments(x, list(range(norm_axis, rank)), keep_dims=True)
        out = batch_normalization(x, mean, variance, offset=beta, scale=gamma,
                                  variance_epsilon=1e-3 if x.dtype == dtypes.float16
                                  else 1e-12)
        if activation_fn is not None:
            out = activation_fn(out)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out
