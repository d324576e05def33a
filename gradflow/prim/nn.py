"""The softmax primitives, and the run-time checks of the losses' labels.

``softmax`` and ``log_softmax`` are primitives (not composites of exp and sum) so that
the max shift keeps them finite. TF1's functions over them are in
``gradflow.ops.nn_ops``.
"""

from __future__ import annotations

import math

from gradflow.errors import InvalidArgumentError
from gradflow.prim import call, rules
from gradflow.prim.registry import register


def _softmax_infer(shapes, in_dtypes, axis):
    rules.require_floating(in_dtypes[0], "logits")
    return shapes[0], in_dtypes[0]


def _softmax_impl(xp, x, axis):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_impl(xp, x, axis):
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _sum_kept(x, axis):
    """``reduce_sum(x, axis, keepdims=True)`` for the int ``axis`` of a softmax node."""
    axes = (axis,) if x.shape is None else rules.normalize_axis(axis, len(x.shape))
    return call.reduce_sum(x, axes=axes, keepdims=True)


def _softmax_grad(n, g):  # dx = y (g - sum(g y))
    return [call.multiply(n, call.subtract(g, _sum_kept(call.multiply(g, n), n.attrs["axis"])))]


def _log_softmax_grad(n, g):  # dx = g - softmax(x) sum(g)
    e = call.exp(n)
    return [call.subtract(g, call.multiply(e, _sum_kept(g, n.attrs["axis"])))]


# Primitives (not composites of exp/sum) so the max shift keeps them finite.
register("softmax", _softmax_impl, _softmax_infer, grad=_softmax_grad)
register("log_softmax", _log_softmax_impl, _softmax_infer, grad=_log_softmax_grad)

def _check_leading_dims_impl(xp, x, like, message):
    if tuple(x.shape) != tuple(like.shape[:x.ndim]):
        raise InvalidArgumentError(message.format(got=tuple(x.shape), want=tuple(like.shape)))
    return x


# TF1 refuses labels and logits of different batch sizes; without the check a broadcast
# in the loss's arithmetic fails naming its internal ops (or, worse, succeeds)
register("check_leading_dims", _check_leading_dims_impl,
         lambda s, d, message: (s[0], d[0]), grad=None, check=True,
         static_check=lambda shapes: shapes[0] == shapes[1][:len(shapes[0])])


def _check_label_range_impl(xp, labels, depth, message):
    """``labels``, after one min/max check that every label is a class of ``depth``."""
    if math.prod(labels.shape) == 0:
        return labels
    low, high = xp.min(labels), xp.max(labels)
    if bool((low < 0) | (high >= depth)):  # one transfer to the host in the common case
        bad = int(low) if int(low) < 0 else int(high)
        raise InvalidArgumentError(message.replace("{value}", str(bad)))
    return labels


# TF1 on the CPU refuses labels outside [0, classes); a one-hot of them would be all zeros
# and the loss plausible but wrong. The check is one min and one max per run.
register("check_label_range", _check_label_range_impl,
         lambda s, d, depth, message: (s[0], d[0]), grad=None, check=True)


