"""The graph the passes rewrite: a private copy of the nodes one run needs.

A plan's passes must not change the user's Graph (other plans, other sessions
and the gradient code read it), so ``PlanGraph`` copies the computed nodes a
run needs into ``PlanNode`` objects that the passes may rewire freely. Leaves
stay the user's own nodes: fed tensors, placeholders, variables (the session's
store is keyed by them), constants and random ops without inputs (the session
keeps their converted values and generators per node).

A ``PlanNode`` answers everything the executor and error messages ask of a
graph node (op, inputs, attributes, static shape, dtype, name, source line).
With the shapes of the values fed, the copy also re-infers every node's static
shape (shape specialization): a batch dimension that was ``None`` becomes the
fed batch size, so the memory plan and the fused kernels see fixed shapes.
"""

from __future__ import annotations

from gradflow.graph import TensorShape, topological_order

LEAF_KINDS = ("placeholder", "variable", "constant", "read_current")


class PlanNode:
    """A node of a plan's private graph (see the module docstring)."""

    __slots__ = ("opdef", "inputs", "control_inputs", "attrs", "shape", "dtype", "name",
                 "source", "origin", "graph", "index")

    def __init__(self, opdef, inputs, attrs, shape, dtype, name, source, control_inputs=(),
                 origin=None, graph=None, index=-1):
        self.opdef = opdef
        self.inputs = tuple(inputs)
        self.control_inputs = tuple(control_inputs)
        self.attrs = attrs
        self.shape = TensorShape(shape) if shape is not None else None
        self.dtype = dtype
        self.name = name
        self.source = source
        self.origin = origin  # the user's node this one stands for, if any
        self.graph = graph
        self.index = index

    @classmethod
    def copy_of(cls, node, inputs=None, control_inputs=None):
        """A plan node standing for the graph node ``node`` (or another plan node)."""
        return cls(node.opdef, node.inputs if inputs is None else inputs, node.attrs,
                   node.shape, node.dtype, node.name, node.source,
                   node.control_inputs if control_inputs is None else control_inputs,
                   user_node(node), node.graph, node.index)

    @classmethod
    def standing_for(cls, node, opdef, inputs, attrs, shape=None, dtype=None, name=None,
                     control_inputs=()):
        """A new plan node of ``opdef`` that a pass makes in place of ``node`` (or of
        what ``node`` starts): it keeps ``node``'s source line and user node, so errors
        name the user's op, and its name, shape and dtype unless given."""
        return cls(opdef, inputs, attrs, node.shape if shape is None else shape,
                   node.dtype if dtype is None else dtype, name or node.name, node.source,
                   control_inputs, origin=node.origin, graph=node.graph, index=node.index)

    @property
    def type(self) -> str:
        return self.opdef.name

    def describe(self) -> str:
        return f"{self.opdef.name} '{self.name}' (created at {self.source})"

    def __repr__(self) -> str:
        shape = tuple(self.shape) if self.shape is not None else "unknown"
        return f"<plan node {self.opdef.name} '{self.name}' shape={shape}>"


def user_node(node):
    """The user's graph node that ``node`` stands for: itself, or a plan copy's origin."""
    origin = getattr(node, "origin", None)
    return node if origin is None else origin


def is_leaf(node, fed) -> bool:
    """Whether ``node`` stays the user's own object in a plan graph (unless it runs
    after a node that does not: a constant made under control dependencies)."""
    kind = node.opdef.kind
    return node in fed or kind in LEAF_KINDS or (kind == "random" and not node.inputs)


