"""TF1's ``tf.keras``, for what graph-mode TF1 programs take from it: the layer
classes of ``keras.layers``, which in TF1 are the same layers as ``tf.layers.Dense``...
(called on graph tensors, their variables made on the first call).

>>> h = gf.keras.layers.Dense(64, activation=gf.nn.relu)(x)
"""

from gradflow.keras import layers

__all__ = ["layers"]
