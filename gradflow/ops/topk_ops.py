"""``tf.nn.top_k`` and ``tf.nn.in_top_k``.

The registry's ops have one output each, so ``top_k`` is built from two: a
primitive that finds the indices (a stable descending ``argsort``, so ties keep
the lower index first) and a ``gather`` of the values from the flattened
input. The gather's gradient is the backends' scatter-add, which puts the
values' gradient back where they came from.
"""

from __future__ import annotations

import collections
import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Tensor
from gradflow.prim.registry import apply, convert_to_tensor, register

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
TopKV2.__doc__ = "The result of ``top_k``: ``values`` and their int32 ``indices``."


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


def _static_int(value, what):
    from gradflow.ops.array_ops import static_value

    static = static_value(value)
    if static is None or static.ndim != 0 or static.dtype.kind not in "iu":
        name = value.name if isinstance(value, Tensor) else repr(value)
        raise TypeError(f"{what}: k must be an int known when the graph is built, got {name}")
    return int(static)


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF1 names
    """The ``k`` largest entries of the last axis of ``input`` and their indices
    (TF1 ``tf.nn.top_k``): a ``TopKV2(values, indices)`` namedtuple, each of shape
    ``input.shape[:-1] + (k,)``, ``indices`` int32.

    Values come largest first; equal values keep the lower index first, as TF.
    ``sorted=False`` (TF: any order) gives the same sorted result. The gradient
    of ``values`` goes back to the entries they were taken from.

    >>> values, indices = gf.nn.top_k(logits, k=5)
    """
    x = convert_to_tensor(input)
    k = _static_int(k, "top_k")
    if k < 0:
        raise ValueError(f"top_k: k must not be negative, got {k}")
    if x.shape is not None and len(x.shape) == 0:
        raise ValueError(f"top_k: the input '{x.name}' is a scalar; it needs rank 1 or more")
    if x.shape is not None and x.shape[-1] is not None and x.shape[-1] < k:
        raise ValueError(f"top_k: the last axis of '{x.name}' (shape {tuple(x.shape)}) has "
                         f"{x.shape[-1]} entries, fewer than k = {k}")
    from gradflow.ops.array_ops import reshape

    indices = apply("top_k", [x], name=name or "TopKV2", k=k, tensor=x.name)
    flat = apply("top_k_flat_index", [indices, x])
    values = apply("gather", [reshape(x, (-1,)), flat], axis=0, validate=False)  # in range
    return TopKV2(values, indices)


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


def in_top_k(predictions, targets, k, name=None):
    """Whether each target's prediction is among the ``k`` largest of its row (TF1
    ``tf.nn.in_top_k``): bool ``[batch]`` for ``predictions`` ``[batch, classes]`` and
    integer ``targets`` ``[batch]``.

    A target is in when fewer than ``k`` classes have a strictly larger prediction,
    so ties at the boundary count as in. A target outside ``[0, classes)`` or a row
    with a non-finite prediction gives False, as in TF1. ``k`` is an int or an
    integer scalar tensor.

    >>> correct = gf.reduce_mean(gf.cast(gf.nn.in_top_k(logits, labels, 5), gf.float32))
    """
    from gradflow.ops.array_ops import static_value

    p = convert_to_tensor(predictions)
    t = convert_to_tensor(targets)
    for tensor, rank, what in ((p, 2, "predictions"), (t, 1, "targets")):
        if tensor.shape is not None and len(tensor.shape) != rank:
            raise ValueError(f"in_top_k: {what} '{tensor.name}' must have rank {rank}, got "
                             f"shape {tuple(tensor.shape)}")
    if p.shape is not None and t.shape is not None and None not in (p.shape[0], t.shape[0]) \
            and p.shape[0] != t.shape[0]:
        raise ValueError(f"in_top_k: predictions '{p.name}' have {p.shape[0]} rows, targets "
                         f"'{t.name}' have {t.shape[0]}")
    static = static_value(k)
    if static is not None and static.ndim == 0 and static.dtype.kind in "iu":
        return apply("in_top_k", [p, t], name=name or "InTopKV2", static_k=int(static))
    k = convert_to_tensor(k)
    return apply("in_top_k", [p, t, k], name=name or "InTopKV2", static_k=None)
