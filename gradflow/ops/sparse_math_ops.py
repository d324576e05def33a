"""TF1's ops that compute on a ``SparseTensor``'s values: ``sparse_add``,
``sparse_maximum``/``sparse_minimum``, ``sparse_reduce_sum``/``_max`` (and their
``_sparse`` forms), ``sparse_softmax``, ``sparse_segment_sum``/``_mean``/``_sqrt_n`` and
``sparse_matmul``.

Each is a composite of sorts, ``unique`` and the segment reductions over the entries
(never a dense tensor of the input's full shape), so the values have gradients where
TF1 gives them (``sparse_add``, ``sparse_reduce_sum``, ``sparse_softmax``, the segment
ops) and, as composites, where TF1 has none too.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import matmul, reduce_all, reduce_prod, reshape, static_value
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import boolean_mask, concat, gather
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import (
    abs,  # noqa: A004 - TF1's name
    cast,
    divide,
    equal,
    exp,
    greater,
    greater_equal,
    maximum,
    minimum,
    ones_like,
    sqrt,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.segment_ops import (
    segment_mean,
    segment_sum,
    unsorted_segment_max,
    unsorted_segment_mean,
    unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)
from gradflow.ops.sort_ops import argsort, unique
from gradflow.ops.sparse_ops import sparse_tensor_to_dense
from gradflow.ops.sparse_shape_ops import positions, sparse_arg, sparse_rank, unravel
from gradflow.ops.state_ops import identity, stop_gradient
from gradflow.prim import rules
from gradflow.prim.registry import convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["sparse_add", "sparse_matmul", "sparse_maximum", "sparse_minimum",
           "sparse_reduce_max", "sparse_reduce_max_sparse", "sparse_reduce_sum",
           "sparse_reduce_sum_sparse", "sparse_segment_mean", "sparse_segment_sqrt_n",
           "sparse_segment_sum", "sparse_softmax"]


def _same_shape(what, a, b):
    """``a``'s dense shape, checked equal to ``b``'s (when the graph is built where both
    are known, else when it runs)."""
    known_a, known_b = static_value(a.dense_shape), static_value(b.dense_shape)
    if known_a is not None and known_b is not None:
        if list(known_a) != list(known_b):
            raise ValueError(f"{what}: the operands' dense shapes differ: "
                             f"{[int(d) for d in known_a]} and {[int(d) for d in known_b]}")
        return a.dense_shape
    check = Assert(reduce_all(equal(a.dense_shape, b.dense_shape)),
                   [f"{what}: the operands' dense shapes differ", a.dense_shape, b.dense_shape])
    with control_dependencies([check]):
        return identity(a.dense_shape)


def _union(a, b, dense_shape):
    """The sorted distinct positions of the entries of ``a`` and ``b``, and for each
    entry of ``a`` then ``b`` (in an order ``order``) the slot of its position:
    ``(unique positions, slots, order)``."""
    pos = positions(concat([a.indices, b.indices], 0), dense_shape)
    order = argsort(pos)
    distinct, slot = unique(gather(pos, order, validate_indices=False))
    return distinct, slot, order


def sparse_add(a, b, threshold=None, thresh=None):
    """``a + b`` (TF1 ``tf.sparse_add``, ``tf.sparse.add``). Of two ``SparseTensor``s
    (same dense shape): a ``SparseTensor`` of the union of their entries in row-major
    order, the values at one index added, and entries whose magnitude is below
    ``threshold`` (default 0) dropped. Of a ``SparseTensor`` and a dense tensor: the
    dense sum. Differentiable in the values (and the dense tensor).

    >>> gf.sparse_add(sp_a, sp_b)
    """
    threshold = thresh if threshold is None else threshold
    sparse_a, sparse_b = isinstance(a, SparseTensor), isinstance(b, SparseTensor)
    if not (sparse_a or sparse_b):
        raise TypeError("sparse_add: at least one of a and b must be a SparseTensor")
    if sparse_a != sparse_b:
        sp, dense = (a, b) if sparse_a else (b, a)
        dense = convert_to_tensor(dense, like=sp.values)
        return sparse_tensor_to_dense(sp, validate_indices=False) + dense
    if a.dtype is not b.dtype:
        raise TypeError(f"sparse_add: a holds {a.dtype.name} but b {b.dtype.name}")
    dense_shape = _same_shape("sparse_add", a, b)
    distinct, slot, order = _union(a, b, dense_shape)
    values = gather(concat([a.values, b.values], 0), order, validate_indices=False)
    total = unsorted_segment_sum(values, slot, shape_of(distinct)[0])
    indices = unravel(distinct, dense_shape)
    known = None if threshold is None else static_value(threshold)
    if threshold is None or (known is not None and float(known) <= 0):
        return SparseTensor(indices, total, dense_shape)
    limit = convert_to_tensor(threshold, like=total)
    kept = greater_equal(abs(total), limit)
    return SparseTensor(boolean_mask(indices, kept), boolean_mask(total, kept), dense_shape)


def _extremum(what, pick, sp_a, sp_b, name):
    a, b = sparse_arg(sp_a, what), sparse_arg(sp_b, what)
    if a.dtype is not b.dtype:
        raise TypeError(f"{what}: sp_a holds {a.dtype.name} but sp_b {b.dtype.name}")
    dense_shape = _same_shape(what, a, b)
    distinct, slot, order = _union(a, b, dense_shape)
    count = shape_of(distinct)[0]
    from_a = less_than_count(order, shape_of(a.values)[0])
    zeros = zeros_like(gather(concat([a.values, b.values], 0), order))
    values = gather(concat([a.values, b.values], 0), order, validate_indices=False)
    # each operand's value at every position of the union (0 where it has no entry)
    at_a = unsorted_segment_sum(where(from_a, values, zeros), slot, count)
    at_b = unsorted_segment_sum(where(from_a, zeros, values), slot, count)
    return SparseTensor(unravel(distinct, dense_shape), pick(at_a, at_b, name=name),
                        dense_shape)


def less_than_count(order, count):
    """True for the positions of ``order`` that came from the first ``count`` entries."""
    return greater(cast(count, order.dtype), order)


def sparse_maximum(sp_a, sp_b, name=None):
    """The element-wise maximum of two ``SparseTensor``s of one dense shape, missing
    entries counting as 0 (TF1 ``tf.sparse_maximum``): a ``SparseTensor`` of the union of
    their entries in row-major order.

    >>> gf.sparse_maximum(sp_a, sp_b)
    """
    return _extremum("sparse_maximum", maximum, sp_a, sp_b, name or "SparseSparseMaximum")


def sparse_minimum(sp_a, sp_b, name=None):
    """The element-wise minimum of two ``SparseTensor``s (TF1 ``tf.sparse_minimum``), as
    ``sparse_maximum``.

    >>> gf.sparse_minimum(sp_a, sp_b)
    """
    return _extremum("sparse_minimum", minimum, sp_a, sp_b, name or "SparseSparseMinimum")


# -- reductions ------------------------------------------------------------------------


def _reduction_axes(what, sp, axis, reduction_axes):
    """The kept axes of ``sp`` (sorted) for reducing over ``axis`` (None: all)."""
    axis = reduction_axes if axis is None else axis
    rank = sparse_rank(sp, what)
    if axis is None:
        return [], rank
    if isinstance(axis, Tensor):
        known = static_value(axis)
        if known is None:
            raise ValueError(f"{what}: axis '{axis.name}' must be known when the graph is "
                             "built")
        axis = known.reshape(-1).tolist()
    axes = set(rules.normalize_axis(axis, rank))
    return [a for a in range(rank) if a not in axes], rank


def _groups(what, sp, axis, reduction_axes, keepdims, keep_dims):
    """``(group of each entry, number of groups, result shape)`` of a reduction."""
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    kept, rank = _reduction_axes(what, sp, axis, reduction_axes)
    kept_shape = gather(sp.dense_shape, kept) if kept else \
        convert_to_tensor([], dtype=dtypes.int64)
    if kept:
        group = positions(gather(sp.indices, kept, axis=1), kept_shape)
    else:
        group = zeros_like(sp.indices[:, 0])
    if keepdims:
        ones = convert_to_tensor([1] * rank, dtype=dtypes.int64)
        out_shape = where(convert_to_tensor([a in kept for a in range(rank)]),
                          sp.dense_shape, ones)
    else:
        out_shape = kept_shape
    known = static_value(out_shape)
    if known is not None:
        out_shape = convert_to_tensor([int(d) for d in known.reshape(-1)], dtype=dtypes.int64)
    return group, reduce_prod(kept_shape), out_shape


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None):
    """The sum of ``sp_input``'s entries over ``axis`` (default: all) as a dense tensor
    (TF1 ``tf.sparse_reduce_sum``, ``tf.sparse.reduce_sum``); differentiable in the
    values.

    >>> gf.sparse_reduce_sum(sp, axis=1)
    """
    sp = sparse_arg(sp_input, "sparse_reduce_sum")
    group, count, out_shape = _groups("sparse_reduce_sum", sp, axis, reduction_axes,
                                      keepdims, keep_dims)
    total = unsorted_segment_sum(sp.values, group, count)
    return reshape(total, _static_or(out_shape), name="SparseReduceSum")


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None):
    """The largest of ``sp_input``'s entries over ``axis`` (default: all) as a dense
    tensor (TF1 ``tf.sparse_reduce_max``): the implicit zeros take no part, and a group
    with no entry gives 0.

    >>> gf.sparse_reduce_max(sp, axis=1)
    """
    sp = sparse_arg(sp_input, "sparse_reduce_max")
    group, count, out_shape = _groups("sparse_reduce_max", sp, axis, reduction_axes,
                                      keepdims, keep_dims)
    largest = unsorted_segment_max(sp.values, group, count)
    hits = unsorted_segment_sum(ones_like(group, dtype=dtypes.int32), group, count)
    largest = where(greater(hits, 0), largest, zeros_like(largest))
    return reshape(largest, _static_or(out_shape), name="SparseReduceMax")


def _static_or(shape):
    known = static_value(shape)
    return shape if known is None else [int(d) for d in known.reshape(-1)]


def _reduced_sparse(what, reduce, sp_input, axis, keepdims, reduction_axes, keep_dims):
    sp = sparse_arg(sp_input, what)
    group, _, out_shape = _groups(what, sp, axis, reduction_axes, keepdims, keep_dims)
    order = argsort(group)
    distinct, slot = unique(gather(group, order, validate_indices=False))
    values = reduce(gather(sp.values, order, validate_indices=False), slot,
                    shape_of(distinct)[0])
    return SparseTensor(unravel(distinct, out_shape), values, out_shape)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """``sparse_reduce_sum`` as a ``SparseTensor``: one entry (row-major) for each group
    that holds an entry (TF1 ``tf.sparse_reduce_sum_sparse``).

    >>> gf.sparse_reduce_sum_sparse(sp, axis=1)
    """
    return _reduced_sparse("sparse_reduce_sum_sparse", unsorted_segment_sum, sp_input, axis,
                           keepdims, reduction_axes, keep_dims)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None):
    """``sparse_reduce_max`` as a ``SparseTensor``: one entry (row-major) for each group
    that holds an entry (TF1 ``tf.sparse_reduce_max_sparse``).

    >>> gf.sparse_reduce_max_sparse(sp, axis=1)
    """
    return _reduced_sparse("sparse_reduce_max_sparse", unsorted_segment_max, sp_input, axis,
                           keepdims, reduction_axes, keep_dims)


def sparse_softmax(sp_input, name=None):
    """The softmax of ``sp_input``'s entries within each innermost row (all axes but the
    last fixed), the implicit zeros taking no part (TF1 ``tf.sparse_softmax``): a
    ``SparseTensor`` of the same indices; differentiable in the values.

    >>> probs = gf.sparse_softmax(scores)
    """
    sp = sparse_arg(sp_input, "sparse_softmax")
    if not sp.dtype.is_floating:
        raise TypeError(f"sparse_softmax: the values '{sp.values.name}' must be floating, "
                        f"got {sp.dtype.name}")
    sparse_rank(sp, "sparse_softmax")
    row = positions(sp.indices[:, :-1], sp.dense_shape[:-1])
    distinct, slot = unique(row)
    count = shape_of(distinct)[0]
    shift = stop_gradient(gather(unsorted_segment_max(sp.values, slot, count), slot))
    scaled = exp(subtract(sp.values, shift))
    total = gather(unsorted_segment_sum(scaled, slot, count), slot)
    return SparseTensor(sp.indices, divide(scaled, total, name=name or "SparseSoftmax"),
                        sp.dense_shape)


# -- sparse segment reductions -----------------------------------------------------------


def _segment_rows(what, data, indices):
    data = convert_to_tensor(data)
    indices = convert_to_tensor(indices)
    if not indices.dtype.is_integer:
        raise TypeError(f"{what}: indices '{indices.name}' must be int32 or int64, got "
                        f"{indices.dtype.name}")
    return gather(data, indices)


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None):
    """The sums of the rows ``data[indices]`` over ``segment_ids`` (TF1
    ``tf.sparse_segment_sum``): ``segment_sum(gather(data, indices), segment_ids)``, or
    ``unsorted_segment_sum`` with ``num_segments``. Differentiable in ``data``.

    >>> gf.sparse_segment_sum(table, [0, 1, 1], [0, 0, 1])
    """
    rows = _segment_rows("sparse_segment_sum", data, indices)
    if num_segments is not None:
        return unsorted_segment_sum(rows, segment_ids, num_segments, name=name)
    return segment_sum(rows, segment_ids, name=name)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None):
    """The means of the rows ``data[indices]`` over ``segment_ids`` (TF1
    ``tf.sparse_segment_mean``); an empty segment gives 0.

    >>> gf.sparse_segment_mean(table, [0, 1, 1], [0, 0, 1])
    """
    rows = _segment_rows("sparse_segment_mean", data, indices)
    if num_segments is not None:
        return unsorted_segment_mean(rows, segment_ids, num_segments, name=name)
    return segment_mean(rows, segment_ids, name=name)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None):
    """The sums of the rows ``data[indices]`` over ``segment_ids``, each divided by the
    square root of its number of rows (TF1 ``tf.sparse_segment_sqrt_n``); an empty
    segment gives 0.

    >>> gf.sparse_segment_sqrt_n(table, [0, 1, 1], [0, 0, 1])
    """
    rows = _segment_rows("sparse_segment_sqrt_n", data, indices)
    if num_segments is not None:
        return unsorted_segment_sqrt_n(rows, segment_ids, num_segments, name=name)
    total = segment_sum(rows, segment_ids)
    ones = ones_like(convert_to_tensor(segment_ids), dtype=rows.dtype)
    counts = segment_sum(ones, segment_ids)
    for _ in range(len(total.shape) - 1 if total.shape is not None else 0):
        counts = counts[..., None]
    return divide(total, sqrt(maximum(counts, ones_like(counts))), name=name)


def sparse_matmul(a, b, transpose_a=False, transpose_b=False, a_is_sparse=False,
                  b_is_sparse=False, name=None):
    """``matmul(a, b)`` of two dense float32 matrices (TF1 ``tf.sparse_matmul``; the
    ``*_is_sparse`` flags are hints for TF's kernel and change nothing here).

    >>> gf.sparse_matmul(x, w, a_is_sparse=True)
    """
    a, b = convert_to_tensor(a), convert_to_tensor(b)
    for what, t in (("a", a), ("b", b)):
        if t.dtype is not dtypes.float32:
            raise TypeError(f"sparse_matmul: {what} '{t.name}' must be float32 (TF1's "
                            f"SparseMatMul), got {t.dtype.name}")
    return matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b,
                  name=name or "SparseMatMul")