class PlanGraph:
    """The nodes one run needs, in an order where inputs come first.

    ``outputs`` are the nodes whose values the run returns, in the order of the
    fetches; passes replace entries of it when they replace a fetched node.
    """

    def __init__(self, fetches, fed, feed_shapes=None):
        self.fed = set(fed)
        copies = {}
        shapes = dict(zip(fed, feed_shapes)) if feed_shapes is not None else {}
        self.feed_shapes = {t: TensorShape(s) for t, s in shapes.items()}
        for node in topological_order(fetches, self.fed):
            if node in self.fed or (is_leaf(node, self.fed) and not any(
                    i in copies for i in node.inputs + node.control_inputs)):
                continue
            inputs = [copies.get(i, i) for i in node.inputs]
            control = [copies.get(i, i) for i in node.control_inputs]
            copy = PlanNode.copy_of(node, inputs, control)
            if shapes:
                copy.shape = specialized_shape(copy, shapes)
            copies[node] = copy
        self.outputs = [copies.get(f, f) for f in fetches]

    def nodes(self):
        """Every node the outputs need, inputs first (leaves included)."""
        return topological_order(self.outputs, self.fed)

    def consumers(self):
        """``{node: [nodes reading its value]}`` over the nodes the outputs need."""
        readers = {}
        for node in self.nodes():
            for inp in node.inputs:
                readers.setdefault(inp, []).append(node)
        return readers

    def replace(self, mapping, extra=()):
        """Rewire every node (and the outputs) from each key of ``mapping`` to its value;
        ``extra`` are new nodes, not yet reachable, whose inputs need the same.

        Plan nodes are private to this graph, so their inputs are changed in place.
        """
        if not mapping:
            return

        def final(node):
            while node in mapping:
                node = mapping[node]
            return node

        for node in list(self.nodes()) + list(extra):
            if isinstance(node, PlanNode):
                node.inputs = tuple(final(i) for i in node.inputs)
                node.control_inputs = tuple(final(i) for i in node.control_inputs)
        self.outputs = [final(o) for o in self.outputs]


def rewrite_patterns(graph, starts, forward, backward, closed, rewrite) -> None:
    """The driver of the passes that replace a pattern and its gradient by a fused pair
    (attention, layer norm, GELU): for each node of ``graph`` that ``starts(node)`` and no
    earlier match took, ``forward(node, readers)`` finds the pattern (a dict, or None),
    ``backward(found, readers)`` its gradient (``found["grad"]``), and where
    ``closed(found, readers, fetched)`` (nothing outside reads its inner values),
    ``rewrite(found, mapping, made, readers)`` adds the replacements; then the graph
    takes them all at once."""
    readers = graph.consumers()
    fetched = set(graph.outputs)
    mapping, made = {}, []
    for node in graph.nodes():
        if node in mapping or not starts(node):
            continue
        found = forward(node, readers)
        if found is None:
            continue
        found["grad"] = backward(found, readers)
        if closed(found, readers, fetched):
            rewrite(found, mapping, made, readers)
    graph.replace(mapping, extra=made)


def pair_is_closed(found, readers, fetched, end, grad_ends):
    """``closed`` of ``rewrite_patterns`` for a pattern whose replaced nodes are
    ``found["inner"]`` (and its gradient's ``found["grad"]["inner"]``) and whose results
    are ``found[end]`` (and the gradient's ``grad_ends``): no replaced node is fetched or
    has control inputs, and each is read only by the pattern's nodes or results."""
    grad = found["grad"]
    inner = set(found["inner"])
    ends = {found[end]}
    if grad is not None:
        inner |= set(grad["inner"])
        ends |= {grad[k] for k in grad_ends}
    allowed = inner | ends
    return all(n not in fetched and not n.control_inputs
               and all(r in allowed for r in readers.get(n, [])) for n in inner)


def specialized_shape(node, shapes):
    """The static shape of ``node`` re-inferred from the fed shapes, or its own shape
    where the rule cannot say more (a refinement never contradicts the graph's)."""
    from gradflow.prim.registry import _infer

    known = node.shape
    kind = node.opdef.kind
    shaped_by_inputs = kind == "compute" or (kind == "random" and node.inputs)
    if not shaped_by_inputs or (known is not None and known.is_fully_defined()):
        return known
    inputs = [_ShapeView(i, shapes) for i in node.inputs]
    try:
        shape, _ = _infer(node.opdef, inputs, node.attrs)
    except Exception:  # noqa: BLE001 - the run reports a real mismatch with its own error
        return known
    if shape is None:
        return known
    shape = TensorShape(shape)
    if known is not None and (len(shape) != len(known) or any(
            k is not None and k != s for k, s in zip(known, shape))):
        return known
    return shape


class _ShapeView:
    """An input as the shape rule sees it, with its fed or specialized shape."""

    __slots__ = ("shape", "dtype", "opdef", "attrs")

    def __init__(self, node, shapes):
        shape = shapes.get(node, node.shape)
        self.shape = TensorShape(shape) if shape is not None else None
        self.dtype = node.dtype
        self.opdef = node.opdef
        self.attrs = node.attrs
