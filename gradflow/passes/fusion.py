"""Elementwise fusion: chains and trees of elementwise ops become one fused node.

Walking the plan's nodes from the fetches back to the feeds, an elementwise
node joins the group of its consumers when they all belong to one group of
its shape; otherwise it starts a group. A member whose value is also needed
outside its group (an optimizer's new moment, assigned and read by the
update) becomes one more output of the group, as long as that consumer does
not lead back into the group (which would make the fused node depend on
itself). A group of two or more ops (or one op marked ``worth_alone``) becomes one
``fused`` node (``gradflow.prim.plan``) over the group's outside inputs; a group
with several outputs gets one ``fused_output`` node per output.

Each backend lowers a fused node to one kernel (``Backend.fused``): NumPy
through a generated numba loop, CuPy through a printed CUDA kernel, others by
calling the members' own functions in turn, which is also the fallback everywhere.

``absorb_draws`` and ``absorb_row_sums`` widen fused nodes further, for a backend
whose kernels can draw random numbers or sum rows (its ``kernel_passes``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gradflow.passes.elementwise import is_elementwise
from gradflow.passes.ir import PlanNode
from gradflow.prim.plan import FUSED, FUSED_OUTPUT


@dataclass(frozen=True, eq=False)
class FusedProgram:
    """What a fused node computes: ``steps`` are ``(member, argument indices)``, where
    indices below ``num_inputs`` are the fused node's inputs and ``num_inputs + k``
    the value of step ``k``; ``outputs`` are the step indices the node returns."""

    num_inputs: int
    steps: tuple
    outputs: tuple
    # whether an output is written to a variable (an optimizer's update of a variable
    # and its slots): a backend may compile such a program at any size, since one kernel
    # then serves every variable of the update
    updates: bool = False

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
        updates = any(r.opdef.kind == "assign" for m in outputs for r in readers.get(m, ()))
        fused, outs = _fused_node(members, member_set, outputs, updates)
        made.append(fused)
        made.extend(outs)
        mapping.update(zip(outputs, outs))
    graph.replace(mapping, extra=made)


def absorb_draws(graph, draws_in_kernel) -> None:
    """Make each random draw that one fused node alone reads a member of that node, where
    ``draws_in_kernel(draw)`` says the backend computes such a draw inside the fused
    kernel (CuPy's counter-based streams: dropout's draw, mask and scaling become one
    kernel). The draw must have the fused node's static shape and not be fetched; a
    node takes one draw (a kernel draws from one stream), others stay its inputs.

    Besides the fused node, a draw may be a control input of constants (folded from a
    shape it gave: ``constant_folding`` keeps them after the draw). Those lose that
    edge, which would now be a cycle: the draw still runs, once, in the same run."""
    readers, fetched = _readers(graph), set(graph.outputs)
    mapping, made = {}, []
    for node in graph.nodes():
        if node.opdef is not FUSED or node.shape is None:
            continue
        draws = [i for i in dict.fromkeys(node.inputs)
                 if i.opdef.kind == "random" and i not in fetched
                 and i.shape is not None and tuple(i.shape) == tuple(node.shape)
                 and all(r is node or (isinstance(r, PlanNode) and r.opdef.kind == "constant"
                                       and i not in r.inputs) for r in readers[i])
                 and draws_in_kernel(i)][:1]
        if not draws:
            continue
        for draw in draws:
            for reader in readers[draw]:
                if reader is not node:
                    reader.control_inputs = tuple(c for c in reader.control_inputs
                                                  if c is not draw)
        _widen(node, draws, readers, mapping, made)
    graph.replace(mapping, extra=made)


def absorb_row_sums(graph) -> None:
    """Make each sum over the last axis (``keepdims``) that one fused node alone reads a
    member of that node, with the elementwise op it sums where nothing else reads that
    op: a backend printing row kernels (CuPy) then computes the sum and what reads it
    in one kernel. The softmax cross-entropy's gradient, ``where``, row sum and
    ``g - exp(y) * sum``, becomes one kernel this way."""
    readers, fetched = _readers(graph), set(graph.outputs)
    mapping, made = {}, []
    for node in graph.nodes():
        if node.opdef is not FUSED or node.shape is None or not len(node.shape):
            continue
        shape = tuple(node.shape)
        sums = [i for i in dict.fromkeys(node.inputs) if _row_sum(i, shape)
                and i not in fetched and set(readers[i]) == {node}]
        if not sums:
            continue
        summed = [s.inputs[0] for s in sums]
        extra = [g for g in dict.fromkeys(summed) if isinstance(g, PlanNode)
                 and is_elementwise(g) and g not in fetched and tuple(g.shape) == shape
                 and set(readers[g]) <= set(sums) | {node}]
        _widen(node, extra + sums, readers, mapping, made)
    graph.replace(mapping, extra=made)


def _row_sum(node, shape):
    """Whether ``node`` sums a value of ``shape`` over its last axis, keeping that axis."""
    if node.opdef.name != "reduce_sum" or not node.attrs.get("keepdims"):
        return False
    axes = node.attrs.get("axes")
    axes = (axes,) if isinstance(axes, int) else axes
    rank = len(shape)
    return axes is not None and {a % rank for a in axes} == {rank - 1} \
        and node.inputs[0].shape is not None and tuple(node.inputs[0].shape) == shape


def _readers(graph):
    readers = {}
    for node in graph.nodes():
        for inp in node.inputs + node.control_inputs:
            readers.setdefault(inp, []).append(node)
    return readers


def _widen(node, extra, readers, mapping, made):
    """Stand a fused node with the members ``extra`` (nodes of the graph, each reading
    ``node``'s inputs or earlier ones of ``extra``) put first in for ``node``, and its
    outputs for node's ``fused_output`` readers, through ``mapping`` and ``made``."""
    program = node.attrs["program"]
    taken = set(extra)
    inputs = [i for i in node.inputs if i not in taken]
    for member in extra:
        inputs.extend(i for i in member.inputs if i not in taken and i not in inputs)
    index = {inp: k for k, inp in enumerate(inputs)}
    index.update((member, len(inputs) + k) for k, member in enumerate(extra))
    steps = [(member, tuple(index[i] for i in member.inputs)) for member in extra]
    old = [index[i] for i in node.inputs] + [len(inputs) + len(extra) + k
                                             for k in range(len(program.steps))]
    steps += [(member, tuple(old[a] for a in args)) for member, args in program.steps]
    members = [member for member, _ in steps]
    outputs = [len(extra) + k for k in program.outputs]
    control = list(node.control_inputs)
    for member in extra:
        control.extend(c for c in member.control_inputs if c not in taken and c not in control)
    fused, outs = _node_of(members, inputs, tuple(steps), outputs, control, program.updates)
    made.append(fused)
    if len(outputs) == 1:
        mapping[node] = fused
        return
    made.extend(outs)
    for reader in readers[node]:
        if reader.opdef is FUSED_OUTPUT:
            mapping[reader] = outs[reader.attrs["index"]]


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
            indegree.setdefault(v, 0)  # an input outside the order (a fed default's value)
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


def _fused_node(members, member_set, outputs, updates=False):
    """The fused node of one group, and the node standing for each of ``outputs``."""
    inputs = []
    for member in members:
        inputs.extend(i for i in member.inputs if i not in member_set and i not in inputs)
    index = {inp: k for k, inp in enumerate(inputs)}
    index.update((member, len(inputs) + k) for k, member in enumerate(members))
    steps = tuple((member, tuple(index[i] for i in member.inputs)) for member in members)
    control = []
    for member in members:
        control.extend(c for c in member.control_inputs
                       if c not in member_set and c not in control)
    return _node_of(members, inputs, steps, [members.index(o) for o in outputs], control,
                    updates)


def _node_of(members, inputs, steps, outputs, control, updates=False):
    """The fused node running ``steps`` over ``inputs``, returning the steps ``outputs``,
    and the node standing for each output."""
    program = FusedProgram(len(inputs), steps, tuple(outputs), updates)
    root = members[-1]
    single = len(outputs) == 1
    head = members[outputs[0]] if single else root
    fused = PlanNode(FUSED, inputs, {"program": program}, root.shape, head.dtype,
                     head.name, program.describe(), control, origin=head.origin,
                     graph=root.graph, index=root.index)
    if single:
        return fused, [fused]
    return fused, [output_of(fused, k, members[o]) for k, o in enumerate(outputs)]


def output_of(node, index, old):
    """The ``fused_output`` node reading output ``index`` of the multi-output ``node``, in
    place of ``old`` (the node whose value that output is)."""
    return PlanNode.standing_for(old, FUSED_OUTPUT, [node],
                                 {"index": index, "shape": old.shape, "dtype": old.dtype})
