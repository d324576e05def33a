"""The layer objects of ``gradflow.layers.more``'s functions and of TF1's other layer
functions (``Conv1D``, ``Conv2DTranspose``, ``Conv3D``, ``Conv3DTranspose``,
``SeparableConv1D``, ``SeparableConv2D``, ``BatchNormalization``, the 1-D and 3-D
pooling layers).

Each calls its function in the layer's own variable scope (``name=`` the scope the
first call opened, ``reuse=True`` after it), so one object shares its variables across
calls, named ``<layer name>/kernel``... as TF1 names them.
"""

from __future__ import annotations

from gradflow.layers.core import Layer, _Pooling, conv1d, conv2d_transpose
from gradflow.layers.more import (
    average_pooling1d,
    average_pooling3d,
    conv3d,
    conv3d_transpose,
    max_pooling3d,
    separable_conv1d,
    separable_conv2d,
)
from gradflow.ops.normalization_ops import batch_normalization_layer as batch_normalization


class _FunctionLayer(Layer):
    """A layer object over a layer function: the constructor's arguments are the
    function's after ``inputs``; ``call`` runs it in the layer's scope."""

    _function = None

    def __init__(self, *args, trainable=True, name=None, dtype=None, **kwargs):
        super().__init__(trainable=trainable, name=name, dtype=dtype)
        self._args, self._kwargs = args, kwargs

    def call(self, inputs, **call_kwargs):
        """The layer's function of ``inputs`` in the layer's variable scope."""
        return type(self)._function(inputs, *self._args, trainable=self.trainable,
                                    name=self._scope, reuse=True if self.built else None,
                                    **self._kwargs, **call_kwargs)

    kernel = property(lambda self: self._variable("kernel"),
                      doc="The kernel variable (None before the first call, or without one).")
    bias = property(lambda self: self._variable("bias"),
                    doc="The bias variable (None before the first call, or without one).")


class Conv1D(_FunctionLayer):
    """1-D convolution (TF1 ``tf.layers.Conv1D``): ``Conv1D(filters, kernel_size, ...)``
    with ``layers.conv1d``'s arguments."""

    _default_name = "conv1d"
    _function = staticmethod(conv1d)


class Conv2DTranspose(_FunctionLayer):
    """Transposed 2-D convolution (TF1 ``tf.layers.Conv2DTranspose``), with
    ``layers.conv2d_transpose``'s arguments."""

    _default_name = "conv2d_transpose"
    _function = staticmethod(conv2d_transpose)


class Conv3D(_FunctionLayer):
    """3-D convolution (TF1 ``tf.layers.Conv3D``), with ``layers.conv3d``'s arguments."""

    _default_name = "conv3d"
    _function = staticmethod(conv3d)


class Conv3DTranspose(_FunctionLayer):
    """Transposed 3-D convolution (TF1 ``tf.layers.Conv3DTranspose``), with
    ``layers.conv3d_transpose``'s arguments."""

    _default_name = "conv3d_transpose"
    _function = staticmethod(conv3d_transpose)


class SeparableConv1D(_FunctionLayer):
    """Separable 1-D convolution (TF1 ``tf.layers.SeparableConv1D``), variables
    ``depthwise_kernel``, ``pointwise_kernel`` and ``bias``."""

    _default_name = "separable_conv1d"
    _function = staticmethod(separable_conv1d)


class SeparableConv2D(_FunctionLayer):
    """Separable 2-D convolution (TF1 ``tf.layers.SeparableConv2D``), variables
    ``depthwise_kernel``, ``pointwise_kernel`` and ``bias``."""

    _default_name = "separable_conv2d"
    _function = staticmethod(separable_conv2d)


class BatchNormalization(_FunctionLayer):
    """Batch normalization (TF1 ``tf.layers.BatchNormalization``):
    ``BatchNormalization(axis=-1, momentum=0.99, ...)`` with
    ``layers.batch_normalization``'s arguments, called as ``layer(x, training=...)``;
    the moving-average updates go to ``GraphKeys.UPDATE_OPS`` as the function's do."""

    _default_name = "batch_normalization"
    _function = staticmethod(batch_normalization)

    def call(self, inputs, training=False):
        """``layers.batch_normalization`` of ``inputs`` in the layer's scope."""
        return super().call(inputs, training=training)

    gamma = property(lambda self: self._variable("gamma"), doc="The scale variable.")
    beta = property(lambda self: self._variable("beta"), doc="The offset variable.")
    moving_mean = property(lambda self: self._variable("moving_mean"),
                           doc="The moving mean variable.")
    moving_variance = property(lambda self: self._variable("moving_variance"),
                               doc="The moving variance variable.")


class AveragePooling1D(_Pooling):
    """TF1 ``tf.layers.AveragePooling1D``."""

    _default_name = "average_pooling1d"
    _function = staticmethod(average_pooling1d)


class MaxPooling3D(_Pooling):
    """TF1 ``tf.layers.MaxPooling3D``."""

    _default_name = "max_pooling3d"
    _function = staticmethod(max_pooling3d)


class AveragePooling3D(_Pooling):
    """TF1 ``tf.layers.AveragePooling3D``."""

    _default_name = "average_pooling3d"
    _function = staticmethod(average_pooling3d)
