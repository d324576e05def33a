"""``tf.keras.layers`` in TF1 graph mode: the layer classes of ``gradflow.layers``."""

from gradflow import layer_classes as _classes
from gradflow.layer_classes import *  # noqa: F403 - the same classes, as TF1 shares them

MaxPool1D, MaxPool2D, AvgPool2D = (  # Keras aliases
    _classes.MaxPooling1D, _classes.MaxPooling2D, _classes.AveragePooling2D)

__all__ = list(_classes.__all__) + ["AvgPool2D", "MaxPool1D", "MaxPool2D"]
