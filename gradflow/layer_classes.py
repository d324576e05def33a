"""TF1's layer objects (``tf.layers.Dense``, ``Conv2D``, ...): a layer made once and
called on several inputs shares its variables across the calls.

The first call opens the layer's variable scope (its ``name``, else ``dense``,
``dense_1``... as the functions do) and makes the variables there; later calls
reuse that scope. ``layer.variables`` (``weights``), ``trainable_variables``
and, for ``Dense`` and ``Conv2D``, ``kernel`` and ``bias`` are the variables.

>>> layer = gf.layers.Dense(10, activation=gf.nn.relu)
>>> a, b = layer(x1), layer(x2)      # one kernel, one bias
"""

from __future__ import annotations

from gradflow import layers as _functions
from gradflow.variables import variable_scope

__all__ = ["AveragePooling2D", "Conv2D", "Dense", "Dropout", "Flatten", "Layer",
           "MaxPooling1D", "MaxPooling2D"]


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
        return list(self._variables)

    weights = variables

    @property
    def trainable_variables(self) -> list:
        return [v for v in self._variables if v.trainable] if self.trainable else []

    trainable_weights = trainable_variables

    def _variable(self, suffix):
        return next((v for v in self._variables
                     if v.name.rsplit("/", 1)[-1].split(":")[0] == suffix), None)


def _global_variables(graph):
    from gradflow.variables import GraphKeys, get_collection

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
        return _functions.dense_in_scope(inputs, self.units, self.activation, self.use_bias,
                                         trainable=self.trainable, **self._options)

    kernel = property(lambda self: self._variable("kernel"))
    bias = property(lambda self: self._variable("bias"))


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
        return _functions.conv2d_in_scope(
            inputs, self.filters, self.kernel_size, self.strides, self.padding,
            self.activation, self.use_bias, trainable=self.trainable,
            data_format=self.data_format, **self._options)

    kernel = property(lambda self: self._variable("kernel"))
    bias = property(lambda self: self._variable("bias"))


class _Pooling(Layer):
    _function = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size, self.strides = pool_size, strides
        self.padding, self.data_format = padding, data_format

    def call(self, inputs):
        return type(self)._function(inputs, self.pool_size, self.strides, self.padding,
                                    self.data_format)


class MaxPooling1D(_Pooling):
    """TF1 ``tf.layers.MaxPooling1D``."""

    _default_name = "max_pooling1d"
    _function = staticmethod(_functions.max_pooling1d)


class MaxPooling2D(_Pooling):
    """TF1 ``tf.layers.MaxPooling2D``."""

    _default_name = "max_pooling2d"
    _function = staticmethod(_functions.max_pooling2d)


class AveragePooling2D(_Pooling):
    """TF1 ``tf.layers.AveragePooling2D``."""

    _default_name = "average_pooling2d"
    _function = staticmethod(_functions.average_pooling2d)


class Flatten(Layer):
    """TF1 ``tf.layers.Flatten``: ``[batch, ...]`` to ``[batch, k]``."""

    _default_name = "flatten"

    def call(self, inputs):
        return _functions.flatten(inputs)


class Dropout(Layer):
    """TF1 ``tf.layers.Dropout``: ``layer(x, training=is_training)``."""

    _default_name = "dropout"

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def call(self, inputs, training=False):
        return _functions.dropout(inputs, self.rate, self.noise_shape, self.seed, training)
