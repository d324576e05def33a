"""What the ops whose value is no array stand on: the ``variant`` dtype, the constructs
that hold sub-graphs (``cond``, ``while_loop``, ``py_func``'s several results), the
``tuple_get`` primitive that picks one element of such a value, and the bookkeeping of
which construct owns which node.

A construct is one node of kind ``"call"`` whose ``info`` attribute (a ``Construct``)
compiles and runs its sub-graphs (``bind``) and builds the gradients of its outputs
(``output_grad``). Its value is a Python tuple; ``tuple_get`` nodes pick its outputs.
Each picker takes the construct's inputs as well, so that its gradient rule can send
gradients to the tensors the construct captured.

Host ops of kind ``"call"`` whose builder states the result's shape and dtype (queues,
readers, parsers, iterators) use ``declared`` as their shape/dtype rule.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation, Tensor
from gradflow.prim.registry import apply, register


class _Variant(dtypes.DType):
    """The dtype of values that are no array (TF's ``variant``): the tuple a
    control-flow node computes, the ``None`` of a print or an assertion. It is not
    floating, so no gradient or numerics check touches such a value, and such a
    node can be fed to a sub-plan like any other."""

    __slots__ = ()

    @property
    def as_numpy_dtype(self):
        return np.object_

    def resolve(self, xp):
        raise TypeError("a variant value (a tuple of a control-flow node) is no array")

    def __reduce__(self):
        return (_variant, ())


def _variant():
    return VARIANT


VARIANT = _Variant("variant", "v", 0)


def declared(shapes, in_dtypes, shape, dtype, **_):
    """The shape/dtype rule of a host op whose builder gives both as attributes."""
    return shape, dtype


# -- which construct owns which node ---------------------------------------------

def owners(graph) -> dict:
    """``{node: (construct, side)}`` of the nodes internal to the constructs of ``graph``
    (a ``cond`` branch, "true"/"false", or a ``while_loop``'s "body"/"cond"), kept on the
    graph: its values are the graph's nodes, so a weak map keyed by the graph would never
    let it go."""
    return graph.layer_state.setdefault("construct_owners", {})


def is_control_flow_internal(node) -> bool:
    """Whether ``node`` was made for a sub-graph of a ``cond`` or ``while_loop`` (a
    branch, a loop body or condition, a loop's stand-in, their gradients)."""
    return node in owners(node.graph)


# nodes a sub-graph never computes itself: the outer plan reads them (a variable's value
# at the start of the run, or at its commit) and feeds them in
OUTSIDE_KINDS = ("variable", "placeholder", "read_current")


def claim(info, side, internal, window=()):
    """Record that ``internal`` belong to ``side`` of the construct ``info`` (an
    enclosing construct, built later, takes over), and the other nodes made in its
    ``window`` too, unless a nested construct has them."""
    found = owners(info.node.graph)
    for n in internal:
        found[n] = (info, side)
    for n in window:
        if n not in found and n.opdef.kind not in OUTSIDE_KINDS:
            found[n] = (info, "window")


class Recorder:
    """Collects the nodes a graph gains inside its ``with recorder.recording():`` blocks."""

    def __init__(self, graph):
        self.graph = graph
        self.nodes: set = set()

    @contextmanager
    def recording(self):
        start = len(self.graph.nodes)
        try:
            yield self
        finally:
            self.nodes.update(self.graph.nodes[start:])


def is_value(t) -> bool:
    """Whether ``t`` is a tensor with an array value (no operation, no variant)."""
    return isinstance(t, Tensor) and not isinstance(t, Operation) and t.dtype is not None \
        and t.dtype is not VARIANT


def differentiable(t) -> bool:
    return is_value(t) and t.dtype.is_floating


def partials(ys, xs, grad_ys):
    """The partial derivatives of ``ys`` (weighted by ``grad_ys``) in each of ``xs``: an x
    that depends on another x is held constant, since the outer chain rule adds that
    path (``gradients`` itself differentiates through such an x, as TF1 does)."""
    # A construct's gradient is the gradient of its sub-graphs, which the gradient walker
    # (gradflow.autodiff, above prim and ops: it walks their records) builds. It is asked
    # for only while autodiff runs, so the import runs after autodiff has loaded.
    from gradflow.autodiff import gradients

    return gradients(ys, xs, grad_ys=grad_ys, stop_gradients=xs)


def analyze(outputs, created, boundary, allowed):
    """Split what ``outputs`` depend on into the sub-graph's parts.

    Returns ``(internal, captured, stash, assigns)``: the nodes created by the
    sub-graph's function (``created``) that ``outputs`` need, computed by the
    sub-plan; the outside tensors they read (inputs of the control-flow node);
    ``[(node, info)]`` for nodes internal to an *allowed* construct (the forward
    pass of a gradient), fed from that construct's exports; and the assignments
    among the internal nodes. ``boundary`` nodes (a loop's stand-ins) are fed
    and not followed. Variables and placeholders are always captured, so the
    outer plan reads (and initializes) them.
    """
    found = None
    internal, captured, stash, assigns = set(), {}, {}, []
    stack = [o for o in outputs if o is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in boundary:
            continue
        kind = node.opdef.kind
        if node in created and kind not in OUTSIDE_KINDS:
            internal.add(node)
            if kind == "assign":
                assigns.append(node)
            stack.extend(node.inputs)
            stack.extend(node.control_inputs)
            continue
        if kind == "group":  # an outside operation: what it runs is computed outside
            stack.extend(node.inputs)
            stack.extend(node.control_inputs)
            continue
        if found is None:
            found = owners(node.graph)
        owner = found.get(node)
        if owner is not None and owner in allowed:
            stash[node] = owner[0]
        else:
            captured[node] = None
    by_index = lambda t: t.index
    assigns.sort(key=by_index)
    return (internal, sorted(captured, key=by_index),
            sorted(stash.items(), key=lambda item: item[0].index), assigns)


def run_sub(plan, feeds, store, what):
    """Run a sub-plan; an error names the node inside it that failed."""
    try:
        return plan.fn(feeds, store)
    except Exception as err:
        inner = plan.node_at_failure(err.__traceback__)
        if inner is None:
            raise
        raise InvalidArgumentError(f"{what}: {inner.type} '{inner.name}' failed: {err} "
                                   f"(created at {inner.source})") from err


class Branch:
    """One traced sub-graph of a construct: a cond's branch, a loop's condition or body."""

    def __init__(self, outputs, internal, captured, stash, allowed, assigns):
        self.outputs = outputs  # flat: a tensor, an operation or None per slot
        self.internal = internal
        self.captured = captured
        self.stash = stash  # [(internal node of a forward construct, that construct)]
        self.allowed = allowed  # {(construct, side)} whose internal values it may read
        self.assigns = assigns



# -- static shapes of values that cross a construct's boundary --------------------


def compatible_shape(a, b):
    """The most specific static shape that both ``a`` and ``b`` fit."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def fits(shape, invariant) -> bool:
    """Whether the static ``shape`` is at least as specific as ``invariant``."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or s == i for s, i in zip(shape, invariant))


def compatible(shape, other) -> bool:
    """Whether a value of static ``shape`` may have a run-time shape that fits ``other``."""
    if shape is None or other is None:
        return True
    return len(shape) == len(other) and all(
        a is None or b is None or a == b for a, b in zip(shape, other))


def fmt_shape(shape):
    return "unknown" if shape is None else str(tuple(shape))


# -- constructs and the picking of their outputs ----------------------------------


class Construct:
    """What a control-flow node holds (``node.attrs["info"]``): its sub-graphs,
    and the internal values it exports to the nodes of its gradient."""

    kind = "construct"

    def __init__(self, name):
        self.name = name
        self.node = None
        self.exports: list = []  # [(node, side)], append-only
        self._export_index: dict = {}

    def export(self, node, side) -> int:
        """The position of ``node`` among the exports (exporting it if new)."""
        index = self._export_index.get(node)
        if index is None:
            index = self._export_index[node] = len(self.exports)
            self.exports.append((node, side))
        return index

    def output_grad(self, picker, g):
        """Gradients for ``picker.inputs`` (``[node] + node.inputs``) given ``g``."""
        return [None] * len(picker.inputs)

    def __repr__(self):
        return f"<{self.kind} '{self.name}'>"


def call_impl(run_state, node):
    """The impl of a construct's node: its ``info`` compiles and runs the sub-graphs."""
    return node.attrs["info"].bind(run_state, node)


def construct_infer(shapes, in_dtypes, info):
    return None, VARIANT


def _tuple_get_infer(shapes, in_dtypes, index, shape, dtype):
    return shape, dtype


def _tuple_get_impl(run_state, node):
    index = node.attrs["index"]
    return lambda value, *rest: value[index]


def _tuple_get_grad(node, g):
    return node.inputs[0].attrs["info"].output_grad(node, g)


register("tuple_get", _tuple_get_impl, _tuple_get_infer, grad=_tuple_get_grad, kind="call",
         takes_strings=True)  # picks from a tuple; a string input is only carried along


def pick(node, index, shape, dtype, extra=(), name=None):
    """The ``index``-th element of the tuple value of ``node``."""
    return apply("tuple_get", [node, *node.inputs, *extra], name=name, index=index,
                 shape=None if shape is None else tuple(shape), dtype=dtype)
