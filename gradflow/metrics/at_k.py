"""TF1's streaming metrics of the top ``k`` classes: precision and recall at k (of the top k
scores or of given class ids) and average precision at k.

``labels`` hold each row's set of true class ids: an int tensor ``[..., num_labels]`` (or
``[...]`` for one label a row) or a ``SparseTensor``; as TF1's set operations do, a row's
duplicate ids count once, and ids outside ``[0, num_classes)`` never match a prediction
(so they count as false negatives for recall). The counts are float64 local variables
(``<name>/true_positive_at_<k>``, ``.../false_positive_at_<k>``,
``.../false_negative_at_<k>``), and precision or recall with no count at all is NaN, as
TF1's is.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.metrics.basic import _collect, _metric_variable
from gradflow.ops.array_ops import expand_dims, reduce_any, reduce_sum
from gradflow.ops.index_ops import shape
from gradflow.ops.math_ops import (
    cast,
    cumsum,
    div_no_nan,
    divide,
    equal,
    greater,
    greater_equal,
    logical_and,
    logical_not,
    minimum,
    ones_like,
    where,
)
from gradflow.ops.matrix_ops import matrix_band_part
from gradflow.ops.shape_ops import size
from gradflow.ops.sparse_ops import sparse_tensor_to_dense
from gradflow.ops.state_ops import assign_add
from gradflow.ops.topk_ops import top_k
from gradflow.prim.registry import convert_to_tensor
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.variables import variable_scope


def _at_k_name(what, k, class_id):
    name = f"{what}_at_{k}" if k is not None else f"{what}_at_k"
    return name if class_id is None else f"{name}_class{class_id}"


def _rank(t, what):
    if t.shape is None:
        raise ValueError(f"{what}: the rank of '{t.name}' must be known when the graph is built")
    return len(t.shape)


def _label_sets(labels, predictions_idx):
    """``(ids, valid, sparse)``: the labels as an int64 tensor ``[..., n]`` with the same
    rank as ``predictions_idx`` and a bool mask of its real entries (``None`` when dense)."""
    rank = _rank(predictions_idx, "labels")
    if isinstance(labels, SparseTensorValue):
        labels = SparseTensor(labels.indices, labels.values, labels.dense_shape)
    if isinstance(labels, SparseTensor):
        values = cast(labels.values, dtypes.int64)
        ids = sparse_tensor_to_dense(SparseTensor(labels.indices, values, labels.dense_shape),
                                     default_value=-1)
        mark = SparseTensor(labels.indices, ones_like(values), labels.dense_shape)
        valid = greater(sparse_tensor_to_dense(mark, default_value=0), 0)
    else:
        ids = convert_to_tensor(labels)
        if not ids.dtype.is_integer:
            raise TypeError(f"labels '{ids.name}' must be integer class ids, got {ids.dtype.name}")
        ids, valid = cast(ids, dtypes.int64), None
    lrank = _rank(ids, "labels")
    if lrank == rank - 1:
        ids = expand_dims(ids, -1)
        valid = None if valid is None else expand_dims(valid, -1)
    elif lrank != rank:
        raise ValueError(f"labels '{ids.name}' of rank {lrank} do not fit predictions of rank "
                         f"{rank}: their rank must be the same or one less")
    return ids, valid, isinstance(labels, SparseTensor)


def _first(ids, mask):
    """Where ``mask`` holds and no earlier masked entry of the row has the same id."""
    same = logical_and(equal(expand_dims(ids, -1), expand_dims(ids, -2)),
                       expand_dims(mask, -2))
    same = cast(same, dtypes.float32)
    earlier = matrix_band_part(same, -1, 0) - matrix_band_part(same, 0, 0)
    return logical_and(mask, logical_not(greater(reduce_sum(earlier, -1), 0.0)))


def _set_counts(ids, valid, predictions_idx, class_id):
    """Per row: (true positives, false positives, false negatives) of the id sets."""
    pred = cast(predictions_idx, dtypes.int64)
    pmask = ones_like(pred) > 0
    lmask = ones_like(ids) > 0 if valid is None else valid
    if class_id is not None:
        pmask = equal(pred, class_id)
        lmask = logical_and(lmask, equal(ids, class_id))
    pmask, lmask = _first(pred, pmask), _first(ids, lmask)
    match = equal(expand_dims(pred, -1), expand_dims(ids, -2))
    in_labels = reduce_any(logical_and(match, expand_dims(lmask, -2)), -1)
    in_pred = reduce_any(logical_and(match, expand_dims(pmask, -1)), -2)

    def count(m):
        return reduce_sum(cast(m, dtypes.float64), -1)

    return (count(logical_and(pmask, in_labels)),
            count(logical_and(pmask, logical_not(in_labels))),
            count(logical_and(lmask, logical_not(in_pred))))


def _weighted(per_row, weights):
    if weights is None:
        return per_row
    w = cast(convert_to_tensor(weights), dtypes.float64)
    if w.shape is not None and per_row.shape is not None and len(w.shape) not in (
            0, len(per_row.shape)):
        raise ValueError(f"weights '{w.name}' of shape {tuple(w.shape)} do not broadcast to "
                         f"the per-row counts of shape {tuple(per_row.shape)}")
    return per_row * w


def _ratio_at_top_k(what, labels, predictions_idx, k, class_id, weights,
                    metrics_collections, updates_collections, name):
    predictions_idx = convert_to_tensor(predictions_idx)
    with variable_scope(name, default_name=_at_k_name(what, k, class_id)):
        ids, valid, _ = _label_sets(labels, predictions_idx)
        tp, fp, fn = _set_counts(ids, valid, predictions_idx, class_id)
        other, other_name = (fp, "false_positive") if what == "precision" else \
            (fn, "false_negative")
        tp_var = _metric_variable((), dtypes.float64, _at_k_name("true_positive", k, class_id))
        ot_var = _metric_variable((), dtypes.float64, _at_k_name(other_name, k, class_id))
        tp_update = assign_add(tp_var, reduce_sum(_weighted(tp, weights)))
        ot_update = assign_add(ot_var, reduce_sum(_weighted(other, weights)))
        value = divide(tp_var, tp_var + ot_var, name="value")
        update = divide(tp_update, tp_update + ot_update, name="update")
    _collect(metrics_collections, value)
    _collect(updates_collections, update)
    return value, update


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """Precision of the predicted class ids ``predictions_idx`` (``[..., k]``) against the
    label sets over every batch seen: the share of predicted ids that are labels (only
    ``class_id``'s when given), weighted per row."""
    return _ratio_at_top_k("precision", labels, predictions_idx, k, class_id, weights,
                           metrics_collections, updates_collections, name)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """Recall of the predicted class ids ``predictions_idx`` (``[..., k]``) against the label
    sets over every batch seen: the share of labels (only ``class_id`` when given) among the
    predicted ids, weighted per row."""
    return _ratio_at_top_k("recall", labels, predictions_idx, k, class_id, weights,
                           metrics_collections, updates_collections, name)


def _top_k_ids(predictions, k):
    return top_k(convert_to_tensor(predictions), k).indices


def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Precision of the ``k`` highest-scoring classes of ``predictions`` (``[..., classes]``)
    against the label sets over every batch seen (see ``precision_at_top_k``)."""
    return precision_at_top_k(labels, _top_k_ids(predictions, k), k, class_id, weights,
                              metrics_collections, updates_collections,
                              name or _at_k_name("precision", k, class_id))


def recall_at_k(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
                updates_collections=None, name=None):
    """Recall of the ``k`` highest-scoring classes of ``predictions`` (``[..., classes]``)
    against the label sets over every batch seen (see ``recall_at_top_k``)."""
    return recall_at_top_k(labels, _top_k_ids(predictions, k), k, class_id, weights,
                           metrics_collections, updates_collections,
                           name or _at_k_name("recall", k, class_id))


def sparse_precision_at_k(labels, predictions, k, class_id=None, weights=None,
                          metrics_collections=None, updates_collections=None, name=None):
    """TF1's older name of ``precision_at_k`` (the same metric)."""
    return precision_at_k(labels, predictions, k, class_id, weights, metrics_collections,
                          updates_collections, name)


def _average_precision(ids, valid, sparse, predictions_idx, k):
    """Per row: the mean over the first ``k`` predictions that are labels of the precision
    up to each, divided by ``min(number of labels, k)`` (NaN for a row without labels)."""
    lmask = ones_like(ids) > 0 if valid is None else valid
    pred = cast(predictions_idx, dtypes.int64)
    match = equal(expand_dims(pred, -1), expand_dims(ids, -2))
    relevant = cast(reduce_any(logical_and(match, expand_dims(lmask, -2)), -1), dtypes.float64)
    precision = divide(cumsum(relevant, axis=-1), cumsum(ones_like(relevant), axis=-1))
    total = reduce_sum(precision * relevant, -1)
    if sparse:  # TF1 counts a SparseTensor's distinct ids, a dense tensor's ids >= 0
        n_labels = reduce_sum(cast(_first(ids, lmask), dtypes.float64), -1)
    else:
        n_labels = reduce_sum(cast(greater_equal(ids, 0), dtypes.float64), -1)
    return divide(total, minimum(n_labels, float(k)))


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The mean average precision at ``k`` of the top ``k`` classes of ``predictions`` over
    every row of every batch seen (weighted per row), with float64 local variables
    ``<name>/max_1`` (the rows' total weight, named as TF1 names it) and ``<name>/total``."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    predictions = convert_to_tensor(predictions)
    with variable_scope(name, default_name=_at_k_name("average_precision", k, None)):
        pred = _top_k_ids(predictions, k)
        ids, valid, sparse = _label_sets(labels, pred)
        if predictions.shape is not None and predictions.shape[-1] is not None:
            num_classes = int(predictions.shape[-1])
        else:
            num_classes = cast(shape(predictions)[-1], dtypes.int64)
        ids = where(greater_equal(ids, num_classes), -1 * ones_like(ids), ids)
        ap = _average_precision(ids, valid, sparse, pred, k)
        if weights is None:
            batch_max = cast(size(ap), dtypes.float64)
        else:
            w = cast(convert_to_tensor(weights), dtypes.float64) * ones_like(ap)
            ap = ap * w
            batch_max = reduce_sum(w)
        max_var = _metric_variable((), dtypes.float64, "max_1")
        total_var = _metric_variable((), dtypes.float64, "total")
        max_update = assign_add(max_var, batch_max)
        total_update = assign_add(total_var, reduce_sum(ap))
        value = div_no_nan(total_var, max_var, name="mean")
        update = div_no_nan(total_update, max_update, name="update")
    _collect(metrics_collections, value)
    _collect(updates_collections, update)
    return value, update


def sparse_average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                                  updates_collections=None, name=None):
    """TF1's older name of ``average_precision_at_k`` (the same metric)."""
    return average_precision_at_k(labels, predictions, k, weights, metrics_collections,
                                  updates_collections, name)
