"""TF1's streaming metrics at thresholds: the true/false positive/negative counts at each of
a list of thresholds, precision and recall at thresholds, and sensitivity at a specificity
(and the reverse) over TF1's evenly spaced thresholds."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.metrics.basic import (
    _as_bool,
    _check_same_shape,
    _collect,
    _float_values,
    _metric_variable,
    _squeeze_last,
    _weights_for,
)
from gradflow.ops.array_ops import argmax, argmin, expand_dims, reduce_min, reduce_sum, reshape
from gradflow.ops.index_ops import gather
from gradflow.ops.math_ops import (
    abs as _abs,
)
from gradflow.ops.math_ops import (
    cast,
    cumsum,
    divide,
    equal,
    greater,
    logical_and,
    logical_not,
    ones_like,
)
from gradflow.ops.state_ops import assign_add, identity
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import variable_scope

_KEYS = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives",
         "fp": "false_positives"}
_EPS = 1e-7


def _counts_at_thresholds(labels, predictions, thresholds, weights, includes):
    """Local variables of the weighted counts, one per threshold, of each key of
    ``includes`` (TF1's ``_confusion_matrix_at_thresholds``): a prediction is positive
    when it is above the threshold."""
    predictions = cast(_float_values(predictions, "metric"), dtypes.float32)
    predictions, labels = _squeeze_last(predictions, _as_bool(labels, "metric"))
    _check_same_shape(labels, predictions, "metric")
    pred, truth = reshape(predictions, (1, -1)), reshape(labels, (1, -1))
    w = ones_like(pred) if weights is None else \
        reshape(_weights_for(weights, predictions), (1, -1))
    cuts = convert_to_tensor([float(t) for t in thresholds], dtype=dtypes.float32)
    positive = greater(pred, expand_dims(cuts, 1))
    hits = {"tp": lambda: logical_and(truth, positive),
            "fn": lambda: logical_and(truth, logical_not(positive)),
            "tn": lambda: logical_and(logical_not(truth), logical_not(positive)),
            "fp": lambda: logical_and(logical_not(truth), positive)}
    values, updates = {}, {}
    for key in ("tp", "fn", "tn", "fp"):
        if key in includes:
            values[key] = _metric_variable((len(thresholds),), dtypes.float32, _KEYS[key])
            updates[key] = assign_add(values[key],
                                      reduce_sum(cast(hits[key](), dtypes.float32) * w, 1))
    return values, updates


def _count_metric(key):
    what = _KEYS[key] + "_at_thresholds"

    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope(name, default_name=_KEYS[key]):
            values, updates = _counts_at_thresholds(labels, predictions, thresholds, weights,
                                                    (key,))
        value = identity(values[key])
        _collect(metrics_collections, value)
        _collect(updates_collections, updates[key])
        return value, updates[key]

    metric.__name__ = metric.__qualname__ = what
    metric.__doc__ = (f"The (weighted) number of {_KEYS[key].replace('_', ' ')} at each of "
                      "``thresholds`` (a prediction above a threshold is positive) over every "
                      f"batch seen: a vector, local variable ``{_KEYS[key]}/{_KEYS[key]}``.")
    return metric


true_positives_at_thresholds = _count_metric("tp")
false_negatives_at_thresholds = _count_metric("fn")
true_negatives_at_thresholds = _count_metric("tn")
false_positives_at_thresholds = _count_metric("fp")


def _ratio_at_thresholds(what, other, labels, predictions, thresholds, weights,
                         metrics_collections, updates_collections, name):
    with variable_scope(name, default_name=what):
        values, updates = _counts_at_thresholds(labels, predictions, thresholds, weights,
                                                ("tp", other))
        value = divide(values["tp"], _EPS + values["tp"] + values[other],
                       name=f"{what.split('_')[0]}_value")
        update_op = divide(updates["tp"], _EPS + updates["tp"] + updates[other],
                           name=f"{what.split('_')[0]}_update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def precision_at_thresholds(labels, predictions, thresholds, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """``tp / (tp + fp + 1e-7)`` at each of ``thresholds`` over every batch seen."""
    return _ratio_at_thresholds("precision_at_thresholds", "fp", labels, predictions,
                                thresholds, weights, metrics_collections,
                                updates_collections, name)


def recall_at_thresholds(labels, predictions, thresholds, weights=None,
                         metrics_collections=None, updates_collections=None, name=None):
    """``tp / (tp + fn + 1e-7)`` at each of ``thresholds`` over every batch seen."""
    return _ratio_at_thresholds("recall_at_thresholds", "fn", labels, predictions,
                                thresholds, weights, metrics_collections,
                                updates_collections, name)


def _even_thresholds(num_thresholds, top):
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - _EPS] + inner + [top]


def _pick(counts, index, num, other, name):
    a, b = gather(counts[num], index), gather(counts[other], index)
    return divide(a, a + b + _EPS, name=name)


def _sensitivity_at(counts, specificity, name):
    """tp / (tp + fn) at the first threshold whose specificity is nearest ``specificity``."""
    spec = divide(counts["tn"], counts["tn"] + counts["fp"] + _EPS)
    index = cast(argmin(_abs(spec - specificity), 0), dtypes.int32)
    return _pick(counts, index, "tp", "fn", name)


def _specificity_at(counts, sensitivity, name):
    """tn / (tn + fp) at the last threshold whose sensitivity is nearest ``sensitivity``."""
    gap = _abs(divide(counts["tp"], counts["tp"] + counts["fn"] + _EPS) - sensitivity)
    at_min = cumsum(cast(equal(gap, reduce_min(gap)), dtypes.int64))
    index = cast(argmax(at_min, 0), dtypes.int32)
    return _pick(counts, index, "tn", "fp", name)


def _at_rate(what, rate, fn, top, labels, predictions, weights, num_thresholds,
             metrics_collections, updates_collections, name):
    key = what.split("_at_")[1]
    if rate < 0 or rate > 1:
        raise ValueError(f"`{key}` must be in the range [0, 1], got {rate}")
    if num_thresholds < 2:
        raise ValueError(f"{what}: num_thresholds must be > 1, got {num_thresholds}")
    with variable_scope(name, default_name=what):
        values, updates = _counts_at_thresholds(labels, predictions,
                                                _even_thresholds(num_thresholds, top),
                                                weights, ("tp", "fn", "tn", "fp"))
        value = fn(values, rate, "value")
        update_op = fn(updates, rate, "update_op")
    _collect(metrics_collections, value)
    _collect(updates_collections, update_op)
    return value, update_op


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity (recall) at the threshold, of ``num_thresholds`` evenly spaced in
    [0, 1], whose specificity is nearest ``specificity``, over every batch seen."""
    return _at_rate("sensitivity_at_specificity", specificity, _sensitivity_at, 1.0 + _EPS,
                    labels, predictions, weights, num_thresholds, metrics_collections,
                    updates_collections, name)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the threshold, of ``num_thresholds`` evenly spaced in [0, 1] (the
    last just below 1, as TF1's), whose sensitivity is nearest ``sensitivity`` (the last
    such on a tie), over every batch seen."""
    return _at_rate("specificity_at_sensitivity", sensitivity, _specificity_at, 1.0 - _EPS,
                    labels, predictions, weights, num_thresholds, metrics_collections,
                    updates_collections, name)
