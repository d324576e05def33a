"""TF1's ``tf.sets``: sets held along the last axis of a dense tensor or a
``SparseTensor`` (integers or strings), their sizes (``set_size``) and their
intersections, unions and differences, each a ``SparseTensor`` ``[..., largest set]``
with every row's elements in increasing order, as TF1 gives them. They run on the host
(``gradflow.prim.sets``).

>>> common = gf.sets.set_intersection(predicted_ids, true_ids)
>>> hits = gf.sets.set_size(common)
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.prim import sets as _sets  # noqa: F401 - registers the set ops
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["difference", "intersection", "set_difference", "set_intersection", "set_size",
           "set_union", "size", "union"]

_TYPES = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
          dtypes.string)


def _operand(value, what):
    """``(input tensors, whether sparse, dtype, rank or None)`` of one set operand."""
    if isinstance(value, SparseTensor):
        values = value.values
        shape = value.dense_shape.shape
        rank = None if shape is None or shape[0] is None else int(shape[0])
        parts, sparse = [value.indices, values, value.dense_shape], True
    else:
        values = value if isinstance(value, Tensor) else convert_to_tensor(value)
        rank = None if values.shape is None else len(values.shape)
        parts, sparse = [values], False
    if values.dtype not in _TYPES:
        raise TypeError(f"{what}: '{values.name}' must hold integers (int8 to int64, uint8, "
                        f"uint16) or strings, got {values.dtype.name}")
    if rank is not None and rank < 2:
        raise ValueError(f"{what}: '{values.name}' must have rank 2 or more (sets along "
                         f"the last axis), got rank {rank}")
    return parts, sparse, values.dtype, rank


def _set_operation(a, b, operation, validate_indices, what):
    parts_a, sparse_a, dtype_a, rank_a = _operand(a, what)
    parts_b, sparse_b, dtype_b, rank_b = _operand(b, what)
    if dtype_a is not dtype_b:
        raise TypeError(f"{what}: the sets hold {dtype_a.name} and {dtype_b.name}; they must "
                        "hold one dtype")
    if rank_a is not None and rank_b is not None and rank_a != rank_b:
        raise ValueError(f"{what}: the sets have ranks {rank_a} and {rank_b}; they must "
                         "have one")
    rank = rank_a if rank_a is not None else rank_b
    node = apply("set_operation", parts_a + parts_b, name="SetOperation",
                 operation=operation, a_sparse=sparse_a, b_sparse=sparse_b,
                 validate_indices=bool(validate_indices), value_dtype=dtype_a,
                 shape=None, dtype=VARIANT)
    return SparseTensor(pick(node, 0, (None, rank), dtypes.int64),
                        pick(node, 1, (None,), dtype_a),
                        pick(node, 2, (rank,), dtypes.int64))


def set_intersection(a, b, validate_indices=True):
    """The elements in both ``a``'s and ``b``'s set of each row (TF1), a ``SparseTensor``;
    ``a`` and ``b`` are dense tensors or ``SparseTensor`` s of one leading shape."""
    return _set_operation(a, b, "intersection", validate_indices, "set_intersection")


def set_union(a, b, validate_indices=True):
    """The elements in ``a``'s or ``b``'s set of each row (TF1), a ``SparseTensor``."""
    return _set_operation(a, b, "union", validate_indices, "set_union")


def set_difference(a, b, aminusb=True, validate_indices=True):
    """The elements of ``a``'s set of each row that are not in ``b``'s (``b - a`` when
    ``aminusb`` is false; TF1), a ``SparseTensor``."""
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices,
                          "set_difference")


def set_size(a, validate_indices=True):
    """The int32 number of distinct elements in each row's set of the ``SparseTensor``
    ``a``, of shape ``a.dense_shape[:-1]`` (TF1). Indices out of row-major order are an
    ``InvalidArgumentError`` when run, unless ``validate_indices`` is false."""
    if not isinstance(a, SparseTensor):
        raise TypeError(f"set_size: a must be a SparseTensor, got {type(a).__name__}")
    _, _, _, rank = _operand(a, "set_size")
    shape = None if rank is None else (None,) * (rank - 1)
    return apply("set_size", [a.indices, a.values, a.dense_shape], name="SetSize",
                 validate_indices=bool(validate_indices), shape=shape, dtype=dtypes.int32)


def intersection(a, b, validate_indices=True):
    """``set_intersection`` under its later name."""
    return set_intersection(a, b, validate_indices)


def union(a, b, validate_indices=True):
    """``set_union`` under its later name."""
    return set_union(a, b, validate_indices)


def difference(a, b, aminusb=True, validate_indices=True):
    """``set_difference`` under its later name."""
    return set_difference(a, b, aminusb, validate_indices)


def size(a, validate_indices=True):
    """``set_size`` under its later name."""
    return set_size(a, validate_indices)
