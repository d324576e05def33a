"""The ``cond`` primitive: one node of kind ``"call"`` holding two traced branches.

Node inputs ``[pred, *captured, *stash sources]``; value ``(*slots, *assigned
variables' new values, *exports)``. Only the taken branch runs, as a sub-plan with
its captured tensors fed. The gradient of output k is another ``cond`` on the same
predicate whose branches are ``gradients`` of each branch's output k with respect to
its captured tensors (the incoming gradient is captured too). Values of the forward
branch that the gradient branch needs are not recomputed: the forward node *exports*
them (they are appended to its tuple; ``None`` for the branch not taken) and the
gradient node reads them from it. Dropout masks and other random values inside a
branch therefore agree between the forward and the backward pass, and the gradient
of a gradient works the same way.

Assignments inside a branch are written, as every assignment, at the end of the run:
the branch writes to a private store, its new values become outputs of the ``cond``
and assignments outside write them (a variable a branch does not assign keeps its
value).
"""

from __future__ import annotations

from gradflow.graph import Operation
from gradflow.prim import call
from gradflow.prim.construct import (
    Branch,
    Construct,
    Recorder,
    analyze,
    call_impl,
    claim,
    compatible_shape,
    construct_infer,
    differentiable,
    owners,
    partials,
    pick,
    run_sub,
)
from gradflow.prim.registry import apply, register

SIDES = ("true", "false")


class CondInfo(Construct):
    """A cond node's two branches: node inputs ``[pred, *captured, *stash sources]``;
    value ``(*slots, *assigned variables' new values, *exports)``."""

    kind = "cond"

    def __init__(self, name, branches, variables):
        super().__init__(name)
        self.branches = branches
        self.n_slots = len(branches[0].outputs)
        self.variables = variables  # assigned in a branch, in a fixed order

    def export_position(self, node) -> int:
        return self.n_slots + len(self.variables) + self._export_index[node]

    def bind(self, session, node):
        position = {t: i for i, t in enumerate(node.inputs)}
        exports = list(self.exports)
        n_values = self.n_slots + len(self.variables) + len(exports)
        runners = []
        for side, branch in enumerate(self.branches):
            slots = [k for k, o in enumerate(branch.outputs) if o is not None]
            mine = [e for e, (_, s) in enumerate(exports) if s == SIDES[side]]
            fetches = [branch.outputs[k] for k in slots] + [exports[e][0] for e in mine]
            fed = branch.captured + [n for n, _ in branch.stash]
            plan = session.compile_subplan(fetches, fed)
            targets = slots + [self.n_slots + len(self.variables) + e for e in mine]
            taken = [position[t] for t in branch.captured]
            stashed = [(position[src.node], src.export_position(n)) for n, src in branch.stash]
            what = f"the {SIDES[side]} branch of cond '{self.name}'"
            runners.append((plan, targets, taken, stashed, what))
        variables = [(var, position[var], self.n_slots + m)
                     for m, var in enumerate(self.variables)]

        def run(*inputs):
            plan, targets, taken, stashed, what = runners[0 if inputs[0] else 1]
            feeds = [inputs[i] for i in taken] + [inputs[i][j] for i, j in stashed]
            private = session.new_store()  # the branch's assignments, written outside
            values = run_sub(plan, feeds, private, what)
            out = [None] * n_values
            for k, value in zip(targets, values):
                out[k] = value
            for var, i, k in variables:
                out[k] = private.get(var, inputs[i])
            return out

        return run

    def output_grad(self, picker, g):
        """``cond(pred, d(true output)/d(captured) . g, d(false output)/d(captured) . g)``."""
        node = self.node
        grads = [None] * len(picker.inputs)
        k = picker.attrs["index"]
        if k >= self.n_slots:
            return grads
        wrt = [c for c in node.inputs[1:] if differentiable(c)]
        if not wrt:
            return grads
        graph = node.graph
        recorders = [Recorder(graph), Recorder(graph)]
        with graph.name_scope(f"{self.name}_grad"), graph.control_dependencies(None):
            maps = [self._branch_partials(branch, recorder, k, wrt, g)
                    for branch, recorder in zip(self.branches, recorders)]
            keep = [c for c in wrt if any(m.get(c) is not None for m in maps)]
            if not keep:
                return grads
            sides = []
            for side, branch in enumerate(self.branches):
                with recorders[side].recording():
                    outs = [maps[side].get(c) if maps[side].get(c) is not None
                            else call.zeros_like(c) for c in keep]
                allowed = {(self, SIDES[side])} | branch.allowed
                sides.append((outs, recorders[side].nodes, allowed))
            # ``wrt`` are inputs even where only values read from this node depend on
            # them: the gradient of the gradient flows to them through those values.
            results, _ = make_cond(graph, node.inputs[0], sides, f"{self.name}_grad", wrt)
        position = {t: i for i, t in enumerate(picker.inputs)}
        for c, r in zip(keep, results):
            grads[position[c]] = r
        return grads

    @staticmethod
    def _branch_partials(branch, recorder, k, wrt, g):
        """``{captured tensor: its gradient}`` of the branch's output ``k`` weighted by ``g``."""
        y = branch.outputs[k]
        if not differentiable(y) or y.opdef.kind == "assign":
            return {}
        with recorder.recording():
            return dict(zip(wrt, partials([y], wrt, [g])))


