"""Layers with TF1 ``tf.layers`` names: the functions (``dense``, ``conv2d``...), whose
variables are made through ``get_variable``, and the layer objects built on them
(``Dense``, ``Conv2D``...), which share their variables across calls.

>>> h = gf.layers.dense(x, 512, activation=gf.nn.relu)
>>> layer = gf.layers.Dense(10)
"""

from gradflow.layers.core import (  # noqa: F401 - _pair: contrib.layers uses it
    AveragePooling2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    MaxPooling1D,
    MaxPooling2D,
    _pair,
    average_pooling2d,
    batch_normalization,
    conv1d,
    conv2d,
    conv2d_transpose,
    dense,
    dropout,
    flatten,
    last_axis_product,
    max_pooling1d,
    max_pooling2d,
)
from gradflow.layers.more import (
    average_pooling1d,
    average_pooling3d,
    conv3d,
    conv3d_transpose,
    max_pooling3d,
    separable_conv1d,
    separable_conv2d,
)
from gradflow.layers.objects import (
    AveragePooling1D,
    AveragePooling3D,
    BatchNormalization,
    Conv1D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    MaxPooling3D,
    SeparableConv1D,
    SeparableConv2D,
)

__all__ = [
    "AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "BatchNormalization",
    "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "Dense", "Dropout",
    "Flatten", "Layer", "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "SeparableConv1D",
    "SeparableConv2D", "average_pooling1d", "average_pooling2d", "average_pooling3d",
    "batch_normalization", "conv1d", "conv2d", "conv2d_transpose", "conv3d",
    "conv3d_transpose", "dense", "dropout", "flatten", "max_pooling1d", "max_pooling2d",
    "max_pooling3d", "separable_conv1d", "separable_conv2d",
]
