"""The ``while`` primitive, its loop variables' stand-ins and its gradient ``while_grad``.

A ``while`` node holds the loop's condition and body, traced over stand-ins of the
loop variables (``while_loop_var`` nodes, fed by the loop); node inputs ``[*initial
values, *captured, (maximum_iterations)]``, value ``(*final values, history)``. When a
gradient is asked for, the loop records every iteration's loop variables (and the body
values the gradient needs) in ``history``; the gradient is a ``while_grad`` node that
walks the iterations backwards with the body's vector-Jacobian product (itself a
sub-graph built with ``gradients``) and sums the gradients of captured tensors over the
iterations.
"""

from __future__ import annotations

from gradflow.graph import Tensor
from gradflow.prim.construct import (
    Branch,
    Construct,
    Recorder,
    analyze,
    call_impl,
    claim,
    compatible,
    construct_infer,
    differentiable,
    fmt_shape,
    partials,
    pick,
    run_sub,
)
from gradflow.prim.registry import apply, register
from gradflow.prim.tensor_array import grad_source


def _loop_var_infer(shapes, in_dtypes, shape, dtype):
    if in_dtypes[0] is not dtype:
        raise TypeError(f"the value is {in_dtypes[0].name}, the loop variable {dtype.name}")
    if not compatible(shapes[0], shape):
        raise ValueError(f"the value's shape {fmt_shape(shapes[0])} does not fit the "
                         f"shape invariant {fmt_shape(shape)}")
    return shape, dtype


def _identity_call(run_state, node):
    return lambda value: value


register("while", call_impl, construct_infer, grad=None, kind="call")
register("while_grad", call_impl, construct_infer, grad=None, kind="call")
# A loop variable inside the body: fed by the loop; outside it is its initial value.
register("while_loop_var", _identity_call, _loop_var_infer, grad=None, kind="call")


def loop_var(value, shape, dtype, name):
    """A stand-in of a loop variable (or of a cotangent) of static ``shape``."""
    return apply("while_loop_var", [value], name=name, shape=shape, dtype=dtype)


