"""TF1's ops that move a ``SparseTensor``'s entries around without computing on their
values: ``sparse_reorder``, ``sparse_reshape``, ``sparse_transpose``, ``sparse_slice``,
``sparse_split``, ``sparse_concat``, ``sparse_reset_shape``, ``sparse_fill_empty_rows``,
``sparse.expand_dims``, ``sparse.eye``, ``sparse.from_dense``, ``sparse_merge``,
``sparse_to_indicator`` and ``sparse_mask`` (of an ``IndexedSlices``).

All of them are composites of gathers, sorts and the checked ``sparse_linear_index``
(an index row outside the dense shape fails the run with ``InvalidArgumentError``), so
the values keep their gradients, as TF1's do for the ops it differentiates. The order
of the entries is TF1's: row-major where TF1 sorts (reorder, transpose, concat, merge),
the input's order where TF1 keeps it.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import (
    expand_dims,
    reduce_all,
    reduce_max,
    reduce_prod,
    reshape,
    static_value,
)
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import concat, gather, gather_nd, stack
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.indexed_slices import IndexedSlices
from gradflow.ops.manip_ops import setdiff1d
from gradflow.ops.math_ops import (
    add,
    cast,
    cumprod,
    equal,
    floordiv,
    floormod,
    greater_equal,
    less,
    logical_and,
    maximum,
    minimum,
    not_equal,
    ones_like,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.segment_ops import unsorted_segment_sum
from gradflow.ops.shape_ops import fill, range_
from gradflow.ops.sort_ops import argsort
from gradflow.ops.sparse_ops import _dense
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["sparse_concat", "sparse_expand_dims", "sparse_eye", "sparse_fill_empty_rows",
           "sparse_from_dense", "sparse_mask", "sparse_merge", "sparse_reorder",
           "sparse_reset_shape", "sparse_reshape", "sparse_slice", "sparse_split",
           "sparse_to_indicator", "sparse_transpose"]


def sparse_arg(sp, what):
    """``sp`` when it is a ``SparseTensor``, else a ``TypeError`` naming ``what``."""
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{what}: expected a SparseTensor, got {type(sp).__name__}")
    return sp


def sparse_rank(sp, what):
    """The rank of ``sp``, which ``what`` needs known when the graph is built."""
    shape = sp.shape
    if shape is None:
        raise ValueError(f"{what}: the rank of {sp!r} must be known when the graph is built")
    return len(shape)


def positions(indices, dense_shape):
    """The row-major positions (int64) of the index rows ``indices`` in ``dense_shape``,
    after checking that each row lies inside it."""
    return apply("sparse_linear_index", [indices, dense_shape])


def unravel(position, dense_shape):
    """The index rows (int64 ``[N, rank]``) of the row-major ``position`` vector in
    ``dense_shape``: the inverse of ``positions``."""
    dense_shape = cast(dense_shape, dtypes.int64)
    strides = cumprod(dense_shape, exclusive=True, reverse=True)
    sizes = maximum(dense_shape, 1)  # a zero size has no entries: keep the divisor safe
    return floormod(floordiv(expand_dims(position, 1), expand_dims(strides, 0)),
                    expand_dims(sizes, 0))


def int64_vector(value, what):
    """``value`` (a list, an array or an integer tensor) as an int64 vector tensor."""
    t = convert_to_tensor(value, dtype=None if hasattr(value, "dtype") and
                          hasattr(value, "graph") else dtypes.int64)
    if not t.dtype.is_integer:
        raise TypeError(f"{what}: '{t.name}' must be integers, got {t.dtype.name}")
    return t if t.dtype is dtypes.int64 else cast(t, dtypes.int64)


def _picked(sp, order, dense_shape=None, indices=None, name=None):
    """The entries of ``sp`` (or ``indices`` with its values) in the order ``order``."""
    indices = sp.indices if indices is None else indices
    return SparseTensor(gather(indices, order, validate_indices=False),
                        gather(sp.values, order, validate_indices=False, name=name),
                        sp.dense_shape if dense_shape is None else dense_shape)


def sparse_reorder(sp_input, name=None):
    """``sp_input`` with its entries in row-major order of their indices (TF1
    ``tf.sparse_reorder``, ``tf.sparse.reorder``); entries with equal indices keep
    their order. Differentiable in the values.

    >>> gf.sparse_reorder(gf.SparseTensor([[1, 0], [0, 1]], [5.0, 6.0], [2, 2]))
    ... # indices [[0, 1], [1, 0]], values [6, 5]
    """
    sp = sparse_arg(sp_input, "sparse_reorder")
    return _picked(sp, argsort(positions(sp.indices, sp.dense_shape)),
                   name=name or "SparseReorder")


def _reshaped(what, total, shape):
    """The new dense shape (an int64 vector tensor) of ``total`` entries for the
    requested ``shape`` (one ``-1`` at most: the size that is left), checked."""
    known_total, known = static_value(total), static_value(shape)
    if known is not None and known_total is not None:  # settled when the graph is built
        dims = [int(d) for d in known.reshape(-1)]
        if sum(d == -1 for d in dims) > 1:
            raise ValueError(f"{what}: at most one dimension of the new shape {dims} may "
                             "be -1")
        rest = 1
        for d in dims:
            rest *= d if d != -1 else 1
        if -1 in dims and rest > 0 and int(known_total) % rest == 0:
            dims[dims.index(-1)] = int(known_total) // rest
        if -1 in dims or int(known_total) != int(_product(dims)):
            raise ValueError(f"{what}: a SparseTensor of {int(known_total)} dense values "
                             f"cannot be reshaped to {[int(d) for d in known.reshape(-1)]}")
        return convert_to_tensor(dims, dtype=dtypes.int64)
    unknown = equal(shape, -1)
    rest = reduce_prod(where(unknown, ones_like(shape), shape))
    fitted = where(unknown, fill(shape_of(shape), floordiv(total, maximum(rest, 1))), shape)
    check = Assert(equal(reduce_prod(fitted), total),
                   [f"{what}: the new dense shape does not hold as many values as the "
                    "SparseTensor's", total, shape])
    with control_dependencies([check]):
        return identity(fitted)


def _product(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def sparse_reshape(sp_input, shape, name=None):
    """``sp_input`` as a ``SparseTensor`` of the dense shape ``shape`` (TF1
    ``tf.sparse_reshape``): each entry keeps its row-major position; one dimension of
    ``shape`` may be ``-1``, the size that is left. A shape holding a different number
    of dense values is an error (when the graph is built where both are known).

    >>> gf.sparse_reshape(sp, [-1, 2])   # a [2, 3] SparseTensor as [3, 2]
    """
    sp = sparse_arg(sp_input, "sparse_reshape")
    known = sp.shape
    total = _product([int(d) for d in known]) if known is not None and \
        None not in known.as_list() else reduce_prod(sp.dense_shape)
    new_shape = _reshaped("sparse_reshape", total,
                          int64_vector(shape, "sparse_reshape"))
    index = unravel(positions(sp.indices, sp.dense_shape), new_shape)
    return SparseTensor(identity(index, name=name or "SparseReshape"), sp.values, new_shape)


def sparse_transpose(sp_input, perm=None, name=None):
    """``sp_input`` with its axes permuted by ``perm`` (default: reversed), its entries
    in row-major order (TF1 ``tf.sparse_transpose``, ``tf.sparse.transpose``).

    >>> gf.sparse_transpose(sp)   # a [2, 3] SparseTensor as [3, 2]
    """
    sp = sparse_arg(sp_input, "sparse_transpose")
    if perm is None:
        perm = list(range(sparse_rank(sp, "sparse_transpose")))[::-1]
    perm = convert_to_tensor(perm)
    if not perm.dtype.is_integer:
        raise TypeError(f"sparse_transpose: perm '{perm.name}' must be integers")
    indices = gather(sp.indices, perm, axis=1)
    dense_shape = gather(sp.dense_shape, perm)
    order = argsort(positions(indices, dense_shape))
    return _picked(sp, order, dense_shape, indices, name=name or "SparseTranspose")


def sparse_slice(sp_input, start, size, name=None):
    """The entries of ``sp_input`` inside the box of corner ``start`` and extent ``size``,
    moved to start at 0 (TF1 ``tf.sparse_slice``, ``tf.sparse.slice``); the dense shape
    is the box cut to ``sp_input``'s. Differentiable in the values.

    >>> gf.sparse_slice(sp, [0, 1], [2, 2])
    """
    sp = sparse_arg(sp_input, "sparse_slice")
    start, size = int64_vector(start, "sparse_slice"), int64_vector(size, "sparse_slice")
    end = add(start, size)
    inside = reduce_all(logical_and(greater_equal(sp.indices, start), less(sp.indices, end)),
                        axis=1)
    kept = reshape(where(inside), [-1])
    dense_shape = maximum(subtract(minimum(end, sp.dense_shape), start), 0)
    return SparseTensor(subtract(gather(sp.indices, kept, validate_indices=False), start),
                        gather(sp.values, kept, validate_indices=False,
                               name=name or "SparseSlice"), dense_shape)


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """``sp_input`` cut into ``num_split`` ``SparseTensor``s along ``axis`` (TF1
    ``tf.sparse_split``, called with keywords): when the size along ``axis`` does not
    divide evenly, the first ``size % num_split`` pieces are one longer.

    >>> left, right = gf.sparse_split(sp_input=sp, num_split=2, axis=1)
    """
    if keyword_required is not None:
        raise ValueError("sparse_split: give sp_input, num_split and axis as keywords")
    axis = split_dim if axis is None else axis
    if sp_input is None or num_split is None or axis is None:
        raise ValueError("sparse_split: sp_input, num_split and axis are required")
    sp = sparse_arg(sp_input, "sparse_split")
    rank = sparse_rank(sp, "sparse_split")
    axis, num_split = int(static_value(axis)), int(num_split)
    if not -rank <= axis < rank or num_split < 1:
        raise ValueError(f"sparse_split: axis {axis} of a rank-{rank} SparseTensor into "
                         f"{num_split} pieces")
    axis %= rank
    size = sp.dense_shape[axis]
    piece, extra = floordiv(size, num_split), floormod(size, num_split)
    one_hot = [int(a == axis) for a in range(rank)]
    pieces, offset = [], convert_to_tensor(0, dtype=dtypes.int64)
    for i in range(num_split):
        length = add(piece, cast(less(convert_to_tensor(i, dtype=dtypes.int64), extra),
                                 dtypes.int64))
        starts = multiply_vector(offset, one_hot)
        sizes = where(equal(convert_to_tensor(one_hot, dtype=dtypes.int64), 1),
                      fill([rank], length), sp.dense_shape)
        pieces.append(sparse_slice(sp, starts, sizes, name=None if name is None else
                                   f"{name}_{i}"))
        offset = add(offset, length)
    return pieces


def multiply_vector(scalar, flags):
    """The int64 vector ``scalar * flags`` (``flags`` a list of 0s and 1s)."""
    return cast(convert_to_tensor(flags, dtype=dtypes.int64), dtypes.int64) * scalar


def _concat_shape(what, shapes, axis, rank, expand):
    """The dense shape of the concatenation: sizes along ``axis`` added up; the others
    the inputs' (the largest with ``expand``, else they must agree)."""
    flags = [int(a == axis) for a in range(rank)]
    others = convert_to_tensor([1 - f for f in flags], dtype=dtypes.int64)
    total = convert_to_tensor(0, dtype=dtypes.int64)
    for s in shapes:
        total = add(total, s[axis])
    along = reduce_max(stack(shapes), axis=0) if expand else shapes[0]
    out = add(along * others, multiply_vector(total, flags))
    if expand or len(shapes) == 1:
        return out
    known = [static_value(s) for s in shapes]
    if all(k is not None for k in known):
        sizes = [[int(d) for i, d in enumerate(k) if i != axis] for k in known]
        if any(k != sizes[0] for k in sizes):
            raise ValueError(f"{what}: the dense shapes {[list(map(int, k)) for k in known]}"
                             f" differ outside the concatenation axis {axis}")
        return out
    agree = reduce_all(stack([equal(s * others, shapes[0] * others) for s in shapes]))
    check = Assert(agree, [f"{what}: the dense shapes differ outside the concatenation axis"])
    with control_dependencies([check]):
        return identity(out)


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """The ``SparseTensor``s ``sp_inputs`` joined along ``axis`` (TF1 ``tf.sparse_concat``,
    ``tf.sparse.concat``), the entries in row-major order. Their dense shapes must agree
    outside ``axis``, unless ``expand_nonconcat_dim``, which takes the largest.

    >>> gf.sparse_concat(1, [sp_a, sp_b])
    """
    axis = concat_dim if concat_dim is not None else axis
    expand = bool(expand_nonconcat_dims if expand_nonconcat_dims is not None
                  else expand_nonconcat_dim)
    sps = [sparse_arg(s, "sparse_concat") for s in sp_inputs]
    if not sps:
        raise ValueError("sparse_concat: sp_inputs is empty")
    rank = sparse_rank(sps[0], "sparse_concat")
    axis = int(static_value(axis))
    if not -rank <= axis < rank:
        raise ValueError(f"sparse_concat: axis {axis} of rank-{rank} SparseTensors")
    axis %= rank
    shapes = [s.dense_shape for s in sps]
    dense_shape = _concat_shape("sparse_concat", shapes, axis, rank, expand)
    flags = [int(a == axis) for a in range(rank)]
    moved, offset = [], convert_to_tensor(0, dtype=dtypes.int64)
    for s in sps:
        moved.append(add(s.indices, multiply_vector(offset, flags)))
        offset = add(offset, s.dense_shape[axis])
    joined = SparseTensor(concat(moved, 0), concat([s.values for s in sps], 0), dense_shape)
    return sparse_reorder(joined, name=name or "SparseConcat")


