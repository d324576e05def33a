"""TF1's ``tf.train.experimental``: loss scaling and the mixed-precision graph rewrite
(``gradflow.passes.mixed_precision``), as in TF 1.14."""

from gradflow.train.experimental.loss_scale import DynamicLossScale, FixedLossScale, LossScale
from gradflow.train.experimental.loss_scale_optimizer import (
    MixedPrecisionLossScaleOptimizer,
    disable_mixed_precision_graph_rewrite,
    enable_mixed_precision_graph_rewrite,
)

__all__ = ["DynamicLossScale", "FixedLossScale", "LossScale", "MixedPrecisionLossScaleOptimizer",
           "disable_mixed_precision_graph_rewrite", "enable_mixed_precision_graph_rewrite"]
