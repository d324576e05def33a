"""TF1's ``tf.nn.safe_embedding_lookup_sparse`` and ``tf.nn.with_space_to_batch``:
composites of existing ops (embedding_lookup_sparse and the sparse reshapes; the
space-to-batch transforms around a user's op).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import reduce_prod
from gradflow.ops.index_ops import concat, shape
from gradflow.ops.manip_ops import batch_to_space_nd, space_to_batch_nd
from gradflow.ops.math_ops import cast, greater, greater_equal, logical_and, where, zeros_like
from gradflow.ops.nn_extra_ops import embedding_lookup_sparse
from gradflow.ops.shape_ops import reshape, tile
from gradflow.ops.sparse_ops import sparse_retain
from gradflow.ops.sparse_shape_ops import sparse_fill_empty_rows, sparse_reshape
from gradflow.prim.registry import convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["safe_embedding_lookup_sparse", "with_space_to_batch"]


def _pruned(sparse_ids, sparse_weights, combiner):
    """Drop negative ids, and (unless summing) the ids of non-positive weights."""
    keep = greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None and combiner != "sum":
        keep = logical_and(keep, greater(sparse_weights.values, 0))
    ids = sparse_retain(sparse_ids, keep)
    weights = None if sparse_weights is None else sparse_retain(sparse_weights, keep)
    return ids, weights


def safe_embedding_lookup_sparse(embedding_weights, sparse_ids, sparse_weights=None,
                                 combiner="mean", default_id=None, name=None,
                                 partition_strategy="div", max_norm=None,
                                 allow_fast_lookup=False):
    """``embedding_lookup_sparse`` that tolerates invalid ids and empty rows (TF1
    ``tf.nn.safe_embedding_lookup_sparse``).

    ``sparse_ids``: an int ``SparseTensor`` ``[d_0, ..., d_{n-1}, ?]`` (rank 2 or more);
    ``sparse_weights``: one of the same positions, or None. Negative ids are dropped, and
    with a combiner other than ``"sum"`` so are ids of weights that are not positive.
    A row left without ids gets ``default_id`` (weight 1), or, without ``default_id``,
    zeros. Returns ``[d_0, ..., d_{n-1}, dim]``.

    >>> emb = gf.nn.safe_embedding_lookup_sparse(table, sp_ids, combiner="sqrtn")
    """
    if not isinstance(sparse_ids, SparseTensor):
        raise TypeError(f"safe_embedding_lookup_sparse: sparse_ids must be a SparseTensor, "
                        f"got {type(sparse_ids).__name__}")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"safe_embedding_lookup_sparse: combiner must be one of 'mean', "
                         f"'sqrtn' or 'sum', got {combiner!r}")
    original = cast(sparse_ids.dense_shape, dtypes.int64)
    rows = reduce_prod(original[:-1], keepdims=True)
    flat_shape = concat([rows, original[-1:]], 0)
    ids = sparse_reshape(sparse_ids, flat_shape)
    weights = None if sparse_weights is None else \
        SparseTensor(ids.indices, sparse_weights.values, ids.dense_shape)
    ids, weights = _pruned(ids, weights, combiner)
    ids, empty = sparse_fill_empty_rows(ids, 0 if default_id is None else int(default_id))
    if weights is not None:
        weights, _ = sparse_fill_empty_rows(weights, 1.0)
    if isinstance(embedding_weights, (list, tuple)) and partition_strategy == "div":
        # "div" shards hold consecutive ids: in order, they make the whole table
        embedding_weights = concat(list(embedding_weights), 0) \
            if len(embedding_weights) > 1 else embedding_weights[0]
    result = embedding_lookup_sparse(embedding_weights, ids, weights, combiner=combiner,
                                     partition_strategy=partition_strategy, max_norm=max_norm)
    if default_id is None:
        wide = tile(reshape(empty, [-1, 1]), concat([[1], shape(result)[1:]], 0))
        result = where(wide, zeros_like(result), result)
    final = concat([cast(original[:-1], dtypes.int32), shape(result)[1:]], 0)
    return reshape(result, final, name=name or "embedding_lookup")


def _base_paddings(padding, filter_shape, rates):
    if padding == "VALID":
        return np.zeros((len(rates), 2), np.int64)
    if filter_shape is None:
        raise ValueError("with_space_to_batch: padding='SAME' needs filter_shape")
    sizes = np.asarray(filter_shape, np.int64).reshape(-1)
    if len(sizes) != len(rates):
        raise ValueError(f"with_space_to_batch: filter_shape {list(sizes)} does not match "
                         f"the {len(rates)} spatial dimensions")
    extra = (sizes - 1) * rates  # the dilated filter's size less one
    start = extra // 2
    return np.stack([start, extra - start], 1)


def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None,
                        spatial_dims=None, data_format=None):
    """``op`` run on ``input`` as a dilated op (TF1 ``tf.nn.with_space_to_batch``): the
    spatial dimensions are moved into the batch by ``space_to_batch_nd`` with block
    ``dilation_rate``, ``op(converted, num_spatial_dims, "VALID")`` runs there, and
    ``batch_to_space_nd`` moves its result back. With ``padding="SAME"``, the input is
    padded for a filter of ``filter_shape``. ``spatial_dims`` (default 1.., or 2.. for
    a ``data_format`` starting with ``"NC"``) must be consecutive; their sizes must be
    known when the graph is built.

    >>> y = gf.nn.with_space_to_batch(x, [2, 2], "SAME", lambda v, n, p:
    ...     gf.nn.conv2d(v, w, [1, 1, 1, 1], p), filter_shape=[3, 3])
    """
    x = convert_to_tensor(input)
    rates = np.asarray(dilation_rate, np.int64).reshape(-1)
    if np.any(rates < 1):
        raise ValueError(f"with_space_to_batch: dilation_rate must be positive, got "
                         f"{rates.tolist()}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"with_space_to_batch: padding must be 'SAME' or 'VALID', got "
                         f"{padding!r}")
    n = len(rates)
    if spatial_dims is None:
        first = 2 if data_format is not None and str(data_format).startswith("NC") else 1
        spatial_dims = list(range(first, first + n))
    dims = [int(d) for d in spatial_dims]
    if len(dims) != n or dims != list(range(dims[0], dims[0] + n)) or dims[0] < 1:
        raise ValueError(f"with_space_to_batch: spatial_dims must be {n} consecutive axes "
                         f"after the batch, got {dims}")
    if np.all(rates == 1):
        return op(x, n, padding)
    if x.shape is None or any(x.shape[d] is None for d in dims):
        raise ValueError(f"with_space_to_batch: the spatial sizes of '{x.name}' must be "
                         f"known, got shape {x.shape}")
    base = _base_paddings(padding, filter_shape, rates)
    size = np.array([x.shape[d] for d in dims], np.int64) + base.sum(axis=1)
    extra_end = (rates - size % rates) % rates
    paddings = np.stack([base[:, 0], base[:, 1] + extra_end], 1)
    crops = np.stack([np.zeros(n, np.int64), extra_end], 1)
    lead = dims[0] - 1  # axes between the batch and the spatial ones: block 1
    block = np.concatenate([np.ones(lead, np.int64), rates])
    paddings = np.concatenate([np.zeros((lead, 2), np.int64), paddings])
    crops = np.concatenate([np.zeros((lead, 2), np.int64), crops])
    converted = space_to_batch_nd(x, block.tolist(), paddings.tolist())
    result = op(converted, n, "VALID")
    return batch_to_space_nd(result, block.tolist(), crops.tolist())
