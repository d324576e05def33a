"""The primitive of sparse tensors' conversion to dense ones (``gradflow.ops.sparse_ops``
builds them from it and ``gather_grad``): ``sparse_linear_index``, the row-major
positions of a ``SparseTensor``'s index rows in its dense shape, after checking them.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.prim.index_checks import IndexOutOfRange, row_major_positions
from gradflow.prim.registry import register


def _linear_impl(xp, indices, dense_shape):
    """Row-major positions in an array of ``dense_shape`` (a vector read on the host) of
    the index rows of ``indices``, after checking that each row points into it."""
    shape = tuple(int(d) for d in dense_shape)
    if indices.ndim != 2 or indices.shape[1] != len(shape):
        raise IndexOutOfRange(f"indices of shape {tuple(indices.shape)} for a dense shape "
                              f"of rank {len(shape)}: each row must hold {len(shape)} indices")
    if any(d < 0 for d in shape):
        raise IndexOutOfRange(f"the dense shape {list(shape)} has a negative size")
    return row_major_positions(xp, indices, shape)


def _linear_infer(shapes, in_dtypes):
    if not (in_dtypes[0].is_integer and in_dtypes[1].is_integer):
        raise TypeError("indices and dense_shape must be integers")
    rules_rank = [len(s) for s in shapes]
    if rules_rank != [2, 1]:
        raise ValueError(f"indices must be a matrix and dense_shape a vector, got ranks "
                         f"{rules_rank}")
    return (shapes[0][0],), dtypes.int64


register("sparse_linear_index", _linear_impl, _linear_infer, grad=None, check=True)
