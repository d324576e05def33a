"""Reverse-mode differentiation that builds the gradient as graph nodes.

``gradients`` walks the graph from the ys back to the xs, calls each op's gradient
rule (``OpDef.grad``, or one registered with ``RegisterGradient``) with the sum of
the gradients of its output, and hands each input its share. How a list of
contributions is summed is the graph compiler's to rewrite
(``passes/gradient_sums.py``, installed with ``rewrite_sums_with``); the walk
itself knows no op by name but ``matmul``, whose gradient needs no ``unbroadcast``.
"""

from __future__ import annotations

from gradflow.graph import Operation, Tensor, topological_order
from gradflow.ops.array_ops import reduce_sum, unbroadcast
from gradflow.ops.math_ops import add, ones_like, zeros_like
from gradflow.prim.registry import convert_to_tensor

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
    return t.dtype is not None and (t.dtype.is_floating or t.dtype.is_complex)


def _reachable(ys, xs_set, stops):
    """``(order, leads)``: the nodes that ``ys`` depend on short of ``stops`` (inputs
    first), and those of them on some path from an x to a y: only they need gradients.
    An x is not a stop: an x that depends on another x passes its gradient on (TF1)."""
    order = topological_order(ys, stops, control=False)
    leads = set(xs_set)
    for node in order:  # inputs come before consumers in post-order
        if node not in leads and any(i in leads for i in node.inputs):
            leads.add(node)
    return order, leads


def add_all(grads):
    """``grads[0] + grads[1] + ...``, added in order."""
    total = grads[0]
    for g in grads[1:]:
        total = add(total, g)
    return total


# The rewrite of each list of contributions before they are added: the graph compiler
# installs its own (``gradflow.passes.gradient_sums``) with ``rewrite_sums_with``.
_SUMS = {"rewrite": None}


def rewrite_sums_with(rewrite):
    """Have ``rewrite(grads, cache) -> grads`` rewrite every list of gradient
    contributions before ``gradients`` adds them (``cache`` is a dict shared by the
    sums of one ``gradients`` call); None adds them as they come. Returns the
    rewrite installed before."""
    before, _SUMS["rewrite"] = _SUMS["rewrite"], rewrite
    return before


def _sum(grads, cache):
    """The sum of the contributions ``grads``, after the installed rewrite."""
    rewrite = _SUMS["rewrite"]
    return add_all(grads if rewrite is None else rewrite(grads, cache))


class UnconnectedGradients:
    """TF1: what ``gradients`` gives for an x that the ys do not depend on."""
    NONE = "none"
    ZERO = "zero"


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE):
    """Symbolic gradients of ``sum(ys)`` with respect to each of ``xs``.

    Returns a list with one tensor per x, or ``None`` where y does not depend on
    x (as TF1 does; zeros with ``unconnected_gradients="zero"``). The result is
    ordinary graph: fetch it, run it on any backend, or differentiate it again.
    ``colocate_gradients_with_ops``, ``gate_gradients`` and ``aggregation_method``
    are accepted for TF1 programs; they change no number here.

    >>> dx, = gf.gradients(gf.reduce_sum(x * x), [x])
    """
    unconnected = getattr(unconnected_gradients, "value", unconnected_gradients)
    if unconnected not in (UnconnectedGradients.NONE, UnconnectedGradients.ZERO):
        raise ValueError(f"gradients: unconnected_gradients must be 'none' or 'zero', got "
                         f"{unconnected_gradients!r}")
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
    order, leads = _reachable(ys, set(xs), stops)
    pending: dict[Tensor, list] = {}
    graph = ys[0].graph
    with graph.name_scope(name):
        for y, gy in zip(ys, grad_ys):
            if not _differentiable(y):
                continue
            gy = ones_like(y) if gy is None else convert_to_tensor(gy, like=y)
            pending.setdefault(y, []).append(gy)
        cache: dict = {}  # shared by the sums of this call (see ``rewrite_sums_with``)
        for node in reversed(order):
            if node not in pending or node in stops:
                continue
            g = pending[node] = [_sum(pending[node], cache)]
            if any(i in leads for i in node.inputs):
                _propagate(node, g[0], leads, pending)
        zero = unconnected == UnconnectedGradients.ZERO
        return [_sum(pending[x], cache) if x in pending else zeros_like(x) if zero else None
                for x in xs]


def _propagate(node, g, leads, pending):
    rule = _gradient_rule(node)
    if rule is None:
        return
    with node.graph.gradient_of(node):
        _add_input_grads(node, rule(node, g), leads, pending)


def _add_input_grads(node, input_grads, leads, pending):
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"the gradient rule of {node.type} returned {len(input_grads)} "
                           f"gradients for {len(node.inputs)} inputs")
    for k, (inp, gi) in enumerate(zip(node.inputs, input_grads)):
        if gi is None or inp not in leads or not _differentiable(inp):
            continue
        if gi.shape is None or inp.shape is None or gi.shape != inp.shape \
                or (None in inp.shape and not _exact_grad(node, k)):
            gi = unbroadcast(gi, inp)
        pending.setdefault(inp, []).append(gi)


def _rank(t, rank):
    return t.shape is not None and len(t.shape) == rank


def _exact_grad(node, k):
    """Whether the gradient of ``node`` for input ``k`` needs no ``unbroadcast``
    although the input's static shape has unknown dimensions."""
    if node.gradient_override is not None:
        return False
    opdef = node.opdef
    if opdef.exact_grad:  # (OpDef.exact_grad, OpDef.broadcasting)
        return True
    if opdef.name == "matmul":  # of matrices: no broadcasting
        return all(_rank(i, 2) for i in node.inputs)
    if opdef.broadcasting:
        return _fills_output(node.inputs[k], [i for j, i in enumerate(node.inputs) if j != k])
    return False


def _fills_output(x, others):
    """Whether the broadcast of ``x`` with ``others`` has ``x``'s run-time shape for sure:
    on every axis, ``x``'s size is known and not 1, or no other input has a size other
    than 1 there."""
    if x.shape is None or any(o.shape is None or len(o.shape) > len(x.shape) for o in others):
        return False
    rank = len(x.shape)
    for axis, d in enumerate(x.shape):
        if d is not None and d != 1:
            continue
        for o in others:
            j = axis - (rank - len(o.shape))
            if j >= 0 and o.shape[j] != 1:
                return False
    return True


def hessian_vector_product(ys, xs, v):
    """``d/dx (grad(ys, x) . v)``: a second-order product, as graph nodes."""
    grads = gradients(ys, xs)
    inner = _sum([reduce_sum(g * vi) for g, vi in zip(grads, v) if g is not None], {})
    return gradients(inner, xs)


