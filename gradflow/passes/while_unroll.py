"""``while_loop`` nodes unrolled in a plan whose trip count is known when it is compiled.

A ``while`` node runs its condition and body as sub-plans, one host iteration at a
time, and its gradient (``while_grad``) walks the recorded iterations back with the
body's vector-Jacobian product: two sub-plan calls per step each way, and none of the
graph compiler's passes see across steps. Where the plan is specialized to the shapes
fed, the number of iterations is often known before the run: ``dynamic_rnn`` over a
time axis of unknown length loops ``while t < shape(inputs)[1]``, and constant folding
has made that length a constant. This pass then copies the body once per iteration
into the plan graph (the loop variables of iteration ``i`` are the values of iteration
``i - 1``), so the plan is the static unroll's: the LSTM step fusion, the stacked input
products and the rest apply as they do to ``static_rnn``.

The trip count is found by running the condition on the host over the copies: every
copy whose inputs are all known small constants is evaluated with NumPy (the loop's
counter, ``t + 1``); the loop is unrolled only if each condition so evaluates, within
``maximum_iterations`` and at most ``MAX_UNROLL`` iterations. A ``while_grad`` reading
the loop is unrolled the same way, iteration by iteration backwards over the forward
copies (the values its product reads from the recorded iterations are the copies'
values). The gradient of a tensor the body reads is the sum of its per-iteration
contributions; contributions of one kind are stacked into one op as ``gradient_sums``
does for a static unroll (``h_t^T g_t`` products as one product of the stacked rows;
bias sums as one sum; the gradients of ``gather(x, t, axis)`` for every ``t`` as one
``stack``); the rest are added in order.

A loop stays a loop (a host loop, as before) where its condition, body or gradient
holds anything but plain computations and constants: a nested construct, a random op
(a draw per iteration, which a copy cannot repeat), a node with control inputs; where
anything other than its pickers and gradients reads it; or where the count is unknown.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow.graph import TensorShape, topological_order
from gradflow.passes.constant_folding import MAX_ELEMENTS, _evaluate, fold_constants
from gradflow.passes.ir import PlanNode, specialized_shape
from gradflow.prim.registry import REGISTRY

MAX_UNROLL = 256  # iterations; a longer loop keeps its host loop (plan size, compile time)


def unroll_while_loops(graph) -> None:
    """Unroll every ``while`` node of ``graph`` (a PlanGraph) whose trip count is known
    and every ``while_grad`` of it (see the module docstring)."""
    readers = graph.consumers()
    mapping, made = {}, []
    for node in graph.nodes():
        if isinstance(node, PlanNode) and node.opdef.name == "while":
            _unroll_one(node, readers, mapping, made, getattr(graph, "feed_shapes", {}))
    if mapping:
        graph.replace(mapping, extra=made)
        fold_constants(graph)  # the copies' counters, and what they decide


def _unroll_one(node, readers, mapping, made, feed_shapes):
    """Add to ``mapping`` (and ``made``) the unrolled loop ``node`` and its gradients, or
    nothing where it cannot be unrolled."""
    info = node.attrs["info"]
    pickers, grads, others = [], [], []
    for reader in readers.get(node, []):
        name = reader.opdef.name
        if name == "tuple_get" and reader.inputs[0] is node:
            pickers.append(reader)
        elif name == "while_grad" and reader.inputs[0] is node \
                and reader.attrs["info"].loop is info:
            grads.append(reader)
        else:
            others.append(reader)
    if any(r.opdef.name != "tuple_get" or r.inputs[0] not in grads for r in others):
        return  # a picker of a gradient (it takes the gradient's inputs too) is served
    loop = _Loop(node, info, feed_shapes)
    if not loop.plain() or not loop.run():
        return
    local, local_made = {}, list(loop.made)
    for grad in grads:
        back = _Backward(loop, grad)
        if not back.plain():
            return
        outputs = back.run()
        local_made.extend(back.made)
        for picker in readers.get(grad, []):
            if picker.opdef.name != "tuple_get" or picker.inputs[0] is not grad:
                return
            local[picker] = outputs[picker.attrs["index"]]
    n = len(info.standins)
    for picker in pickers:
        index = picker.attrs["index"]
        if index >= n:
            return  # the recorded history is read by something unrolling cannot serve
        local[picker] = loop.states[-1][index]
    mapping.update(local)
    made.extend(local_made)


def _order(fetches, stop):
    """The nodes ``fetches`` need that are not in ``stop``, inputs first."""
    return [n for n in topological_order([f for f in fetches if f is not None], stop)
            if n not in stop]


def _plain(nodes):
    """Whether every node is a plain computation or a constant (see the docstring)."""
    return all(n.opdef.kind in ("compute", "constant") and not n.control_inputs
               and not n.opdef.name.startswith("tensor_array") for n in nodes)


def _known(node, values):
    """The host value of ``node`` where it is a constant or evaluated, else None."""
    if node in values:
        return values[node]
    if node.opdef.kind == "constant":
        value = getattr(node.attrs.get("value"), "array", None)
        if isinstance(value, np.ndarray):
            return value
    return None


class _Copier:
    """Copies of sub-graph nodes into the plan graph; ``values`` holds the host values of
    the small copies computable from constants."""

    def __init__(self, outside, feed_shapes):
        self.outside = outside  # {the user's captured tensor: its plan node}
        self.feed_shapes = feed_shapes  # {fed tensor: the shape fed}
        self.values = {}
        self.made = []
        self.made_set = set()

    def copy(self, order, fed, evaluate_only=False):
        """``{user node: plan node}`` of one copy of ``order`` (inputs first) with the
        stand-ins ``fed`` ({user node: plan node}) given."""
        done = dict(fed)

        def look(i):
            found = done.get(i)
            return found if found is not None else self.outside.get(i, i)

        for n in order:
            copy = PlanNode.copy_of(n, [look(i) for i in n.inputs], [])
            if n.opdef.name == "concat":
                copy.inputs = _spliced(copy, self.made_set)
            copy.shape = specialized_shape(copy, {})
            done[n] = copy
            self._evaluate(copy)
            if not evaluate_only:
                self.made.append(copy)
                self.made_set.add(copy)
        done["look"] = look
        return done

    def _shape_stand_in(self, node):
        """An array of ``node``'s static (or fed) shape for an op that reads only the
        shape (``shape(x)`` in a loop's condition), or None where it is not known."""
        shape = self.feed_shapes.get(node, node.shape)
        if _rank_of(node) is None or shape is None or not TensorShape(shape).is_fully_defined():
            return None
        dtype = node.dtype.as_numpy_dtype if node.dtype is not None else np.float32
        return np.broadcast_to(np.zeros((), dtype), tuple(int(d) for d in shape))

    def _evaluate(self, copy):
        shape = copy.shape
        if copy.opdef.kind != "compute" or shape is None or not shape.is_fully_defined() \
                or math.prod(shape) > MAX_ELEMENTS or copy.dtype is None:
            return
        shape_only = copy.opdef.shape_only_inputs
        args = [self._shape_stand_in(i) if k in shape_only else _known(i, self.values)
                for k, i in enumerate(copy.inputs)]
        if any(a is None for a in args):
            return
        value = _evaluate(copy, args)
        if value is not None:
            self.values[copy] = value


def _spliced(copy, made):
    """The inputs of the concat ``copy`` with those that are concats copied here along the
    same axis replaced by their own inputs: an accumulator grown one step per iteration
    (``concat([acc, out_t])``) becomes one concat of every step, not one per step."""
    axis = copy.attrs.get("axis")
    parts = []
    for i in copy.inputs:
        if isinstance(i, PlanNode) and i.opdef.name == "concat" and i.attrs.get("axis") == axis \
                and i.origin is copy.origin and i in made:
            parts.extend(i.inputs)
        else:
            parts.append(i)
    return tuple(parts)


class _Loop:
    """The forward unroll of one ``while`` plan node: ``states[i]`` are the loop
    variables before iteration ``i`` (the last: the final values), ``maps[i]`` the
    copies of iteration ``i``'s body ({user node: plan node})."""

    def __init__(self, node, info, feed_shapes):
        self.node, self.info = node, info
        user = info.node
        self.outside = dict(zip(user.inputs, node.inputs))
        stop = set(info.standins) | set(info.cond.captured) | set(info.body.captured)
        self.cond_order = _order([info.cond.outputs[0]], stop)
        self.body_order = _order(info.body.outputs, stop)
        self.copier = _Copier(self.outside, feed_shapes)
        self.made = self.copier.made
        self.states, self.maps = [list(node.inputs[:len(info.standins)])], []

    def plain(self):
        return _plain(self.cond_order) and _plain(self.body_order)

    def _limit(self):
        """``maximum_iterations`` as an int (MAX_UNROLL + 1 where none), or None where it
        is a tensor whose value is not known."""
        limit = self.info.maximum_iterations
        if limit is None:
            return MAX_UNROLL + 1
        if isinstance(limit, int):
            return limit
        value = _known(self.outside.get(limit, limit), self.copier.values)
        return None if value is None or value.shape != () else int(value)

    def run(self) -> bool:
        """Copy the body once per iteration; False where the count cannot be known (or
        passes ``MAX_UNROLL``)."""
        limit = self._limit()
        if limit is None:
            return False
        info, standins = self.info, self.info.standins
        while len(self.maps) < limit:
            state = self.states[-1]
            fed = dict(zip(standins, state))
            cond = self.copier.copy(self.cond_order, fed, evaluate_only=True)
            verdict = _known(cond["look"](info.cond.outputs[0]), self.copier.values)
            if verdict is None or verdict.shape != ():
                return False
            if not bool(verdict):
                return True
            if len(self.maps) == MAX_UNROLL:
                return False
            done = self.copier.copy(self.body_order, fed)
            self.maps.append(done)
            self.states.append([done["look"](o) for o in info.body.outputs])
        return True


class _Backward:
    """The unroll of one ``while_grad`` plan node over a ``_Loop``'s copies."""

    def __init__(self, loop, grad):
        self.loop, self.grad = loop, grad
        info = grad.attrs["info"]
        self.vjp, self.k = info.vjp, info.k
        user = info.node
        outside = dict(zip(user.inputs, grad.inputs))
        self.g = grad.inputs[1]
        vjp = self.vjp
        self.stop = set(loop.info.standins) | set(vjp.cots) | set(vjp.stash_nodes) \
            | set(vjp.captured)
        self.order = _order(vjp.fetches, self.stop)
        self.copier = _Copier(outside, loop.copier.feed_shapes)
        self.made = self.copier.made

    def plain(self):
        return _plain(self.order)

    def _zeros(self, like):
        zeros = PlanNode.standing_for(self.grad, REGISTRY["zeros_like"], [like], {},
                                      shape=like.shape, dtype=like.dtype)
        self.made.append(zeros)
        return zeros

    def run(self):
        """The plan nodes of the ``while_grad`` node's outputs, in its order."""
        loop, vjp = self.loop, self.vjp
        standins, diff = loop.info.standins, vjp.diff
        cot = {j: None for j in diff}
        cot[self.k] = self.g
        contributions = [[] for _ in vjp.caps]
        grads_at = [(j, gv) for j, gv in zip(diff, vjp.var_grads) if gv is not None]
        cap_grads = vjp.fetches[len(grads_at):]
        for i in reversed(range(len(loop.maps))):
            state, after, body = loop.states[i], loop.states[i + 1], loop.maps[i]
            fed = dict(zip(standins, state))
            fed.update((c, cot[j] if cot[j] is not None else self._zeros(after[j]))
                       for c, j in zip(vjp.cots, diff))
            fed.update((s, body["look"](s)) for s in vjp.stash_nodes)
            done = self.copier.copy(self.order, fed)
            look = done["look"]
            cot = {j: None for j in diff}
            cot.update((j, look(gv)) for j, gv in grads_at)
            for m, gc in enumerate(cap_grads):
                contributions[m].append(look(gc))
        first = loop.states[0]
        out = [cot[j] if cot[j] is not None else self._zeros(first[j]) for j in diff]
        extra_at = {t: i for i, t in enumerate(vjp.extra)}
        for m, c in enumerate(vjp.caps):
            parts = contributions[m][::-1]  # in time order
            out.append(self._sum(parts) if parts else
                       self._zeros(self.grad.inputs[2 + extra_at[c]]))
        return out

    def _sum(self, parts):
        return _summed(parts, self.grad, self.made, self.loop.copier.values)


def _new(like, op, inputs, attrs, shape, dtype, made):
    """A new plan node of ``op`` standing for ``like``; its shape inferred where None."""
    node = PlanNode.standing_for(like, REGISTRY[op], inputs, attrs, shape=shape, dtype=dtype)
    if shape is None:
        node.shape = None
        node.shape = specialized_shape(node, {})
    made.append(node)
    return node


def _summed(parts, like, made, values):
    """A node for the sum of ``parts`` (in time order): one op where they are of one
    stackable kind (see the module docstring), else added in order."""
    parts = [_unwrapped(p) for p in parts]
    stacked = _stacked_sum(parts, like, made, values)
    if stacked is not None:
        return stacked
    total = parts[0]
    for p in parts[1:]:
        total = _new(like, "add", [total, p], {}, None, total.dtype, made)
    return total


def _unwrapped(node):
    """``node`` without an ``unbroadcast`` to its own shape (a no-op the gradient code
    wraps contributions in)."""
    while node.opdef.name == "unbroadcast" and node.shape is not None \
            and node.inputs[0].shape is not None and node.shape.is_fully_defined() \
            and tuple(node.inputs[0].shape) == tuple(node.shape):
        node = node.inputs[0]
    return node


def _stacked_sum(parts, like, made, values):
    """One op for the sum of ``parts`` where all are of one stackable kind, else None."""
    if len(parts) < 2 or len({p.opdef.name for p in parts}) != 1:
        return None
    first = parts[0]
    name = first.opdef.name
    if name == "matmul" and first.attrs.get("transpose_a") and not first.attrs.get("transpose_b") \
            and all(p.attrs == first.attrs and _rank(p.inputs[0], 2) and _rank(p.inputs[1], 2)
                    for p in parts):
        rows = [_new(like, "concat", [p.inputs[k] for p in parts], {"axis": 0}, None,
                     first.inputs[k].dtype, made) for k in (0, 1)]
        return _new(like, "matmul", rows, dict(first.attrs), first.shape, first.dtype, made)
    rank, like_rank = _rank_of(first.inputs[0]), _rank_of(first.inputs[-1])
    if name == "unbroadcast" and len({p.inputs[1] for p in parts}) == 1 \
            and None not in (rank, like_rank) and rank > like_rank \
            and all(_rank(p.inputs[0], rank) for p in parts):
        rows = _new(like, "concat", [p.inputs[0] for p in parts], {"axis": 0}, None,
                    first.dtype, made)
        return _new(like, "unbroadcast", [rows, first.inputs[1]], {}, first.shape,
                    first.dtype, made)
    if name == "concat" and all(p.attrs == first.attrs and len(p.inputs) == len(first.inputs)
                                and all(a.shape == b.shape for a, b in zip(p.inputs, first.inputs))
                                for p in parts):  # piece by piece (a kernel read in slices)
        pieces = [_summed([p.inputs[k] for p in parts], like, made, values)
                  for k in range(len(first.inputs))]
        return _new(like, "concat", pieces, dict(first.attrs), first.shape, first.dtype, made)
    if name == "gather_grad":
        return _stacked_gathers(parts, like, made, values)
    return None


def _stacked_gathers(parts, like, made, values):
    """``stack`` of the ``g`` of ``gather_grad(g_t, t, x, axis)`` where the constant
    scalar indices ``t`` are ``0, 1, ...`` of ``x``'s axis, each once."""
    first = parts[0]
    x, axis = first.inputs[2], first.attrs["axis"]
    if _rank_of(x) is None or x.shape[axis] is None or len(parts) != x.shape[axis]:
        return None
    for t, p in enumerate(parts):
        index = _known(p.inputs[1], values)
        if p.inputs[2] is not x or p.attrs != first.attrs or index is None \
                or index.shape != () or int(index) != t or not _rank(p.inputs[0], len(x.shape) - 1):
            return None
    rows = [_new(like, "expand_dims", [p.inputs[0]], {"axes": (axis,)}, None, p.dtype, made)
            for p in parts]
    return _new(like, "concat", rows, {"axis": axis}, x.shape, first.dtype, made)


def _rank_of(node):
    """The rank of ``node``'s static shape, or None where it is unknown."""
    try:
        return None if node.shape is None else len(node.shape)
    except ValueError:  # a shape of unknown rank
        return None


def _rank(node, rank):
    return _rank_of(node) == rank
