"""The tensor work of the feature columns: dense inputs made sparse, ids from values
(identity, hashing, vocabularies, buckets, crosses), and the sparse ids made dense
again (embedding look-ups that skip invalid ids, multi-hot vectors), as TF1's
``feature_column`` computes them."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.lookup import (
    KeyValueTensorInitializer,
    StaticHashTable,
    StaticVocabularyTable,
    TextFileIndex,
    TextFileInitializer,
    hash_bucket,
)
from gradflow.ops.array_ops import expand_dims, reduce_all, reshape
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import gather, one_hot, stack
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import (
    add,
    cast,
    divide,
    greater,
    greater_equal,
    less,
    logical_and,
    logical_not,
    logical_or,
    multiply,
    sqrt,
    square,
    where,
)
from gradflow.ops.nn_ops import embedding_lookup
from gradflow.ops.segment_ops import unsorted_segment_sum
from gradflow.ops.shape_ops import fill, range_, tile
from gradflow.ops.state_ops import identity
from gradflow.prim import lookup as _prim  # noqa: F401 - registers the host ops
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor


def tensor(value):
    """A feature value as a tensor or a ``SparseTensor``."""
    if isinstance(value, SparseTensor):
        return value
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    return value if isinstance(value, Tensor) else convert_to_tensor(value)


def to_float(x):
    x = tensor(x)
    return x if x.dtype is dtypes.float32 else cast(x, dtypes.float32)


def to_sparse(x, keep_all=False):
    """``x`` as a ``SparseTensor``: a dense tensor loses its ignored entries (``''`` for
    strings, -1 for numbers), as TF1's columns drop them, unless ``keep_all``."""
    x = tensor(x)
    if isinstance(x, SparseTensor):
        return x
    ignore = convert_to_tensor(b"" if x.dtype is dtypes.string else -1)
    if ignore.dtype is not x.dtype:
        ignore = cast(ignore, x.dtype) if x.dtype is not dtypes.string else ignore
    rank = None if x.shape is None else len(x.shape)
    node = apply("drop_ignored_values", [x, ignore], name="to_sparse_input", shape=None,
                 dtype=VARIANT, keep_all=bool(keep_all))
    return SparseTensor(pick(node, 0, (None, rank), dtypes.int64),
                        pick(node, 1, (None,), x.dtype),
                        pick(node, 2, (rank,), dtypes.int64))


def _int64(values):
    return values if values.dtype is dtypes.int64 else cast(values, dtypes.int64)


def bucketize(x, boundaries):
    """The bucket of each value: how many ``boundaries`` are at most it (int32)."""
    x = to_float(x)
    count = None
    for b in boundaries:
        above = cast(greater_equal(x, float(b)), dtypes.int32)
        count = above if count is None else add(count, above)
    return count if count is not None else cast(multiply(x, 0.0), dtypes.int32)


def one_hot_float(ids, depth):
    return one_hot(ids, depth, on_value=1.0, off_value=0.0, dtype=dtypes.float32)


def bucket_ids(buckets, per_value, values_per_row):
    """The buckets of ``[batch, values_per_row...]`` as sparse ids, one per value, the
    k-th value's in ``[k * per_value, (k + 1) * per_value)``."""
    batch = shape_of(buckets)[0]
    flat = _int64(reshape(buckets, [-1]))
    column = tile(range_(values_per_row), expand_dims(batch, 0))
    row = reshape(tile(expand_dims(range_(batch), 1), [1, values_per_row]), [-1])
    values = add(flat, multiply(_int64(column), per_value))
    indices = _int64(stack([row, column], axis=1))
    return SparseTensor(indices, values, _int64(stack([batch, values_per_row])))


def identity_ids(ids, num_buckets, default_value, key):
    if not ids.values.dtype.is_integer:
        raise ValueError(f"Invalid input, not integer. key: {key} dtype: "
                         f"{ids.values.dtype.name}")
    values = _int64(ids.values)
    outside = logical_or(less(values, 0), greater_equal(values, num_buckets))
    if default_value is None:
        check = Assert(reduce_all(logical_not(outside)),
                       [f"categorical_column_with_identity '{key}': an id is outside "
                        f"[0, {num_buckets})", values])
        with control_dependencies([check]):
            values = identity(values)
    else:
        values = where(outside, fill(shape_of(values), convert_to_tensor(
            default_value, dtype=dtypes.int64)), values)
    return SparseTensor(ids.indices, values, ids.dense_shape)


def hashed_ids(ids, size):
    return SparseTensor(ids.indices, hash_bucket(ids.values, size), ids.dense_shape)


