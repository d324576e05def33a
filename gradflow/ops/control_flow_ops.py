"""Control flow: ``cond``, ``case``, ``while_loop``, ``control_dependencies``, ``tuple``.

A ``cond`` or ``while_loop`` is one node of kind ``"call"`` that holds sub-graphs (the
primitives ``cond`` and ``while``: ``gradflow.prim.cond``, ``gradflow.prim.while_loop``).
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
outputs (``gradflow.prim.construct``). Gradients flow through the taken branch of
a ``cond`` and through every iteration of a ``while_loop`` (see their primitives).

Assignments inside a ``cond`` branch are written, as every assignment, at the
end of the run: the branch writes to a private store, its new values become
outputs of the ``cond`` and assignments outside write them (a variable a branch
does not assign keeps its value). Assignments inside a ``while_loop`` body are
refused with an error naming the node.
"""

from __future__ import annotations

from gradflow.graph import UNKNOWN_SHAPE, Operation, Tensor, TensorShape, get_default_graph
from gradflow.ops.array_ops import reduce_any, reduce_sum
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import stack
from gradflow.ops.math_ops import cast, less_equal
from gradflow.ops.state_ops import _static_shape, group, identity
from gradflow.ops.tensor_array_ops import TensorArray
from gradflow.prim.cond import make_cond
from gradflow.prim.construct import (  # noqa: F401 - VARIANT: the dtype others import from here
    VARIANT,
    Recorder,
    compatible,
    fits,
    fmt_shape,
    is_value,
)
from gradflow.prim.registry import convert_to_tensor
from gradflow.prim.while_loop import loop_var, make_while

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


def _branch_outputs(result, recorder, like=None):
    """The flat outputs of a branch function's result (Python numbers become
    constants made inside the branch)."""
    flat = []
    with recorder.recording():
        for leaf in _flatten(result):
            if isinstance(leaf, TensorArray):
                flat.append(leaf.flow)
            elif leaf is None or isinstance(leaf, Tensor):
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
            recorder = Recorder(graph)
            with recorder.recording():
                result = fn()
            structures.append(result)
            results.append((_branch_outputs(result, recorder), recorder.nodes, frozenset()))
        arrays = _branch_arrays(structures, scope.rstrip("/"))
        flat, _ = make_cond(graph, pred, results, scope.rstrip("/"))
    return _unpack(_pack(structures[0], _with_arrays(flat, arrays)), strict)


def _branch_arrays(structures, name):
    """Per output slot of a cond, the TensorArray both branches return there (the same
    array, maybe written differently), or None for a tensor."""
    true, false = (_flatten(s) for s in structures)
    arrays = []
    for k, (a, b) in enumerate(zip(true, false)):
        if not isinstance(a, TensorArray) and not isinstance(b, TensorArray):
            arrays.append(None)
            continue
        if not isinstance(a, TensorArray) or not isinstance(b, TensorArray) or \
                a._meta is not b._meta:
            raise TypeError(f"cond '{name}': output {k} is {a!r} in the true branch and "
                            f"{b!r} in the false branch; both branches must return the "
                            "same TensorArray there (written or not)")
        arrays.append(a)
    return arrays


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
    arrays = [v if isinstance(v, TensorArray) else None for v in leaves]
    leaves = [v.flow if a is not None else v for v, a in zip(leaves, arrays)]
    graph = _graph_of_items(leaves)
    with graph.as_default():
        init = [convert_to_tensor(v) for v in leaves]
    for v in init:
        if not is_value(v):
            raise TypeError(f"while_loop: the loop variable '{v.name}' is an operation, "
                            "not a tensor")
    invariants = _invariants(shape_invariants, init, arrays)
    limit = _iteration_limit(maximum_iterations)
    with graph.as_default(), graph.name_scope(name or "while") as scope:
        loop_name = scope.rstrip("/")
        recorder = Recorder(graph)
        with recorder.recording():
            standins = [loop_var(v, inv, v.dtype, "loop_var") for v, inv in zip(init, invariants)]
            args = _pack(loop_vars, _with_arrays(standins, arrays))
            args = list(args) if isinstance(loop_vars, (list, tuple)) else [args]
            c = cond(*args)
            c = c._as_graph_tensor() if hasattr(c, "_as_graph_tensor") else c
            c = c if isinstance(c, Tensor) else convert_to_tensor(bool(c))
            result = body(*args)
        if isinstance(c, Operation) or not c.dtype.is_bool or \
                (c.shape is not None and len(c.shape) != 0):
            raise TypeError(f"while_loop '{loop_name}': cond must return a scalar bool "
                            f"tensor, got '{c.name}' ({c.dtype.name if c.dtype else 'none'}"
                            f", shape {fmt_shape(c.shape)})")
        outs = _body_outputs(result, standins, invariants, recorder, loop_name, arrays)
        finals = make_while(graph, loop_name, init, standins, invariants, c, outs, recorder,
                            limit, back_prop)
    packed = _pack(loop_vars, _with_arrays(finals, arrays))
    if not return_same_structure and isinstance(packed, (list, tuple)) and len(packed) == 1:
        return packed[0]
    return packed