class WhileInfo(Construct):
    """A loop's condition and body over stand-ins of its variables; node inputs
    ``[*initial values, *captured, (maximum_iterations)]``; value
    ``(*final values, history)``, history being ``[(state, body exports)]`` per
    iteration when a gradient needs it, else ``None``."""

    kind = "while"

    def __init__(self, name, standins, invariants, cond_branch, body_branch,
                 maximum_iterations, back_prop):
        super().__init__(name)
        self.standins = standins
        self.invariants = invariants
        self.cond = cond_branch
        self.body = body_branch
        self.maximum_iterations = maximum_iterations  # an int, a tensor, or None
        self.back_prop = back_prop
        self.record = False  # set when a gradient is built: record the iterations
        self._vjps: dict = {}  # the body's vjp per gradients call that needs its own

    def bind(self, session, node):
        n = len(self.standins)
        position = {t: i for i, t in enumerate(node.inputs)}
        cond_plan = session.compile_subplan([self.cond.outputs[0]],
                                            self.standins + self.cond.captured)
        exports = [e for e, _ in self.exports]
        body_plan = session.compile_subplan(self.body.outputs + exports,
                                            self.standins + self.body.captured)
        cond_taken = [position[t] for t in self.cond.captured]
        body_taken = [position[t] for t in self.body.captured]
        limit = self.maximum_iterations
        limit_at = position[limit] if isinstance(limit, Tensor) else None
        to_numpy = session.backend.to_numpy
        record = self.record
        cond_what = f"the condition of while_loop '{self.name}'"
        body_what = f"the body of while_loop '{self.name}'"
        store = session.store

        def run(*inputs):
            state = list(inputs[:n])
            cond_caps = [inputs[i] for i in cond_taken]
            body_caps = [inputs[i] for i in body_taken]
            most = int(to_numpy(inputs[limit_at])) if limit_at is not None else limit
            history = [] if record else None
            done = 0
            while most is None or done < most:
                if not run_sub(cond_plan, state + cond_caps, store, cond_what)[0]:
                    break
                values = run_sub(body_plan, state + body_caps, store, body_what)
                if record:
                    history.append((state, values[n:]))
                state = list(values[:n])
                done += 1
            return (*state, history)

        return run

    def output_grad(self, picker, g):
        grads = [None] * len(picker.inputs)
        k = picker.attrs["index"]
        if not self.back_prop or k >= len(self.standins):
            return grads
        vjp = self._vjp_graph()
        if k not in vjp.diff:
            return grads
        self.record = True
        node = self.node
        info = WhileGradInfo(f"{self.name}_grad", self, vjp, k)
        grad_node = apply("while_grad", [node, g, *vjp.extra], name=f"{self.name}_grad",
                          info=info)
        info.node = grad_node
        position = {t: i for i, t in enumerate(picker.inputs)}
        for m, j in enumerate(vjp.diff):
            init = node.inputs[j]
            grads[1 + j] = pick(grad_node, m, init.shape, init.dtype)
        for m, c in enumerate(vjp.caps):
            grads[position[c]] = pick(grad_node, len(vjp.diff) + m, c.shape, c.dtype)
        return grads

    def _vjp_key(self):
        """None: one vjp serves every ``gradients`` call. A body that uses a TensorArray
        gets one per call, since each call has gradient arrays of its own."""
        if any(n.opdef.name.startswith("tensor_array") for n in self.body.internal):
            return grad_source(self.node.graph)
        return None

    def _vjp_graph(self):
        """The body's vector-Jacobian product as a sub-graph (built once per key)."""
        key = self._vjp_key()
        if key in self._vjps:
            return self._vjps[key]

        graph = self.node.graph
        n = len(self.standins)
        diff = [j for j in range(n) if differentiable(self.standins[j])]
        wrt = [c for c in self.node.inputs[n:] if differentiable(c)
               and c is not self.maximum_iterations and c in set(self.body.captured)]
        recorder = Recorder(graph)
        with graph.name_scope(f"{self.name}_grad_body"), graph.control_dependencies(None), \
                recorder.recording():
            outs = self.body.outputs
            cots = [loop_var(outs[j], self.invariants[j], self.standins[j].dtype, "cotangent")
                    for j in diff]
            xs = [self.standins[j] for j in diff] + wrt
            grads = partials([outs[j] for j in diff], xs, cots) if diff \
                else [None] * len(xs)
        var_grads, cap_grads = grads[:len(diff)], grads[len(diff):]
        caps = [c for c, gc in zip(wrt, cap_grads) if gc is not None]
        cap_grads = [gc for gc in cap_grads if gc is not None]
        fetches = [gv for gv in var_grads if gv is not None] + cap_grads
        internal, captured, stash, _ = analyze(fetches, recorder.nodes,
                                               set(self.standins) | set(cots),
                                               {(self, "body")})
        claim(self, "vjp", internal, recorder.nodes)
        stash_nodes = [s for s, _ in stash]
        export_at = [self.export(s, "body") for s in stash_nodes]
        extra = {}
        for t in captured + caps:
            extra.setdefault(t, None)
        self._vjps[key] = Vjp(diff, cots, var_grads, caps, fetches, stash_nodes, export_at,
                              captured, list(extra))
        return self._vjps[key]


class Vjp:
    """The body's vector-Jacobian product: a sub-graph from the cotangents of the
    differentiable loop variables (and the iteration's values) to their gradients."""

    def __init__(self, diff, cots, var_grads, caps, fetches, stash_nodes, export_at,
                 captured, extra):
        self.diff = diff  # indices of the differentiable loop variables
        self.cots = cots  # stand-ins for the gradients of the body outputs
        self.var_grads = var_grads  # per differentiable variable: a tensor or None
        self.caps = caps  # captured tensors that get a gradient
        self.fetches = fetches
        self.stash_nodes = stash_nodes  # body values read from the recorded iterations
        self.export_at = export_at
        self.captured = captured  # outside tensors the product reads
        self.extra = extra  # inputs of the while_grad node after the loop and g