register("cond", call_impl, construct_infer, grad=None, kind="call")


def _slot_kind(t) -> str:
    if t is None:
        return "none"
    return "operation" if isinstance(t, Operation) else "tensor"


def _describe(t) -> str:
    if t is None:
        return "None"
    if isinstance(t, Operation):
        return f"the operation '{t.name}'"
    return f"the tensor '{t.name}'"


def _slot_shapes(name, true, false):
    """``(static shape, kind)`` per output slot of the two branches, after checking that
    both give the same kind of value (and tensors the same dtype) there."""
    if len(true.outputs) != len(false.outputs):
        raise ValueError(f"cond '{name}': the true branch returns {len(true.outputs)} "
                         f"values, the false branch {len(false.outputs)}; both must return "
                         "the same structure")
    shapes, kinds = [], []
    for k, (a, b) in enumerate(zip(true.outputs, false.outputs)):
        ka, kb = _slot_kind(a), _slot_kind(b)
        if ka != kb:
            raise TypeError(f"cond '{name}': output {k} is {_describe(a)} in the true branch "
                            f"but {_describe(b)} in the false branch")
        if ka == "tensor":
            if a.dtype is not b.dtype:
                raise TypeError(f"cond '{name}': output {k} is {a.dtype.name} in the true "
                                f"branch ('{a.name}', created at {a.source}) but "
                                f"{b.dtype.name} in the false branch ('{b.name}', created "
                                f"at {b.source}); cast one of them")
            shapes.append(compatible_shape(a.shape, b.shape))
        else:
            shapes.append(None)
        kinds.append(ka)
    return shapes, kinds


def _cond_inputs(pred, branches, variables, extra):
    """The cond node's inputs: the predicate, the captured tensors (and ``extra``) in
    graph order, then the constructs whose exports the branches read."""
    captured = {}
    for t in branches[0].captured + branches[1].captured + variables + list(extra):
        captured.setdefault(t, None)
    sources = {}
    for branch in branches:
        for _, src in branch.stash:
            sources.setdefault(src, None)
    return [pred] + sorted(captured, key=lambda t: t.index) + [s.node for s in sources]


def make_cond(graph, pred, sides, name, extra=()):
    """Build one cond node from two traced branches ``(flat outputs, created nodes,
    allowed stash sources)`` (``extra``: more inputs); returns ``(flat results, node)``."""
    branches = []
    for outs, created, allowed in sides:
        internal, captured, stash, assigns = analyze(outs, created, (), allowed)
        branches.append(Branch(list(outs), internal, captured, stash, allowed, assigns))
    found = owners(graph)
    for branch in branches:
        for n, src in branch.stash:  # the forward construct hands these values over
            src.export(n, found[n][1])
    true, false = branches
    shapes, kinds = _slot_shapes(name, true, false)
    variables = []
    for branch in branches:
        for a in branch.assigns:
            if a.attrs["var"] not in variables:
                variables.append(a.attrs["var"])
    info = CondInfo(name, branches, variables)
    node = apply("cond", _cond_inputs(pred, branches, variables, extra), name="cond", info=info)
    info.node = node
    for side, branch in enumerate(branches):
        claim(info, SIDES[side], branch.internal, sides[side][1])
    # the branch's new values of the variables, written at the end of the run
    writes = [call.assign(pick(node, info.n_slots + m, var.shape, var.dtype),
                          name=var.name + "/cond_assign", var=var)
              for m, var in enumerate(variables)]
    results = []
    for k, kind in enumerate(kinds):
        if kind == "tensor":
            results.append(pick(node, k, shapes[k], true.outputs[k].dtype, writes,
                                name="Merge"))
        elif kind == "operation":
            results.append(call.group(node, *writes, name="group_deps"))
        else:
            results.append(None)
    graph.add_to_collection("cond_context", info)
    return results, node
