"""Common-subexpression elimination: nodes that must compute the same value become one.

Two computed nodes are one when they have the same op, read the same values
(the same input nodes, counting nodes merged before as the same), run after
the same control inputs and have equal attributes. Only ``"compute"`` ops
qualify: random draws, calls (control flow, callbacks, collectives),
assignments and the other stateful kinds each stay their own.

Attributes compare by value where they are plain data (None, bools, ints,
strings, floats by their exact bits, dtypes, and tuples, lists, slices and
dicts of those) and by identity otherwise (a ``HostValue``, a function, an
array). A float attribute that is NaN makes its node unique, since NaN equals
nothing. Two constant leaves of at most ``MAX_CONSTANT_ELEMENTS`` elements are
one value when their dtypes, shapes and bytes are equal (``-0.0`` and ``0.0``
differ, as they should).

The pass-through ops (``OpDef.pass_through``: ``identity``, ``stop_gradient``, an
unfed ``placeholder_with_default``) return their input itself at run time,
so they are removed: their readers read the input. A pass-through that runs
after control inputs stays, since removing it would drop them.

A fetched node is never removed nor merged away: its duplicates are mapped to
it instead, and two fetched duplicates both stay, so every fetch keeps a value
of its own.
"""

from __future__ import annotations

import numpy as np

from gradflow.dtypes import DType
from gradflow.passes.ir import PlanNode

# ops whose run-time value is their first input itself
# constant leaves up to this size are compared by value
MAX_CONSTANT_ELEMENTS = 64


class _Unique(Exception):
    """An attribute that equals nothing, not even itself (a NaN)."""


def eliminate_common_subexpressions(graph) -> None:
    """Merge the duplicate computed nodes of ``graph`` (a PlanGraph) and remove its
    pass-through nodes (see the module docstring)."""
    fetched = set(graph.outputs)
    cls = {}  # node -> the node standing for its class of equal values
    members = {}  # class node -> the nodes of the class, in topological order
    classes = {}  # key -> class node
    for node in graph.nodes():
        if _is_pass_through(node, graph, fetched):
            cls[node] = cls.get(node.inputs[0], node.inputs[0])
            members.setdefault(cls[node], [cls[node]]).append(node)
            continue
        key = _key(node, graph, cls)
        if key is None:
            continue
        head = classes.setdefault(key, node)
        if head is not node:
            cls[node] = head
            members.setdefault(head, [head]).append(node)
    mapping = {}
    for group in members.values():
        target = next((m for m in group if m in fetched), group[0])
        for member in group:
            if member is not target and member not in fetched:
                mapping[member] = target
    graph.replace(mapping)


def _is_pass_through(node, graph, fetched):
    """Whether ``node`` is a pass-through op this pass may remove."""
    return (isinstance(node, PlanNode) and node.opdef.pass_through
            and node.opdef.kind == "compute" and len(node.inputs) == 1
            and not node.control_inputs and node not in fetched and node not in graph.fed)


def _key(node, graph, cls):
    """What must be equal for ``node`` to be merged with another node, or None where
    it must stay unique."""
    if node in graph.fed:
        return None
    kind = node.opdef.kind
    if kind == "constant":
        return _constant_key(node)
    if kind != "compute" or not isinstance(node, PlanNode):
        return None
    try:
        attrs = tuple(sorted((str(k), _frozen(v)) for k, v in node.attrs.items()))
    except _Unique:
        return None
    inputs = tuple(cls.get(i, i) for i in node.inputs)
    control = tuple(cls.get(c, c) for c in node.control_inputs)
    return ("op", node.opdef, inputs, control, attrs)


def _constant_key(node):
    """The key of a small constant without control inputs: its value."""
    if node.control_inputs:
        return None
    value = node.attrs.get("value")
    array = getattr(value, "array", None)
    if not isinstance(array, np.ndarray) or array.size > MAX_CONSTANT_ELEMENTS:
        return None
    dtype = node.dtype.name if isinstance(node.dtype, DType) else None
    return ("constant", dtype, array.dtype.str, array.shape, np.ascontiguousarray(array).tobytes())


def _frozen(value):
    """A hashable stand-in for the attribute ``value``: equal for equal plain data,
    the object's identity otherwise. Raises ``_Unique`` for a NaN."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value), value)
    if isinstance(value, float):
        if value != value:
            raise _Unique
        return (type(value), value.hex())
    if isinstance(value, DType):
        return (DType, value.name)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_frozen(v) for v in value))
    if isinstance(value, slice):
        return (slice, _frozen((value.start, value.stop, value.step)))
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        if value.dtype.kind == "f" and np.isnan(value):
            raise _Unique
        return (type(value), value.tobytes())
    if type(value) is dict and all(isinstance(k, str) for k in value):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    return ("identity", id(value))
