"""``tf.sort``, ``tf.argsort`` and ``tf.unique``.

``argsort`` is the primitive (a stable sort, so equal values keep their order,
as TF1's ``top_k``-based sort does); ``sort`` gathers the values at those
indices, so its gradient goes back to where each value came from, through
``gather``'s scatter-add. ``unique`` has two ops, one per result. The primitives
are in ``gradflow.prim.sort``.
"""

from __future__ import annotations

import collections

from gradflow import dtypes
from gradflow.ops.array_ops import reshape, transpose
from gradflow.prim import rules
from gradflow.prim import sort as _sort  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, convert_to_tensor

Unique = collections.namedtuple("Unique", ["y", "idx"])
Unique.__doc__ = "The result of ``unique``: the values ``y`` and each element's ``idx`` in it."

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _check_direction(direction, what):
    if direction not in _DIRECTIONS:
        raise ValueError(f"{what}: direction must be one of {_DIRECTIONS}, got {direction!r}")
    return direction == "DESCENDING"


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort ``values`` along ``axis`` (TF1 ``tf.argsort``); equal
    values keep their order whatever ``stable`` says, as with TF1's ``top_k``.

    >>> gf.argsort([3.0, 1.0, 2.0])   # [1, 2, 0]
    """
    descending = _check_direction(direction, "argsort")
    x = convert_to_tensor(values)
    if x.shape is not None:
        axis = rules.normalize_axis(axis, len(x.shape), allow_none=False)[0]
    return apply("argsort", [x], name=name or "argsort", axis=int(axis), descending=descending)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (TF1 ``tf.sort``); differentiable: the gradient
    of each sorted value goes to the element it came from.

    >>> gf.sort([3.0, 1.0, 2.0], direction="DESCENDING")   # [3, 2, 1]
    """
    descending = _check_direction(direction, "sort")
    x = convert_to_tensor(values)
    if x.shape is None and axis != -1:
        raise ValueError(f"sort: the rank of '{x.name}' must be known to sort along axis "
                         f"{axis} (only axis=-1 works at any rank)")
    rank = None if x.shape is None else len(x.shape)
    if rank is not None and rules.normalize_axis(axis, rank)[0] != rank - 1:  # to the end, back
        axis = rules.normalize_axis(axis, rank)[0]
        perm = tuple(a for a in range(rank) if a != axis) + (axis,)
        back = tuple(perm.index(a) for a in range(rank))
        return transpose(sort(transpose(x, perm), -1, direction), back, name=name)
    order = apply("argsort", [x], axis=-1, descending=descending)
    flat = apply("top_k_flat_index", [order, x])
    return apply("gather", [reshape(x, (-1,)), flat], name=name or "sort", axis=0)


def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct values of the 1-D ``x`` in order of first appearance, and for each
    element its position among them (TF1 ``tf.unique``): ``Unique(y, idx)``, so that
    ``gather(y, idx)`` is ``x``.

    >>> y, idx = gf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])   # y = [1, 2, 4, 7, 8]
    """
    x = convert_to_tensor(x)
    out_idx = dtypes.as_dtype(out_idx)
    if out_idx not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"unique: out_idx must be int32 or int64, got {out_idx.name}")
    name = name or "Unique"
    return Unique(apply("unique", [x], name=name),
                  apply("unique_index", [x], name=name + "_idx", out_idx=out_idx))
