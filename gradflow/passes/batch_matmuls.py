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
instead of copying the rows again; rows looked up in one embedding table are
stacked as one lookup of all their ids. A ``concat`` along the rows that
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

from gradflow.graph import TensorShape
from gradflow.ops.registry import REGISTRY
from gradflow.passes.ir import PlanNode

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
    right = first.inputs[1]
    rows = sum(a.shape[0] for a in lefts)
    made = []
    if stacked is None and _lookups_in_one_table(lefts):  # one lookup of all the ids
        indices = [a.inputs[1] for a in lefts]
        joined = _new(first, "concat", indices, {"axis": 0}, (rows,), indices[0].dtype,
                      "/batched_ids")
        stacked = PlanNode(REGISTRY["gather"], [lefts[0].inputs[0], joined],
                           dict(lefts[0].attrs), TensorShape((rows, lefts[0].shape[1])),
                           lefts[0].dtype, lefts[0].name, lefts[0].source, (),
                           origin=lefts[0].origin, graph=lefts[0].graph, index=lefts[0].index)
        made += [joined, stacked]
    if stacked is None:
        stacked = _new(first, "concat", lefts, {"axis": 0}, (rows, lefts[0].shape[1]),
                       lefts[0].dtype, "/batched_rows")
        made.append(stacked)
    batched = _new(first, "matmul", [stacked, right], first.attrs,
                   (rows, first.shape[1]), first.dtype, "/batched")
    made.append(batched)
    mapping, start = {}, 0
    slices = []
    for member in chosen:
        stop = start + member.inputs[0].shape[0]
        key = (("slice", start, stop, None), ("slice", None, None, None))
        piece = _new(member, "getitem", [batched], {"key": key}, tuple(member.shape),
                     member.dtype, "")
        mapping[member] = piece
        made.append(piece)
        slices.append(piece)
        start = stop
    graph.replace(mapping, extra=made)
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
    """``(node, parts in its order)`` for a node the plan already computes whose value is
    the rows of ``parts`` stacked in some order: a concat along axis 0 of them (the
    gradient code stacks an RNN's inputs for its kernel gradient), or, where every part
    gathers rows of one table, a gather at the concatenated indices (what the rewrites
    make of such a concat); else ``(None, parts)``."""
    wanted = set(parts)
    if len(wanted) != len(parts):
        return None, parts
    for node in order:
        if _computed(node, "concat") and node.attrs.get("axis") == 0 \
                and len(node.inputs) == len(parts) and set(node.inputs) == wanted:
            return node, list(node.inputs)
    if not all(_computed(p, "gather") and p.attrs.get("axis") == 0 for p in parts):
        return None, parts
    by_indices = {p.inputs[1]: p for p in parts}
    params = parts[0].inputs[0]
    if len(by_indices) != len(parts) or any(p.inputs[0] is not params for p in parts):
        return None, parts
    for node in order:
        if _computed(node, "gather") and node.attrs == parts[0].attrs \
                and node.inputs[0] is params and _computed(node.inputs[1], "concat") \
                and node.inputs[1].attrs.get("axis") == 0 \
                and len(node.inputs[1].inputs) == len(parts) \
                and set(node.inputs[1].inputs) == set(by_indices):
            return node, [by_indices[i] for i in node.inputs[1].inputs]
    return None, parts


def _lookups_in_one_table(parts):
    """Whether every part gathers rows of one table at its own 1-D array of indices."""
    if not all(_computed(p, "gather") and p.attrs.get("axis") == 0 for p in parts):
        return False
    indices = [p.inputs[1] for p in parts]
    return len(set(indices)) == len(parts) and all(p.inputs[0] is parts[0].inputs[0]
                                                   for p in parts) \
        and all(i.shape is not None and len(i.shape) == 1 and i.shape[0] is not None
                for i in indices) and len({i.dtype for i in indices}) == 1


def _computed(node, op):
    return isinstance(node, PlanNode) and node.opdef.name == op \
        and node.opdef.kind == "compute" and not node.control_inputs


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


def _new(like, op, inputs, attrs, shape, dtype, suffix):
    """A plan node of ``op`` named after ``like`` (its source line and user node)."""
    return PlanNode(REGISTRY[op], inputs, attrs, TensorShape(shape), dtype, like.name + suffix,
                    like.source, (), origin=like.origin, graph=like.graph, index=like.index)
