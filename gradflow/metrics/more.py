"""TF1's streaming metrics built on ``mean`` and on class counts: root mean squared error,
mean relative error, mean cosine distance, percentage below, mean tensor, mean per-class
accuracy and mean intersection-over-union."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.metrics.basic import (
    _collect,
    _float_values,
    _metric_variable,
    _squeeze_last,
    _weights_for,
    mean,
    mean_squared_error,
)
from gradflow.ops.array_ops import reduce_mean, reduce_sum, reshape
from gradflow.ops.math_extra_ops import confusion_matrix
from gradflow.ops.math_ops import (
    abs as _abs,
)
from gradflow.ops.math_ops import (
    cast,
    div_no_nan,
    divide,
    equal,
    greater,
    less,
    maximum,
    multiply,
    not_equal,
    ones_like,
    sqrt,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.matrix_ops import diag_part
from gradflow.ops.scatter_ops import scatter_add
from gradflow.ops.state_ops import assign_add
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import variable_scope


def _pair(labels, predictions):
    """``predictions`` as a float tensor and ``labels`` in its dtype, trailing 1 squeezed."""
    predictions = _float_values(predictions, "metric")
    labels = convert_to_tensor(labels, like=predictions)
    if labels.dtype is not predictions.dtype:
        labels = cast(labels, predictions.dtype)
    return _squeeze_last(predictions, labels)


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of the (weighted) mean squared error over every batch seen, with the
    local variables ``root_mean_squared_error/total`` and ``.../count``."""
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    value, update_op = sqrt(mse), sqrt(update_mse)
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def mean_relative_error(labels, predictions, normalizer, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The (weighted) mean of ``|labels - predictions| / normalizer`` over every batch seen;
    an element whose ``normalizer`` is 0 counts as an error of 0."""
    predictions, labels = _pair(labels, predictions)
    normalizer = convert_to_tensor(normalizer, like=predictions)
    if normalizer.dtype is not predictions.dtype:
        normalizer = cast(normalizer, predictions.dtype)
    predictions, normalizer = _squeeze_last(predictions, normalizer)
    if predictions.shape is not None and not predictions.shape.is_compatible_with(
            normalizer.shape):
        raise ValueError(f"mean_relative_error: normalizer '{normalizer.name}' of shape "
                         f"{tuple(normalizer.shape)} does not match predictions "
                         f"'{predictions.name}' of shape {tuple(predictions.shape)}")
    errors = div_no_nan(_abs(labels - predictions), normalizer)  # 0 where normalizer is 0
    return mean(errors, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """``1 - mean(sum(labels * predictions, axis=dim))`` over every batch seen; ``labels``
    and ``predictions`` are expected to be unit vectors along ``dim``."""
    predictions, labels = _pair(labels, predictions)
    radial = reduce_sum(multiply(predictions, labels), axis=[dim], keepdims=True)
    value, update_op = mean(radial, weights, None, None, name or "mean_cosine_distance")
    value, update_op = subtract(1.0, value), subtract(1.0, update_op)
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The (weighted) share of ``values`` below ``threshold`` over every batch seen, with the
    local variables ``percentage_below_threshold/total`` and ``.../count``."""
    values = convert_to_tensor(values)
    below = cast(less(values, threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The element-wise (weighted) mean of ``values`` over every batch seen: a tensor of
    ``values``' shape (which must be static), with local variables ``mean/total_tensor``
    and ``mean/count_tensor``."""
    values = cast(convert_to_tensor(values), dtypes.float32)
    shape = values.shape
    if shape is None or None in tuple(shape):
        raise ValueError(f"mean_tensor: values '{values.name}' need a fully known static "
                         f"shape, got {shape}")
    with variable_scope(name, default_name="mean"):
        total = _metric_variable(tuple(shape), dtypes.float32, "total_tensor")
        count = _metric_variable(tuple(shape), dtypes.float32, "count_tensor")
        num = ones_like(values)
        if weights is not None:
            w = _weights_for(weights, values)
            values, num = multiply(values, w), multiply(num, w)
        update_total = assign_add(total, values)
        update_count = assign_add(count, num)
        value = div_no_nan(total, maximum(count, 0.0), name="value")
        update_op = div_no_nan(update_total, maximum(update_count, 0.0), name="update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def _flat(t, dtype):
    t = convert_to_tensor(t)
    if t.dtype is not dtype:
        t = cast(t, dtype)
    return reshape(t, (-1,)) if t.shape is None or len(t.shape) != 1 else t


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over the ``num_classes`` classes of each class's (weighted) accuracy, over
    every batch seen; as TF1's, ``update_op`` returns the per-class accuracies (a vector)
    and the value their mean. Local variables ``mean_accuracy/total`` and ``.../count``."""
    with variable_scope(name, default_name="mean_accuracy"):
        labels = _flat(labels, dtypes.int64)
        predictions = _flat(predictions, dtypes.int64)
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(f"mean_per_class_accuracy: labels '{labels.name}' and "
                             f"predictions '{predictions.name}' differ in size")
        total = _metric_variable((num_classes,), dtypes.float32, "total")
        count = _metric_variable((num_classes,), dtypes.float32, "count")
        ones = cast(ones_like(labels), dtypes.float32)
        correct = cast(equal(predictions, labels), dtypes.float32)
        if weights is not None:
            w = _flat(weights, dtypes.float32)
            correct, ones = correct * w, ones * w
        update_total = scatter_add(total, labels, ones)
        update_count = scatter_add(count, labels, correct)
        value = reduce_mean(div_no_nan(count, maximum(total, 0.0)), name="mean_accuracy")
        update_op = div_no_nan(update_count, maximum(update_total, 0.0), name="update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def _mean_iou_of(cm):
    rows = cast(reduce_sum(cm, 0), dtypes.float32)
    cols = cast(reduce_sum(cm, 1), dtypes.float32)
    diag = cast(diag_part(cm), dtypes.float32)
    den = rows + cols - diag
    valid = reduce_sum(cast(not_equal(den, 0.0), dtypes.float32))
    den = where(greater(den, 0.0), den, ones_like(den))
    iou = divide(diag, den)
    return where(greater(valid, 0.0), divide(reduce_sum(iou), maximum(valid, 1.0)),
                 zeros_like(valid))


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean intersection-over-union of the classes present, from a ``num_classes`` x
    ``num_classes`` confusion matrix (float64 local variable
    ``mean_iou/total_confusion_matrix``) accumulated over every batch; as TF1's,
    ``update_op`` returns the updated confusion matrix."""
    with variable_scope(name, default_name="mean_iou"):
        labels = _flat(labels, dtypes.int64)
        predictions = _flat(predictions, dtypes.int64)
        if not labels.shape.is_compatible_with(predictions.shape):
            raise ValueError(f"mean_iou: labels '{labels.name}' and predictions "
                             f"'{predictions.name}' differ in size")
        total_cm = _metric_variable((num_classes, num_classes), dtypes.float64,
                                    "total_confusion_matrix")
        w = None if weights is None else _flat(weights, dtypes.float64)
        batch_cm = confusion_matrix(labels, predictions, num_classes, weights=w,
                                    dtype=dtypes.float64)
        update_op = assign_add(total_cm, batch_cm)
        value = _mean_iou_of(total_cm)
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op
