"""TF1's ``tf.mixed_precision`` (TF 1.15, ``tf.compat.v1.mixed_precision``): the same loss
scales, loss-scale optimizer and graph-rewrite switches as ``tf.train.experimental``
(``gradflow.train.experimental``), and ``experimental`` with the loss scales again."""

from types import SimpleNamespace

from gradflow.train.experimental import (
    DynamicLossScale,
    FixedLossScale,
    LossScale,
    MixedPrecisionLossScaleOptimizer,
    disable_mixed_precision_graph_rewrite,
    enable_mixed_precision_graph_rewrite,
)

# tf.compat.v1.mixed_precision.experimental: the loss scales under a second path
experimental = SimpleNamespace(DynamicLossScale=DynamicLossScale, FixedLossScale=FixedLossScale,
                               LossScale=LossScale)

__all__ = ["DynamicLossScale", "FixedLossScale", "LossScale", "MixedPrecisionLossScaleOptimizer",
           "disable_mixed_precision_graph_rewrite", "enable_mixed_precision_graph_rewrite",
           "experimental"]
