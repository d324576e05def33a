"""The sorting primitives: ``argsort``, ``top_k`` (the indices of the ``k`` largest),
``top_k_flat_index``, ``in_top_k`` and ``unique`` (one op per result).

Sorts are stable, so equal values keep their order (TF1's ``top_k``-based sort does the
same). TF1's functions over them are in ``gradflow.ops.sort_ops`` and
``gradflow.ops.topk_ops``.
"""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim import rules
from gradflow.prim.registry import register

# -- argsort -------------------------------------------------------------------------


def _argsort_impl(xp, x, axis, descending):
    return xp.astype(xp.argsort(x, axis=axis, descending=descending, stable=True), xp.int32)


def _argsort_infer(shapes, in_dtypes, axis, descending):
    if in_dtypes[0].is_bool:
        raise TypeError("sort and argsort need numbers, got bool")
    if len(shapes[0]) == 0:
        raise ValueError("sort and argsort need rank 1 or more, got a scalar")
    rules.normalize_axis(axis, len(shapes[0]), allow_none=False)
    return shapes[0], dtypes.int32


register("argsort", _argsort_impl, _argsort_infer, grad=None)


# -- top_k and in_top_k ----------------------------------------------------------------


def _top_k_impl(xp, x, k, tensor):
    n = x.shape[-1]
    if k > n:
        raise InvalidArgumentError(f"top_k: the last axis of '{tensor}' has {n} entries, "
                                   f"fewer than k = {k}")
    if k == 1:  # argmax returns the first maximum: the same tie rule, without a sort
        return xp.astype(xp.argmax(x, axis=-1, keepdims=True), xp.int32)
    order = xp.argsort(x, axis=-1, descending=True, stable=True)
    return xp.astype(order[..., :k], xp.int32)


def _top_k_infer(shapes, in_dtypes, k, tensor):
    shape = shapes[0]
    if in_dtypes[0].is_bool:
        raise TypeError("the input must be numeric, got bool")
    if len(shape) == 0:
        raise ValueError("the input must have rank 1 or more, got a scalar")
    if shape[-1] is not None and shape[-1] < k:
        raise ValueError(f"the last axis has {shape[-1]} entries, fewer than k = {k}")
    return tuple(shape[:-1]) + (k,), dtypes.int32


def _flat_index_impl(xp, indices, x):
    """Positions in ``reshape(x, [-1])`` of per-row ``indices`` along the last axis."""
    n = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    offsets = xp.arange(rows, dtype=xp.int64, device=_device(indices)) * n
    offsets = xp.reshape(offsets, tuple(x.shape[:-1]) + (1,))
    return xp.astype(indices, xp.int64) + offsets


register("top_k", _top_k_impl, _top_k_infer, grad=None)
register("top_k_flat_index", _flat_index_impl,
         lambda s, d: (s[0], dtypes.int64), grad=None)


def _in_top_k_impl(xp, predictions, targets, k=None, *, static_k):
    batch, n = predictions.shape
    k = static_k if k is None else k
    if n == 0:
        return xp.zeros((batch,), dtype=xp.bool, device=_device(predictions))
    t = xp.astype(targets, xp.int64)
    valid = (t >= 0) & (t < n)
    rows = xp.arange(batch, dtype=xp.int64, device=_device(t)) * n
    target = xp.take(xp.reshape(predictions, (-1,)), xp.where(valid, t, 0) + rows)
    larger = xp.sum(xp.astype(predictions > target[:, None], xp.int64), axis=1)
    # TF1 cannot say for a target out of range or a row with a non-finite prediction
    finite = xp.all(xp.isfinite(predictions), axis=1)
    return valid & finite & (larger < k)


def _in_top_k_infer(shapes, in_dtypes, static_k):
    p, t = shapes[0], shapes[1]
    if not in_dtypes[0].is_floating:
        raise TypeError(f"predictions must be floating, got {in_dtypes[0].name}")
    if not in_dtypes[1].is_integer:
        raise TypeError(f"targets must be int32 or int64, got {in_dtypes[1].name}")
    if len(p) != 2 or len(t) != 1:
        raise ValueError(f"predictions must be [batch, classes] and targets [batch], got "
                         f"{tuple(p)} and {tuple(t)}")
    if len(shapes) > 2 and (len(shapes[2]) != 0 or not in_dtypes[2].is_integer):
        raise ValueError("k must be an integer scalar")
    if p[0] is not None and t[0] is not None and p[0] != t[0]:
        raise ValueError(f"predictions have {p[0]} rows, targets {t[0]}")
    return (p[0] if p[0] is not None else t[0],), dtypes.bool_


register("in_top_k", _in_top_k_impl, _in_top_k_infer, grad=None)


# -- unique --------------------------------------------------------------------------


def _unique_parts(xp, x):
    """``(y, idx)``: the distinct values of 1-D ``x`` in order of first appearance, and
    the position in ``y`` of each element of ``x``."""
    if x.shape[0] == 0:
        return x, xp.zeros((0,), dtype=xp.int64, device=_device(x))
    values, inverse = xp.unique_inverse(x)  # values sorted
    order = xp.argsort(inverse, stable=True)  # positions grouped by value, in order
    grouped = xp.take(inverse, order)
    starts = xp.concat([xp.ones((1,), dtype=xp.bool, device=_device(x)),
                        grouped[1:] != grouped[:-1]])
    first = xp.take(order, xp.nonzero(starts)[0])  # first position of each sorted value
    appearance = xp.argsort(first, stable=True)
    return xp.take(values, appearance), xp.take(xp.argsort(appearance), inverse)


def _unique_infer(shapes, in_dtypes, out_idx=None):
    if len(shapes[0]) != 1:
        raise ValueError(f"unique needs a 1-D tensor, got shape {tuple(shapes[0])}")
    return (None,) if out_idx is None else shapes[0], in_dtypes[0] if out_idx is None \
        else out_idx


register("unique", lambda xp, x: _unique_parts(xp, x)[0], _unique_infer, grad=None)
register("unique_index",
         lambda xp, x, out_idx: xp.astype(_unique_parts(xp, x)[1], out_idx.resolve(xp)),
         _unique_infer, grad=None)

