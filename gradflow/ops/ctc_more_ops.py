"""More of TF1's CTC functions: ``tf.nn.ctc_beam_search_decoder`` (and ``_v2``), over
the host beam search of ``gradflow.prim.ctc_beam``; ``tf.nn.ctc_loss_v2`` (dense or
sparse labels, any blank index) and ``tf.nn.ctc_unique_labels``, composites of
``ctc_loss`` and of existing ops.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import transpose
from gradflow.ops.ctc_ops import ctc_loss
from gradflow.ops.index_ops import concat, gather_nd
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import cast, less, subtract, where
from gradflow.ops.shape_ops import checked_sequence_length, sequence_mask
from gradflow.prim import ctc as _ctc  # noqa: F401 - registers padded_sparse_part
from gradflow.prim import ctc_beam as _beam  # noqa: F401 - registers the beam search
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["ctc_beam_search_decoder", "ctc_beam_search_decoder_v2", "ctc_loss_v2",
           "ctc_unique_labels"]


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """Prefix beam search over CTC logits (TF1 ``tf.nn.ctc_beam_search_decoder``), the
    search of TensorFlow's kernel with its default scorer, run on the host.

    ``inputs``: logits ``[max_time, batch, num_classes]``, the last class the blank;
    ``sequence_length``: int ``[batch]``. Returns ``(decoded, log_probabilities)``:
    ``decoded`` a list of ``top_paths`` int64 ``SparseTensor`` s, path ``i`` of every
    sequence (``[batch, its longest]``), and ``[batch, top_paths]``, each path's
    log-probability. ``merge_repeated=True`` (TF1's default here) also merges repeated
    labels of a path that a blank separated, as TF's kernel does. Fewer paths in a beam
    than ``top_paths`` (a short sequence) is an ``InvalidArgumentError`` when run.

    >>> decoded, log_prob = gf.nn.ctc_beam_search_decoder(logits, seq_len, beam_width=10)
    """
    what = "ctc_beam_search_decoder"
    x = convert_to_tensor(inputs)
    if x.shape is not None and len(x.shape) != 3:
        raise ValueError(f"{what}: inputs '{x.name}' must be [max_time, batch, num_classes], "
                         f"got shape {tuple(x.shape)}")
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: inputs '{x.name}' must be floating, got {x.dtype.name}")
    beam_width, top_paths = int(beam_width), int(top_paths)
    if beam_width < 1 or top_paths < 1 or top_paths > beam_width:
        raise ValueError(f"{what}: need 1 <= top_paths <= beam_width, got top_paths="
                         f"{top_paths}, beam_width={beam_width}")
    seq_len = checked_sequence_length(what, sequence_length, x, batch_axis=1)
    batch = None if x.shape is None else x.shape[1]
    packed = apply("ctc_beam_search", [x, seq_len], name="CTCBeamSearchDecoder",
                   beam_width=beam_width, top_paths=top_paths,
                   merge_repeated=bool(merge_repeated), shape=(batch, top_paths, None),
                   dtype=dtypes.float64)
    decoded = []
    for i in range(top_paths):
        padded = apply("ctc_beam_path", [packed], index=i, shape=(batch, None),
                       dtype=dtypes.int64)
        parts = [apply("padded_sparse_part", [padded], part=part, shape=shape,
                       dtype=dtypes.int64)
                 for part, shape in (("indices", (None, 2)), ("values", (None,)),
                                     ("shape", (2,)))]
        decoded.append(SparseTensor(*parts))
    return decoded, cast(packed[:, :, 0], x.dtype)


def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """``ctc_beam_search_decoder`` with ``merge_repeated=False`` (TF1
    ``tf.nn.ctc_beam_search_decoder_v2``)."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width=beam_width,
                                   top_paths=top_paths, merge_repeated=False)


