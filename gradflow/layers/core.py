"""The core of ``gradflow.layers``: the functions (``dense``, ``conv2d``...), whose
variables are made through ``get_variable``, and the layer objects built on them
(``Dense``, ``Conv2D``...), which share their variables across calls.

>>> h = gf.layers.dense(x, 512, activation=gf.nn.relu)
>>> layer = gf.layers.Dense(10)
"""

from __future__ import annotations

import math

from gradflow.ops.array_ops import expand_dims, matmul, reshape, squeeze
from gradflow.ops.conv_ops import _conv2d_transpose, _from_nhwc, _to_nhwc, avg_pool, max_pool
from gradflow.ops.conv_ops import conv1d as nn_conv1d
from gradflow.ops.conv_ops import conv2d as nn_conv2d
from gradflow.ops.conv_ops import conv2d_transpose as nn_conv2d_transpose
from gradflow.ops.conv_ops import dropout as nn_dropout
from gradflow.ops.index_ops import shape as dynamic_shape
from gradflow.ops.linalg_ops import tensordot
from gradflow.ops.math_ops import cast, divide
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.normalization_ops import batch_normalization_layer as batch_normalization  # noqa: F401,E501 - tf.layers name
from gradflow.prim import rules
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import (
    GraphKeys,
    get_collection,
    get_variable,
    variable_scope,
    zeros_initializer,
)


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
    with out.graph.name_scope("ActivityRegularizer"):
        penalty = regularizer(out)
        if penalty is None:
            return
        batch = cast(dynamic_shape(out)[0], penalty.dtype)
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
    return max_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(),
                    data_format=_nn_format(data_format, "max_pooling2d"), name=name)


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """Max pooling over the width of ``[batch, width, channels]`` (TF1
    ``tf.layers.max_pooling1d``): a 2-D pooling of height 1.

    >>> h = gf.layers.max_pooling1d(h, pool_size=2, strides=2)
    """
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
    return avg_pool(inputs, _pair(pool_size), _pair(strides), padding.upper(),
                    data_format=_nn_format(data_format, "average_pooling2d"), name=name)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Dropout while ``training`` (a bool or a bool tensor), the identity otherwise."""
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


# -- the layer objects --------------------------------------------------------------------
# TF1's ``tf.layers.Dense``, ``Conv2D``, ...: a layer made once and called on several
# inputs shares its variables across the calls. The first call opens the layer's variable
# scope (its ``name``, else ``dense``, ``dense_1``... as the functions do) and makes the
# variables there; later calls reuse that scope. ``layer.variables`` (``weights``),
# ``trainable_variables`` and, for ``Dense`` and ``Conv2D``, ``kernel`` and ``bias`` are
# the variables:
#
#     layer = gf.layers.Dense(10, activation=gf.nn.relu)
#     a, b = layer(x1), layer(x2)      # one kernel, one bias


class Layer:
    """The base of the layer objects: ``layer(inputs)`` (or ``layer.apply(inputs)``)
    runs ``call`` in the layer's variable scope, made on the first call."""

    _default_name = "layer"

    def __init__(self, trainable=True, name=None, dtype=None, **unused):
        self.trainable = trainable
        self.name = name
        self.dtype = dtype
        self._scope = None
        self._variables = []
        self.built = False

    def call(self, inputs, **kwargs):
        """What the layer computes from ``inputs`` (in its variable scope): the
        identity here; each layer class defines its own."""
        return inputs

    def __call__(self, inputs, *args, **kwargs):
        graph = getattr(inputs, "graph", None)
        if self._scope is None:
            with variable_scope(self.name, default_name=self._default_name) as scope:
                self._scope = scope
                known = set(_global_variables(graph))
                out = self.call(inputs, *args, **kwargs)
                self._variables = [v for v in _global_variables(graph) if v not in known]
                self.built = True
                if self.name is None:
                    self.name = scope.name.rsplit("/", 1)[-1]
                return out
        with variable_scope(self._scope, reuse=True):
            return self.call(inputs, *args, **kwargs)

    apply = __call__

    @property
    def variables(self) -> list:
        """The variables the first call made (``weights`` too), in their order."""
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        """Those of ``variables`` that train (``trainable_weights`` too); none when
        the layer was made with ``trainable=False``."""
        return [v for v in self._variables if v.trainable] if self.trainable else []

    trainable_weights = trainable_variables

    def _variable(self, suffix):
        return next((v for v in self._variables
                     if v.name.rsplit("/", 1)[-1].split(":")[0] == suffix), None)


