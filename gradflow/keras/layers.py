"""``tf.keras.layers`` in TF1 graph mode: the layer classes of ``gradflow.layers``."""

from gradflow.layers import (  # the same classes, as TF1 shares them
    AveragePooling2D,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Layer,
    MaxPooling1D,
    MaxPooling2D,
)

MaxPool1D, MaxPool2D, AvgPool2D = MaxPooling1D, MaxPooling2D, AveragePooling2D  # Keras aliases

__all__ = ["AveragePooling2D", "AvgPool2D", "Conv2D", "Dense", "Dropout", "Flatten", "Layer",
           "MaxPool1D", "MaxPool2D", "MaxPooling1D", "MaxPooling2D"]