class WhileGradInfo(Construct):
    """The backward loop of output ``k``: node inputs ``[loop, g, *vjp.extra]``; value
    ``(*gradients of the differentiable initial values, *gradients of vjp.caps)``."""

    kind = "while_grad"

    def __init__(self, name, loop, vjp, k):
        super().__init__(name)
        self.loop = loop
        self.vjp = vjp
        self.k = k

    def _slots(self):
        """``({loop variable: its position among the plan's results}, the positions of the
        captured tensors' gradients)``."""
        slot, at = {}, 0
        for j, gv in zip(self.vjp.diff, self.vjp.var_grads):
            if gv is not None:
                slot[j] = at
                at += 1
        return slot, list(range(at, at + len(self.vjp.caps)))

    def bind(self, session, node):
        loop, vjp = self.loop, self.vjp
        n = len(loop.standins)
        xp = session.backend.xp
        fed = loop.standins + vjp.cots + vjp.stash_nodes + vjp.captured
        plan = session.compile_subplan(vjp.fetches, fed)
        extra_at = {t: i for i, t in enumerate(vjp.extra)}
        captured_at = [extra_at[t] for t in vjp.captured]
        zeros_at = [extra_at[c] for c in vjp.caps]
        slot, cap_slots = self._slots()
        diff, k, export_at = vjp.diff, self.k, vjp.export_at
        what = f"the gradient of while_loop '{loop.name}'"
        store = session.store

        def run(value, g, *extra):
            history = value[n]
            if history is None:
                raise RuntimeError(f"while_loop '{loop.name}' did not record its iterations")
            after = list(value[:n])  # the loop variables after the iteration undone next
            cot = {j: None for j in diff}
            cot[k] = g
            sums = [None] * len(cap_slots)
            captured = [extra[i] for i in captured_at]
            for state, exports in reversed(history):
                cots = [cot[j] if cot[j] is not None else xp.zeros_like(after[j])
                        for j in diff]
                stashed = [exports[e] for e in export_at]
                values = run_sub(plan, list(state) + cots + stashed + captured, store, what)
                for j in diff:
                    cot[j] = values[slot[j]] if j in slot else None
                for m, s in enumerate(cap_slots):
                    sums[m] = values[s] if sums[m] is None else xp.add(sums[m], values[s])
                after = state
            out = [cot[j] if cot[j] is not None else xp.zeros_like(after[j]) for j in diff]
            out += [s if s is not None else xp.zeros_like(extra[i])
                    for s, i in zip(sums, zeros_at)]
            return out

        return run

    def output_grad(self, picker, g):
        raise NotImplementedError(
            f"second-order gradients through while_loop '{self.loop.name}' are not "
            "supported (the gradient of its gradient)")


def _traced_parts(loop_name, outputs, recorder, owned, what):
    """``(internal, captured)`` of the loop's condition or body (``what``), which may not
    assign a variable."""
    internal, captured, _, assigns = analyze(outputs, recorder.nodes, owned, frozenset())
    if assigns:
        a = assigns[0]
        raise ValueError(
            f"while_loop '{loop_name}': '{a.name}' assigns variable "
            f"'{a.attrs['var'].name}' inside the loop {what} (created at {a.source}); "
            "assignments inside a while_loop are not supported, because a run "
            "writes its assignments at its end: carry the value as a loop variable "
            "and assign the loop's result")
    return internal, captured


def make_while(graph, loop_name, init, standins, invariants, c, outs, recorder, limit,
               back_prop):
    """Build one ``while`` node from a traced condition ``c`` and body outputs ``outs``
    over the ``standins`` (nodes made while tracing: ``recorder``) of the loop variables
    ``init``; returns the loop variables' final values."""
    owned = set(standins)
    cond_parts = _traced_parts(loop_name, [c], recorder, owned, "condition")
    body_parts = _traced_parts(loop_name, outs, recorder, owned, "body")
    cond_branch = Branch([c], cond_parts[0], cond_parts[1], [], frozenset(), [])
    body_branch = Branch(outs, body_parts[0], body_parts[1], [], frozenset(), [])
    info = WhileInfo(loop_name, standins, invariants, cond_branch, body_branch, limit,
                     bool(back_prop))
    captured = {}
    for t in cond_branch.captured + body_branch.captured:
        captured.setdefault(t, None)
    inputs = init + sorted(captured, key=lambda t: t.index)
    if isinstance(limit, Tensor) and limit not in inputs:
        inputs.append(limit)
    node = apply("while", inputs, name="while_loop", info=info)
    info.node = node
    claim(info, "loop_var", standins)
    claim(info, "cond", cond_branch.internal)
    claim(info, "body", body_branch.internal, recorder.nodes)
    finals = [pick(node, j, invariants[j], v.dtype, name="Exit") for j, v in enumerate(init)]
    graph.add_to_collection("while_context", info)
    return finals
