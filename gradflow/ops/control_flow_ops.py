"""Control flow: ``cond``, ``while_loop``, ``control_dependencies``, ``tuple``, ``identity``.

A ``cond`` or ``while_loop`` is one node of kind ``"call"`` that holds sub-graphs.
Its branch functions (or loop condition and body) are called once, while the
graph records the nodes they create; the nodes reachable from their results
through nodes created there are the sub-graph's *internal* nodes, and the
tensors from outside that those read are its *captured* inputs, which become
the inputs of the control-flow node. When a plan is compiled, the node compiles
one sub-plan per sub-graph (``session.compile_subplan`` with the captured tensors
fed) and runs them as Python control flow: only the taken branch of a ``cond``
runs, and a loop body runs once per iteration. The outer plan never schedules
internal nodes, unless something outside uses them directly.

A control-flow node's value is a Python tuple; ``tuple_get`` nodes pick its
outputs. Each picker takes the control-flow node's inputs as well, so that its
gradient rule can send gradients to the captured tensors:

* ``cond``: the gradient of output k is another ``cond`` on the same predicate
  whose branches are ``gradients`` of each branch's output k with respect to
  its captured tensors (the incoming gradient is captured too). Values of the
  forward branch that the gradient branch needs are not recomputed: the forward
  node *exports* them (they are appended to its tuple; ``None`` for the branch
  not taken) and the gradient node reads them from it. Dropout masks and other
  random values inside a branch therefore agree between the forward and the
  backward pass, and the gradient of a gradient works the same way.
* ``while_loop``: when a gradient is asked for, the loop records every
  iteration's loop variables (and the body values the gradient needs); the
  gradient is a ``while_grad`` node that walks the iterations backwards with the
  body's vector-Jacobian product (itself a sub-graph built with ``gradients``)
  and sums the gradients of captured tensors over the iterations.

Assignments inside a ``cond`` branch are written, as every assignment, at the
end of the run: the branch writes to a private store, its new values become
outputs of the ``cond`` and assignments outside write them (a variable a branch
does not assign keeps its value). Assignments inside a ``while_loop`` body are
refused with an error naming the node.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation, Tensor, TensorShape, get_default_graph
from gradflow.ops.state_ops import _static_shape, identity
from gradflow.prim.registry import apply, convert_to_tensor, register

_SIDES = ("true", "false")


class _Variant(dtypes.DType):
    """The dtype of values that are no array (TF's ``variant``): the tuple a
    control-flow node computes, the ``None`` of a print or an assertion. It is not
    floating, so no gradient or numerics check touches such a value, and such a
    node can be fed to a sub-plan like any other."""

    __slots__ = ()

    @property
    def as_numpy_dtype(self):
        return np.object_

    def resolve(self, xp):
        raise TypeError("a variant value (a tuple of a control-flow node) is no array")

    def __reduce__(self):
        return (_variant, ())


def _variant():
    return VARIANT


VARIANT = _Variant("variant", "v", 0)


# -- nested structures ------------------------------------------------------------


def _is_sequence(value) -> bool:
    return isinstance(value, (list, tuple, dict))


def _flatten(value) -> list:
    """The leaves of a nested list/tuple/dict (dicts in sorted key order)."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _flatten(value[key])]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


def _pack(structure, leaves):
    """``leaves`` arranged as ``structure`` (the inverse of ``_flatten``)."""
    leaves = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            built = {key: build(s[key]) for key in sorted(s)}
            return type(s)((key, built[key]) for key in s)
        if isinstance(s, (list, tuple)):
            items = [build(item) for item in s]
            if isinstance(s, list):
                return items
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(leaves)

    return build(structure)


# -- which construct owns which node ---------------------------------------------

# graph -> {node: (construct info, side)} for the nodes internal to a cond branch
# ("true"/"false") or a while_loop ("body"/"cond").
_OWNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _owners(graph) -> dict:
    owners = _OWNERS.get(graph)
    if owners is None:
        owners = _OWNERS[graph] = {}
    return owners


def is_control_flow_internal(node) -> bool:
    """Whether ``node`` was made for a sub-graph of a ``cond`` or ``while_loop`` (a
    branch, a loop body or condition, a loop's stand-in, their gradients)."""
    return node in _owners(node.graph)


# nodes a sub-graph never computes itself: the outer plan reads them (a variable's value
# at the start of the run, or at its commit) and feeds them in
_OUTSIDE_KINDS = ("variable", "placeholder", "read_current")


def _claim(info, side, internal, window=()):
    """Record that ``internal`` belong to ``side`` of the construct ``info`` (an
    enclosing construct, built later, takes over), and the other nodes made in its
    ``window`` too, unless a nested construct has them."""
    owners = _owners(info.node.graph)
    for n in internal:
        owners[n] = (info, side)
    for n in window:
        if n not in owners and n.opdef.kind not in _OUTSIDE_KINDS:
            owners[n] = (info, "window")


class _Recorder:
    """Collects the nodes a graph gains inside its ``with recorder.recording():`` blocks."""

    def __init__(self, graph):
        self.graph = graph
        self.nodes: set = set()

    @contextmanager
    def recording(self):
        start = len(self.graph.nodes)
        try:
            yield self
        finally:
            self.nodes.update(self.graph.nodes[start:])


def _is_value(t) -> bool:
    return isinstance(t, Tensor) and not isinstance(t, Operation) and t.dtype is not None \
        and t.dtype is not VARIANT


def _partials(ys, xs, grad_ys):
    """The partial derivatives of ``ys`` (weighted by ``grad_ys``) in each of ``xs``: an x
    that depends on another x is held constant, since the outer chain rule adds that
    path (``gradients`` itself differentiates through such an x, as TF1 does)."""
    from gradflow.autodiff import gradients

    return gradients(ys, xs, grad_ys=grad_ys, stop_gradients=xs)


def _differentiable(t) -> bool:
    return _is_value(t) and t.dtype.is_floating


def _analyze(outputs, created, boundary, allowed):
    """Split what ``outputs`` depend on into the sub-graph's parts.

    Returns ``(internal, captured, stash, assigns)``: the nodes created by the
    sub-graph's function (``created``) that ``outputs`` need, computed by the
    sub-plan; the outside tensors they read (inputs of the control-flow node);
    ``[(node, info)]`` for nodes internal to an *allowed* construct (the forward
    pass of a gradient), fed from that construct's exports; and the assignments
    among the internal nodes. ``boundary`` nodes (a loop's stand-ins) are fed
    and not followed. Variables and placeholders are always captured, so the
    outer plan reads (and initializes) them.
    """
    owners = None
    internal, captured, stash, assigns = set(), {}, {}, []
    stack = [o for o in outputs if o is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in boundary:
            continue
        kind = node.opdef.kind
        if node in created and kind not in _OUTSIDE_KINDS:
            internal.add(node)
            if kind == "assign":
                assigns.append(node)
            stack.extend(node.inputs)
            stack.extend(node.control_inputs)
            continue
        if kind == "group":  # an outside operation: what it runs is computed outside
            stack.extend(node.inputs)
            stack.extend(node.control_inputs)
            continue
        if owners is None:
            owners = _owners(node.graph)
        owner = owners.get(node)
        if owner is not None and owner in allowed:
            stash[node] = owner[0]
        else:
            captured[node] = None
    by_index = lambda t: t.index
    assigns.sort(key=by_index)
    return (internal, sorted(captured, key=by_index),
            sorted(stash.items(), key=lambda item: item[0].index), assigns)


def _run_sub(plan, feeds, store, what):
    """Run a sub-plan; an error names the node inside it that failed."""
    try:
        return plan.fn(feeds, store)
    except Exception as err:
        inner = plan.node_at_failure(err.__traceback__)
        if inner is None:
            raise
        raise InvalidArgumentError(f"{what}: {inner.type} '{inner.name}' failed: {err} "
                                   f"(created at {inner.source})") from err


def _compatible_shape(a, b):
    """The most specific static shape that both ``a`` and ``b`` fit."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _fits(shape, invariant) -> bool:
    """Whether the static ``shape`` is at least as specific as ``invariant``."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or s == i for s, i in zip(shape, invariant))


def _compatible(shape, other) -> bool:
    """Whether a value of static ``shape`` may have a run-time shape that fits ``other``."""
    if shape is None or other is None:
        return True
    return len(shape) == len(other) and all(
        a is None or b is None or a == b for a, b in zip(shape, other))


def _fmt_shape(shape):
    return "unknown" if shape is None else str(tuple(shape))


# -- the ops -----------------------------------------------------------------------


class _Construct:
    """What a control-flow node holds (``node.attrs["info"]``): its sub-graphs,
    and the internal values it exports to the nodes of its gradient."""

    kind = "construct"

    def __init__(self, name):
        self.name = name
        self.node = None
        self.exports: list = []  # [(node, side)], append-only
        self._export_index: dict = {}

    def export(self, node, side) -> int:
        """The position of ``node`` among the exports (exporting it if new)."""
        index = self._export_index.get(node)
        if index is None:
            index = self._export_index[node] = len(self.exports)
            self.exports.append((node, side))
        return index

    def output_grad(self, picker, g):
        """Gradients for ``picker.inputs`` (``[node] + node.inputs``) given ``g``."""
        return [None] * len(picker.inputs)

    def __repr__(self):
        return f"<{self.kind} '{self.name}'>"


def _call_impl(session, node):
    return node.attrs["info"].bind(session, node)


def _construct_infer(shapes, in_dtypes, info):
    return None, VARIANT


def _tuple_get_infer(shapes, in_dtypes, index, shape, dtype):
    return shape, dtype


def _tuple_get_impl(session, node):
    index = node.attrs["index"]
    return lambda value, *rest: value[index]


def _tuple_get_grad(node, g):
    return node.inputs[0].attrs["info"].output_grad(node, g)


def _loop_var_infer(shapes, in_dtypes, shape, dtype):
    if in_dtypes[0] is not dtype:
        raise TypeError(f"the value is {in_dtypes[0].name}, the loop variable {dtype.name}")
    if not _compatible(shapes[0], shape):
        raise ValueError(f"the value's shape {_fmt_shape(shapes[0])} does not fit the "
                         f"shape invariant {_fmt_shape(shape)}")
    return shape, dtype


def _identity_call(session, node):
    return lambda value: value


register("cond", _call_impl, _construct_infer, grad=None, kind="call")
register("while", _call_impl, _construct_infer, grad=None, kind="call")
register("while_grad", _call_impl, _construct_infer, grad=None, kind="call")
register("tuple_get", _tuple_get_impl, _tuple_get_infer, grad=_tuple_get_grad, kind="call",
         takes_strings=True)  # picks from a tuple; a string input is only carried along
# A loop variable inside the body: fed by the loop; outside it is its initial value.
register("while_loop_var", _identity_call, _loop_var_infer, grad=None, kind="call")


def _pick(node, index, shape, dtype, extra=(), name=None):
    """The ``index``-th element of the tuple value of ``node``."""
    return apply("tuple_get", [node, *node.inputs, *extra], name=name, index=index,
                 shape=None if shape is None else tuple(shape), dtype=dtype)


# -- control dependencies, identity, tuple -----------------------------------------


def _graph_of_items(items):
    for item in items:
        item = item._as_graph_tensor() if hasattr(item, "_as_graph_tensor") else item
        if isinstance(item, Tensor):
            return item.graph
    return get_default_graph()


def control_dependencies(control_inputs):
    """Context manager: nodes built inside run only after ``control_inputs`` (TF1).

    ``control_inputs`` is a list of tensors or operations (or ``None``, which
    clears the dependencies of the enclosing blocks). Note that gradflow writes
    every assignment at the end of a run; ``identity`` of a variable that one of
    the control inputs assigns reads the assigned value, as in TF1.

    >>> with gf.control_dependencies([v.assign(v + 1)]):
    ...     new = gf.identity(v)
    """
    if control_inputs is None:
        return get_default_graph().control_dependencies(None)
    items = list(control_inputs)
    return _graph_of_items(items).control_dependencies(items)


def tuple_(tensors, name=None, control_inputs=None):
    """``gf.tuple``: ``tensors``, each available only after all of them (TF1 ``tf.tuple``).

    ``control_inputs`` are further operations every output waits for. ``None``
    entries stay ``None``; operations come back as operations.
    """
    from gradflow.ops.state_ops import group

    items = list(tensors)
    gating = [t for t in items if t is not None] + list(control_inputs or ())
    if not gating:
        return items
    gate = group(*gating, name=name or "tuple")
    out = []
    with gate.graph.control_dependencies([gate]):
        for t in items:
            if t is None:
                out.append(None)
            elif isinstance(t, Operation):
                out.append(group(t))
            else:
                out.append(identity(t))
    return out


# -- cond ------------------------------------------------------------------------------


class _Branch:
    def __init__(self, outputs, internal, captured, stash, allowed, assigns):
        self.outputs = outputs  # flat: a tensor, an operation or None per slot
        self.internal = internal
        self.captured = captured
        self.stash = stash  # [(internal node of a forward construct, that construct)]
        self.allowed = allowed  # {(construct, side)} whose internal values it may read
        self.assigns = assigns


class _CondInfo(_Construct):
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
            mine = [e for e, (_, s) in enumerate(exports) if s == _SIDES[side]]
            fetches = [branch.outputs[k] for k in slots] + [exports[e][0] for e in mine]
            fed = branch.captured + [n for n, _ in branch.stash]
            plan = session.compile_subplan(fetches, fed)
            targets = slots + [self.n_slots + len(self.variables) + e for e in mine]
            taken = [position[t] for t in branch.captured]
            stashed = [(position[src.node], src.export_position(n)) for n, src in branch.stash]
            what = f"the {_SIDES[side]} branch of cond '{self.name}'"
            runners.append((plan, targets, taken, stashed, what))
        variables = [(var, position[var], self.n_slots + m)
                     for m, var in enumerate(self.variables)]

        def run(*inputs):
            plan, targets, taken, stashed, what = runners[0 if inputs[0] else 1]
            feeds = [inputs[i] for i in taken] + [inputs[i][j] for i, j in stashed]
            private = session.new_store()  # the branch's assignments, written outside
            values = _run_sub(plan, feeds, private, what)
            out = [None] * n_values
            for k, value in zip(targets, values):
                out[k] = value
            for var, i, k in variables:
                out[k] = private.get(var, inputs[i])
            return out

        return run

    def output_grad(self, picker, g):
        """``cond(pred, d(true output)/d(captured) . g, d(false output)/d(captured) . g)``."""
        from gradflow.ops.math_ops import zeros_like

        node = self.node
        grads = [None] * len(picker.inputs)
        k = picker.attrs["index"]
        if k >= self.n_slots:
            return grads
        wrt = [c for c in node.inputs[1:] if _differentiable(c)]
        if not wrt:
            return grads
        graph = node.graph
        recorders = [_Recorder(graph), _Recorder(graph)]
        maps = []
        with graph.name_scope(f"{self.name}_grad"), graph.control_dependencies(None):
            for side, branch in enumerate(self.branches):
                y = branch.outputs[k]
                found = {}
                if _differentiable(y) and y.opdef.kind != "assign":
                    with recorders[side].recording():
                        found = dict(zip(wrt, _partials([y], wrt, [g])))
                maps.append(found)
            keep = [c for c in wrt if any(m.get(c) is not None for m in maps)]
            if not keep:
                return grads
            sides = []
            for side, branch in enumerate(self.branches):
                with recorders[side].recording():
                    outs = [maps[side].get(c) if maps[side].get(c) is not None
                            else zeros_like(c) for c in keep]
                allowed = {(self, _SIDES[side])} | branch.allowed
                sides.append((outs, recorders[side].nodes, allowed))
            # ``wrt`` are inputs even where only values read from this node depend on
            # them: the gradient of the gradient flows to them through those values.
            results, _ = _make_cond(graph, node.inputs[0], sides, f"{self.name}_grad", wrt)
        position = {t: i for i, t in enumerate(picker.inputs)}
        for c, r in zip(keep, results):
            grads[position[c]] = r
        return grads


def _slot_kind(t) -> str:
    if t is None:
        return "none"
    return "operation" if isinstance(t, Operation) else "tensor"


def _make_cond(graph, pred, sides, name, extra=()):
    """Build one cond node from two traced branches ``(flat outputs, created nodes,
    allowed stash sources)`` (``extra``: more inputs); returns ``(flat results, node)``."""
    from gradflow.ops.state_ops import assign, group

    branches = []
    for outs, created, allowed in sides:
        internal, captured, stash, assigns = _analyze(outs, created, (), allowed)
        branches.append(_Branch(list(outs), internal, captured, stash, allowed, assigns))
    owners = _owners(graph)
    for branch in branches:
        for n, src in branch.stash:  # the forward construct hands these values over
            src.export(n, owners[n][1])
    true, false = branches
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
            shapes.append(_compatible_shape(a.shape, b.shape))
        else:
            shapes.append(None)
        kinds.append(ka)
    variables = []
    for branch in branches:
        for a in branch.assigns:
            if a.attrs["var"] not in variables:
                variables.append(a.attrs["var"])
    captured = {}
    for t in true.captured + false.captured + variables + list(extra):
        captured.setdefault(t, None)
    sources = {}
    for branch in branches:
        for _, src in branch.stash:
            sources.setdefault(src, None)
    info = _CondInfo(name, branches, variables)
    inputs = [pred] + sorted(captured, key=lambda t: t.index) + [s.node for s in sources]
    node = apply("cond", inputs, name="cond", info=info)
    info.node = node
    for side, branch in enumerate(branches):
        _claim(info, _SIDES[side], branch.internal, sides[side][1])
    # the branch's new values of the variables, written at the end of the run
    writes = [assign(var, _pick(node, info.n_slots + m, var.shape, var.dtype),
                     name=var.name + "/cond_assign")
              for m, var in enumerate(variables)]
    results = []
    for k, kind in enumerate(kinds):
        if kind == "tensor":
            results.append(_pick(node, k, shapes[k], true.outputs[k].dtype, writes,
                                 name="Merge"))
        elif kind == "operation":
            results.append(group(node, *writes))
        else:
            results.append(None)
    graph.add_to_collection("cond_context", info)
    return results, node


def _describe(t) -> str:
    if t is None:
        return "None"
    if isinstance(t, Operation):
        return f"the operation '{t.name}'"
    return f"the tensor '{t.name}'"


def _branch_outputs(result, recorder, like=None):
    """The flat outputs of a branch function's result (Python numbers become
    constants made inside the branch)."""
    flat = []
    with recorder.recording():
        for leaf in _flatten(result):
            if leaf is None or isinstance(leaf, Tensor):
                flat.append(leaf)
            elif hasattr(leaf, "_as_graph_tensor"):
                flat.append(leaf._as_graph_tensor())
            else:
                flat.append(convert_to_tensor(leaf))
    return flat


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``; only the taken branch runs (TF1).

    ``pred`` is a scalar bool tensor (or a Python bool, which picks the branch
    while the graph is built). Each function returns a tensor, an operation,
    ``None`` or a (nested) list/tuple/dict of them, the same structure in both;
    the results have the dtype of both branches and the most specific shape that
    fits both. A singleton list is unpacked unless ``strict=True``. TF1's old
    names ``fn1``/``fn2`` work too. Gradients flow through the taken branch.

    >>> y = gf.cond(x > 0, lambda: gf.sqrt(x), lambda: gf.zeros_like(x))
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables (functions of no "
                        "arguments)")
    if isinstance(pred, bool) or (not isinstance(pred, Tensor) and
                                  not hasattr(pred, "_as_graph_tensor")):
        if not isinstance(pred, bool):
            try:
                pred = bool(pred)
            except Exception:  # noqa: BLE001 - reported below
                raise TypeError(f"cond: pred must be a bool tensor or a Python bool, "
                                f"got {pred!r}") from None
        return _unpack(true_fn() if pred else false_fn(), strict)
    pred = convert_to_tensor(pred)
    if isinstance(pred, Operation) or not pred.dtype.is_bool:
        raise TypeError(f"cond: pred must be a bool tensor, got '{pred.name}' of dtype "
                        f"{pred.dtype.name if pred.dtype else 'none'}")
    if pred.shape is not None and len(pred.shape) != 0:
        raise ValueError(f"cond: pred must be a scalar, got '{pred.name}' of shape "
                         f"{tuple(pred.shape)}")
    graph = pred.graph
    with graph.name_scope(name or "cond") as scope:
        results, structures = [], []
        for fn in (true_fn, false_fn):
            recorder = _Recorder(graph)
            with recorder.recording():
                result = fn()
            structures.append(result)
            results.append((_branch_outputs(result, recorder), recorder.nodes, frozenset()))
        flat, _ = _make_cond(graph, pred, results, scope.rstrip("/"))
    return _unpack(_pack(structures[0], flat), strict)


def _unpack(result, strict):
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The result of the function paired with the first true predicate, else of
    ``default()`` (TF1 ``tf.case``); only that function's ops run.

    ``pred_fn_pairs`` is a list of ``(bool scalar, callable)`` pairs, or a dict of
    them (tested in insertion order). Without ``default``, the last pair's function
    is the default, and a run where no predicate is true raises
    ``InvalidArgumentError``. With ``exclusive=True``, a run where more than one
    predicate is true raises ``InvalidArgumentError``.

    >>> r = gf.case([(x < y, lambda: gf.constant(17))], default=lambda: gf.constant(23))
    """
    from gradflow.ops.array_ops import reduce_any, reduce_sum
    from gradflow.ops.debug_ops import Assert
    from gradflow.ops.index_ops import stack
    from gradflow.ops.math_ops import cast, less_equal

    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if not pairs:
        raise ValueError("case: pred_fn_pairs is empty")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not callable(pair[1]):
            raise TypeError(f"case: pred_fn_pairs[{i}] must be a (predicate, callable) pair, "
                            f"got {pair!r}")
    preds = [convert_to_tensor(p) for p, _ in pairs]
    for i, p in enumerate(preds):
        if isinstance(p, Operation) or not p.dtype.is_bool or \
                (p.shape is not None and len(p.shape) != 0):
            raise TypeError(f"case: predicate {i} '{p.name}' must be a bool scalar, got "
                            f"{p.dtype.name if p.dtype else 'an operation'} of shape "
                            f"{p.shape}")
    fns = [f for _, f in pairs]
    checks = []
    if default is None:
        default = fns[-1]
        checks.append(Assert(reduce_any(stack(preds)),
                             ["case: none of the conditions evaluated as True and no "
                              "default was given; predicates:", *preds],
                             name=f"{name}_none_true"))
    if exclusive and len(preds) > 1:
        count = reduce_sum(cast(stack(preds), "int32"))
        checks.append(Assert(less_equal(count, 1),
                             ["case: more than one condition evaluated as True with "
                              "exclusive=True; predicates:", *preds],
                             name=f"{name}_exclusive"))

    def chain(i):
        if i == len(preds):
            return default()
        return cond(preds[i], fns[i], lambda: chain(i + 1), strict=True)

    if checks:
        with control_dependencies(checks):
            result = chain(0)
    else:
        result = chain(0)
    return _unpack(result, strict)


# -- while_loop -------------------------------------------------------------------------


class _WhileInfo(_Construct):
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
        self._vjp = None

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
        store = session._store

        def run(*inputs):
            state = list(inputs[:n])
            cond_caps = [inputs[i] for i in cond_taken]
            body_caps = [inputs[i] for i in body_taken]
            most = int(to_numpy(inputs[limit_at])) if limit_at is not None else limit
            history = [] if record else None
            done = 0
            while most is None or done < most:
                if not _run_sub(cond_plan, state + cond_caps, store, cond_what)[0]:
                    break
                values = _run_sub(body_plan, state + body_caps, store, body_what)
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
        info = _WhileGradInfo(f"{self.name}_grad", self, vjp, k)
        grad_node = apply("while_grad", [node, g, *vjp.extra], name=f"{self.name}_grad",
                          info=info)
        info.node = grad_node
        position = {t: i for i, t in enumerate(picker.inputs)}
        for m, j in enumerate(vjp.diff):
            init = node.inputs[j]
            grads[1 + j] = _pick(grad_node, m, init.shape, init.dtype)
        for m, c in enumerate(vjp.caps):
            grads[position[c]] = _pick(grad_node, len(vjp.diff) + m, c.shape, c.dtype)
        return grads

    def _vjp_graph(self):
        """The body's vector-Jacobian product as a sub-graph (built once)."""
        if self._vjp is not None:
            return self._vjp

        graph = self.node.graph
        n = len(self.standins)
        diff = [j for j in range(n) if _differentiable(self.standins[j])]
        wrt = [c for c in self.node.inputs[n:] if _differentiable(c)
               and c is not self.maximum_iterations and c in set(self.body.captured)]
        recorder = _Recorder(graph)
        with graph.name_scope(f"{self.name}_grad_body"), graph.control_dependencies(None), \
                recorder.recording():
            outs = self.body.outputs
            cots = [apply("while_loop_var", [outs[j]], name="cotangent",
                          shape=self.invariants[j], dtype=self.standins[j].dtype)
                    for j in diff]
            xs = [self.standins[j] for j in diff] + wrt
            grads = _partials([outs[j] for j in diff], xs, cots) if diff \
                else [None] * len(xs)
        var_grads, cap_grads = grads[:len(diff)], grads[len(diff):]
        caps = [c for c, gc in zip(wrt, cap_grads) if gc is not None]
        cap_grads = [gc for gc in cap_grads if gc is not None]
        fetches = [gv for gv in var_grads if gv is not None] + cap_grads
        internal, captured, stash, _ = _analyze(fetches, recorder.nodes,
                                                set(self.standins) | set(cots),
                                                {(self, "body")})
        _claim(self, "vjp", internal, recorder.nodes)
        stash_nodes = [s for s, _ in stash]
        export_at = [self.export(s, "body") for s in stash_nodes]
        extra = {}
        for t in captured + caps:
            extra.setdefault(t, None)
        self._vjp = _Vjp(diff, cots, var_grads, caps, fetches, stash_nodes, export_at,
                         captured, list(extra))
        return self._vjp


class _Vjp:
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


class _WhileGradInfo(_Construct):
    """The backward loop of output ``k``: node inputs ``[loop, g, *vjp.extra]``; value
    ``(*gradients of the differentiable initial values, *gradients of vjp.caps)``."""

    kind = "while_grad"

    def __init__(self, name, loop, vjp, k):
        super().__init__(name)
        self.loop = loop
        self.vjp = vjp
        self.k = k

    def bind(self, session, node):
        loop, vjp = self.loop, self.vjp
        n = len(loop.standins)
        xp = session.backend.xp
        fed = loop.standins + vjp.cots + vjp.stash_nodes + vjp.captured
        plan = session.compile_subplan(vjp.fetches, fed)
        extra_at = {t: i for i, t in enumerate(vjp.extra)}
        captured_at = [extra_at[t] for t in vjp.captured]
        zeros_at = [extra_at[c] for c in vjp.caps]
        slot, at = {}, 0
        for j, gv in zip(vjp.diff, vjp.var_grads):
            if gv is not None:
                slot[j] = at
                at += 1
        cap_slots = list(range(at, at + len(vjp.caps)))
        diff, k, export_at = vjp.diff, self.k, vjp.export_at
        what = f"the gradient of while_loop '{loop.name}'"
        store = session._store

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
                values = _run_sub(plan, list(state) + cots + stashed + captured, store, what)
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


def _invariant(shape, var):
    return _static_shape(shape, f"while_loop: the shape invariant of '{var.name}'")


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (TF1).

    ``loop_vars`` is a tensor or a (nested) list/tuple of tensors (Python
    numbers become constants); ``body`` returns the same structure, with the
    same dtypes and shapes that fit ``shape_invariants`` (by default each
    variable's initial shape; ``None`` in a shape lets that dimension change,
    ``None`` for a whole shape lets the rank change). ``maximum_iterations``
    (an int or a scalar int tensor) bounds the number of iterations.
    Gradients flow to the initial values and to the tensors the body reads
    (``back_prop=False`` stops them); ``parallel_iterations`` and
    ``swap_memory`` are accepted and ignored.

    >>> i, x = gf.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * w), (0, x0))
    """
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    if loop_vars is None or (_is_sequence(loop_vars) and not _flatten(loop_vars)):
        raise ValueError("while_loop: no loop variables provided")
    leaves = _flatten(loop_vars)
    graph = _graph_of_items(leaves)
    with graph.as_default():
        init = [convert_to_tensor(v) for v in leaves]
    for v in init:
        if not _is_value(v):
            raise TypeError(f"while_loop: the loop variable '{v.name}' is an operation, "
                            "not a tensor")
    if shape_invariants is None:
        invariants = [None if v.shape is None else tuple(v.shape) for v in init]
    else:
        given = _flatten_invariants(shape_invariants)
        if len(given) != len(init):
            raise ValueError(f"while_loop: {len(given)} shape invariants for {len(init)} "
                             "loop variables")
        invariants = [_invariant(s, v) for s, v in zip(given, init)]
        for v, inv in zip(init, invariants):
            if not _compatible(v.shape, inv):
                raise ValueError(f"while_loop: the initial value '{v.name}' has shape "
                                 f"{_fmt_shape(v.shape)}, which does not fit its shape "
                                 f"invariant {_fmt_shape(inv)}")
    limit = maximum_iterations
    if limit is not None and not isinstance(limit, int):
        limit = convert_to_tensor(limit)
        if not limit.dtype.is_integer or (limit.shape is not None and len(limit.shape)):
            raise TypeError(f"while_loop: maximum_iterations must be a scalar int, got "
                            f"'{limit.name}' ({limit.dtype.name}, shape "
                            f"{_fmt_shape(limit.shape)})")
    with graph.as_default(), graph.name_scope(name or "while") as scope:
        loop_name = scope.rstrip("/")
        recorder = _Recorder(graph)
        with recorder.recording():
            standins = [apply("while_loop_var", [v], name="loop_var", shape=inv,
                              dtype=v.dtype) for v, inv in zip(init, invariants)]
            args = _pack(loop_vars, standins)
            args = list(args) if isinstance(loop_vars, (list, tuple)) else [args]
            c = cond(*args)
            c = c._as_graph_tensor() if hasattr(c, "_as_graph_tensor") else c
            c = c if isinstance(c, Tensor) else convert_to_tensor(bool(c))
            result = body(*args)
        if isinstance(c, Operation) or not c.dtype.is_bool or \
                (c.shape is not None and len(c.shape) != 0):
            raise TypeError(f"while_loop '{loop_name}': cond must return a scalar bool "
                            f"tensor, got '{c.name}' ({c.dtype.name if c.dtype else 'none'}"
                            f", shape {_fmt_shape(c.shape)})")
        outs = _body_outputs(result, standins, invariants, recorder, loop_name)
        owned = set(standins)
        cond_parts = _analyze([c], recorder.nodes, owned, frozenset())
        body_parts = _analyze(outs, recorder.nodes, owned, frozenset())
        for parts, what in ((cond_parts, "condition"), (body_parts, "body")):
            if parts[3]:
                a = parts[3][0]
                raise ValueError(
                    f"while_loop '{loop_name}': '{a.name}' assigns variable "
                    f"'{a.attrs['var'].name}' inside the loop {what} (created at {a.source}); "
                    "assignments inside a while_loop are not supported, because a run "
                    "writes its assignments at its end: carry the value as a loop variable "
                    "and assign the loop's result")
        cond_branch = _Branch([c], cond_parts[0], cond_parts[1], [], frozenset(), [])
        body_branch = _Branch(outs, body_parts[0], body_parts[1], [], frozenset(), [])
        info = _WhileInfo(loop_name, standins, invariants, cond_branch, body_branch, limit,
                          bool(back_prop))
        captured = {}
        for t in cond_branch.captured + body_branch.captured:
            captured.setdefault(t, None)
        inputs = init + sorted(captured, key=lambda t: t.index)
        if isinstance(limit, Tensor) and limit not in inputs:
            inputs.append(limit)
        node = apply("while", inputs, name="while_loop", info=info)
        info.node = node
        _claim(info, "loop_var", standins)
        _claim(info, "cond", cond_branch.internal)
        _claim(info, "body", body_branch.internal, recorder.nodes)
        finals = [_pick(node, j, invariants[j], v.dtype, name="Exit")
                  for j, v in enumerate(init)]
        graph.add_to_collection("while_context", info)
    packed = _pack(loop_vars, finals)
    if not return_same_structure and isinstance(packed, (list, tuple)) and len(packed) == 1:
        return packed[0]
    return packed


def _flatten_invariants(shape_invariants):
    """Shape invariants flattened like loop variables (a shape is a leaf)."""
    def is_shape(s):
        return s is None or isinstance(s, TensorShape) or (
            isinstance(s, (list, tuple)) and all(d is None or isinstance(d, int) for d in s))

    def walk(s):
        if is_shape(s):
            return [s]
        if isinstance(s, dict):
            return [leaf for key in sorted(s) for leaf in walk(s[key])]
        return [leaf for item in s for leaf in walk(item)]

    return walk(shape_invariants)


def _body_outputs(result, standins, invariants, recorder, loop_name):
    leaves = _flatten(result)
    if len(leaves) != len(standins):
        raise ValueError(f"while_loop '{loop_name}': the body returns {len(leaves)} values "
                         f"for {len(standins)} loop variables")
    outs = []
    with recorder.recording():
        for j, (leaf, s, inv) in enumerate(zip(leaves, standins, invariants)):
            if hasattr(leaf, "_as_graph_tensor"):
                leaf = leaf._as_graph_tensor()
            if not isinstance(leaf, Tensor):
                leaf = convert_to_tensor(leaf, like=s)
            if isinstance(leaf, Operation) or leaf.dtype is not s.dtype:
                got = "an operation" if isinstance(leaf, Operation) else leaf.dtype.name
                raise TypeError(f"while_loop '{loop_name}': loop variable {j} is "
                                f"{s.dtype.name} but the body returns {got} for it "
                                f"('{leaf.name}')")
            if not _fits(leaf.shape, inv):
                raise ValueError(
                    f"while_loop '{loop_name}': loop variable {j} enters the loop with shape "
                    f"{_fmt_shape(inv)}, but the body returns '{leaf.name}' of shape "
                    f"{_fmt_shape(leaf.shape)}; pass shape_invariants with None where the "
                    "shape may change")
            outs.append(leaf)
    return outs