def sparse_reset_shape(sp_input, new_shape=None):
    """``sp_input`` with the dense shape ``new_shape``, which must hold every entry (TF1
    ``tf.sparse_reset_shape``); by default the tightest shape: one past the largest index
    along each axis.

    >>> gf.sparse_reset_shape(sp)   # [[0, 2], [1, 0]] in [5, 9] -> shape [2, 3]
    """
    sp = sparse_arg(sp_input, "sparse_reset_shape")
    if new_shape is None:
        return SparseTensor(sp.indices, sp.values, add(reduce_max(sp.indices, axis=0), 1))
    new_shape = int64_vector(new_shape, "sparse_reset_shape")
    if new_shape.shape is not None and sp.shape is not None and \
            new_shape.shape[0] not in (None, len(sp.shape)):
        raise ValueError(f"sparse_reset_shape: new_shape '{new_shape.name}' has "
                         f"{new_shape.shape[0]} sizes for a SparseTensor of rank "
                         f"{len(sp.shape)}")
    check = Assert(reduce_all(greater_equal(new_shape, sp.dense_shape)),
                   ["sparse_reset_shape: new_shape must not be smaller than the SparseTensor's"
                    " dense shape", new_shape, sp.dense_shape])
    with control_dependencies([check]):
        return SparseTensor(sp.indices, sp.values, identity(new_shape))


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """``sp_input`` with an entry ``default_value`` at ``[row, 0, ...]`` for each row that
    has none, and the bool vector of those rows (TF1 ``tf.sparse_fill_empty_rows``):
    ``(SparseTensor, empty_row_indicator)``. Entries stay in their order, sorted by row;
    differentiable in the values and in ``default_value``.

    >>> filled, empty = gf.sparse_fill_empty_rows(sp, -1)
    """
    sp = sparse_arg(sp_input, "sparse_fill_empty_rows")
    rank = sparse_rank(sp, "sparse_fill_empty_rows")
    default = convert_to_tensor(default_value, like=sp.values)
    rows = sp.indices[:, 0]
    count = unsorted_segment_sum(ones_like(rows, dtype=dtypes.int32), rows,
                                 sp.dense_shape[0])
    empty = equal(count, 0)
    new_rows = reshape(where(empty), [-1])
    new_index = concat([expand_dims(new_rows, 1),
                        fill(stack([shape_of(new_rows, out_type=dtypes.int64)[0],
                                    convert_to_tensor(rank - 1, dtype=dtypes.int64)]),
                             convert_to_tensor(0, dtype=dtypes.int64))], 1)
    new_values = zeros_like(new_rows, dtype=sp.values.dtype) + default
    joined = SparseTensor(concat([sp.indices, new_index], 0),
                          concat([sp.values, new_values], 0), sp.dense_shape)
    order = argsort(concat([rows, new_rows], 0))
    return _picked(joined, order, name=name or "SparseFillEmptyRows"), identity(empty)


