"""The primitives the scatters stand on (``gradflow.ops.scatter_ops`` builds them from
``gather_grad``, the backends' scatter-add): ``last_occurrence`` (which of repeated
indices wins), ``check_scatter_updates`` (the run-time check of the updates' shape where
the static shapes leave it open) and ``bincount_size`` (the number of bins).
"""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.prim.registry import register


def _last_occurrence_impl(xp, indices):
    """True where an index does not appear again later (the update that wins)."""
    flat = xp.reshape(indices, (-1,))
    if flat.shape[0] == 0:
        return xp.reshape(xp.astype(flat, xp.bool), indices.shape)
    order = xp.argsort(flat, stable=True)
    grouped = xp.take(flat, order)
    last = xp.concat([grouped[1:] != grouped[:-1],
                      xp.ones((1,), dtype=xp.bool, device=_device(flat))])
    return xp.reshape(xp.take(last, xp.argsort(order)), indices.shape)


def _last_occurrence_infer(shapes, in_dtypes):
    if not in_dtypes[0].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[0].name}")
    return shapes[0], dtypes.bool_


register("last_occurrence", _last_occurrence_impl, _last_occurrence_infer, grad=None)


def _updates_shape(indices_shape, tensor_shape):
    """The shape ``updates`` must have: ``indices.shape[:-1] + tensor.shape[depth:]``."""
    depth = indices_shape[-1]
    return tuple(indices_shape[:-1]) + tuple(tensor_shape[depth:])


def updates_problem(indices_shape, tensor_shape, updates_shape, label="updates"):
    """What is wrong with the three shapes (``None`` dims match anything), or None;
    ``label`` names the updates."""
    depth = indices_shape[-1]
    if depth is not None and depth > len(tensor_shape):
        return (f"index tuples of length {depth} (the last axis of indices, shape "
                f"{list(indices_shape)}) for a tensor of rank {len(tensor_shape)}")
    if depth is None:
        return None
    want = _updates_shape(indices_shape, tensor_shape)
    if len(want) != len(updates_shape) or any(
            a is not None and b is not None and a != b for a, b in zip(want, updates_shape)):
        return (f"{label} have shape {list(updates_shape)}, but indices of shape "
                f"{list(indices_shape)} into a tensor of shape {list(tensor_shape)} need "
                f"updates of shape {list(want)} (indices.shape[:-1] + "
                f"tensor.shape[indices.shape[-1]:])")
    return None


def _check_updates_impl(xp, updates, indices, tensor, what, label):
    problem = updates_problem(tuple(indices.shape), tuple(tensor.shape), tuple(updates.shape),
                               label)
    if problem is not None:
        raise ValueError(f"{what}: {problem}")
    return updates


# A run-time check where the static shapes cannot settle it: a wrong updates shape
# would otherwise reach the scatter's reshape, which fails with a different message on
# each backend, or succeeds on the wrong elements when only the sizes agree.
register("check_scatter_updates", _check_updates_impl,
         lambda s, d, what, label: (s[0], d[0]), grad=lambda n, g: [g, None, None],
         check=True)


def _bincount_size_impl(xp, arr, *rest, weighted, bounds):
    """The number of bins (TF1: ``max(arr) + 1``, 0 for an empty ``arr``, raised to
    ``minlength`` and cut to ``maxlength``), after checking ``arr`` and ``weights``."""
    if weighted:
        weights, rest = rest[0], rest[1:]
        if tuple(weights.shape) != tuple(arr.shape):
            raise ValueError(f"bincount: weights of shape {list(weights.shape)} for arr of "
                             f"shape {list(arr.shape)}; they must have the same shape")
    size = 0
    if math.prod(arr.shape):
        if bool(xp.min(arr) < 0):
            raise ValueError("bincount: arr must be non-negative (TF1: \"Input arr must be "
                             "non-negative!\")")
        size = int(xp.max(arr)) + 1
    for bound, value in zip(bounds, rest):
        size = max(size, int(value)) if bound == "min" else min(size, int(value))
    if size > xp.iinfo(arr.dtype).max:  # max(arr) + 1 overflows arr's dtype
        raise ValueError(f"bincount: {size} bins do not fit in arr's dtype")
    return xp.asarray(size, dtype=arr.dtype, device=_device(arr))


def _bincount_size_infer(shapes, in_dtypes, weighted, bounds):
    for s in shapes[1 + weighted:]:
        if len(s) != 0:
            raise ValueError(f"minlength and maxlength must be scalars, got shape {tuple(s)}")
    return (), in_dtypes[0]


register("bincount_size", _bincount_size_impl, _bincount_size_infer, grad=None)