def vocabulary_ids(ids, dtype, num_oov_buckets, default_value, key, keys=None, path=None,
                   size=None):
    """The ids of a vocabulary (a list, or a file of one entry a line) through a table,
    as TF1's ``index_table_from_tensor``/``_from_file``."""
    key_dtype = dtypes.string if dtype is dtypes.string else dtypes.int64
    if keys is not None:
        init = KeyValueTensorInitializer(
            convert_to_tensor(list(keys), dtype=key_dtype),
            convert_to_tensor(list(range(len(keys))), dtype=dtypes.int64))
    else:
        init = TextFileInitializer(path, key_dtype, TextFileIndex.WHOLE_LINE, dtypes.int64,
                                   TextFileIndex.LINE_NUMBER, vocab_size=size)
    name = f"{key}_lookup"
    if num_oov_buckets:
        table = StaticVocabularyTable(init, num_oov_buckets, name=name)
    else:
        table = StaticHashTable(init, -1 if default_value is None else default_value,
                                name=name)
    values = ids.values if key_dtype is dtypes.string else _int64(ids.values)
    return SparseTensor(ids.indices, table.lookup(values), ids.dense_shape)


def weights(value, dtype, key):
    """A weight feature as a ``SparseTensor`` (a dense one loses its zeros, as TF1)."""
    w = tensor(value)
    if not isinstance(w, SparseTensor):
        rank = None if w.shape is None else len(w.shape)
        node = apply("drop_ignored_values", [w, convert_to_tensor(0, dtype=w.dtype)],
                     name="to_sparse_weights", shape=None, dtype=VARIANT)
        w = SparseTensor(pick(node, 0, (None, rank), dtypes.int64),
                         pick(node, 1, (None,), w.dtype), pick(node, 2, (rank,), dtypes.int64))
    if not w.values.dtype.is_floating and not w.values.dtype.is_integer:
        raise ValueError(f"Bad dtype, expected {dtype.name}, but got "
                         f"{w.values.dtype.name} for weight feature '{key}'")
    return SparseTensor(w.indices, cast(w.values, dtype), w.dense_shape)


def cross_hashed(parts, num_buckets, hash_key):
    """TF's ``sparse_cross_hashed``: per row, every combination of one value of each
    part (the last varying fastest), fingerprinted and taken modulo ``num_buckets``.
    As TF's kernel, the sparse parts come first, then the dense ones (every entry
    counts)."""
    parts = [tensor(p) for p in parts]
    parts = [p for p in parts if isinstance(p, SparseTensor)] + \
        [to_sparse(p, keep_all=True) for p in parts if not isinstance(p, SparseTensor)]
    inputs = []
    for p in parts:
        values = p.values if p.values.dtype is dtypes.string else _int64(p.values)
        inputs.extend([p.indices, values, p.dense_shape])
    node = apply("sparse_cross_hashed", inputs, name="SparseCross", shape=None,
                 dtype=VARIANT, num_buckets=int(num_buckets), hash_key=int(hash_key))
    return SparseTensor(pick(node, 0, (None, 2), dtypes.int64),
                        pick(node, 1, (None,), dtypes.int64),
                        pick(node, 2, (2,), dtypes.int64))


def _valid(ids, weights_sp, combiner):
    """The positions of the entries with an id >= 0 (and, unless summing, a weight > 0)."""
    keep = greater_equal(ids.values, 0)
    if weights_sp is not None and combiner != "sum":
        keep = logical_and(keep, greater(weights_sp.values, 0))
    return reshape(where(keep), [-1])


def safe_lookup(params, ids, weights_sp, combiner, max_norm=None):
    """TF1's ``safe_embedding_lookup_sparse``: the rows of ``params`` at each row's valid
    ids, combined (``sum``, ``mean``, ``sqrtn``; weighted by ``weights_sp``, whose
    entries of weight <= 0 are left out but for ``sum``); a row without them is zero.
    One result row per row of ``ids``'s dense shape."""
    batch = cast(ids.dense_shape[0], dtypes.int32)
    kept = _valid(ids, weights_sp, combiner)
    rows = gather(cast(ids.indices[:, 0], dtypes.int32), kept)
    emb = embedding_lookup(params, gather(_int64(ids.values), kept), max_norm=max_norm)
    if weights_sp is None:
        w = None
        total = unsorted_segment_sum(emb, rows, batch)
    else:
        w = cast(gather(weights_sp.values, kept), emb.dtype)
        total = unsorted_segment_sum(multiply(emb, expand_dims(w, 1)), rows, batch)
    if combiner == "sum":
        return total
    if w is None:
        w = cast(greater_equal(rows, 0), emb.dtype)
    scale = unsorted_segment_sum(w, rows, batch) if combiner == "mean" else \
        sqrt(unsorted_segment_sum(square(w), rows, batch))
    scale = expand_dims(scale, 1)
    empty = greater(scale, 0.0)
    return divide(total, where(empty, scale, fill(shape_of(scale),
                                                  convert_to_tensor(1.0, dtype=emb.dtype))))


def multi_hot(ids, weights_sp, depth):
    """Per row, the count (or the summed weight) of each id below ``depth``."""
    batch = cast(ids.dense_shape[0], dtypes.int32)
    rows = cast(ids.indices[:, 0], dtypes.int32)
    hot = one_hot_float(_int64(ids.values), depth)
    if weights_sp is not None:
        hot = multiply(hot, expand_dims(cast(weights_sp.values, dtypes.float32), 1))
    return unsorted_segment_sum(hot, rows, batch)
