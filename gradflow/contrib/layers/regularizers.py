"""TF1 contrib's regularizers: each maps a weight tensor to a scalar penalty (or None).

>>> h = gf.contrib.layers.fully_connected(x, 256,
...         weights_regularizer=gf.contrib.layers.l2_regularizer(1e-4))
"""

from __future__ import annotations

import numbers

from gradflow.graph import get_default_graph
from gradflow.ops.array_ops import reduce_sum
from gradflow.ops.math_ops import abs as _abs
from gradflow.ops.math_ops import add, multiply
from gradflow.ops.nn_ops import l2_loss
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import GraphKeys, add_to_collection, get_collection

__all__ = ["apply_regularization", "l1_l2_regularizer", "l1_regularizer", "l2_regularizer",
           "sum_regularizer"]


def _check_scale(scale):
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        return scale != 0.0
    return True  # a tensor


def _scaled(scale, penalty, weights, scope, default):
    graph = get_default_graph()
    with graph.name_scope(scope or default):
        factor = convert_to_tensor(scale, dtype=weights.dtype) \
            if not isinstance(scale, numbers.Real) else \
            constant(float(scale), dtype=weights.dtype, name="scale")
        return multiply(factor, penalty(weights), name="value")


def l2_regularizer(scale, scope=None):
    """``weights -> scale * l2_loss(weights)`` (``sum(w ** 2) / 2``); scale 0 turns it off."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: _scaled(scale, l2_loss, convert_to_tensor(weights), scope,
                                   "l2_regularizer")


def l1_regularizer(scale, scope=None):
    """``weights -> scale * sum(|weights|)``; scale 0 turns it off."""
    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: _scaled(scale, lambda w: reduce_sum(_abs(w)),
                                   convert_to_tensor(weights), scope, "l1_regularizer")


def sum_regularizer(regularizer_list, scope=None):
    """A regularizer that adds the penalties of ``regularizer_list`` (``None`` ones
    skipped)."""
    regularizer_list = [r for r in regularizer_list if r is not None]
    if not regularizer_list:
        return None

    def total(weights):
        penalties = [p for p in (r(weights) for r in regularizer_list) if p is not None]
        if not penalties:
            return None
        with get_default_graph().name_scope(scope or "sum_regularizer"):
            out = penalties[0]
            for p in penalties[1:]:
                out = add(out, p)
            return out

    return total


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of ``l1_regularizer(scale_l1)`` and ``l2_regularizer(scale_l2)``."""
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)],
                           scope=scope)


def apply_regularization(regularizer, weights_list=None):
    """The sum of ``regularizer(w)`` over ``weights_list`` (default: the
    ``GraphKeys.WEIGHTS`` collection), also added to
    ``GraphKeys.REGULARIZATION_LOSSES``."""
    if not weights_list:
        weights_list = get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with get_default_graph().name_scope("get_regularization_penalty"):
        penalties = []
        for w in weights_list:
            p = regularizer(w)
            p = constant(0.0, dtype=convert_to_tensor(w).dtype) if p is None else p
            if p.shape is not None and len(p.shape) != 0:
                raise ValueError(f"regularizer must return a scalar Tensor instead of a "
                                 f"Tensor with rank {len(p.shape)}.")
            penalties.append(p)
        total = penalties[0]
        for p in penalties[1:]:
            total = add(total, p)
    add_to_collection(GraphKeys.REGULARIZATION_LOSSES, total)
    return total
