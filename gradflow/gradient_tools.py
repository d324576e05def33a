"""TF1's ``tf.hessians`` and ``tf.grad_pass_through``, built from ``tf.gradients`` and
``tf.custom_gradient``.

>>> h, = gf.hessians(gf.reduce_sum(x ** 3), x)   # shape x.shape + x.shape
>>> y = gf.grad_pass_through(gf.round)(x)        # round forward, identity backward
"""

from __future__ import annotations

import functools
import math

from gradflow.autodiff import gradients
from gradflow.graph import name_scope
from gradflow.ops.array_ops import reshape
from gradflow.ops.functional_ops import custom_gradient
from gradflow.ops.index_ops import stack
from gradflow.ops.math_ops import zeros_like
from gradflow.prim.registry import convert_to_tensor


def _hessian(gradient, x):
    """The Hessian block of one ``x`` from its first gradient, row by row."""
    if x.shape is None or any(d is None for d in x.shape):
        raise ValueError(f"hessians: the shape of '{x.name}' must be known when the graph is "
                         f"built, got {x.shape}")
    dims = [int(d) for d in x.shape]
    flat = reshape(gradient, [-1])
    rows = []
    for j in range(math.prod(dims)):
        row = gradients(flat[j], x)[0]
        rows.append(zeros_like(x) if row is None else row)
    return reshape(stack(rows, axis=0), dims + dims)


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False,
             gate_gradients=False, aggregation_method=None):
    """The Hessian of ``sum(ys)`` with respect to each of ``xs`` (TF1 ``tf.hessians``):
    one tensor of shape ``x.shape + x.shape`` per ``x``, ``None`` where ``ys`` does not
    depend on ``x``. Each ``x``'s shape must be known when the graph is built (the
    rows are built one by one, ``x.size`` of them)."""
    xs = [convert_to_tensor(x) for x in (xs if isinstance(xs, (list, tuple)) else [xs])]
    with name_scope(name):
        firsts = gradients(ys, xs, aggregation_method=aggregation_method)
        return [None if g is None else _hessian(g, x) for g, x in zip(firsts, xs)]


def grad_pass_through(f):
    """``f``, whose gradient is taken to be the identity (TF1 ``tf.grad_pass_through``):
    the gradient reaching each output goes straight to the input in its place, as for a
    straight-through estimator (``grad_pass_through(gf.round)``)."""

    @custom_gradient
    def passed(*args):
        def grad(*dys, variables=None):
            if variables is not None:
                return list(dys), [None] * len(variables)
            return list(dys) if len(dys) > 1 else dys[0]

        return f(*args), grad

    @functools.wraps(f)
    def call(*args):
        return passed(*args)

    return call


__all__ = ["grad_pass_through", "hessians"]
