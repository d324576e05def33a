"""Reverse-mode differentiation that builds the gradient as graph nodes."""

from __future__ import annotations

from gradflow.graph import Operation, Tensor, topological_order
from gradflow.ops.array_ops import matmul, unbroadcast
from gradflow.ops.index_ops import concat, stack
from gradflow.ops.math_ops import add, ones_like, zeros_like
from gradflow.prim.registry import apply, convert_to_tensor

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


def _sum(grads, stacks=None):
    """The sum of ``grads``. Contributions that are sums over rows (``a^T g`` of
    matmuls, ``gather_grad`` on axis 0, ``unbroadcast`` over a leading axis) of the
    same kind become one op over their inputs concatenated along the rows: the
    kernel gradient of an unrolled RNN is one large matmul instead of one small
    matmul and one add per step. ``stacks`` caches the concatenations, so that
    the gradients of kernel and bias share theirs."""
    grads = _join_slice_grads(_merge_same_slice_grads(grads, stacks))
    if len(grads) >= _MIN_STACK:
        groups: dict = {}
        for g in grads:
            key = _stack_key(g)
            groups.setdefault(key if key is not None else ("single", g), []).append(g)
        if len(groups) < len(grads):
            stacks = {} if stacks is None else stacks
            summed = []
            for group in groups.values():
                if len(group) >= _MIN_STACK:
                    summed.append(_stacked(group, stacks))
                else:
                    summed.extend(group)
            grads = summed
    total = grads[0]
    for g in grads[1:]:
        total = add(total, g)
    return total


_MIN_STACK = 3
_FULL = ("slice", None, None, None)


def _slice_part(g):
    """``(axis, start, stop, is_index)`` when ``g`` is the gradient of ``x[..., part, ...]``
    that picks one int or one unit-step slice on a single axis of known size, else None."""
    if g.opdef.name != "getitem_grad":
        return None
    x, key = g.inputs[1], g.attrs["key"]
    if x.shape is None or None in key or len(key) != len(x.shape):
        return None
    picked = [(axis, k) for axis, k in enumerate(key) if k != _FULL]
    if len(picked) != 1 or x.shape[picked[0][0]] is None:
        return None
    axis, k = picked[0]
    size = x.shape[axis]
    if isinstance(k, int):
        return axis, k % size, k % size + 1, True
    if k[3] not in (None, 1):
        return None
    start, stop, _ = slice(k[1], k[2]).indices(size)
    return (axis, start, stop, False) if stop > start else None


def _merge_same_slice_grads(grads, stacks):
    """Contributions ``getitem_grad(g_k, x)`` of the same slice of the same ``x`` as one
    ``getitem_grad(sum of g_k, x)`` (the op is linear in ``g``): an RNN cell that reads
    ``kernel[:k]`` at every step then gets one stacked matmul for that slice, and one
    zero-padded array of the kernel's size instead of one per step."""
    if len(grads) < 2:
        return grads
    groups: dict = {}
    for k, g in enumerate(grads):  # the same tensor may come twice (x + x)
        key = ("one", k)
        if g.opdef.name == "getitem_grad":
            try:
                key = (g.inputs[1], g.attrs["key"])
                hash(key)
            except TypeError:
                key = ("one", k)
        groups.setdefault(key, []).append(g)
    if len(groups) == len(grads):
        return grads
    merged = []
    for (x, key), group in groups.items():
        if len(group) == 1:
            merged.append(group[0])
        else:
            inner = _sum([g.inputs[0] for g in group], stacks)
            merged.append(apply("getitem_grad", [inner, x], key=key))
    return merged


def _join_slice_grads(grads):
    """The gradients of slices that together tile ``x`` along one axis (``unstack``,
    ``split``) as one ``stack``/``concat`` of the slice gradients, instead of a sum of
    zero-padded arrays of ``x``'s full size, one per slice."""
    if len(grads) < 2:
        return grads
    parts = [_slice_part(g) for g in grads]
    if None in parts or len({(p[0], p[3]) for p in parts}) != 1 \
            or len({g.inputs[1] for g in grads}) != 1:
        return grads
    axis, is_index = parts[0][0], parts[0][3]
    ordered = sorted(zip(parts, grads), key=lambda pg: pg[0][1])
    edges = [p[1:3] for p, _ in ordered]
    size = grads[0].inputs[1].shape[axis]
    if edges[0][0] != 0 or edges[-1][1] != size \
            or any(a[1] != b[0] for a, b in zip(edges, edges[1:])):
        return grads
    pieces = [g.inputs[0] for _, g in ordered]
    return [stack(pieces, axis) if is_index else concat(pieces, axis)]


def _rank(t, rank):
    return t.shape is not None and len(t.shape) == rank


def _stack_key(g):
    """What must agree for ``g`` to be stacked with other contributions, or None."""
    name, ins = g.opdef.name, g.inputs
    if name == "matmul" and g.attrs["transpose_a"] and not g.attrs["transpose_b"] \
            and _rank(ins[0], 2) and _rank(ins[1], 2) \
            and None not in (ins[0].shape[1], ins[1].shape[1]):
        return (name, ins[0].shape[1], ins[1].shape[1], ins[0].dtype, ins[1].dtype)
    if name == "gather_grad" and g.attrs["axis"] == 0 and _rank(ins[1], 1) \
            and ins[0].shape is not None and len(ins[0].shape) >= 1 \
            and None not in ins[0].shape[1:]:
        return (name, tuple(ins[0].shape[1:]), ins[0].dtype, ins[1].dtype, ins[2],
                g.attrs.get("validate", True))
    if name == "unbroadcast" and ins[0].shape is not None and ins[1].shape is not None \
            and len(ins[0].shape) > len(ins[1].shape) and None not in ins[0].shape[1:]:
        return (name, tuple(ins[0].shape[1:]), ins[0].dtype, ins[1])
    return None


def _stacked(group, stacks):
    """One op over the inputs of ``group`` concatenated along axis 0, in the order the
    graph computes them (contributions arrive last first): an RNN's states then stack
    in time order, as the layer above stacks its outputs, and the two stacks can share
    their rows (``passes/shared_stacks.py``)."""
    group = group[::-1]

    def rows(k):
        parts = tuple(g.inputs[k] for g in group)
        if parts not in stacks:
            stacks[parts] = concat(list(parts), 0)
        return stacks[parts]

    first = group[0]
    if first.opdef.name == "matmul":
        return matmul(rows(0), rows(1), transpose_a=True)
    if first.opdef.name == "gather_grad":
        return apply("gather_grad", [rows(0), rows(1), first.inputs[2]], axis=0,
                     validate=first.attrs.get("validate", True))
    return unbroadcast(rows(0), first.inputs[1])


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
        stacks: dict = {}
        for node in reversed(order):
            if node not in pending or node in stops:
                continue
            g = pending[node] = [_sum(pending[node], stacks)]
            if any(i in leads for i in node.inputs):
                _propagate(node, g[0], leads, pending)
        zero = unconnected == UnconnectedGradients.ZERO
        return [_sum(pending[x], stacks) if x in pending else zeros_like(x) if zero else None
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
    from gradflow.ops.array_ops import reduce_sum

    inner = _sum([reduce_sum(g * vi) for g, vi in zip(grads, v) if g is not None])
    return gradients(inner, xs)


