"""TF1's segment reductions (``tf.segment_*``, ``tf.unsorted_segment_*``);
``tf.dynamic_partition`` and ``tf.dynamic_stitch`` are in ``partition_ops``.

Their primitives (``segment_reduce``, ``unsorted_segment_reduce`` and the ops of their
gradients), with the Array API form of the reduction and its cost, are in
``gradflow.prim.segment``; the NumPy and torch backends lower them to one pass.

A NaN in a segment makes its maximum or minimum NaN (``np.maximum``'s rule; TF1's CPU
kernel gives NaN or a number depending on where in the segment the NaN lies).

No op makes a temporary of its result's size (one id of 2**30 asks for 2**30 rows), and
a result larger than the memory available fails the run with ``ResourceExhaustedError``
before anything is allocated.

Run-time errors (ids out of range, sorted ids that are not sorted, shapes that do not
match) are reported by the session as ``InvalidArgumentError`` naming the op and the
line that built it, with TF1's wording.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import static_value
from gradflow.ops.math_ops import divide, sqrt
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.prim.segment import (  # noqa: F401 - names others import from this module
    SegmentError,
    as_rows,
    bind_segments,
    dims,
    reduce_rows,
)

__all__ = [
    "segment_max", "segment_mean", "segment_min",
    "segment_prod", "segment_sum", "unsorted_segment_max", "unsorted_segment_mean",
    "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
    "unsorted_segment_sum",
]


def _segment_args(what, data, segment_ids):
    data = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"{what}: segment_ids '{ids.name}' must be int32 or int64, got "
                        f"{ids.dtype.name}")
    if data.dtype.is_bool or data.dtype is dtypes.string:
        raise TypeError(f"{what}: data '{data.name}' must be numbers, got {data.dtype.name}")
    return data, ids


def _sorted_rows(ids):
    """The number of segments of constant sorted ids (None when they are not constant,
    or not valid: the run then says what is wrong)."""
    value = static_value(ids)
    if value is None or value.ndim != 1:
        return None
    if value.size == 0:
        return 0
    if value.min() < 0 or (value[1:] < value[:-1]).any():
        return None
    return int(value[-1]) + 1


def _segment(reduce, doc):
    tf_name = f"Segment{reduce.capitalize()}"

    def fn(data, segment_ids, name=None):
        data, ids = _segment_args(f"segment_{reduce}", data, segment_ids)
        return apply("segment_reduce", [data, ids], name=name or tf_name, reduce=reduce,
                     rows=_sorted_rows(ids))

    fn.__name__ = fn.__qualname__ = f"segment_{reduce}"
    fn.__doc__ = doc
    return fn


_SORTED_DOC = """The {what} of the rows of ``data`` in each segment (TF1 ``tf.segment_{op}``,
also ``tf.math.segment_{op}``): ``segment_ids`` (1-D, one id per row, sorted, >= 0)
name each row's segment; the result has ``segment_ids[-1] + 1`` rows, known when the
graph is built only where the ids are constant. {empty} Ids that are negative or
not sorted fail the run with ``InvalidArgumentError``, as on TF1's CPU.

    >>> gf.segment_{op}([[1., 2.], [3., 4.], [5., 6.]], [0, 0, 2])   # {example}
