"""More of TF1's ``tf.layers``: the 3-D and separable convolutions, 1-D and 3-D pooling, and
the layer objects of every function (``Conv1D``, ``Conv2DTranspose``, ``Conv3D``,
``SeparableConv2D``, ``BatchNormalization``...).

A layer object calls its function in the variable scope its first call opened
(``name=scope``), so its variables are ``<layer name>/kernel``... as TF1 names them, and
later calls reuse them.
"""

from __future__ import annotations

from gradflow.layers.core import (
    _bias_and_activation,
    _channels_last,
    _ints,
    _nn_format,
    _transposed_size,
)
from gradflow.ops.array_ops import expand_dims, squeeze
from gradflow.ops.conv3d_ops import avg_pool3d, max_pool3d
from gradflow.ops.conv3d_ops import conv3d as nn_conv3d
from gradflow.ops.conv3d_ops import conv3d_transpose as nn_conv3d_transpose
from gradflow.ops.conv_ops import avg_pool
from gradflow.ops.conv_variants import separable_conv2d as nn_separable_conv2d
from gradflow.ops.index_ops import shape as dynamic_shape
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import get_variable, variable_scope

_FORMATS_3D = {"channels_last": "NDHWC", "channels_first": "NCDHW"}


def _format3d(data_format, what):
    if data_format not in _FORMATS_3D:
        raise ValueError(f"layers.{what}: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    return _FORMATS_3D[data_format]


def _input5(inputs, fmt, what):
    x = convert_to_tensor(inputs)
    axis = 1 if fmt == "NCDHW" else 4
    if x.shape is None or len(x.shape) != 5 or x.shape[axis] is None:
        raise ValueError(f"layers.{what}: '{x.name}' must be {fmt} with known channels, got "
                         f"shape {x.shape}")
    return x, int(x.shape[axis])


def _no_dilation(dilation_rate, n, what):
    if set(_ints(dilation_rate, n, "dilation_rate")) != {1}:
        raise NotImplementedError(f"layers.{what}: dilation_rate other than 1 is not supported")


def conv3d(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1, 1), activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
           reuse=None):
    """3-D convolution layer (TF1 ``tf.layers.conv3d``), variables ``<name>/kernel``
    ``[kd, kh, kw, in_channels, filters]`` and ``/bias``.

    >>> h = gf.layers.conv3d(volumes, 16, 3, padding="same", activation=gf.nn.relu)
    """
    fmt = _format3d(data_format, "conv3d")
    _no_dilation(dilation_rate, 3, "conv3d")
    if bias_constraint is not None:
        raise NotImplementedError("layers.conv3d: bias_constraint is not supported")
    x, channels = _input5(inputs, fmt, "conv3d")
    with variable_scope(name, default_name="conv3d", reuse=reuse):
        kernel = get_variable("kernel", _ints(kernel_size, 3, "kernel_size") + (channels, filters),
                              dtype=x.dtype, initializer=kernel_initializer,
                              regularizer=kernel_regularizer, constraint=kernel_constraint,
                              trainable=trainable)
        out = nn_conv3d(x, kernel, _ints(strides, 3, "strides"), padding.upper(),
                        data_format=fmt)
        return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                    trainable, bias_regularizer, activity_regularizer,
                                    "NC..." if fmt == "NCDHW" else None)


def conv3d_transpose(inputs, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """Transposed 3-D convolution layer (TF1 ``tf.layers.conv3d_transpose``), variables
    ``<name>/kernel`` ``[kd, kh, kw, filters, in_channels]`` and ``/bias``; each spatial
    size ``n`` becomes ``n * stride`` (``"same"``) or ``n * stride + max(k - stride, 0)``
    (``"valid"``). The spatial sizes must be known when the graph is built.

    >>> up = gf.layers.conv3d_transpose(h, 8, 3, strides=2, padding="same")
    """
    fmt = _format3d(data_format, "conv3d_transpose")
    if bias_constraint is not None:
        raise NotImplementedError("layers.conv3d_transpose: bias_constraint is not supported")
    x, channels = _input5(inputs, fmt, "conv3d_transpose")
    spatial = x.shape[2:5] if fmt == "NCDHW" else x.shape[1:4]
    if None in spatial:
        raise ValueError(f"layers.conv3d_transpose: the spatial sizes of '{x.name}' must be "
                         f"known, got shape {tuple(x.shape)}")
    ksize, stride, pad = _ints(kernel_size, 3, "kernel_size"), _ints(strides, 3, "strides"), \
        padding.upper()
    sizes = [_transposed_size(int(n), k, s, pad) for n, k, s in zip(spatial, ksize, stride)]
    batch = x.shape[0] if x.shape[0] is not None else dynamic_shape(x)[0]
    out_shape = [batch, filters] + sizes if fmt == "NCDHW" else [batch] + sizes + [filters]
    with variable_scope(name, default_name="conv3d_transpose", reuse=reuse):
        kernel = get_variable("kernel", ksize + (filters, channels), dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              constraint=kernel_constraint, trainable=trainable)
        out = nn_conv3d_transpose(x, kernel, out_shape, stride, pad, data_format=fmt)
        return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                    trainable, bias_regularizer, activity_regularizer,
                                    "NC..." if fmt == "NCDHW" else None)