def _with_arrays(flows, arrays):
    """``flows`` with each TensorArray's flow (``arrays[j]`` not None) as a TensorArray."""
    return [f if a is None else a._with_flow(f) for f, a in zip(flows, arrays)]


def _invariants(shape_invariants, init, arrays):
    """The static shape each loop variable keeps through the loop (``None`` entries may
    change), checked against the initial values; a TensorArray's flow is a scalar (its
    shape invariant is ignored, as TF1 does)."""
    if shape_invariants is None:
        return [None if v.shape is None else tuple(v.shape) for v in init]
    given = _flatten_invariants(shape_invariants)
    if len(given) != len(init):
        raise ValueError(f"while_loop: {len(given)} shape invariants for {len(init)} "
                         "loop variables")
    invariants = [() if a is not None else _invariant(s, v)
                  for s, v, a in zip(given, init, arrays)]
    for v, inv in zip(init, invariants):
        if not compatible(v.shape, inv):
            raise ValueError(f"while_loop: the initial value '{v.name}' has shape "
                             f"{fmt_shape(v.shape)}, which does not fit its shape "
                             f"invariant {fmt_shape(inv)}")
    return invariants


def _iteration_limit(maximum_iterations):
    """``maximum_iterations`` as an int, a scalar int tensor or None."""
    limit = maximum_iterations
    if limit is not None and not isinstance(limit, int):
        limit = convert_to_tensor(limit)
        if not limit.dtype.is_integer or (limit.shape is not None and len(limit.shape)):
            raise TypeError(f"while_loop: maximum_iterations must be a scalar int, got "
                            f"'{limit.name}' ({limit.dtype.name}, shape "
                            f"{fmt_shape(limit.shape)})")
    return limit


def _flatten_invariants(shape_invariants):
    """Shape invariants flattened like loop variables (a shape is a leaf)."""
    def is_shape(s):
        return s is None or s is UNKNOWN_SHAPE or isinstance(s, (TensorShape, TensorArray)) or (
            isinstance(s, (list, tuple)) and all(d is None or isinstance(d, int) for d in s))

    def walk(s):
        if is_shape(s):
            return [s]
        if isinstance(s, dict):
            return [leaf for key in sorted(s) for leaf in walk(s[key])]
        return [leaf for item in s for leaf in walk(item)]

    return walk(shape_invariants)


def _body_outputs(result, standins, invariants, recorder, loop_name, arrays):
    leaves = _flatten(result)
    if len(leaves) != len(standins):
        raise ValueError(f"while_loop '{loop_name}': the body returns {len(leaves)} values "
                         f"for {len(standins)} loop variables")
    for j, (leaf, a) in enumerate(zip(leaves, arrays)):
        if (a is None) != (not isinstance(leaf, TensorArray)):
            want = "a TensorArray" if a is not None else "a tensor"
            raise TypeError(f"while_loop '{loop_name}': loop variable {j} is {want}, but the "
                            f"body returns {leaf!r} for it")
    leaves = [leaf.flow if a is not None else leaf for leaf, a in zip(leaves, arrays)]
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
            if not fits(leaf.shape, inv):
                raise ValueError(
                    f"while_loop '{loop_name}': loop variable {j} enters the loop with shape "
                    f"{fmt_shape(inv)}, but the body returns '{leaf.name}' of shape "
                    f"{fmt_shape(leaf.shape)}; pass shape_invariants with None where the "
                    "shape may change")
            outs.append(leaf)
    return outs