"""
segment_sum = _segment("sum", _SORTED_DOC.format(
    what="sum", op="sum", empty="An empty segment's row is 0.",
    example="[[4, 6], [0, 0], [5, 6]]"))
segment_mean = _segment("mean", _SORTED_DOC.format(
    what="mean", op="mean", empty="An empty segment's row is 0; integers are divided "
    "toward zero, as TF1 does.", example="[[2, 3], [0, 0], [5, 6]]"))
segment_max = _segment("max", _SORTED_DOC.format(
    what="maximum", op="max", empty="An empty segment's row is 0 (TF1); the gradient is "
    "shared equally among the rows that tie for the maximum.",
    example="[[3, 4], [0, 0], [5, 6]]"))
segment_min = _segment("min", _SORTED_DOC.format(
    what="minimum", op="min", empty="An empty segment's row is 0 (TF1); the gradient is "
    "shared equally among the rows that tie for the minimum.",
    example="[[1, 2], [0, 0], [5, 6]]"))
segment_prod = _segment("prod", _SORTED_DOC.format(
    what="product", op="prod", empty="An empty segment's row is 1.",
    example="[[3, 8], [1, 1], [5, 6]]"))


def _num_segments(what, num_segments):
    """``(scalar int tensor, static value or None)``."""
    value = static_value(num_segments)
    if value is not None and (value.ndim != 0 or value.dtype.kind not in "iu"):
        raise TypeError(f"{what}: num_segments must be a scalar integer, got {value!r}")
    if value is not None and int(value) < 0:
        raise ValueError(f"{what}: num_segments must be >= 0, got {int(value)}")
    num = num_segments if isinstance(num_segments, Tensor) else \
        convert_to_tensor(num_segments, dtype=dtypes.int32 if value is None or
                          int(value) < 2 ** 31 else dtypes.int64)
    return num, None if value is None else int(value)


def _unsorted_segment(reduce, doc):
    tf_name = f"UnsortedSegment{reduce.capitalize()}"

    def fn(data, segment_ids, num_segments, name=None):
        what = f"unsorted_segment_{reduce}"
        data, ids = _segment_args(what, data, segment_ids)
        num, rows = _num_segments(what, num_segments)
        return apply("unsorted_segment_reduce", [data, ids, num], name=name or tf_name,
                     reduce=reduce, rows=rows)

    fn.__name__ = fn.__qualname__ = f"unsorted_segment_{reduce}"
    fn.__doc__ = doc
    return fn


_UNSORTED_DOC = """The {what} of the slices of ``data`` in each of ``num_segments`` segments
(TF1 ``tf.unsorted_segment_{op}``, also ``tf.math.unsorted_segment_{op}``):
``segment_ids``, in any order, has the shape of the leading axes of ``data`` and names
each slice's segment; the result has shape ``[num_segments] + data.shape[ids.ndim:]``.
A slice with a negative id takes no part (TF1); an id at or past ``num_segments`` fails
the run with ``InvalidArgumentError``. {empty}

    >>> gf.unsorted_segment_{op}([1., 2., 3., 4.], [1, 0, 1, -1], 3)   # {example}
"""
unsorted_segment_sum = _unsorted_segment("sum", _UNSORTED_DOC.format(
    what="sum", op="sum", empty="An empty segment's row is 0.", example="[2, 4, 0]"))
unsorted_segment_prod = _unsorted_segment("prod", _UNSORTED_DOC.format(
    what="product", op="prod", empty="An empty segment's row is 1.", example="[2, 3, 1]"))
unsorted_segment_max = _unsorted_segment("max", _UNSORTED_DOC.format(
    what="maximum", op="max", empty="An empty segment's row is the dtype's lowest value "
    "(TF1); the gradient is shared equally among the slices that tie for the maximum.",
    example="[2, 3, -3.4028235e+38]"))
unsorted_segment_min = _unsorted_segment("min", _UNSORTED_DOC.format(
    what="minimum", op="min", empty="An empty segment's row is the dtype's highest value "
    "(TF1); the gradient is shared equally among the slices that tie for the minimum.",
    example="[2, 1, 3.4028235e+38]"))


def _unsorted_scaled(what, data, segment_ids, num_segments, name, scale):
    data, ids = _segment_args(what, data, segment_ids)
    num, rows = _num_segments(what, num_segments)
    summed = apply("unsorted_segment_reduce", [data, ids, num], reduce="sum", rows=rows)
    sizes = apply("segment_counts", [ids, summed])  # TF1: maximum(count, 1)
    return divide(summed, scale(sizes), name=name)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """The mean of the slices of ``data`` in each segment (TF1
    ``tf.unsorted_segment_mean``): ``unsorted_segment_sum`` divided by each segment's
    size (1 for an empty segment, whose row is then 0). As in TF1, integer data gives
    float64 (TF1 divides with ``/``).

    >>> gf.unsorted_segment_mean([1., 2., 3., 4.], [1, 0, 1, -1], 3)   # [2, 2, 0]
    """
    return _unsorted_scaled("unsorted_segment_mean", data, segment_ids, num_segments,
                            name or "UnsortedSegmentMean", lambda sizes: sizes)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """The sum of the slices of ``data`` in each segment divided by the square root of
    the segment's size (TF1 ``tf.unsorted_segment_sqrt_n``; 1 for an empty segment);
    floating data only, as in TF1.

    >>> gf.unsorted_segment_sqrt_n([1., 2., 3., 4.], [1, 0, 1, -1], 3)   # [2, 2.828, 0]
    """
    return _unsorted_scaled("unsorted_segment_sqrt_n", data, segment_ids, num_segments,
                            name or "UnsortedSegmentSqrtN", sqrt)