def _separable_body(x, fmt, filters, kernel_size, strides, padding, depth_multiplier,
                    activation, use_bias, depthwise_initializer, pointwise_initializer,
                    bias_initializer, depthwise_regularizer, pointwise_regularizer,
                    bias_regularizer, activity_regularizer, depthwise_constraint,
                    pointwise_constraint, trainable):
    """The variables and ops of a separable 2-D convolution, in the current scope."""
    axis = 1 if fmt == "NCHW" else 3
    if x.shape is None or len(x.shape) != 4 or x.shape[axis] is None:
        raise ValueError(f"layers.separable_conv2d: '{x.name}' must be {fmt} with known "
                         f"channels, got shape {x.shape}")
    channels, stride = int(x.shape[axis]), _ints(strides, 2, "strides")
    depthwise = get_variable(
        "depthwise_kernel", _ints(kernel_size, 2, "kernel_size") + (channels, depth_multiplier),
        dtype=x.dtype, initializer=depthwise_initializer, regularizer=depthwise_regularizer,
        constraint=depthwise_constraint, trainable=trainable)
    pointwise = get_variable(
        "pointwise_kernel", (1, 1, channels * depth_multiplier, filters), dtype=x.dtype,
        initializer=pointwise_initializer, regularizer=pointwise_regularizer,
        constraint=pointwise_constraint, trainable=trainable)
    strides4 = (1, 1) + stride if fmt == "NCHW" else (1,) + stride + (1,)
    out = nn_separable_conv2d(x, depthwise, pointwise, strides4, padding.upper(),
                              data_format=fmt)
    return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                trainable, bias_regularizer, activity_regularizer, fmt)


def separable_conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """Depthwise then pointwise 2-D convolution layer (TF1 ``tf.layers.separable_conv2d``),
    variables ``<name>/depthwise_kernel`` ``[kh, kw, in, depth_multiplier]``,
    ``/pointwise_kernel`` ``[1, 1, in * depth_multiplier, filters]`` and ``/bias``.

    >>> h = gf.layers.separable_conv2d(x, 64, 3, padding="same", activation=gf.nn.relu)
    """
    fmt = _nn_format(data_format, "separable_conv2d")
    _no_dilation(dilation_rate, 2, "separable_conv2d")
    if bias_constraint is not None:
        raise NotImplementedError("layers.separable_conv2d: bias_constraint is not supported")
    with variable_scope(name, default_name="separable_conv2d", reuse=reuse):
        return _separable_body(
            convert_to_tensor(inputs), fmt, filters, kernel_size, strides, padding,
            depth_multiplier, activation, use_bias, depthwise_initializer,
            pointwise_initializer, bias_initializer, depthwise_regularizer,
            pointwise_regularizer, bias_regularizer, activity_regularizer,
            depthwise_constraint, pointwise_constraint, trainable)


def separable_conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
                     data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                     activation=None, use_bias=True, depthwise_initializer=None,
                     pointwise_initializer=None, bias_initializer=None,
                     depthwise_regularizer=None, pointwise_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None,
                     depthwise_constraint=None, pointwise_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """Depthwise then pointwise 1-D convolution layer over ``[batch, width, channels]``
    (TF1 ``tf.layers.separable_conv1d``): as TF, a separable 2-D convolution over an
    inserted axis of height 1, kernels ``[1, k, in, depth_multiplier]`` and ``[1, 1,
    in * depth_multiplier, filters]``.

    >>> h = gf.layers.separable_conv1d(x, 32, 5, padding="same")
    """
    _channels_last(data_format, "separable_conv1d", bias_constraint)
    (k,), (stride,) = _ints(kernel_size, 1, "kernel_size"), _ints(strides, 1, "strides")
    _no_dilation(dilation_rate, 1, "separable_conv1d")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) != 3:
        raise ValueError(f"layers.separable_conv1d: '{x.name}' must be [batch, width, "
                         f"channels], got shape {x.shape}")
    with variable_scope(name, default_name="separable_conv1d", reuse=reuse):
        out = _separable_body(
            expand_dims(x, 1), "NHWC", filters, (1, k), (1, stride), padding,
            depth_multiplier, activation, use_bias, depthwise_initializer,
            pointwise_initializer, bias_initializer, depthwise_regularizer,
            pointwise_regularizer, bias_regularizer, activity_regularizer,
            depthwise_constraint, pointwise_constraint, trainable)
        return squeeze(out, [1])


# -- pooling ------------------------------------------------------------------------------


def average_pooling1d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """Average pooling over the width of ``[batch, width, channels]`` (TF1
    ``tf.layers.average_pooling1d``): a 2-D pooling of height 1.

    >>> h = gf.layers.average_pooling1d(h, pool_size=2, strides=2)
    """
    _channels_last(data_format, "average_pooling1d")
    (size,), (stride,) = _ints(pool_size, 1, "pool_size"), _ints(strides, 1, "strides")
    x = expand_dims(convert_to_tensor(inputs), 1)
    return squeeze(avg_pool(x, (1, size), (1, stride), padding.upper()), [1], name=name)


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling over 3-D windows (TF1 ``tf.layers.max_pooling3d``); ``channels_first``
    is NCDHW.

    >>> h = gf.layers.max_pooling3d(h, 2, 2)
    """
    return max_pool3d(inputs, _ints(pool_size, 3, "pool_size"), _ints(strides, 3, "strides"),
                      padding.upper(), data_format=_format3d(data_format, "max_pooling3d"),
                      name=name)


def average_pooling3d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """Average pooling over 3-D windows (TF1 ``tf.layers.average_pooling3d``).

    >>> h = gf.layers.average_pooling3d(h, 2, 2)
    """
    return avg_pool3d(inputs, _ints(pool_size, 3, "pool_size"), _ints(strides, 3, "strides"),
                      padding.upper(), data_format=_format3d(data_format, "average_pooling3d"),
                      name=name)
