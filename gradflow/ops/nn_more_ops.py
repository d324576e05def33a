"""More of TF1's ``tf.nn``, composites of existing ops: moments from sufficient statistics,
weighted moments, the log-Poisson loss, the per-replica loss helpers, the global batch
norm, the all-classes sampler, accidental hits and ``collapse_repeated``."""

from __future__ import annotations

import math

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import expand_dims, reduce_max, reduce_sum, reshape, squeeze
from gradflow.ops.index_ops import boolean_mask, concat, shape
from gradflow.ops.math_ops import (
    add,
    cast,
    div_no_nan,
    divide,
    equal,
    exp,
    greater_equal,
    less_equal,
    log,
    logical_and,
    multiply,
    not_equal,
    ones_like,
    reciprocal,
    square,
    squared_difference,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.normalization_ops import batch_normalization
from gradflow.ops.scatter_ops import scatter_nd
from gradflow.ops.shape_ops import range_, sequence_mask, size
from gradflow.prim.registry import constant, convert_to_tensor

__all__ = ["all_candidate_sampler", "batch_norm_with_global_normalization",
           "collapse_repeated", "compute_accidental_hits", "compute_average_loss",
           "log_poisson_loss", "normalize_moments", "scale_regularization_loss",
           "sufficient_statistics", "weighted_moments"]


def _keep(keep_dims, keepdims):
    if keep_dims is not None and keepdims is not None and bool(keep_dims) != bool(keepdims):
        raise ValueError("keep_dims and keepdims are the same argument: give one")
    value = keepdims if keepdims is not None else keep_dims
    return bool(value) if value is not None else False


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """``(count, sum(x - shift), sum((x - shift) ** 2), shift)`` over ``axes`` (the sums of
    ``x`` and ``x ** 2`` when ``shift`` is None): what ``normalize_moments`` turns into the
    mean and variance. ``count`` is the number of elements reduced, in ``x``'s dtype."""
    keep = _keep(keep_dims, keepdims)
    x = convert_to_tensor(x)
    axes = sorted(set(int(a) for a in axes))
    if x.shape is not None and all(x.shape[a] is not None for a in axes):
        count = constant(float(np.prod([int(x.shape[a]) for a in axes])), dtype=x.dtype)
    else:
        dims = cast(shape(x), x.dtype)
        count = constant(1.0, dtype=x.dtype)
        for a in axes:
            count = count * dims[a]
    if shift is not None:
        shift = convert_to_tensor(shift, like=x)
        m_ss, v_ss = subtract(x, shift), squared_difference(x, shift)
    else:
        m_ss, v_ss = x, square(x)
    m_ss = reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
    v_ss = reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
    return count, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """``(mean, variance)`` from ``sufficient_statistics``' counts and sums (the shifted
    mean gets ``shift`` back)."""
    divisor = reciprocal(convert_to_tensor(counts))
    shifted_mean = multiply(mean_ss, divisor)
    mean = shifted_mean if shift is None else add(shifted_mean, shift, name="mean")
    variance = subtract(multiply(variance_ss, divisor), square(shifted_mean), name="variance")
    return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """``(mean, variance)`` of ``x`` over ``axes``, each element counted
    ``frequency_weights`` times (weights broadcast to ``x``; 0 where they sum to 0)."""
    keep = _keep(keep_dims, keepdims)
    x = convert_to_tensor(x)
    half = x.dtype is dtypes.float16
    if half:
        x = cast(x, dtypes.float32)
    w = convert_to_tensor(frequency_weights)
    if w.dtype is not x.dtype:
        w = cast(w, x.dtype)
    axes = [int(a) for a in axes]
    total = reduce_sum(w * x, axes, keepdims=True)
    weight_sum = reduce_sum(w + zeros_like(x), axes, keepdims=True)
    mean = div_no_nan(total, weight_sum)
    variance = div_no_nan(reduce_sum(w * squared_difference(x, mean), axes, keepdims=True),
                          weight_sum)
    if not keep:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    if half:
        mean, variance = cast(mean, dtypes.float16), cast(variance, dtypes.float16)
    return mean, variance


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """The negative log-likelihood of ``targets`` under a Poisson of mean
    ``exp(log_input)``, less the constant ``log(targets!)``: ``exp(log_input) - log_input *
    targets``; ``compute_full_loss`` adds Stirling's approximation of ``log(targets!)``
    where ``targets > 1``."""
    log_input = convert_to_tensor(log_input)
    targets = convert_to_tensor(targets, like=log_input)
    if targets.shape is not None and not targets.shape.is_compatible_with(log_input.shape):
        raise ValueError(f"log_poisson_loss: log_input '{log_input.name}' and targets "
                         f"'{targets.name}' must have the same shape, got "
                         f"{tuple(log_input.shape)} and {tuple(targets.shape)}")
    result = exp(log_input) - log_input * targets
    if compute_full_loss:
        stirling = targets * log(targets) - targets + 0.5 * log((2.0 * math.pi) * targets)
        small = logical_and(greater_equal(targets, 0.0), less_equal(targets, 1.0))
        result = result + where(small, zeros_like(targets), stirling)
    return result if name is None else add(result, 0.0, name=name)


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """``sum(per_example_loss * sample_weight) / global_batch_size`` (by default the first
    dimension of ``per_example_loss``: one replica, as a TF1 graph has)."""
    loss = convert_to_tensor(per_example_loss)
    if loss.dtype is None or not loss.dtype.is_floating:
        raise TypeError(f"compute_average_loss: per_example_loss '{loss.name}' must be "
                        "floating point")
    if loss.shape is not None and len(loss.shape) == 0:
        raise ValueError(f"compute_average_loss: per_example_loss '{loss.name}' must have a "
                         "batch dimension (rank at least 1)")
    if sample_weight is not None:
        w = cast(convert_to_tensor(sample_weight), loss.dtype)
        while w.shape is not None and loss.shape is not None and len(w.shape) < len(loss.shape):
            w = expand_dims(w, -1)
        loss = loss * w
    if global_batch_size is None:
        batch = cast(shape(loss)[0], loss.dtype)
    else:
        size = convert_to_tensor(global_batch_size)
        if not size.dtype.is_integer or (size.shape is not None and len(size.shape) != 0):
            raise ValueError("compute_average_loss: global_batch_size must be a scalar "
                             f"integer, got {global_batch_size!r}")
        batch = cast(size, loss.dtype)
    return div_no_nan(reduce_sum(loss), batch)


def scale_regularization_loss(regularization_loss):
    """The sum of ``regularization_loss`` divided by the number of replicas (one in a TF1
    graph), so that replicas' gradients add up to the model's."""
    return divide(reduce_sum(convert_to_tensor(regularization_loss)), 1.0)


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                         variance_epsilon=None,
                                         scale_after_normalization=None, name=None,
                                         input=None, mean=None, variance=None):  # noqa: A002
    """TF1's older batch norm: ``batch_normalization(t, m, v, beta, gamma,
    variance_epsilon)``, with ``gamma`` left out unless ``scale_after_normalization``.
    ``input``/``mean``/``variance`` are the newer names of ``t``/``m``/``v``."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name)


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """Every class of ``range(num_sampled)`` as the sampled candidates, each with an
    expected count of 1 (a test sampler): ``(sampled_candidates, true_expected_count,
    sampled_expected_count)``. True classes must lie in that range."""
    true = convert_to_tensor(true_classes)
    if not true.dtype.is_integer:
        raise TypeError(f"all_candidate_sampler: true_classes '{true.name}' must be int64")
    if true.shape is not None and true.shape[-1] not in (None, num_true):
        raise ValueError(f"all_candidate_sampler: true_classes '{true.name}' of shape "
                         f"{tuple(true.shape)} do not have num_true={num_true} columns")
    sampled = constant(np.arange(int(num_sampled), dtype=np.int64))
    true_count = ones_like(cast(true, dtypes.float32))
    return sampled, true_count, constant(np.ones(int(num_sampled), np.float32))


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """Where a sampled candidate is one of its row's true classes: ``(indices, ids,
    weights)``, one entry per (row, true class, sampled position) that match, in that
    order, with weight ``-FLT_MAX`` (to add to the sampled logits)."""
    true = cast(convert_to_tensor(true_classes), dtypes.int64)
    sampled = cast(convert_to_tensor(sampled_candidates), dtypes.int64)
    if true.shape is not None and true.shape[-1] not in (None, num_true):
        raise ValueError(f"compute_accidental_hits: true_classes '{true.name}' of shape "
                         f"{tuple(true.shape)} do not have num_true={num_true} columns")
    hits = equal(expand_dims(true, -1), reshape(sampled, (1, 1, -1)))
    where_hit = where(hits)
    indices = cast(where_hit[:, 0], dtypes.int32)
    ids = where_hit[:, 2]
    weights = zeros_like(cast(indices, dtypes.float32)) + float(np.finfo(np.float32).min)
    return indices, ids, weights


def collapse_repeated(labels, seq_length, name=None):
    """Each row of ``labels`` (within its ``seq_length``) with runs of a repeated label
    merged into one, left-aligned and padded with 0: ``(collapsed, new_seq_length)``."""
    labels = convert_to_tensor(labels)
    seq_length = convert_to_tensor(seq_length)
    first = ones_like(labels[:, :1]) > 0
    label_mask = concat([first, not_equal(labels[:, 1:], labels[:, :-1])], axis=1)
    label_mask = logical_and(label_mask, sequence_mask(seq_length, maxlen=shape(labels)[1]))
    new_len = reduce_sum(cast(label_mask, dtypes.int32), axis=1)
    new_max = reduce_max(new_len)
    idx_mask = reshape(sequence_mask(new_len, maxlen=new_max), (-1,))
    positions = boolean_mask(range_(size(idx_mask)), idx_mask)
    flat = scatter_nd(expand_dims(positions, 1),
                      boolean_mask(reshape(labels, (-1,)), reshape(label_mask, (-1,))),
                      shape(idx_mask))
    batch = shape(labels)[0]
    collapsed = reshape(flat, concat([reshape(batch, (1,)), reshape(new_max, (1,))], 0))
    return collapsed, cast(new_len, seq_length.dtype)

