"""Elementwise fusion: chains and trees of elementwise ops become one fused node.

Walking the plan's nodes from the fetches back to the feeds, an elementwise
node joins the group of its consumers when they all belong to one group of
its shape; otherwise it starts a group. A member whose value is also needed
outside its group (an optimizer's new moment, assigned and read by the
update) becomes one more output of the group, as long as that consumer does
not lead back into the group (which would make the fused node depend on
itself). A group of two or more ops (or one op marked ``worth_alone``) becomes one
``fused`` node (``gradflow.ops.plan_ops``) over the group's outside inputs; a group
with several outputs gets one ``fused_output`` node per output.

Each backend lowers a fused node to one kernel (``Backend.fused``): NumPy
through a generated numba loop, others by calling the members' own functions
in turn, which is also the fallback everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradflow.ops.plan_ops import FUSED, FUSED_OUTPUT
from gradflow.passes.elementwise import is_elementwise
from gradflow.passes.ir import PlanNode


@dataclass(frozen=True, eq=False)
class FusedProgram:
    """What a fused node computes: ``steps`` are ``(member, argument indices)``, where
    indices below ``num_inputs`` are the fused node's inputs and ``num_inputs + k``
    the value of step ``k``; ``outputs`` are the step indices the node returns."""

    num_inputs: int
    steps: tuple
    outputs: tuple

    @property
    def members(self):
        return tuple(member for member, _ in self.steps)

    def describe(self) -> str:
        """The fused ops and the user lines that built them, for error messages."""
        return "; ".join(f"{m.type} '{m.name}' at {m.source}" for m in self.members)


def fuse_elementwise(graph) -> None:
    """Replace the groups of elementwise nodes of ``graph`` (a PlanGraph) by fused nodes."""
    order = graph.nodes()
    position = {node: k for k, node in enumerate(order)}
    readers = {}
    for node in order:
        for inp in node.inputs + node.control_inputs:
            readers.setdefault(inp, []).append(node)
    fetched = set(graph.outputs)
    group_of, groups = {}, []
    for node in reversed(order):
        if not isinstance(node, PlanNode) or not is_elementwise(node):
            continue
        target = _joinable_group(node, readers, group_of, groups, position)
        if target is None:
            target = len(groups)
            groups.append([])
        group_of[node] = target
        groups[target].append(node)
    _break_cycles(order, groups, group_of)
    mapping, made = {}, []
    for members in groups:
        if len(members) < 2 and not members[0].opdef.worth_alone:
            continue
        members.sort(key=position.get)
        member_set = set(members)
        outputs = [m for m in members if m in fetched or any(
            r not in member_set for r in readers.get(m, ()))]
        fused, outs = _fused_node(members, member_set, outputs)
        made.append(fused)
        made.extend(outs)
        mapping.update(zip(outputs, outs))
    graph.replace(mapping, extra=made)


def _break_cycles(order, groups, group_of):
    """Split groups until no fused node would depend on itself through another one.

    ``_joinable_group`` checks the paths from a joining node back into its group
    node by node; two groups can still each read the other's output (a member of
    A feeds B, a member of B feeds A), a cycle once each is one node. Such a
    group is dissolved into single ops, the one formed last first, until the
    graph with each group as one node is acyclic (almost always at once).
    """
    while True:
        cyclic = _groups_on_cycles(order, groups, group_of)
        if not cyclic:
            return
        worst = max(cyclic)
        for member in groups[worst][1:]:
            group_of[member] = len(groups)
            groups.append([member])
        groups[worst] = groups[worst][:1]


def _groups_on_cycles(order, groups, group_of):
    """The groups left over by a topological sort of the graph with each group as one
    node (those on a cycle, or after one)."""
    def unit(node):
        g = group_of.get(node)
        return ("g", g) if g is not None and len(groups[g]) > 1 else ("n", id(node))

    edges, indegree = {}, {}
    for node in order:
        u = unit(node)
        indegree.setdefault(u, 0)
        for inp in node.inputs + node.control_inputs:
            v = unit(inp)
            if v != u and u not in edges.setdefault(v, set()):
                edges[v].add(u)
                indegree[u] += 1
    ready = [u for u, d in indegree.items() if d == 0]
    while ready:
        u = ready.pop()
        for w in edges.get(u, ()):
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    return {u[1] for u, d in indegree.items() if d > 0 and u[0] == "g"}


def _joinable_group(node, readers, group_of, groups, position):
    """The group ``node`` can join (see the module docstring), or None. When its
    consumers sit in several groups, the earliest consumer's group is tried first
    (a forward activation's, not the gradient's that also reads the value)."""
    consumers = readers.get(node, ())
    candidates = []
    for c in sorted(consumers, key=position.get):
        if c in group_of and node in c.inputs and group_of[c] not in candidates:
            candidates.append(group_of[c])
    for target in candidates:
        members = groups[target]
        if tuple(members[0].shape) != tuple(node.shape):
            continue
        member_set = set(members)
        outside = [c for c in consumers if c not in member_set]
        if outside and _reaches(outside, member_set, readers, position,
                                max(position[m] for m in members)):
            continue
        return target
    return None


def _reaches(starts, targets, readers, position, limit):
    """Whether a path leads from one of ``starts`` to one of ``targets`` (nodes later
    than position ``limit`` cannot lead to them)."""
    stack, seen = list(starts), set()
    while stack:
        node = stack.pop()
        if node in targets:
            return True
        if node in seen or position.get(node, limit + 1) > limit:
            continue
        seen.add(node)
        stack.extend(readers.get(node, ()))
    return False


def _fused_node(members, member_set, outputs):
    """The fused node of one group, and the node standing for each of ``outputs``."""
    inputs = []
    for member in members:
        inputs.extend(i for i in member.inputs if i not in member_set and i not in inputs)
    index = {inp: k for k, inp in enumerate(inputs)}
    index.update((member, len(inputs) + k) for k, member in enumerate(members))
    steps = tuple((member, tuple(index[i] for i in member.inputs)) for member in members)
    program = FusedProgram(len(inputs), steps, tuple(members.index(o) for o in outputs))
    control = []
    for member in members:
        control.extend(c for c in member.control_inputs
                       if c not in member_set and c not in control)
    root = members[-1]
    single = len(outputs) == 1
    head = outputs[0] if single else root
    fused = PlanNode(FUSED, inputs, {"program": program}, root.shape, head.dtype,
                     head.name, program.describe(), control, origin=head.origin,
                     graph=root.graph, index=root.index)
    if single:
        return fused, [fused]
    return fused, [output_of(fused, k, o) for k, o in enumerate(outputs)]


def output_of(node, index, old):
    """The ``fused_output`` node reading output ``index`` of the multi-output ``node``, in
    place of ``old`` (the node whose value that output is)."""
    return PlanNode.standing_for(old, FUSED_OUTPUT, [node],
                                 {"index": index, "shape": old.shape, "dtype": old.dtype})
