"""TF1's ``tf.losses``: per-example losses reduced with weights, and the loss collections.

Every loss function computes its elementwise losses, then ``compute_weighted_loss``
multiplies them by ``weights`` (a scalar, or a tensor that broadcasts to the
losses: each of its dimensions 1 or the losses' size), reduces them as
``reduction`` says and adds the result to ``loss_collection``:

* ``NONE``: the weighted losses, unreduced;
* ``SUM``: their sum;
* ``MEAN``: the sum divided by the sum of the (broadcast) weights;
* ``SUM_OVER_BATCH_SIZE``: the sum divided by the number of loss elements;
* ``SUM_BY_NONZERO_WEIGHTS`` (= ``SUM_OVER_NONZERO_WEIGHTS``, the default): the
  sum divided by the number of loss elements whose weight is not zero.

A division by zero gives 0 (TF1's ``div_no_nan``). Unlike TF1, which computes in
float32 and casts back, losses are computed in their own dtype (float16 in
float32), so float64 models keep float64 precision.

>>> loss = gf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
>>> total = gf.losses.get_total_loss()   # the losses plus the regularization losses
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph
from gradflow.ops.array_ops import reduce_sum, squeeze
from gradflow.ops.math_ops import (
    abs as _abs,
)
from gradflow.ops.math_ops import (
    cast,
    div_no_nan,
    divide,
    equal,
    greater,
    log,
    maximum,
    minimum,
    multiply,
    ones_like,
    relu,
    square,
    squared_difference,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.nn_ops import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from gradflow.ops.state_ops import stop_gradient
from gradflow.prim.registry import apply, constant, convert_to_tensor
from gradflow.variables import GraphKeys, add_to_collection, get_collection

__all__ = [
    "Reduction", "absolute_difference", "add_loss", "compute_weighted_loss",
    "cosine_distance", "get_losses", "get_regularization_loss", "get_regularization_losses",
    "get_total_loss", "hinge_loss", "huber_loss", "log_loss", "mean_pairwise_squared_error",
    "mean_squared_error",
    "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy",
]


class Reduction:
    """How ``compute_weighted_loss`` reduces the weighted losses (TF1 ``tf.losses.Reduction``)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        """Every valid reduction key."""
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        """Raise ValueError unless ``key`` is a reduction key."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# -- collections ---------------------------------------------------------------------


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Add ``loss`` to ``loss_collection`` (nothing if the collection is ``None``)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses in ``loss_collection``, those whose name matches ``scope`` if given."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The tensors of ``GraphKeys.REGULARIZATION_LOSSES`` (matching ``scope`` if given)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def _sum_all(tensors, name):
    from gradflow.ops.state_ops import identity

    total = tensors[0]
    for t in tensors[1:]:
        if t.dtype is not total.dtype:
            raise TypeError(f"cannot add loss '{t.name}' of dtype {t.dtype.name} to "
                            f"'{tensors[0].name}' of dtype {total.dtype.name}")
        total = total + t
    return identity(total, name=name)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses (matching ``scope``), or a float32 0.0."""
    losses = get_regularization_losses(scope)
    if not losses:
        return constant(0.0, name=name)
    return _sum_all(losses, name)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of ``get_losses(scope)`` and, by default, the regularization losses.

    Raises ValueError when there is no loss at all, as TF1 does.
    """
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses to add: the loss collections are empty")
    return _sum_all(losses, name)


# -- weights and reductions ------------------------------------------------------------


def _compute_dtype(losses):
    return dtypes.float32 if losses.dtype is dtypes.float16 else losses.dtype


def _check_broadcastable(weights, losses):
    """TF1's rule: scalar weights, or weights of the losses' rank whose every dimension
    is 1 or the losses' (checked where the static shapes tell)."""
    ws, ls = weights.shape, losses.shape
    if ws is None or ls is None or len(ws) == 0:
        return
    if len(ws) != len(ls):
        raise ValueError(f"weights '{weights.name}' of shape {tuple(ws)} cannot be broadcast "
                         f"to losses '{losses.name}' of shape {tuple(ls)}: the ranks must "
                         "match (or the weights be a scalar)")
    for w, k in zip(ws, ls):
        if w is not None and k is not None and w not in (1, k):
            raise ValueError(f"weights '{weights.name}' of shape {tuple(ws)} cannot be "
                             f"broadcast to losses '{losses.name}' of shape {tuple(ls)}")


def _broadcast_weights(weights, losses):
    """``weights`` with the shape of ``losses`` (TF1 ``broadcast_weights``)."""
    return multiply(weights, ones_like(losses))


def _div_no_nan(total, count, name=None):
    """``total / count``, and 0 where ``count`` is 0 (no NaN in the gradient either)."""
    if isinstance(count, float):
        return divide(total, count, name=name) if count else multiply(total, 0.0, name=name)
    zero = equal(count, 0.0)
    safe = where(zero, ones_like(count), count)
    return where(zero, zeros_like(total), divide(total, safe), name=name)


def _num_elements(losses):
    if losses.shape is not None and None not in losses.shape:
        n = 1
        for d in losses.shape:
            n *= int(d)
        return float(n)
    return apply("reduced_count", [losses], axes=None)


