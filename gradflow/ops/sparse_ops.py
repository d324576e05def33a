"""Sparse tensors to dense ones (TF1 ``tf.sparse_tensor_to_dense``, ``tf.sparse.to_dense``,
``tf.sparse_to_dense``), built from ``scatter_nd`` and the primitive
``sparse_linear_index`` (``gradflow.prim.sparse``); ``sparse_retain`` and
``sparse_tensor_dense_matmul``."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import (
    expand_dims,
    reduce_all,
    reduce_prod,
    reshape,
    static_value,
    transpose,
)
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import gather, stack
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import cast, greater, less_equal, multiply, where
from gradflow.ops.scatter_ops import _rows, scatter_nd
from gradflow.ops.shape_ops import fill
from gradflow.ops.state_ops import identity
from gradflow.prim import sparse as _sparse  # noqa: F401 - registers "sparse_linear_index"
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["sparse_retain", "sparse_tensor_dense_matmul", "sparse_tensor_to_dense",
           "sparse_to_dense"]


def _dense(indices, values, shape, default, validate, what, name):
    """``values`` at the index rows ``indices`` of a dense tensor of ``shape`` (a vector),
    ``default`` elsewhere; with ``validate``, an entry named twice is an error."""
    values = convert_to_tensor(values)
    if values.dtype is dtypes.string:
        raise TypeError(f"{what}: string values are not supported")
    indices, shape = convert_to_tensor(indices), convert_to_tensor(shape)
    default = convert_to_tensor(0 if default is None else default, like=values)
    if default.dtype is not values.dtype:
        default = cast(default, values.dtype)
    known_shape = static_value(shape)
    size = [int(known_shape.prod())] if known_shape is not None else \
        reshape(reduce_prod(shape), [1])
    position = apply("sparse_linear_index", [indices, shape])

    def scattered(updates):  # zeros of the flat size with ``updates`` added at ``position``
        return _rows(updates, position, fill(size, convert_to_tensor(0, dtype=updates.dtype)))

    dense = scattered(values)
    known = static_value(default)
    zero_default = known is not None and not known.any()
    count = None
    if validate or not zero_default:  # how often each entry is named
        count = scattered(fill(shape_of(position), convert_to_tensor(1, dtype=dtypes.int32)))
    if not zero_default:
        dense = where(greater(count, 0), dense, fill(shape_of(dense), default))
    dense = reshape(dense, shape if known_shape is None else
                    [int(d) for d in known_shape.reshape(-1)])
    if not validate:
        return identity(dense, name=name)
    check = Assert(reduce_all(less_equal(count, 1)),
                   [f"{what}: indices '{indices.name}' name an entry more than once"])
    with control_dependencies([check]):
        return identity(dense, name=name)


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor of ``sp_input`` (a ``SparseTensor``): its values at its indices,
    ``default_value`` (0) elsewhere (TF1 ``tf.sparse_tensor_to_dense``). An index named
    twice is an ``InvalidArgumentError`` when ``validate_indices``; one outside the dense
    shape always is."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"sparse_tensor_to_dense: expected a SparseTensor, got "
                        f"{type(sp_input).__name__}")
    return _dense(sp_input.indices, sp_input.values, sp_input.dense_shape, default_value,
                  validate_indices, "sparse_tensor_to_dense", name or "SparseToDense")


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of ``output_shape`` holding ``sparse_values`` at ``sparse_indices``
    and ``default_value`` elsewhere (TF1 ``tf.sparse_to_dense``). Indices may be a vector
    (positions along the one axis) or a matrix of index rows; a scalar value fills every
    index."""
    indices = convert_to_tensor(sparse_indices)
    if indices.shape is not None and len(indices.shape) < 2:
        indices = expand_dims(indices, -1) if len(indices.shape) == 1 else \
            expand_dims(expand_dims(indices, 0), 0)
    values = convert_to_tensor(sparse_values)
    if values.shape is not None and len(values.shape) == 0:
        values = fill(shape_of(indices)[:1], values)
    return _dense(indices, values, output_shape, default_value, validate_indices,
                  "sparse_to_dense", name or "SparseToDense")


def _sparse_arg(sp, what):
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{what}: expected a SparseTensor, got {type(sp).__name__}")
    return sp


def sparse_retain(sp_input, to_retain):
    """The ``SparseTensor`` of the entries of ``sp_input`` where the bool vector
    ``to_retain`` (one per entry) is true (TF1 ``tf.sparse_retain``); same dense shape."""
    sp = _sparse_arg(sp_input, "sparse_retain")
    keep = convert_to_tensor(to_retain)
    if not keep.dtype.is_bool:
        raise TypeError(f"sparse_retain: to_retain '{keep.name}' must be bool, got "
                        f"{keep.dtype.name}")
    if keep.shape is not None and len(keep.shape) != 1:
        raise ValueError(f"sparse_retain: to_retain '{keep.name}' must be a vector (one "
                         f"flag per entry), got shape {tuple(keep.shape)}")
    # the entries kept, by position (a vector however unknown the flags' rank is now)
    kept = reshape(where(keep), [-1])
    return SparseTensor(gather(sp.indices, kept), gather(sp.values, kept), sp.dense_shape)


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The product of the rank-2 ``SparseTensor`` ``sp_a`` and the dense matrix ``b``
    (TF1 ``tf.sparse_tensor_dense_matmul``), either transposed first (``adjoint_*``; real
    values, so the adjoint is the transpose). Each entry scales a row of ``b`` into a row
    of the result, repeated entries adding up; differentiable in ``b`` and in the
    entries' values.

    >>> h = gf.sparse_tensor_dense_matmul(adjacency, features @ w)   # a graph convolution
    """
    sp = _sparse_arg(sp_a, "sparse_tensor_dense_matmul")
    b = convert_to_tensor(b, like=sp.values)
    if b.shape is not None and len(b.shape) != 2:
        raise ValueError(f"sparse_tensor_dense_matmul: b '{b.name}' must be a matrix, got "
                         f"shape {tuple(b.shape)}")
    if sp.indices.shape is not None and sp.indices.shape[1] not in (None, 2):
        raise ValueError("sparse_tensor_dense_matmul: sp_a must be a SparseTensor of rank 2")
    if b.dtype is not sp.values.dtype:
        raise TypeError(f"sparse_tensor_dense_matmul: sp_a holds {sp.values.dtype.name} but b "
                        f"'{b.name}' is {b.dtype.name}")
    rows, cols = sp.indices[:, 0], sp.indices[:, 1]
    if adjoint_a:
        rows, cols = cols, rows
    if adjoint_b:
        b = transpose(b)
    known = sp.shape
    out_rows = known[1 if adjoint_a else 0] if known is not None and len(known) == 2 \
        else None
    width = None if b.shape is None else b.shape[1]
    if out_rows is not None and width is not None:  # a static result shape
        dims = [int(out_rows), int(width)]
    else:
        dims = stack([cast(sp.dense_shape[1 if adjoint_a else 0], dtypes.int32),
                      shape_of(b)[1]])
    scaled = multiply(gather(b, cols), expand_dims(sp.values, 1))
    # each entry's target row as a one-long index tuple (known so, however unknown the
    # indices' rank)
    return scatter_nd(reshape(rows, [-1, 1]), scaled, dims,
                      name=name or "SparseTensorDenseMatMul")
