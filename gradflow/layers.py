"""Layer helpers with TF1 ``tf.layers`` names: variables made through get_variable."""

from __future__ import annotations

import math

from gradflow.ops.array_ops import matmul, reshape
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.normalization_ops import batch_normalization_layer as batch_normalization  # noqa: F401,E501 - tf.layers name
from gradflow.prim import rules
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import get_variable, variable_scope, zeros_initializer


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, trainable=True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)`` with variables ``<name>/kernel`` and ``/bias``.

    ``kernel_regularizer`` and ``bias_regularizer`` map a variable to a scalar penalty
    and ``activity_regularizer`` the output (its penalty is divided by the batch size,
    as TF1 does); the penalties go to ``GraphKeys.REGULARIZATION_LOSSES``.

    >>> h = gf.layers.dense(x, 512, activation=gf.nn.relu)
    """
    with variable_scope(name, default_name="dense", reuse=reuse):
        return dense_in_scope(inputs, units, activation, use_bias, kernel_initializer,
                              bias_initializer, kernel_regularizer, bias_regularizer,
                              activity_regularizer, trainable)


def dense_in_scope(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
                   bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                   activity_regularizer=None, trainable=True):
    """The body of ``dense``, with its variables in the current variable scope (shared
    with the ``layers.Dense`` class, which reuses its own scope on later calls)."""
    x = convert_to_tensor(inputs)
    rules.known_rank(x, "dense")
    if x.shape[-1] is None:
        raise ValueError(f"dense: the last axis of '{x.name}' must be known, got shape "
                         f"{x.shape}")
    kernel = get_variable("kernel", (x.shape[-1], units), dtype=x.dtype,
                          initializer=kernel_initializer, regularizer=kernel_regularizer,
                          trainable=trainable)
    out = last_axis_product(x, kernel)
    return _bias_and_activation(out, units, use_bias, bias_initializer, activation,
                                trainable, bias_regularizer, activity_regularizer)


def last_axis_product(x, kernel):
    """``x`` (rank >= 2) times the matrix ``kernel`` over the last axis of ``x``: a matmul
    for rank 2; above, a matmul of ``x`` seen as rows when at most one leading dim is
    unknown, else (``[None, None, 128]``) TF1's ``tensordot``, which takes the leading
    dims from the value at run time."""
    if len(x.shape) == 2:
        return matmul(x, kernel)
    lead = tuple(-1 if d is None else int(d) for d in x.shape[:-1])
    if lead.count(-1) > 1:
        from gradflow.ops.linalg_ops import tensordot

        return tensordot(x, kernel, [[len(x.shape) - 1], [0]])
    rows = reshape(x, (-1, int(x.shape[-1])))
    return reshape(matmul(rows, kernel), lead + (int(kernel.shape[-1]),))


def _bias_and_activation(out, units, use_bias, bias_initializer, activation, trainable,
                         bias_regularizer=None, activity_regularizer=None, data_format=None):
    """The shared tail of a layer: an optional ``bias`` variable (added along the channel
    axis of ``data_format``), then the activation, then the activity regularizer's
    penalty (if any)."""
    if use_bias:
        bias = get_variable("bias", (units,), dtype=out.dtype,
                            initializer=bias_initializer or zeros_initializer(),
                            regularizer=bias_regularizer, trainable=trainable)
        out = bias_add(out, bias, data_format=data_format)
    out = activation(out) if activation is not None else out
    if activity_regularizer is not None:
        _activity_penalty(out, activity_regularizer)
    return out


def _activity_penalty(out, regularizer):
    """TF1: ``regularizer(out) / batch size`` joins ``GraphKeys.REGULARIZATION_LOSSES``."""
    from gradflow.ops.index_ops import shape
    from gradflow.ops.math_ops import cast, divide
    from gradflow.variables import GraphKeys

    with out.graph.name_scope("ActivityRegularizer"):
        penalty = regularizer(out)
        if penalty is None:
            return
        batch = cast(shape(out)[0], penalty.dtype)
        out.graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES,
                                    divide(penalty, batch))


def flatten(inputs, name=None):
    """Reshape to ``(batch, -1)``, keeping the first axis."""
    x = convert_to_tensor(inputs)
    rules.known_rank(x, "flatten")
    inner = x.shape[1:]
    if None in inner:
        raise ValueError(f"flatten: the non-batch axes of '{x.name}' must be known, got "
                         f"{tuple(x.shape)}")
    return reshape(x, (-1, math.prod(inner)), name=name)


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", activation=None,
           use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           trainable=True, name=None, reuse=None, data_format="channels_last"):
    """2-D convolution layer with variables ``<name>/kernel`` (HWIO) and ``/bias``.

    The regularizers work as in ``dense``. ``data_format="channels_first"`` takes and
    gives NCHW (the kernel stays HWIO).

    >>> h = gf.layers.conv2d(x, 32, 5, padding="same", activation=gf.nn.relu)
    """
    with variable_scope(name, default_name="conv2d", reuse=reuse):
        return conv2d_in_scope(inputs, filters, kernel_size, strides, padding, activation,
                               use_bias, kernel_initializer, bias_initializer,
                               kernel_regularizer, bias_regularizer, activity_regularizer,
                               trainable, data_format)


def conv2d_in_scope(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                    activation=None, use_bias=True, kernel_initializer=None,
                    bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                    activity_regularizer=None, trainable=True, data_format="channels_last"):
    """The body of ``conv2d``, with its variables in the current variable scope."""
    from gradflow.ops.conv_ops import conv2d as nn_conv2d

    fmt = _nn_format(data_format, "conv2d")
    x = convert_to_tensor(inputs)
    axis = 1 if fmt == "NCHW" else 3
    if x.shape is None or len(x.shape) != 4 or x.shape[axis] is None:
        raise ValueError(f"conv2d: '{x.name}' must be {fmt} with known channels, got {x.shape}")
    kernel = get_variable("kernel", _pair(kernel_size) + (x.shape[axis], filters),
                          dtype=x.dtype, initializer=kernel_initializer,
                          regularizer=kernel_regularizer, trainable=trainable)
    out = nn_conv2d(x, kernel, strides=_pair(strides), padding=padding.upper(), data_format=fmt)
    return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                trainable, bias_regularizer, activity_regularizer, fmt)


def _nn_format(data_format, what):
    """``tf.layers``' ``data_format`` as ``tf.nn``'s: ``"NHWC"`` or ``"NCHW"``."""
    formats = {"channels_last": "NHWC", "channels_first": "NCHW"}
    if data_format not in formats:
        raise ValueError(f"layers.{what}: data_format must be 'channels_last' or "
                         f"'channels_first', got {data_format!r}")
    return formats[data_format]


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling layer (TF1 ``tf.layers.max_pooling2d``); ``channels_first`` is NCHW.

    >>> h = gf.layers.max_pooling2d(h, 2, 2, data_format="channels_first")
    """
    from gradflow.ops.conv_ops import max_pool

    return max_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(),
                    data_format=_nn_format(data_format, "max_pooling2d"), name=name)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling over the width of ``[batch, width, channels]`` (TF1
    ``tf.layers.max_pooling1d``): a 2-D pooling of height 1.

    >>> h = gf.layers.max_pooling1d(h, pool_size=2, strides=2)
    """
    from gradflow.ops.array_ops import expand_dims, squeeze
    from gradflow.ops.conv_ops import max_pool

    _channels_last(data_format, "max_pooling1d")
    (size,), (stride,) = _ints(pool_size, 1, "pool_size"), _ints(strides, 1, "strides")
    x = expand_dims(convert_to_tensor(inputs), 1)
    out = max_pool(x, (1, size), (1, stride), padding.upper())
    return squeeze(out, [1], name=name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                      name=None):
    """Average pooling layer (TF1 ``tf.layers.average_pooling2d``); ``channels_first``
    is NCHW.

    >>> h = gf.layers.average_pooling2d(h, 2, 2)
    """
    from gradflow.ops.conv_ops import avg_pool

    return avg_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(),
                    data_format=_nn_format(data_format, "average_pooling2d"), name=name)


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


# -- conv1d and conv2d_transpose ------------------------------------------------------------


def _channels_last(data_format, what, bias_constraint=None):
    if data_format != "channels_last":
        raise NotImplementedError(f"layers.{what}: only data_format='channels_last' is "
                                  "supported")
    if bias_constraint is not None:
        raise NotImplementedError(f"layers.{what}: bias_constraint is not supported")


def conv1d(inputs, filters, kernel_size, strides=1, padding="valid",
           data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """1-D convolution layer (TF1 ``tf.layers.conv1d``) over ``[batch, width, channels]``,
    with variables ``<name>/kernel`` ``[kernel_size, in_channels, filters]`` and ``/bias``.

    >>> h = gf.layers.conv1d(x, 64, 3, padding="same", activation=gf.nn.relu)
    """
    from gradflow.ops.conv_ops import conv1d as nn_conv1d

    _channels_last(data_format, "conv1d", bias_constraint)
    if set(_pair(dilation_rate)) != {1}:
        raise NotImplementedError("layers.conv1d: dilation_rate other than 1 is not supported")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) != 3 or x.shape[-1] is None:
        raise ValueError(f"layers.conv1d: '{x.name}' must be [batch, width, channels] with "
                         f"known channels, got shape {x.shape}")
    (k,) = _ints(kernel_size, 1, "kernel_size")
    (stride,) = _ints(strides, 1, "strides")
    with variable_scope(name, default_name="conv1d", reuse=reuse):
        kernel = get_variable("kernel", (k, x.shape[-1], filters), dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              constraint=kernel_constraint, trainable=trainable)
        out = nn_conv1d(x, kernel, stride=stride, padding=padding.upper())
        return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                    trainable, bias_regularizer, activity_regularizer)


def _ints(value, n, what):
    """An int or a sequence of ``n`` ints, as a tuple of ``n`` ints (Keras' conv arguments)."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"{what} must be an int or {n} ints, got {value}")
    return value


def _transposed_size(size, k, s, padding):
    """The output length of a transposed convolution along one axis (TF1 / Keras)."""
    return size * s + max(k - s, 0) if padding == "VALID" else size * s


def conv2d_transpose(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
                     data_format="channels_last", activation=None, use_bias=True,
                     kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                     bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                     bias_constraint=None, trainable=True, name=None, reuse=None):
    """Transposed 2-D convolution layer (TF1 ``tf.layers.conv2d_transpose``).

    Variables ``<name>/kernel`` ``[kh, kw, filters, in_channels]`` (TF1's layout:
    output channels third) and ``/bias`` ``[filters]``. Each spatial size ``n``
    becomes ``n * stride`` with ``"same"`` padding and ``n * stride + max(k - stride,
    0)`` with ``"valid"``; sizes unknown when the graph is built are computed at
    run time. ``data_format="channels_first"`` takes and gives NCHW.

    >>> up = gf.layers.conv2d_transpose(h, 32, 3, strides=2, padding="same")
    """
    from gradflow.ops.conv_ops import _conv2d_transpose, _from_nhwc, _to_nhwc
    from gradflow.ops.conv_ops import conv2d_transpose as nn_conv2d_transpose
    from gradflow.ops.index_ops import shape as dynamic_shape

    fmt = _nn_format(data_format, "conv2d_transpose")
    if bias_constraint is not None:
        raise NotImplementedError("layers.conv2d_transpose: bias_constraint is not supported")
    x = convert_to_tensor(inputs)
    if x.shape is None or len(x.shape) != 4 or x.shape[1 if fmt == "NCHW" else 3] is None:
        raise ValueError(f"layers.conv2d_transpose: '{x.name}' must be {fmt} with known "
                         f"channels, got shape {x.shape}")
    x = _to_nhwc(x, fmt, "layers.conv2d_transpose")
    ksize = _ints(kernel_size, 2, "kernel_size")
    stride = _ints(strides, 2, "strides")
    pad = padding.upper()
    with variable_scope(name, default_name="conv2d_transpose", reuse=reuse):
        kernel = get_variable("kernel", ksize + (filters, x.shape[-1]), dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              constraint=kernel_constraint, trainable=trainable)
        if None in x.shape[1:3]:  # the spatial sizes are computed when the graph runs
            dims = dynamic_shape(x)
            out_shape = [dims[0]] + [dims[a] * s + max(k - s, 0) * (pad == "VALID")
                                     for a, k, s in zip((1, 2), ksize, stride)] + [filters]
            out = nn_conv2d_transpose(x, kernel, out_shape, (1,) + stride + (1,), pad)
        else:  # only the batch may be unknown: it is the input's, no shape tensor needed
            out_shape = (None,) + tuple(_transposed_size(x.shape[a], k, s, pad) for a, k, s
                                        in zip((1, 2), ksize, stride)) + (filters,)
            out = _conv2d_transpose(x, kernel, out_shape, None, stride, pad, None)
        out = _from_nhwc(out, fmt, None)
        return _bias_and_activation(out, filters, use_bias, bias_initializer, activation,
                                    trainable, bias_regularizer, activity_regularizer, fmt)


from gradflow.layer_classes import (  # noqa: E402, F401 - built on the functions above
    AveragePooling2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    MaxPooling1D,
    MaxPooling2D,
)
