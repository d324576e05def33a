"""Connectionist temporal classification (TF1 ``tf.nn.ctc_loss``,
``tf.nn.ctc_greedy_decoder``) and ``tf.edit_distance``, over the primitives of
``gradflow.prim.ctc`` (where the recursions are described).
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import expand_dims, reduce_max, reduce_sum, transpose
from gradflow.ops.index_ops import shape
from gradflow.ops.math_ops import negative, where, zeros_like
from gradflow.ops.shape_ops import checked_sequence_length, sequence_mask
from gradflow.prim import ctc as _ctc  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["ctc_greedy_decoder", "ctc_loss", "edit_distance"]


def _sparse_labels(labels, what):
    if not isinstance(labels, SparseTensor):
        raise TypeError(f"{what}: expected labels (first argument) to be a SparseTensor, got "
                        f"{type(labels).__name__}")
    if not labels.dtype.is_integer:
        raise TypeError(f"{what}: labels must hold integers (int32), got {labels.dtype.name}")
    return labels


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False,
             time_major=True, logits=None):
    """The CTC loss of each sequence, ``-log p(labels | inputs)`` (TF1 ``tf.nn.ctc_loss``).

    ``labels``: an int32 ``SparseTensor`` (``sparse_placeholder``), row ``b`` the label
    sequence of batch entry ``b`` in index order, each label in ``[0, num_classes - 1)``.
    ``inputs`` (or ``logits=``): unnormalized log-probabilities ``[max_time, batch,
    num_classes]`` (``[batch, max_time, num_classes]`` with ``time_major=False``); the
    last class is the blank. ``sequence_length``: int ``[batch]``, each at most
    ``max_time``. Returns ``[batch]``. A label sequence that needs more steps than its
    sequence has is an ``InvalidArgumentError``, or a loss (and gradient) of 0 with
    ``ignore_longer_outputs_than_inputs=True``. Only TF1's defaults of
    ``preprocess_collapse_repeated`` and ``ctc_merge_repeated`` are supported.

    >>> targets = gf.sparse_placeholder(gf.int32)
    >>> loss = gf.reduce_mean(gf.nn.ctc_loss(targets, logits, seq_len))
    """
    labels = _sparse_labels(labels, "ctc_loss")
    if preprocess_collapse_repeated or not ctc_merge_repeated:
        raise NotImplementedError("ctc_loss: only preprocess_collapse_repeated=False and "
                                  "ctc_merge_repeated=True (TF1's defaults) are supported")
    if inputs is not None and logits is not None:
        raise ValueError("ctc_loss: give inputs or logits, not both")
    x = convert_to_tensor(inputs if inputs is not None else logits)
    if not time_major:
        x = transpose(x, [1, 0, 2])
    if sequence_length is None:
        raise ValueError("ctc_loss: sequence_length is required")
    seq_len = checked_sequence_length("ctc_loss", sequence_length, x, batch_axis=1)
    return apply("ctc_loss", [x, labels.indices, labels.values, seq_len], name="CTCLoss",
                 ignore_longer=bool(ignore_longer_outputs_than_inputs))


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True):
    """Best-path decoding (TF1 ``tf.nn.ctc_greedy_decoder``): each step's most likely
    class, repeats merged (``merge_repeated``), blanks (the last class) dropped.

    ``inputs``: logits ``[max_time, batch, num_classes]``; ``sequence_length``: int
    ``[batch]``. Returns ``([decoded], neg_sum_logits)``: ``decoded`` an int64
    ``SparseTensor`` ``[batch, longest path]``, and ``[batch, 1]`` holding each sequence's
    negated sum over its steps of the largest logit, as TF1's kernel returns it.
    """
    x = convert_to_tensor(inputs)
    if x.shape is not None and len(x.shape) != 3:
        raise ValueError(f"ctc_greedy_decoder: inputs must be [max_time, batch, num_classes], "
                         f"got shape {tuple(x.shape)}")
    seq_len = checked_sequence_length("ctc_greedy_decoder", sequence_length, x, batch_axis=1)
    batch = None if x.shape is None else x.shape[1]
    padded = apply("ctc_greedy_paths", [x, seq_len], name="CTCGreedyDecoder",
                   merge_repeated=bool(merge_repeated), shape=(batch, None),
                   dtype=dtypes.int64)
    parts = [apply("padded_sparse_part", [padded], part=part, shape=shape, dtype=dtypes.int64)
             for part, shape in (("indices", (None, 2)), ("values", (None,)),
                                 ("shape", (2,)))]
    top = reduce_max(x, axis=2)  # [T, B]
    steps = None if x.shape is None else x.shape[0]
    live = transpose(sequence_mask(seq_len, maxlen=steps if steps is not None else
                                   _max_time(x)), [1, 0])
    # the negated maxima summed, as TF1's kernel adds them (no steps: +0, not -0)
    neg_sum = reduce_sum(where(live, negative(top), zeros_like(top)), axis=0)
    return [SparseTensor(*parts)], expand_dims(neg_sum, 1)


def _max_time(x):
    return shape(x)[0]


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """The Levenshtein distance between the sequences of two ``SparseTensor``s (TF1
    ``tf.edit_distance``): the sequences are the values along the last axis, grouped by
    the other indices; the result, float32, has the larger dense shape less its last
    axis. ``normalize`` divides by the truth's length (an empty truth gives inf, or 0
    where the hypothesis is empty too, as TF1)."""
    for what, sp in (("hypothesis", hypothesis), ("truth", truth)):
        if not isinstance(sp, SparseTensor):
            raise TypeError(f"edit_distance: {what} must be a SparseTensor, got "
                            f"{type(sp).__name__}")
    if hypothesis.dtype is not truth.dtype:
        raise TypeError(f"edit_distance: hypothesis is {hypothesis.dtype.name} but truth is "
                        f"{truth.dtype.name}")
    rank = hypothesis.indices.shape[1] if hypothesis.indices.shape is not None else None
    shape = None if rank is None else (None,) * (int(rank) - 1)
    return apply("edit_distance", [hypothesis.indices, hypothesis.values,
                                   hypothesis.dense_shape, truth.indices, truth.values,
                                   truth.dense_shape], name=name, normalize=bool(normalize),
                 shape=shape, dtype=dtypes.float32)

