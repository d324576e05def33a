"""TF1's ``tf.contrib.seq2seq``, for what sequence models trained with it use:
``sequence_loss``, the weighted cross-entropy of a batch of sequences.

>>> loss = gf.contrib.seq2seq.sequence_loss(logits, targets, gf.ones_like(targets, gf.float32))
"""

from __future__ import annotations

from gradflow.ops.array_ops import count_nonzero, reduce_sum, reshape
from gradflow.ops.index_ops import shape
from gradflow.ops.math_ops import divide, equal, ones_like, where, zeros_like
from gradflow.ops.nn_ops import sparse_softmax_cross_entropy_with_logits
from gradflow.prim.registry import convert_to_tensor

__all__ = ["sequence_loss"]


def _div_no_nan(x, y):
    """``x / y``, and 0 where ``y`` is 0 (TF1's ``div_no_nan``, as sequence_loss uses it)."""
    zero = equal(y, zeros_like(y))
    return where(zero, zeros_like(x), divide(x, where(zero, ones_like(y), y)))


def _check_ranks(logits, targets, weights):
    for t, rank, what in ((logits, 3, "Logits"), (targets, 2, "Targets"),
                          (weights, 2, "Weights")):
        if t.shape is not None and len(t.shape) != rank:
            size = "[batch_size x sequence_length x num_decoder_symbols]" if rank == 3 \
                else "[batch_size x sequence_length]"
            raise ValueError(f"{what} must be a {size} tensor; '{t.name}' has shape "
                             f"{tuple(t.shape)}")


def sequence_loss(logits, targets, weights, average_across_timesteps=True,
                  average_across_batch=True, sum_over_timesteps=False, sum_over_batch=False,
                  softmax_loss_function=None, name=None):
    """Weighted cross-entropy of ``logits`` ``[batch, time, classes]`` against integer
    ``targets`` ``[batch, time]``, with ``weights`` ``[batch, time]`` (a 0/1 mask of
    padding, or any weights), as TF1 computes it.

    Averaging across timesteps and/or batch divides the weighted sum by the sum of
    the weights over those axes; ``sum_over_*`` divides by the count of nonzero
    weights instead; with neither the result keeps ``[batch, time]``. A division by a
    zero total gives 0. ``softmax_loss_function(labels=, logits=)`` replaces the
    sparse softmax cross-entropy.
    """
    logits = convert_to_tensor(logits)
    targets = convert_to_tensor(targets)
    weights = convert_to_tensor(weights, like=logits)
    _check_ranks(logits, targets, weights)
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to "
                         "True at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at "
                         "same time.")
    with logits.graph.name_scope(name or "sequence_loss"):
        classes = logits.shape[-1] if logits.shape is not None else None
        flat_logits = reshape(logits, [-1, classes if classes is not None
                                       else shape(logits)[2]])
        flat_targets = reshape(targets, [-1])
        loss_fn = softmax_loss_function or sparse_softmax_cross_entropy_with_logits
        crossent = loss_fn(labels=flat_targets, logits=flat_logits) * reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return _div_no_nan(reduce_sum(crossent), reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            return _div_no_nan(reduce_sum(crossent),
                               count_nonzero(weights, dtype=logits.dtype))
        crossent = reshape(crossent, shape(targets))
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return _div_no_nan(reduce_sum(crossent, axis), reduce_sum(weights, axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            return _div_no_nan(reduce_sum(crossent, axis),
                               count_nonzero(weights, axis, dtype=logits.dtype))
        return crossent