def sparse_expand_dims(sp_input, axis=None, name=None):
    """``sp_input`` with a dimension of size 1 inserted at ``axis`` (TF1
    ``tf.sparse.expand_dims``; negative ``axis`` counts from the end, -1 appends).

    >>> gf.sparse.expand_dims(sp, -1)   # [2, 3] -> [2, 3, 1]
    """
    sp = sparse_arg(sp_input, "sparse.expand_dims")
    rank = sparse_rank(sp, "sparse.expand_dims")
    axis = 0 if axis is None else int(static_value(axis))
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"sparse.expand_dims: axis {axis} of a rank-{rank} SparseTensor")
    axis %= rank + 1
    zeros = zeros_like(sp.indices[:, :1])
    indices = concat([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
    dense_shape = concat([sp.dense_shape[:axis], convert_to_tensor([1], dtype=dtypes.int64),
                          sp.dense_shape[axis:]], 0)
    return SparseTensor(identity(indices, name=name or "ExpandDims"), sp.values, dense_shape)


def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """The ``[num_rows, num_columns]`` (default square) identity as a ``SparseTensor``
    (TF1 ``tf.sparse.eye``).

    >>> gf.sparse.eye(2, 3)   # ones at [0, 0] and [1, 1]
    """
    rows = cast(convert_to_tensor(num_rows), dtypes.int64)
    cols = rows if num_columns is None else cast(convert_to_tensor(num_columns), dtypes.int64)
    diagonal = range_(minimum(rows, cols), dtype=dtypes.int64)
    indices = stack([diagonal, diagonal], axis=1)
    values = ones_like(diagonal, dtype=dtypes.as_dtype(dtype))
    return SparseTensor(indices, identity(values, name=name or "eye"), stack([rows, cols]))


def sparse_from_dense(tensor, name=None):
    """The ``SparseTensor`` of the non-zero elements of ``tensor`` in row-major order
    (TF1 ``tf.sparse.from_dense``); differentiable in those values.

    >>> gf.sparse.from_dense([[0.0, 1.0], [2.0, 0.0]])   # indices [[0, 1], [1, 0]]
    """
    tensor = convert_to_tensor(tensor)
    indices = where(not_equal(tensor, zeros_like(tensor)))
    return SparseTensor(indices, gather_nd(tensor, indices, name=name or "dense_to_sparse"),
                        shape_of(tensor, out_type=dtypes.int64))


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """The ``SparseTensor`` whose entries put ``sp_values``' values at the ids of
    ``sp_ids`` in a last axis of size ``vocab_size`` (TF1 ``tf.sparse_merge``): entry
    ``[i..., k]`` of ``sp_ids`` with value ``id`` becomes ``[i..., id]``. A list of id
    tensors (with a list of sizes) gives one such axis each. Entries in row-major order
    unless ``already_sorted``.

    >>> gf.sparse_merge(word_ids, word_weights, vocab_size=10000)
    """
    many = isinstance(sp_ids, (list, tuple))
    ids = [sparse_arg(s, "sparse_merge") for s in (sp_ids if many else [sp_ids])]
    sizes = list(vocab_size) if isinstance(vocab_size, (list, tuple)) else [vocab_size]
    if len(sizes) != len(ids):
        raise ValueError(f"sparse_merge: {len(ids)} id tensors but {len(sizes)} vocab sizes")
    for s in ids:
        if not s.dtype.is_integer:
            raise TypeError(f"sparse_merge: the ids' values '{s.values.name}' must be "
                            f"integers, got {s.dtype.name}")
    if sp_values is None:
        values = ones_like(ids[0].values, dtype=dtypes.float32)
    else:
        values = sparse_arg(sp_values, "sparse_merge").values
    columns = [expand_dims(cast(s.values, dtypes.int64), 1) for s in ids]
    indices = concat([ids[0].indices[:, :-1]] + columns, 1)
    dense_shape = concat([ids[0].dense_shape[:-1], stack(
        [cast(convert_to_tensor(v), dtypes.int64) for v in sizes])], 0)
    merged = SparseTensor(indices, values, dense_shape)
    return merged if already_sorted else sparse_reorder(merged, name=name)


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """A bool tensor of ``sp_input``'s dense shape with its last axis made ``vocab_size``
    long, true at ``[i..., id]`` for each entry ``[i..., k]`` of value ``id`` (TF1
    ``tf.sparse_to_indicator``).

    >>> gf.sparse_to_indicator(ids, 4)   # ids [[2, 0], [3]] -> [[T, F, T, F], [F, F, F, T]]
    """
    sp = sparse_arg(sp_input, "sparse_to_indicator")
    if not sp.dtype.is_integer:
        raise TypeError(f"sparse_to_indicator: the values '{sp.values.name}' must be "
                        f"integers, got {sp.dtype.name}")
    indices = concat([sp.indices[:, :-1], expand_dims(cast(sp.values, dtypes.int64), 1)], 1)
    dense_shape = concat([sp.dense_shape[:-1], reshape(
        cast(convert_to_tensor(vocab_size), dtypes.int64), [1])], 0)
    counts = _dense(indices, ones_like(sp.values, dtype=dtypes.int32), dense_shape, 0, False,
                    "sparse_to_indicator", "counts")
    return not_equal(counts, 0, name=name or "SparseToIndicator")


def sparse_mask(a, mask_indices, name=None):
    """The rows of the ``IndexedSlices`` ``a`` whose index is not in ``mask_indices``
    (TF1 ``tf.sparse_mask``, ``tf.sparse.mask``), in their order.

    >>> gf.sparse_mask(gf.IndexedSlices(values, [12, 26, 37]), [12, 45])   # rows 26, 37
    """
    if not isinstance(a, IndexedSlices):
        raise TypeError(f"sparse_mask: a must be an IndexedSlices, got {type(a).__name__}")
    kept, where_kept = setdiff1d(a.indices, mask_indices)
    return IndexedSlices(gather(a.values, where_kept, validate_indices=False,
                                name=name or "sparse_mask"), kept, a.dense_shape)