def _num_present(losses, weights):
    """The number of loss elements whose (broadcast) weight is not zero."""
    if weights.opdef.kind == "constant" and weights.shape == () and \
            float(weights.attrs["value"].array) != 0.0:
        return _num_elements(losses)
    with losses.graph.name_scope("num_present"):
        present = where(equal(weights, 0.0), zeros_like(weights), ones_like(weights))
        return reduce_sum(_broadcast_weights(present, losses))


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``losses * weights`` reduced as ``reduction`` says, added to ``loss_collection``.

    ``weights`` is a scalar or broadcasts to ``losses`` (each dimension 1 or the
    losses'). The result has the dtype of ``losses``.
    """
    Reduction.validate(reduction)
    losses = convert_to_tensor(losses)
    with losses.graph.name_scope(scope or "weighted_loss"):
        return _weighted(losses, weights, loss_collection, reduction)


def _weighted(losses, weights, loss_collection, reduction):
    """``compute_weighted_loss`` inside the current name scope."""
    Reduction.validate(reduction)
    if losses.dtype is None or not losses.dtype.is_floating:
        raise TypeError(f"compute_weighted_loss: losses '{losses.name}' must be floating "
                        "point")
    dtype = _compute_dtype(losses)
    input_dtype = losses.dtype
    losses = cast(losses, dtype) if dtype is not input_dtype else losses
    weights = _weights_tensor(weights, dtype)
    _check_broadcastable(weights, losses)
    weighted = multiply(losses, weights)
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        total = reduce_sum(weighted)
        if reduction == Reduction.SUM:
            loss = total
        elif reduction == Reduction.MEAN:
            loss = _div_no_nan(total, reduce_sum(_broadcast_weights(weights, losses)),
                               name="value")
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            loss = _div_no_nan(total, _num_elements(losses), name="value")
        else:
            loss = _div_no_nan(total, _num_present(losses, weights), name="value")
    if loss.dtype is not input_dtype:
        loss = cast(loss, input_dtype)
    add_loss(loss, loss_collection)
    return loss


def _weights_tensor(weights, dtype):
    if isinstance(weights, Tensor) or hasattr(weights, "_as_graph_tensor"):
        w = convert_to_tensor(weights)
        if w.dtype is not dtype:
            w = cast(w, dtype)
        return w
    return constant(weights, dtype=dtype, name="weights")


def _require(**named):
    for key, value in named.items():
        if value is None:
            raise ValueError(f"{key} must not be None.")


def _pair(labels, predictions, what, cast_labels=True):
    """``labels`` and ``predictions`` as tensors of the predictions' dtype, checked to
    have compatible static shapes."""
    predictions = convert_to_tensor(predictions)
    if predictions.dtype is None or not predictions.dtype.is_floating:
        raise TypeError(f"{what}: '{predictions.name}' must be floating point")
    labels = convert_to_tensor(labels, like=predictions)
    if cast_labels and labels.dtype is not predictions.dtype:
        labels = cast(labels, predictions.dtype)
    a, b = labels.shape, predictions.shape
    if a is not None and not a.is_compatible_with(b):
        raise ValueError(f"{what}: labels '{labels.name}' of shape {tuple(a)} and "
                         f"'{predictions.name}' of shape {tuple(b)} are not compatible")
    return labels, predictions


def _scoped(scope, default):
    return get_default_graph().name_scope(scope or default)


# -- the losses --------------------------------------------------------------------------


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted ``|predictions - labels|``."""
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "absolute_difference"):
        labels, predictions = _pair(labels, predictions, "absolute_difference")
        losses = _abs(subtract(predictions, labels))
        return _weighted(losses, weights, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted ``(predictions - labels) ** 2``."""
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "mean_squared_error"):
        labels, predictions = _pair(labels, predictions, "mean_squared_error")
        losses = squared_difference(predictions, labels)
        return _weighted(losses, weights, loss_collection, reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=GraphKeys.LOSSES):
    """For each example (first axis), the mean over every pair of its elements of
    ``((p_i - p_j) - (l_i - l_j)) ** 2``, counted over the elements of nonzero weight,
    times the weights and summed over the batch (TF1's; float32). ``weights`` is a scalar
    or broadcasts to ``labels``."""
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "mean_pairwise_squared_error"):
        labels = cast(convert_to_tensor(labels), dtypes.float32)
        predictions = cast(convert_to_tensor(predictions), dtypes.float32)
        labels, predictions = _pair(labels, predictions, "mean_pairwise_squared_error")
        weights = _weights_tensor(weights, dtypes.float32)
        _check_broadcastable(weights, labels)
        diffs = subtract(predictions, labels)
        if diffs.shape is None:
            raise ValueError(f"mean_pairwise_squared_error: the rank of '{predictions.name}' "
                             "must be known when the graph is built")
        axis = list(range(1, len(diffs.shape)))
        present = where(equal(weights, 0.0), zeros_like(weights), ones_like(weights))
        n = reduce_sum(_broadcast_weights(present, diffs), axis=axis, keepdims=True)
        term1 = 2.0 * div_no_nan(reduce_sum(square(diffs), axis=axis, keepdims=True),
                                 maximum(n - 1.0, 0.0))
        term2 = 2.0 * div_no_nan(square(reduce_sum(diffs, axis=axis, keepdims=True)),
                                 maximum(n * (n - 1.0), 0.0))
        loss = reduce_sum(multiply(term1 - term2, weights))
        loss = where(greater(reduce_sum(n), 0.0), loss, zeros_like(loss), name="value")
        add_loss(loss, loss_collection)
        return loss


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted Huber loss of ``e = predictions - labels``: ``e**2 / 2`` where
    ``|e| <= delta``, ``delta * (|e| - delta / 2)`` beyond."""
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "huber_loss"):
        labels, predictions = _pair(labels, predictions, "huber_loss")
        abs_error = _abs(subtract(predictions, labels))
        quadratic = minimum(abs_error, float(delta))
        linear = subtract(abs_error, quadratic)
        losses = 0.5 * (quadratic * quadratic) + float(delta) * linear
        return _weighted(losses, weights, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted ``-labels log(p + eps) - (1 - labels) log(1 - p + eps)`` for
    probabilities ``predictions``."""
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "log_loss"):
        labels, predictions = _pair(labels, predictions, "log_loss")
        losses = -(labels * log(predictions + epsilon)) - \
            (1.0 - labels) * log(1.0 - predictions + epsilon)
        return _weighted(losses, weights, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted ``max(0, 1 - (2 labels - 1) logits)`` for 0/1 ``labels``."""
    _require(labels=labels, logits=logits)
    with _scoped(scope, "hinge_loss"):
        labels, logits = _pair(labels, logits, "hinge_loss")
        signs = 2.0 * labels - 1.0
        losses = relu(1.0 - signs * logits)
        return _weighted(losses, weights, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None):
    """Weighted ``1 - sum(labels * predictions, axis)`` (keeping ``axis``) for
    unit-normalized inputs; ``dim`` is TF1's deprecated name of ``axis``."""
    if dim is not None:
        if axis is not None:
            raise ValueError("cosine_distance: give axis= or dim=, not both")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _require(labels=labels, predictions=predictions)
    with _scoped(scope, "cosine_distance_loss"):
        labels, predictions = _pair(labels, predictions, "cosine_distance")
        losses = 1.0 - reduce_sum(labels * predictions, axis, keepdims=True)
        return _weighted(losses, weights, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted sigmoid cross-entropy; ``label_smoothing`` moves the labels towards 1/2:
    ``labels * (1 - s) + s / 2``."""
    _require(multi_class_labels=multi_class_labels, logits=logits)
    with _scoped(scope, "sigmoid_cross_entropy_loss"):
        labels, logits = _pair(multi_class_labels, logits, "sigmoid_cross_entropy")
        if label_smoothing > 0:
            labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return _weighted(losses, weights, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted softmax cross-entropy per example (``weights`` of shape ``[batch]`` or a
    scalar); ``label_smoothing`` mixes in the uniform distribution:
    ``labels * (1 - s) + s / num_classes``. No gradient flows into the labels."""
    _require(onehot_labels=onehot_labels, logits=logits)
    with _scoped(scope, "softmax_cross_entropy_loss"):
        labels, logits = _pair(onehot_labels, logits, "softmax_cross_entropy")
        if label_smoothing > 0:
            classes = labels.shape[-1] if labels.shape is not None else None
            if classes is None:
                from gradflow.ops.index_ops import shape

                classes = cast(shape(labels)[-1], logits.dtype)
            else:
                classes = float(classes)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
        labels = stop_gradient(labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                      name="xentropy")
        return _weighted(losses, weights, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Weighted cross-entropy of integer class ``labels`` (``[batch]``, or ``[batch, 1]``
    which is squeezed) against ``softmax(logits)``."""
    _require(labels=labels, logits=logits)
    with _scoped(scope, "sparse_softmax_cross_entropy_loss"):
        logits = convert_to_tensor(logits)
        labels = convert_to_tensor(labels)
        if labels.shape is not None and logits.shape is not None and \
                len(labels.shape) == len(logits.shape) and labels.shape[-1] in (1, None):
            labels = squeeze(labels, -1)
        weights = _squeeze_weights(weights, labels)
        losses = sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                          name="xentropy")
        return _weighted(losses, weights, loss_collection, reduction)


def _squeeze_weights(weights, labels):
    """Weights of shape ``[batch, 1]`` for losses ``[batch]`` lose their last axis (TF1)."""
    if not isinstance(weights, Tensor) and not hasattr(weights, "_as_graph_tensor"):
        import numpy as np

        array = np.asarray(weights)
        if labels.shape is not None and array.ndim == len(labels.shape) + 1 and \
                array.shape[-1] == 1:
            return array[..., 0]
        return weights
    if weights.shape is not None and labels.shape is not None and \
            len(weights.shape) == len(labels.shape) + 1 and weights.shape[-1] in (1, None):
        return squeeze(weights, -1)
    return weights
