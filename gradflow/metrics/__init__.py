"""TF1's ``tf.metrics``: streaming metrics over many runs.

Each metric returns ``(value, update_op)``. Its state is a few local variables
(``<name>/total``, ``<name>/count``...) in ``GraphKeys.LOCAL_VARIABLES`` and
``GraphKeys.METRIC_VARIABLES``, zero after ``local_variables_initializer()``;
running ``update_op`` folds one batch in and returns the updated value, and
``value`` reads the metric without changing it. Re-running the local variables'
initializer starts over.

>>> acc, acc_update = gf.metrics.accuracy(labels=y, predictions=gf.argmax(logits, 1))
>>> sess.run(gf.local_variables_initializer())
>>> for xb, yb in batches:
...     sess.run(acc_update, {x: xb, y: yb})
>>> print(sess.run(acc))
"""

from gradflow.metrics.at_k import (
    average_precision_at_k,
    precision_at_k,
    precision_at_top_k,
    recall_at_k,
    recall_at_top_k,
    sparse_average_precision_at_k,
    sparse_precision_at_k,
)
from gradflow.metrics.basic import (
    accuracy,
    auc,
    false_negatives,
    false_positives,
    mean,
    mean_absolute_error,
    mean_squared_error,
    precision,
    recall,
    true_negatives,
    true_positives,
)
from gradflow.metrics.more import (
    mean_cosine_distance,
    mean_iou,
    mean_per_class_accuracy,
    mean_relative_error,
    mean_tensor,
    percentage_below,
    root_mean_squared_error,
)
from gradflow.metrics.thresholds import (
    false_negatives_at_thresholds,
    false_positives_at_thresholds,
    precision_at_thresholds,
    recall_at_thresholds,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    true_negatives_at_thresholds,
    true_positives_at_thresholds,
)

__all__ = [
    "accuracy", "auc", "false_negatives", "false_positives", "mean", "mean_absolute_error",
    "mean_squared_error", "precision", "recall", "true_negatives", "true_positives",
    "average_precision_at_k", "precision_at_k", "precision_at_top_k", "recall_at_k",
    "recall_at_top_k", "sparse_average_precision_at_k", "sparse_precision_at_k",
    "mean_cosine_distance", "mean_iou", "mean_per_class_accuracy", "mean_relative_error",
    "mean_tensor", "percentage_below", "root_mean_squared_error",
    "false_negatives_at_thresholds", "false_positives_at_thresholds", "precision_at_thresholds",
    "recall_at_thresholds", "sensitivity_at_specificity", "specificity_at_sensitivity",
    "true_negatives_at_thresholds", "true_positives_at_thresholds",
]
