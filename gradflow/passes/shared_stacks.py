"""Row stacks that share their parts: the later one reads the earlier one's rows.

An unrolled RNN stacks its per-step outputs twice: once for the layer above
(``concat([h_1, ..., h_T])``) and once in the gradient code, for the recurrent
kernel's gradient (``concat([h_0, h_1, ..., h_(T-1)])``). The schedule writes the parts
of one stack straight into its rows (``schedule.row_stacks``), but a part can live in
one stack only, so the other copied every part: on a GPU, one kernel per time step.

This pass rewrites a concat along axis 0 whose parts include a run of consecutive
parts of an earlier concat (in the plan's order, so it cannot depend on the later one)
to read that run as one slice of the earlier concat's rows:

    concat([h_0, h_1, ..., h_(T-1)])  ->  concat([h_0, rows 0:(T-1)B of concat([h_1..h_T])])

Runs of at least ``MIN_RUN`` parts are shared; only concats of fully known static
shapes, one dtype, without control inputs, take part.
"""

from __future__ import annotations

from gradflow.passes.ir import PlanNode
from gradflow.prim.registry import REGISTRY

MIN_RUN = 3


def share_row_stacks(graph) -> None:
    """Make the later of two row stacks with common parts read the earlier's rows."""
    mapping, made = {}, []
    seen = {}  # part -> (earlier concat, position) of the first concat holding it
    for node in graph.nodes():
        if not _row_concat(node):
            continue
        shared = _rewritten(node, seen)
        if shared is not None:
            mapping[node], extra = shared
            made.extend(extra)
            continue
        for position, part in enumerate(node.inputs):
            seen.setdefault(part, (node, position))
    graph.replace(mapping, extra=made)


def _row_concat(node):
    return isinstance(node, PlanNode) and node.opdef.name == "concat" \
        and node.opdef.kind == "compute" and node.attrs.get("axis") == 0 \
        and not node.control_inputs and _known(node) and len(node.inputs) >= MIN_RUN \
        and all(_known(p) and p.dtype == node.dtype
                and tuple(p.shape[1:]) == tuple(node.shape[1:]) for p in node.inputs)


def _known(node):
    return node.shape is not None and len(node.shape) >= 1 and node.shape.is_fully_defined()


def _longest_run(node, seen):
    """``(start in node, earlier concat, start there, length)`` of the longest run of
    ``node``'s parts that are consecutive parts of one earlier concat."""
    best = (0, None, 0, 0)
    parts = node.inputs
    i = 0
    while i < len(parts):
        if parts[i] not in seen:
            i += 1
            continue
        earlier, at = seen[parts[i]]
        length = 1
        while i + length < len(parts) and at + length < len(earlier.inputs) \
                and earlier.inputs[at + length] is parts[i + length]:
            length += 1
        if length > best[3]:
            best = (i, earlier, at, length)
        i += length
    return best


def _rewritten(node, seen):
    """``(node's stand-in, new nodes)`` reading its longest shared run as rows of the
    earlier concat, or None."""
    start, earlier, at, length = _longest_run(node, seen)
    if length < MIN_RUN:
        return None
    first = sum(int(p.shape[0]) for p in earlier.inputs[:at])
    rows = sum(int(p.shape[0]) for p in earlier.inputs[at:at + length])
    full = ("slice", None, None, None)
    key = (("slice", first, first + rows, None),) + (full,) * (len(node.shape) - 1)
    piece = PlanNode.standing_for(node, REGISTRY["getitem"], [earlier], {"key": key},
                                  shape=(rows,) + tuple(node.shape[1:]),
                                  name=f"{node.name}/shared_rows")
    parts = list(node.inputs[:start]) + [piece] + list(node.inputs[start + length:])
    if len(parts) == 1:
        return piece, [piece]
    joined = PlanNode.standing_for(node, REGISTRY["concat"], parts, dict(node.attrs))
    return joined, [piece, joined]
