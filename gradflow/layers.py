"""Layer helpers with TF1 ``tf.layers`` names: variables made through get_variable."""

from __future__ import annotations

import math

from gradflow.ops.array_ops import matmul, reshape
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.registry import convert_to_tensor
from gradflow.variables import get_variable, variable_scope, zeros_initializer


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, trainable=True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)`` with variables ``<name>/kernel`` and ``/bias``.

    >>> h = gf.layers.dense(x, 512, activation=gf.nn.relu)
    """
    x = convert_to_tensor(inputs)
    if x.shape is None or x.shape[-1] is None:
        raise ValueError(f"dense: the last axis of '{x.name}' must be known, got shape "
                         f"{x.shape}")
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", (x.shape[-1], units), dtype=x.dtype,
                              initializer=kernel_initializer, trainable=trainable)
        out = matmul(x, kernel) if len(x.shape) == 2 else \
            reshape(matmul(reshape(x, (-1, x.shape[-1])), kernel),
                    tuple(-1 if d is None else d for d in x.shape[:-1]) + (units,))
        return _bias_and_activation(out, units, use_bias, bias_initializer, activation,
                                    trainable)


def _bias_and_activation(out, units, use_bias, bias_initializer, activation, trainable):
    """The shared tail of a layer: an optional ``bias`` variable, then the activation."""
    if use_bias:
        bias = get_variable("bias", (units,), dtype=out.dtype,
                            initializer=bias_initializer or zeros_initializer(),
                            trainable=trainable)
        out = bias_add(out, bias)
    return activation(out) if activation is not None else out


def flatten(inputs, name=None):
    """Reshape to ``(batch, -1)``, keeping the first axis."""
    x = convert_to_tensor(inputs)
    inner = x.shape[1:]
    if None in inner:
        raise ValueError(f"flatten: the non-batch axes of '{x.name}' must be known, got "
                         f"{tuple(x.shape)}")
    return reshape(x, (-1, math.prod(inner)), name=name)


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer=None, trainable=True,
           name=None, reuse=None, data_format="channels_last"):
    """2-D convolution layer with variables ``<name>/kernel`` (HWIO) and ``/bias``.

    >>> h = gf.layers.conv2d(x, 32, 5, padding="same", activation=gf.nn.relu)
    """
    from gradflow.ops.conv_ops import conv2d as nn_conv2d

    if data_format != "channels_last":
        raise NotImplementedError("layers.conv2d: only data_format='channels_last' is supported")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) != 4 or x.shape[-1] is None:
        raise ValueError(f"conv2d: '{x.name}' must be NHWC with known channels, got {x.shape}")
    with variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = get_variable("kernel", _pair(kernel_size) + (x.shape[-1], filters),
                              dtype=x.dtype, initializer=kernel_initializer, trainable=trainable)
        out = nn_conv2d(x, kernel, strides=_pair(strides), padding=padding.upper())
        return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                    trainable)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling layer (TF1 ``tf.layers.max_pooling2d``)."""
    from gradflow.ops.conv_ops import max_pool

    return max_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(), name=name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """Average pooling layer (TF1 ``tf.layers.average_pooling2d``)."""
    from gradflow.ops.conv_ops import avg_pool

    return avg_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(), name=name)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout while ``training`` (a bool or a bool tensor), the identity otherwise."""
    from gradflow.ops.conv_ops import dropout as nn_dropout
    from gradflow.ops.math_ops import cast

    x = convert_to_tensor(inputs)
    if isinstance(training, bool):
        return nn_dropout(x, rate=rate, noise_shape=noise_shape, seed=seed, name=name) \
            if training else x
    rate_t = cast(convert_to_tensor(training), x.dtype) * rate
    return nn_dropout(x, rate=rate_t, noise_shape=noise_shape, seed=seed, name=name)