def _global_variables(graph):
    if graph is None:
        return get_collection(GraphKeys.GLOBAL_VARIABLES)
    return graph.get_collection(GraphKeys.GLOBAL_VARIABLES)


def _variable_options(kernel_initializer, bias_initializer, kernel_regularizer,
                      bias_regularizer, activity_regularizer) -> dict:
    """The keyword arguments a layer passes on to its function's body."""
    return dict(kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                activity_regularizer=activity_regularizer)


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` (TF1 ``tf.layers.Dense``)."""

    _default_name = "dense"

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units, self.activation, self.use_bias = int(units), activation, use_bias
        self._options = _variable_options(kernel_initializer, bias_initializer,
                                          kernel_regularizer, bias_regularizer,
                                          activity_regularizer)

    def call(self, inputs):
        """``layers.dense`` of ``inputs`` in the layer's scope."""
        return dense_in_scope(inputs, self.units, self.activation, self.use_bias,
                              trainable=self.trainable, **self._options)

    kernel = property(lambda self: self._variable("kernel"),
                      doc="The kernel variable (None before the first call).")
    bias = property(lambda self: self._variable("bias"),
                    doc="The bias variable (None before the first call, or without one).")


class Conv2D(Layer):
    """2-D convolution (TF1 ``tf.layers.Conv2D``), variables ``kernel`` and ``bias``."""

    _default_name = "conv2d"

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters, self.kernel_size, self.strides = int(filters), kernel_size, strides
        self.padding, self.data_format = padding, data_format
        self.activation, self.use_bias = activation, use_bias
        self._options = _variable_options(kernel_initializer, bias_initializer,
                                          kernel_regularizer, bias_regularizer,
                                          activity_regularizer)

    def call(self, inputs):
        """``layers.conv2d`` of ``inputs`` in the layer's scope."""
        return conv2d_in_scope(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.activation, self.use_bias, trainable=self.trainable,
            data_format=self.data_format, **self._options)

    kernel = property(lambda self: self._variable("kernel"),
                      doc="The kernel variable (None before the first call).")
    bias = property(lambda self: self._variable("bias"),
                    doc="The bias variable (None before the first call, or without one).")


class _Pooling(Layer):
    _function = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size, self.strides = pool_size, strides
        self.padding, self.data_format = padding, data_format

    def call(self, inputs):
        """The pooling function of the class over ``inputs``."""
        return type(self)._function(inputs, self.pool_size, self.strides, self.padding,
                                    self.data_format)


class MaxPooling1D(_Pooling):
    """TF1 ``tf.layers.MaxPooling1D``."""

    _default_name = "max_pooling1d"
    _function = staticmethod(max_pooling1d)


class MaxPooling2D(_Pooling):
    """TF1 ``tf.layers.MaxPooling2D``."""

    _default_name = "max_pooling2d"
    _function = staticmethod(max_pooling2d)


class AveragePooling2D(_Pooling):
    """TF1 ``tf.layers.AveragePooling2D``."""

    _default_name = "average_pooling2d"
    _function = staticmethod(average_pooling2d)


class Flatten(Layer):
    """TF1 ``tf.layers.Flatten``: ``[batch, ...]`` to ``[batch, k]``."""

    _default_name = "flatten"

    def call(self, inputs):
        """``layers.flatten(inputs)``."""
        return flatten(inputs)


class Dropout(Layer):
    """TF1 ``tf.layers.Dropout``: ``layer(x, training=is_training)``."""

    _default_name = "dropout"

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        """``layers.dropout`` of ``inputs`` while ``training``, else ``inputs``."""
        return dropout(inputs, self.rate, self.noise_shape, self.seed, training)
