"""Batch independent matmuls that share their right operand into one GEMM.

An RNN unrolled over time multiplies every step's input by the same weights
(``x_t @ W_x``), and its gradient multiplies every step's gate gradient by their
transpose (``dz_t @ W_x^T``). None of these products reads another, so they
need not wait for the sequential loop: this pass replaces such a set by

    batched = concat([a_1, ..., a_n], axis=0) @ W
    member_k = batched[rows of a_k]

one large GEMM, which BLAS runs near its peak, instead of ``n`` small ones.
The slices are views of the batched result. Where the plan already stacks the
same rows (the gradient code stacks an RNN's inputs and gate gradients for its
kernel gradient, in its own order), the batch reads that stack, in its order,
instead of copying the rows again. (The algebraic rewrites run after this pass:
they make a stack of rows looked up in one embedding table one lookup of all
the ids, and fold transposes into the batched products.) A ``concat`` along the rows that
rebuilds the batched result from all of its slices in order (the gradient code
stacks the ``dz_t @ W_x^T`` into one array for the embedding gradient) becomes
the batched result itself.

Only products of the same right operand, flags, attributes and dtypes are
batched, and only members that do not depend on one another (a member whose
left or right operand is computed from another member waits for the loop, so
no cycle can form). Members must have fully known 2-D shapes of at most
``MAX_MEMBER_ROWS`` rows (larger GEMMs are already efficient, and batching them
would only copy), no control inputs, and not be fetched.
"""

from __future__ import annotations

from gradflow.passes.ir import PlanNode
from gradflow.prim.registry import REGISTRY

MIN_BATCH = 3
MAX_MEMBER_ROWS = 256


def batch_matmuls(graph) -> None:
    """Batch the independent matmuls of ``graph`` (a PlanGraph) that share a right operand."""
    fetched = set(graph.outputs)
    groups: dict = {}
    for node in graph.nodes():
        key = _group_key(node, fetched)
        if key is not None:
            groups.setdefault(key, []).append(node)
    for members in groups.values():
        if len(members) >= MIN_BATCH:
            _batch(graph, members)


def _known_matrix(node):
    return node.shape is not None and len(node.shape) == 2 and None not in tuple(node.shape)


def _group_key(node, fetched):
    """What members of one batch share, or None if ``node`` cannot join one."""
    if not isinstance(node, PlanNode) or node.opdef.name != "matmul" \
            or node.opdef.kind != "compute" or node in fetched or node.control_inputs:
        return None
    a, b = node.inputs
    if node.attrs.get("transpose_a") or not (_known_matrix(a) and _known_matrix(b)) \
            or not _known_matrix(node) or a.shape[0] > MAX_MEMBER_ROWS:
        return None
    attrs = tuple(sorted((k, v) for k, v in node.attrs.items()))
    try:
        hash(attrs)
    except TypeError:
        return None
    return (b, attrs, a.shape[1], a.dtype, node.dtype)


def _batch(graph, members) -> None:
    """Replace the members that depend on no other member by slices of one GEMM."""
    order = graph.nodes()
    chosen = _independent(order, members)
    if len(chosen) < MIN_BATCH:
        return
    stacked, lefts = _existing_stack(order, [m.inputs[0] for m in chosen])
    by_left = {m.inputs[0]: m for m in chosen}
    chosen = [by_left[a] for a in lefts]  # the rows in the order of the stack
    first = chosen[0]
    rows = sum(a.shape[0] for a in lefts)
    made = []
    if stacked is None:
        stacked = PlanNode.standing_for(first, REGISTRY["concat"], lefts, {"axis": 0},
                                        shape=(rows, lefts[0].shape[1]),
                                        dtype=lefts[0].dtype, name=first.name + "/batched_rows")
        made.append(stacked)
    batched = PlanNode.standing_for(first, REGISTRY["matmul"], [stacked, first.inputs[1]],
                                    first.attrs, shape=(rows, first.shape[1]),
                                    name=first.name + "/batched")
    made.append(batched)
    mapping, slices, start = {}, [], 0
    for member in chosen:
        stop = start + member.inputs[0].shape[0]
        key = (("slice", start, stop, None), ("slice", None, None, None))
        mapping[member] = PlanNode.standing_for(member, REGISTRY["getitem"], [batched],
                                                {"key": key})
        slices.append(mapping[member])
        start = stop
    graph.replace(mapping, extra=made + slices)
    _rejoin(graph, batched, slices)


def _independent(order, members):
    """The members none of whose operands is computed from a member (in ``order``)."""
    member_set = set(members)
    tainted = set()  # nodes computed from a member
    for node in order:
        if any(i in member_set or i in tainted for i in node.inputs + node.control_inputs):
            tainted.add(node)
    return [m for m in order if m in member_set
            and not any(i in member_set or i in tainted for i in m.inputs)]


def _existing_stack(order, parts):
    """``(node, parts in its order)`` for a concat along axis 0 of exactly ``parts``, in
    some order, that the plan already computes; else ``(None, parts)``."""
    wanted = set(parts)
    if len(wanted) == len(parts):
        for node in order:
            if isinstance(node, PlanNode) and node.opdef.name == "concat" \
                    and node.opdef.kind == "compute" and not node.control_inputs \
                    and node.attrs.get("axis") == 0 and len(node.inputs) == len(parts) \
                    and set(node.inputs) == wanted:
                return node, list(node.inputs)
    return None, parts


def _rejoin(graph, batched, slices) -> None:
    """A concat along axis 0 of all of ``slices`` in order is ``batched`` itself."""
    fetched = set(graph.outputs)
    whole = tuple(slices)
    mapping = {node: batched for node in graph.nodes()
               if isinstance(node, PlanNode) and node.opdef.name == "concat"
               and node.attrs.get("axis") == 0 and node.inputs == whole
               and not node.control_inputs and node not in fetched
               and node.dtype == batched.dtype}
    graph.replace(mapping)
