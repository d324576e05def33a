"""TF1's basic streaming metrics: mean, accuracy, errors, counts, precision, recall, auc."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reduce_sum, squeeze
from gradflow.ops.math_ops import (
    abs as _abs,
)
from gradflow.ops.math_ops import (
    cast,
    divide,
    equal,
    greater,
    logical_and,
    logical_not,
    maximum,
    multiply,
    ones_like,
    squared_difference,
    where,
    zeros_like,
)
from gradflow.ops.state_ops import assign_add
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import GraphKeys, Variable, add_to_collections, variable_scope

__all__ = ["accuracy", "false_negatives", "false_positives", "mean", "mean_absolute_error",
           "mean_squared_error", "precision", "recall", "true_negatives", "true_positives"]


def _metric_variable(shape, dtype, name):
    """A zero-initialized local variable of a metric (TF1 ``metric_variable``)."""
    import numpy as np

    return Variable(np.zeros(shape, dtype=dtype.as_numpy_dtype), trainable=False, name=name,
                    dtype=dtype,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES])


def _div_no_nan(num, den, name=None):
    zero = equal(den, 0.0)
    safe = where(zero, ones_like(den), den)
    return where(zero, zeros_like(num), divide(num, safe), name=name)


def _collect(collections, value):
    if collections:
        add_to_collections(collections, value)


def _float_values(values, what):
    t = convert_to_tensor(values)
    if t.dtype.is_bool or t.dtype.is_integer or t.dtype is dtypes.float16:
        t = cast(t, dtypes.float32)
    if not t.dtype.is_floating:
        raise TypeError(f"{what}: values '{t.name}' must be numeric, got {t.dtype.name}")
    return t


def _squeeze_last(a, b):
    """TF1's ``remove_squeezable_dimensions``: when the ranks of ``a`` and ``b`` differ by
    one and the extra last axis has size 1, squeeze it."""
    if a.shape is None or b.shape is None:
        return a, b
    if len(a.shape) == len(b.shape) + 1 and a.shape[-1] == 1:
        a = squeeze(a, -1)
    elif len(b.shape) == len(a.shape) + 1 and b.shape[-1] == 1:
        b = squeeze(b, -1)
    return a, b


def _weights_for(weights, values):
    """``weights`` cast to the values' dtype and broadcast to their shape."""
    w = convert_to_tensor(weights, like=values)
    if w.dtype is not values.dtype:
        w = cast(w, values.dtype)
    w, _ = _squeeze_last(w, values) if isinstance(weights, Tensor) else (w, values)
    return multiply(w, ones_like(values))


