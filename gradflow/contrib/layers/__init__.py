"""TF1's ``tf.contrib.layers``, for what gradflow has: the layer functions
(``fully_connected``, ``conv2d``, ``batch_norm``, ``dropout``, ``flatten``, all usable
under ``contrib.framework.arg_scope``), the Xavier / variance-scaling initializers, the
L1/L2 regularizers and ``optimize_loss``.

>>> with gf.contrib.framework.arg_scope([gf.contrib.layers.fully_connected],
...                                     normalizer_fn=gf.contrib.layers.batch_norm):
...     h = gf.contrib.layers.fully_connected(x, 256)
"""

from gradflow.contrib.layers.initializers import (
    variance_scaling_initializer,
    xavier_initializer,
    xavier_initializer_conv2d,
)
from gradflow.contrib.layers.layers import (
    batch_norm,
    conv2d,
    dropout,
    flatten,
    fully_connected,
    layer_norm,
)
from gradflow.contrib.layers.optimizers import (
    OPTIMIZER_CLS_NAMES,
    OPTIMIZER_SUMMARIES,
    optimize_loss,
)
from gradflow.contrib.layers.regularizers import (
    apply_regularization,
    l1_l2_regularizer,
    l1_regularizer,
    l2_regularizer,
    sum_regularizer,
)

convolution2d = conv2d  # TF1's other name of it

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "apply_regularization", "batch_norm",
           "conv2d", "convolution2d", "dropout", "flatten", "fully_connected", "layer_norm",
           "l1_l2_regularizer", "l1_regularizer", "l2_regularizer", "optimize_loss",
           "sum_regularizer", "variance_scaling_initializer", "xavier_initializer",
           "xavier_initializer_conv2d"]
