"""Reverse-mode differentiation that builds the gradient as graph nodes."""

from __future__ import annotations

from gradflow.graph import Operation, Tensor
from gradflow.ops.array_ops import unbroadcast
from gradflow.ops.math_ops import add, ones_like
from gradflow.ops.registry import convert_to_tensor

_USER_GRADIENTS: dict[str, object] = {}


class RegisterGradient:
    """Decorator that registers a gradient function under a name (TF1 style).

    >>> @gf.RegisterGradient("MySquare")
    ... def _grad(op, grad):
    ...     return [grad * 2.0 * op.inputs[0]]
    >>> with g.gradient_override_map({"square": "MySquare"}): ...
    """

    def __init__(self, op_type: str):
        self.op_type = op_type

    def __call__(self, fn):
        if self.op_type in _USER_GRADIENTS:
            raise KeyError(f"a gradient named {self.op_type!r} is registered already")
        _USER_GRADIENTS[self.op_type] = fn
        return fn


def _gradient_rule(node):
    override = node.gradient_override
    if override is not None:
        return _USER_GRADIENTS[override]
    return node.opdef.grad


def _differentiable(t) -> bool:
    return t.dtype is not None and t.dtype.is_floating


def _reachable(ys, xs_set):
    """Nodes on some path from an x to a y: only they need gradients."""
    order, seen = [], set()
    for y in ys:  # iterative post-order DFS
        stack = [(y, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            if node not in xs_set:
                stack.extend((i, False) for i in node.inputs if i not in seen)
    leads = set(xs_set)
    for node in order:  # inputs come before consumers in post-order
        if node not in leads and any(i in leads for i in node.inputs):
            leads.add(node)
    return order, leads


def _sum(grads):
    total = grads[0]
    for g in grads[1:]:
        total = add(total, g)
    return total


def gradients(ys, xs, grad_ys=None, name="gradients", stop_gradients=None):
    """Symbolic gradients of ``sum(ys)`` with respect to each of ``xs``.

    Returns a list with one tensor per x, or ``None`` where y does not depend on
    x (as TF1 does). The result is ordinary graph: fetch it, run it on any
    backend, or differentiate it again.

    >>> dx, = gf.gradients(gf.reduce_sum(x * x), [x])
    """
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    single_x = not isinstance(xs, (list, tuple))
    xs = [xs] if single_x else list(xs)
    ys = [convert_to_tensor(y) for y in ys]
    xs = [x._as_graph_tensor() if hasattr(x, "_as_graph_tensor") else x for x in xs]
    for t in ys + xs:
        if not isinstance(t, Tensor) or isinstance(t, Operation):
            raise TypeError(f"gradients: {t!r} is not a tensor")
        if t.graph is not ys[0].graph:
            raise ValueError(f"gradients: '{t.name}' is not in the graph of '{ys[0].name}'")
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    grad_ys = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")
    stops = set(stop_gradients or ())
    order, leads = _reachable(ys, set(xs))
    pending: dict[Tensor, list] = {}
    graph = ys[0].graph
    with graph.name_scope(name):
        for y, gy in zip(ys, grad_ys):
            if not _differentiable(y):
                continue
            gy = ones_like(y) if gy is None else convert_to_tensor(gy, like=y)
            pending.setdefault(y, []).append(gy)
        xs_set = set(xs)
        for node in reversed(order):
            if node not in pending or node in xs_set or node in stops:
                continue
            g = pending[node] = [_sum(pending[node])]
            _propagate(node, g[0], leads, pending)
    return [_sum(pending[x]) if x in pending else None for x in xs]


def _propagate(node, g, leads, pending):
    rule = _gradient_rule(node)
    if rule is None:
        return
    input_grads = rule(node, g)
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"the gradient rule of {node.type} returned {len(input_grads)} "
                           f"gradients for {len(node.inputs)} inputs")
    for inp, gi in zip(node.inputs, input_grads):
        if gi is None or inp not in leads or not _differentiable(inp):
            continue
        if gi.shape is None or inp.shape is None or gi.shape != inp.shape \
                or None in inp.shape:
            gi = unbroadcast(gi, inp)
        pending.setdefault(inp, []).append(gi)


def hessian_vector_product(ys, xs, v):
    """``d/dx (grad(ys, x) . v)``: a second-order product, as graph nodes."""
    grads = gradients(ys, xs)
    from gradflow.ops.array_ops import reduce_sum

    inner = _sum([reduce_sum(g * vi) for g, vi in zip(grads, v) if g is not None])
    return gradients(inner, xs)