def _dense_to_sparse(labels, label_length):
    """The SparseTensor of the first ``label_length[b]`` labels of each row."""
    labels = convert_to_tensor(labels)
    if labels.shape is not None and len(labels.shape) != 2:
        raise ValueError(f"ctc_loss_v2: dense labels '{labels.name}' must be [batch, "
                         f"max_label_length], got shape {tuple(labels.shape)}")
    if label_length is None:
        raise ValueError("ctc_loss_v2: label_length is required with dense labels")
    lengths = checked_sequence_length("ctc_loss_v2", label_length, labels)
    mask = sequence_mask(lengths, maxlen=shape_of(labels)[1])
    indices = where(mask)
    values = cast(gather_nd(labels, indices), dtypes.int32)
    return SparseTensor(indices, values, cast(shape_of(labels), dtypes.int64))


def ctc_loss_v2(labels, logits, label_length, logit_length, logits_time_major=True,
                unique=None, blank_index=None, name=None):
    """The CTC loss of each sequence, ``-log p(labels | logits)`` (TF1
    ``tf.nn.ctc_loss_v2``).

    ``labels``: int ``[batch, max_label_length]`` with ``label_length`` ``[batch]``, or an
    int ``SparseTensor`` (``label_length`` then unused); ``logits``: ``[frames, batch,
    num_classes]`` (``[batch, frames, num_classes]`` with ``logits_time_major=False``);
    ``logit_length``: int ``[batch]``. ``blank_index`` is the blank class: 0 by default
    for dense labels, required for sparse ones; negative counts from ``num_classes``.
    ``unique`` (a speed-up of TF's TPU path) does not change the result and is ignored.
    A label sequence too long for its frames is an ``InvalidArgumentError`` here, where
    TF's dense path returns inf.
    """
    x = convert_to_tensor(logits)
    if not logits_time_major:
        x = transpose(x, [1, 0, 2])
    if isinstance(labels, SparseTensor):
        if blank_index is None:
            raise ValueError("ctc_loss_v2: blank_index must be given when labels is a "
                             "SparseTensor")
        sparse = labels
    else:
        sparse = _dense_to_sparse(labels, label_length)
        blank_index = 0 if blank_index is None else blank_index
    classes = None if x.shape is None else x.shape[2]
    if classes is None:
        raise ValueError(f"ctc_loss_v2: logits '{x.name}' need a known number of classes")
    blank = int(blank_index) + (classes if int(blank_index) < 0 else 0)
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss_v2: blank_index {blank_index} is outside the "
                         f"{classes} classes")
    if blank != classes - 1:  # move the blank class last, the labels above it down one
        x = concat([x[:, :, :blank], x[:, :, blank + 1:], x[:, :, blank:blank + 1]], 2)
        values = where(less(sparse.values, blank), sparse.values,
                       subtract(sparse.values, 1))
        sparse = SparseTensor(sparse.indices, values, sparse.dense_shape)
    loss = ctc_loss(sparse, x, sequence_length=logit_length)
    return apply("identity", [loss], name=name or "ctc_loss_v2")


def ctc_unique_labels(labels, name=None):
    """Each row's distinct labels in order of first appearance, padded with 0, and each
    label's position among them (TF1 ``tf.nn.ctc_unique_labels``): ``(int64 [batch,
    max_label_length], int32 [batch, max_label_length])``.

    >>> ctc_unique_labels([[3, 4, 4, 3]])   # ([[3, 4, 0, 0]], [[0, 1, 1, 0]])
    """
    labels = convert_to_tensor(labels)
    if labels.shape is not None and len(labels.shape) != 2:
        raise ValueError(f"ctc_unique_labels: labels '{labels.name}' must be [batch, "
                         f"max_label_length], got shape {tuple(labels.shape)}")
    if not labels.dtype.is_integer:
        raise TypeError(f"ctc_unique_labels: labels '{labels.name}' must be integers, got "
                        f"{labels.dtype.name}")
    shape = labels.shape
    both = apply("ctc_unique", [cast(labels, dtypes.int64)], name=name or "ctc_unique_labels",
                 shape=None if shape is None else (2,) + tuple(shape), dtype=dtypes.int64)
    return both[0], cast(both[1], dtypes.int32)
