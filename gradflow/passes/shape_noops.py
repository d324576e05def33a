"""Drop the ops that do nothing once the plan's static shapes are known, and the
checks of shapes that those shapes already pass (``OpDef.static_check``).

Gradient code must work for any batch size, so it leaves ``unbroadcast``
(sum a gradient down to its input's shape), ``broadcast_like`` and
``reshape``/``reshape_like`` around values whose shapes may already agree.
After shape specialization they often do: such a node returns its input
itself, which also hides from the memory plan that the input's buffer could
be reused (a reader that may return its input is a view). This pass wires
the readers straight to the input instead. A fetched node stays.
"""

from __future__ import annotations

from gradflow.passes.ir import PlanNode


def _fully_known(shape):
    return shape is not None and None not in tuple(shape)


def drop_shape_noops(graph) -> None:
    """Replace each shape op whose output has its first input's static shape and dtype
    by that input."""
    fetched = set(graph.outputs)
    mapping = {}
    for node in graph.nodes():
        if isinstance(node, PlanNode) and _passes_statically(node, graph) and node not in fetched:
            mapping[node] = node.inputs[0]
            continue
        if not isinstance(node, PlanNode) or not node.opdef.shape_noop \
                or node in fetched or node.opdef.kind != "compute":
            continue
        source = node.inputs[0]
        if _fully_known(node.shape) and _fully_known(source.shape) \
                and tuple(node.shape) == tuple(source.shape) and node.dtype == source.dtype \
                and not node.control_inputs:
            mapping[node] = source
    graph.replace(mapping)


def _passes_statically(node, graph):
    """Whether ``node`` checks its inputs' shapes alone (``OpDef.static_check``) and
    their static shapes (a fed one's as fed), all known, already pass."""
    passes = node.opdef.static_check
    fed = getattr(graph, "feed_shapes", None) or {}
    shapes = [fed.get(i, i.shape) for i in node.inputs]
    return passes is not None and not node.control_inputs \
        and all(_fully_known(s) for s in shapes) \
        and passes([tuple(int(d) for d in s) for s in shapes])
