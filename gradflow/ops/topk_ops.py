"""``tf.nn.top_k`` and ``tf.nn.in_top_k``.

The registry's ops have one output each, so ``top_k`` is built from two: a
primitive that finds the indices (a stable descending ``argsort``, so ties keep
the lower index first) and a ``gather`` of the values from the flattened
input. The gather's gradient is the backends' scatter-add, which puts the
values' gradient back where they came from. The primitives are in
``gradflow.prim.sort``.
"""

from __future__ import annotations

import collections

from gradflow.graph import Tensor
from gradflow.ops.array_ops import reshape, static_value
from gradflow.prim import sort as _sort  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, convert_to_tensor

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
TopKV2.__doc__ = "The result of ``top_k``: ``values`` and their int32 ``indices``."


def _static_int(value, what):
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
    indices = apply("top_k", [x], name=name or "TopKV2", k=k, tensor=x.name)
    flat = apply("top_k_flat_index", [indices, x])
    values = apply("gather", [reshape(x, (-1,)), flat], axis=0, validate=False)  # in range
    return TopKV2(values, indices)


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
