"""TF1's ``tf.contrib.mixed_precision``: ``LossScaleOptimizer`` and its loss-scale
managers (``FixedLossScaleManager``, ``ExponentialUpdateLossScaleManager``)."""

from gradflow.contrib.mixed_precision.loss_scale_manager import (
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
    LossScaleManager,
)
from gradflow.contrib.mixed_precision.loss_scale_optimizer import LossScaleOptimizer

__all__ = ["ExponentialUpdateLossScaleManager", "FixedLossScaleManager", "LossScaleManager",
           "LossScaleOptimizer"]