def _count_of(values):
    if values.shape is not None and None not in values.shape:
        n = 1
        for d in values.shape:
            n *= int(d)
        return convert_to_tensor(float(n), like=values)
    return apply("reduced_count", [values], axes=None)


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """The (weighted) mean of ``values`` over every batch seen: ``total / count`` with
    ``total += sum(values * weights)`` and ``count += sum(weights)`` per update."""
    values = _float_values(values, "mean")
    with variable_scope(name, default_name="mean"):
        total = _metric_variable((), values.dtype, "total")
        count = _metric_variable((), values.dtype, "count")
        if weights is None:
            num = _count_of(values)
        else:
            w = _weights_for(weights, values)
            values = values * w
            num = reduce_sum(w)
        update_total = assign_add(total, reduce_sum(values))
        update_count = assign_add(count, num)
        value = _div_no_nan(total, count, name="value")
        update_op = _div_no_nan(update_total, maximum(update_count, 0.0), name="update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """How often ``predictions`` equals ``labels`` (cast to the labels' dtype), weighted."""
    labels = convert_to_tensor(labels)
    predictions = convert_to_tensor(predictions)
    predictions, labels = _squeeze_last(predictions, labels)
    if predictions.dtype is not labels.dtype:
        predictions = cast(predictions, labels.dtype)
    _check_same_shape(labels, predictions, "accuracy")
    is_correct = cast(equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def _check_same_shape(labels, predictions, what):
    a, b = labels.shape, predictions.shape
    if a is not None and not a.is_compatible_with(b):
        raise ValueError(f"{what}: labels '{labels.name}' of shape {tuple(a)} and "
                         f"predictions '{predictions.name}' of shape {tuple(b)} do not match")


def _error_metric(labels, predictions, weights, metrics_collections, updates_collections,
                  name, what, fn):
    predictions = convert_to_tensor(predictions)
    labels = convert_to_tensor(labels, like=predictions)
    predictions, labels = _squeeze_last(predictions, labels)
    if labels.dtype is not predictions.dtype:
        labels = cast(labels, predictions.dtype)
    _check_same_shape(labels, predictions, what)
    return mean(fn(labels, predictions), weights, metrics_collections, updates_collections,
                name or what)


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The (weighted) mean of ``(labels - predictions) ** 2`` over every batch seen."""
    return _error_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "mean_squared_error", squared_difference)


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The (weighted) mean of ``|labels - predictions|`` over every batch seen."""
    return _error_metric(labels, predictions, weights, metrics_collections,
                         updates_collections, name, "mean_absolute_error",
                         lambda a, b: _abs(a - b))


# -- counts of a condition: true/false positives/negatives, precision, recall ------------


def _as_bool(t, what):
    t = convert_to_tensor(t)
    return t if t.dtype.is_bool else cast(t, dtypes.bool_)


def _count_condition(condition, weights, metrics_collections, updates_collections, name,
                     default):
    """``count += sum(cast(condition) * weights)`` in a local variable ``<name>/count``."""
    values = cast(condition, dtypes.float32)
    with variable_scope(name, default_name=default):
        count = _metric_variable((), dtypes.float32, "count")
        if weights is not None:
            values = values * _weights_for(weights, values)
        update_op = assign_add(count, reduce_sum(values))
    from gradflow.ops.state_ops import identity

    value = identity(count)
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def _labels_predictions(labels, predictions, what):
    labels = _as_bool(labels, what)
    predictions = _as_bool(predictions, what)
    predictions, labels = _squeeze_last(predictions, labels)
    _check_same_shape(labels, predictions, what)
    return labels, predictions


def _condition_metric(what, cond_fn):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        lab, pred = _labels_predictions(labels, predictions, what)
        return _count_condition(cond_fn(lab, pred), weights, metrics_collections,
                                updates_collections, name, what)

    metric.__name__ = metric.__qualname__ = what
    metric.__doc__ = (f"The (weighted) number of {what.replace('_', ' ')} over every batch "
                      "seen; labels and predictions are cast to bool.")
    return metric


true_positives = _condition_metric("true_positives", lambda lab, pred: logical_and(lab, pred))
false_positives = _condition_metric(
    "false_positives", lambda lab, pred: logical_and(logical_not(lab), pred))
false_negatives = _condition_metric(
    "false_negatives", lambda lab, pred: logical_and(lab, logical_not(pred)))
true_negatives = _condition_metric(
    "true_negatives", lambda lab, pred: logical_and(logical_not(lab), logical_not(pred)))


def _ratio_metric(what, other, labels, predictions, weights, metrics_collections,
                  updates_collections, name):
    """``tp / (tp + other)`` (0 when both are 0), with ``other`` false positives
    (precision) or false negatives (recall)."""
    with variable_scope(name, default_name=what):
        lab, pred = _labels_predictions(labels, predictions, what)
        tp, tp_update = true_positives(lab, pred, weights)
        fx, fx_update = other(lab, pred, weights)

        def ratio(t, f, name):
            total = t + f
            return where(greater(total, 0.0), divide(t, maximum(total, 1e-30)),
                         zeros_like(t), name=name)

        value = ratio(tp, fx, "value")
        update_op = ratio(tp_update, fx_update, "update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """``true_positives / (true_positives + false_positives)`` over every batch seen,
    with local variables ``<name>/true_positives/count`` and
    ``<name>/false_positives/count``; labels and predictions are cast to bool."""
    return _ratio_metric("precision", false_positives, labels, predictions, weights,
                         metrics_collections, updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """``true_positives / (true_positives + false_negatives)`` over every batch seen."""
    return _ratio_metric("recall", false_negatives, labels, predictions, weights,
                         metrics_collections, updates_collections, name)


def _auc_thresholds(num_thresholds):
    """TF1's thresholds: just below 0, ``num_thresholds - 2`` inside (0, 1), just above 1."""
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [-1e-7] + inner + [1.0 + 1e-7]


def _auc_of(tp, fn, tn, fp, curve, summation_method, name=None):
    """The area under the curve through the points of each threshold (TF1's sums)."""
    from gradflow.ops.math_ops import minimum

    eps = 1e-6
    rec = divide(tp + eps, tp + fn + eps)
    x, y = (divide(fp, fp + tn + eps), rec) if curve == "ROC" else \
        (rec, divide(tp + eps, tp + fp + eps))
    width = x[:-1] - x[1:]
    if summation_method == "minoring":
        height = minimum(y[:-1], y[1:])
    elif summation_method == "majoring":
        height = maximum(y[:-1], y[1:])
    else:  # trapezoidal (careful_interpolation is summed the same way here)
        height = (y[:-1] + y[1:]) / 2.0
    return reduce_sum(width * height, name=name)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The area under the ROC (or, ``curve="PR"``, precision-recall) curve, from the
    true/false positive/negative counts at ``num_thresholds`` thresholds in [0, 1]
    accumulated over the batches (TF1 ``tf.metrics.auc``); ``predictions`` are
    probabilities, ``labels`` bools or 0/1.

    >>> auc, auc_update = gf.metrics.auc(labels=y, predictions=gf.sigmoid(logits))
    """
    from gradflow.ops.array_ops import expand_dims, reshape

    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    if num_thresholds < 2 and thresholds is None:
        raise ValueError("num_thresholds must be > 1.")
    cuts = _auc_thresholds(num_thresholds) if thresholds is None else \
        [-1e-7] + [float(t) for t in thresholds] + [1.0 + 1e-7]
    predictions, labels = _squeeze_last(_float_values(predictions, "auc"),
                                        _as_bool(labels, "auc"))
    _check_same_shape(labels, predictions, "auc")
    pred, truth = reshape(predictions, (1, -1)), reshape(labels, (1, -1))
    w = ones_like(pred) if weights is None else \
        reshape(_weights_for(weights, predictions), (1, -1))
    positive = greater(pred, expand_dims(convert_to_tensor(cuts, dtype=pred.dtype), 1))
    counts = {"true_positives": logical_and(truth, positive),
              "false_negatives": logical_and(truth, logical_not(positive)),
              "true_negatives": logical_and(logical_not(truth), logical_not(positive)),
              "false_positives": logical_and(logical_not(truth), positive)}
    with variable_scope(name, default_name="auc"):
        totals, updates = {}, {}
        for key, hit in counts.items():
            totals[key] = _metric_variable((len(cuts),), pred.dtype, key)
            updates[key] = assign_add(totals[key], reduce_sum(cast(hit, pred.dtype) * w, 1))
        order = ("true_positives", "false_negatives", "true_negatives", "false_positives")
        value = _auc_of(*(totals[k] for k in order), curve, summation_method, name="value")
        update_op = _auc_of(*(updates[k] for k in order), curve, summation_method,
                            name="update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


__all__ += ["auc"]
