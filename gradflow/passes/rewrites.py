"""Algebraic rewrites: small rules that replace a node by a cheaper, equal one.

- ``log(softmax(x, axis))`` becomes ``log_softmax(x, axis)``: one op, and finite
  where the softmax underflows to zero (where the log of it was ``-inf``).
- A ``transpose`` of the last two axes feeding a ``matmul`` becomes the matmul's
  ``transpose_a`` / ``transpose_b``: the matmul reads the untransposed input
  (the transpose stays only if something else reads it).
- An NCHW -> NHWC layout copy of an NHWC -> NCHW one (an NCHW pool's output read by
  an NCHW convolution, each run through the NHWC kernels) is the NHWC value itself;
  so is a ``transpose`` that undoes a layout copy (an NCHW output flattened in NHWC
  order for a dense layer), and a layout copy that undoes a ``transpose``.
- ``negative(negative(x))`` is ``x``; ``x - negative(y)`` is ``x + y``,
  ``x + negative(y)`` and ``negative(y) + x`` are ``x - y``.
- A ``concat`` along the rows of ``gather(params, indices_k)`` (rows of one embedding
  table, one lookup per time step) is one ``gather`` of the indices concatenated.
- A ``concat`` along the rows of consecutive columns of one matrix, in either order
  (an RNN's ids of each time step), is a slice of its transpose, reshaped: one copy.
- A ``stack`` of per-step values (a ``concat`` of ``expand_dims``) is a row stack seen
  through a reshape and a transpose, and ``reshape_like`` of a length-1 slice that drops
  its axis is an index of that axis; a ``concat`` along the rows of consecutive indices
  of one axis of one tensor is a slice of it (that axis first), reshaped: one copy; a
  unit-step slice of a unit-step slice is one slice (``passes/time_stacks.py``).
- ``reshape(x, dims)`` with ``dims`` a constant after folding is a ``reshape`` of that
  static shape, so that no run reads ``dims`` back from a GPU.
- ``split_like`` (the gradient of a ``concat``) with the sizes it splits by known is a
  ``getitem`` of a static slice, computed once instead of at every run.
- ``lstm_gates((x + y) + bias)`` or ``lstm_gates(x + bias)``, the bias a row of the
  gates' width, is one ``lstm_gates_sum(x, y, bias)``: the sum is never stored.
- The gate gradient of an LSTM step, ``lstm_gates_grad(lstm_c_grad(dc, a, c_prev) +
  lstm_h_grad(dh, a, c), a)`` (both for the gates), is one ``lstm_cell_grad(dc, dh,
  a, c, c_prev)``: one pass where there were four.
- ``relu_grad(max_pool_grad(g, h), h)`` (a ReLU before a max pool, ``h`` its output)
  is one ``max_pool_relu_grad(g, h)``: the pool's gradient written once, masked where
  it is written, instead of written, read and written again.
- ``pow(x, c)`` with a one-element constant ``c`` of 2, 3, 0.5, -0.5 or -1 is
  ``square(x)``, ``x * square(x)``, ``sqrt(x)``, ``1 / sqrt(x)`` or ``1 / x``, as TF's
  graph optimizer rewrites them (so TF's numbers), where the result has ``x``'s shape
  and dtype (and ``x`` is floating for the last three). They fuse with the elementwise
  ops around them, where ``pow`` calls the C library's per element (NumPy's float32
  ``power(x, 3.0)`` takes about 60 ns an element: 64 ms a layer of BERT's GELU). The
  gradient's ``pow(x, c - 1)`` folds to such a constant and is rewritten too.
- ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x`` and ``x - 0``, with a
  constant whose elements are all exactly one (zero), are ``x`` where the result
  has ``x``'s dtype and, whatever ``x``'s run-time shape, its shape (the constant
  broadcasts into ``x`` without growing it). These are exact, NaN and infinity
  included, except that ``-0.0 + 0.0`` is ``+0.0``, which no comparison sees.

Gradient contributions to one tensor are summed by ``gradflow.autodiff`` as a
chain of binary ``add`` nodes (after stacking row-sum contributions into one
op); elementwise fusion makes one kernel of such a chain, so there is no rule
for them here.

A rule that removes a node (``x * 1`` is ``x``) leaves a fetched node as it is,
so that every fetch keeps a value of its own; a rule that makes a new node
replaces fetched nodes too. New nodes keep the name, source line and user node
of the node they replace, so errors still name the user's op, and run after the
control inputs of every node they make unnecessary.
"""

from __future__ import annotations

import numpy as np

from gradflow.graph import TensorShape
from gradflow.passes.ir import PlanNode
from gradflow.passes.time_stacks import (
    sliced_slice,
    stacked_slices,
    stacked_steps,
    step_of_stack,
)
from gradflow.prim.registry import REGISTRY, HostValue

# constants larger than this are not scanned for all-ones or all-zeros
MAX_SCANNED = 1 << 16


def rewrite_algebra(graph) -> None:
    """Apply the rules of the module docstring over ``graph`` (a PlanGraph)."""
    apply_rules(graph, lambda node: RULES.get(node.opdef.name))


def apply_rules(graph, rule_for) -> None:
    """One sweep over ``graph`` in order, replacing each computed node for which
    ``rule_for(node)`` gives a rule ``rule(node, inputs, graph)`` by the node that rule
    returns (None: kept). Rules see the inputs as already replaced, so a rule's result
    can meet the next rule."""
    order = graph.nodes()
    fetched, known = set(graph.outputs), set(order)
    mapping, made = {}, {}  # made: the new nodes (a dict keeps their order)

    def current(node):
        while node in mapping:
            node = mapping[node]
        return node

    for node in order:
        if not isinstance(node, PlanNode) or node.opdef.kind != "compute":
            continue
        rule = rule_for(node)
        result = None if rule is None else rule(node, [current(i) for i in node.inputs], graph)
        if result is None:
            continue
        new = result not in known and result not in made
        if not new and node in fetched:
            continue  # removing a fetched node would share its value with another
        mapping[node] = result
        if new:
            _note_made(result, known, made)
    graph.replace(mapping, extra=list(made))


def _note_made(result, known, made):
    """Note ``result`` and the new nodes a rule made for it (its inputs, theirs...)."""
    pending = [result]
    while pending:
        node = pending.pop()
        if isinstance(node, PlanNode) and node not in known and node not in made:
            made[node] = True
            pending.extend(node.inputs)


# -- helpers -------------------------------------------------------------------------


def _computed(node, op):
    """Whether ``node`` is a node the plan computes with op ``op`` (not a fed tensor, whose
    value comes from the feed whatever its op)."""
    return isinstance(node, PlanNode) and node.opdef.name == op and node.opdef.kind == "compute"


def _like(node, op, inputs, attrs, absorbed=()):
    """A new node of ``op`` standing for ``node`` (same name, source line, user node, shape
    and dtype), running after the control inputs of ``node`` and of ``absorbed`` (the
    nodes it makes unnecessary)."""
    control = list(node.control_inputs)
    for other in absorbed:
        control.extend(c for c in other.control_inputs if c not in control)
    return PlanNode.standing_for(node, REGISTRY[op], inputs, attrs, control_inputs=control)


def _constant_value(node, graph):
    """The value of ``node`` if it is a constant without control inputs, else None."""
    if node in graph.fed or node.opdef.kind != "constant" or node.control_inputs:
        return None
    array = getattr(node.attrs.get("value"), "array", None)
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "iuf" \
            or array.size > MAX_SCANNED:
        return None
    return array


def _is_all(node, number, graph):
    """Whether ``node`` is a constant whose elements all equal ``number`` exactly."""
    array = _constant_value(node, graph)
    return array is not None and array.size > 0 and bool(np.all(array == number))


def _absorbs(x, c, node):
    """Whether ``node`` (x op c, c constant) has exactly ``x``'s dtype and, at run time,
    its shape: ``c`` broadcasts into every shape ``x`` can have without growing it."""
    if node.dtype is not x.dtype or x.shape is None or node.shape is None or c.shape is None:
        return False
    xs, cs = tuple(x.shape), tuple(c.shape)
    if len(cs) > len(xs) or len(node.shape) != len(xs):
        return False
    tail = xs[len(xs) - len(cs):]
    return all(d == 1 or (s is not None and s == d) for s, d in zip(tail, cs))


# -- the rules: rule(node, inputs, graph) -> the node standing for it, or None ---------


def _log(node, inputs, graph):
    (s,) = inputs
    if not _computed(s, "softmax") or s.dtype is not node.dtype:
        return None
    return _like(node, "log_softmax", [s.inputs[0]], {"axis": s.attrs["axis"]}, [s])


def _matrix_transposed(t, rank):
    """The input of ``t`` if ``t`` transposes the last two axes of a rank-``rank`` value."""
    if not _computed(t, "transpose") or t.shape is None or len(t.shape) != rank:
        return None
    perm = tuple(t.attrs["perm"])
    if rank < 2 or perm != tuple(range(rank - 2)) + (rank - 1, rank - 2):
        return None
    return t.inputs[0]


def _matmul(node, inputs, graph):
    if any(i.shape is None or len(i.shape) < 2 for i in inputs):
        return None  # the 1-D products take no transpose attributes
    flags = [node.attrs["transpose_a"], node.attrs["transpose_b"]]
    new_inputs, absorbed = list(inputs), []
    for k, t in enumerate(inputs):
        source = _matrix_transposed(t, len(t.shape))
        if source is not None:
            new_inputs[k] = source
            flags[k] = not flags[k]
            absorbed.append(t)
    if not absorbed:
        return None
    return _like(node, "matmul", new_inputs,
                 {**node.attrs, "transpose_a": flags[0], "transpose_b": flags[1]}, absorbed)


def _negative(node, inputs, graph):
    (y,) = inputs
    if _computed(y, "negative") and not y.control_inputs and y.inputs[0].dtype is node.dtype:
        return y.inputs[0]
    return None


def _permutation(node, ordered=False):
    """The axes ``node`` permutes its input by, if it is a layout copy or a transpose the
    plan computes (with no control inputs, unless ``ordered``: the caller keeps them),
    else None."""
    if (_computed(node, "image_layout") or _computed(node, "transpose")) \
            and (ordered or not node.control_inputs) and node.attrs.get("perm") is not None:
        return tuple(node.attrs["perm"])
    return None


def _image_layout(node, inputs, graph):
    (y,) = inputs
    outer, inner = _permutation(node, True), _permutation(y, True)
    if outer is not None and inner is not None and len(outer) == len(inner) \
            and tuple(inner[p] for p in outer) == tuple(range(len(outer))):
        if node.control_inputs or y.control_inputs:  # the source, after the same nodes
            return _like(node, "identity", [y.inputs[0]], {}, [y])
        return y.inputs[0]
    return None


def _add(node, inputs, graph):
    a, b = inputs
    if _computed(b, "negative"):  # a + (-y) = a - y
        return _like(node, "subtract", [a, b.inputs[0]], {}, [b])
    if _computed(a, "negative"):  # (-y) + b = b - y
        return _like(node, "subtract", [b, a.inputs[0]], {}, [a])
    return _first(_without_constant(node, a, b, 0, graph), _without_constant(node, b, a, 0, graph))


def _subtract(node, inputs, graph):
    a, b = inputs
    if _computed(b, "negative"):  # a - (-y) = a + y
        return _like(node, "add", [a, b.inputs[0]], {}, [b])
    return _without_constant(node, a, b, 0, graph)


def _multiply(node, inputs, graph):
    a, b = inputs
    return _first(_without_constant(node, a, b, 1, graph), _without_constant(node, b, a, 1, graph))


def _divide(node, inputs, graph):
    a, b = inputs
    return _without_constant(node, a, b, 1, graph)


def _without_constant(node, x, c, number, graph):
    """``x`` where ``node`` is ``x`` combined with a constant ``c`` of all ``number``
    that leaves it unchanged (see ``_absorbs``), else None."""
    if _is_all(c, number, graph) and _absorbs(x, c, node):
        return x
    return None


def _row_gather(t):
    """Whether ``t`` gathers rows (axis 0) of its params at a 1-D array of indices."""
    return _computed(t, "gather") and t.attrs.get("axis") == 0 and not t.control_inputs \
        and t.inputs[1].shape is not None and len(t.inputs[1].shape) == 1 \
        and t.inputs[1].shape[0] is not None


def _column(t, graph):
    """``(x, j, shape of x)`` if ``t`` is column ``j`` of a matrix ``x`` of known (or
    fed) shape: ``x[:, j]``."""
    if not _computed(t, "getitem") or t.control_inputs:
        return None
    key, x = t.attrs.get("key"), t.inputs[0]
    shape = getattr(graph, "feed_shapes", {}).get(x, x.shape)
    if shape is None or len(shape) != 2 or not shape.is_fully_defined() \
            or not isinstance(key, tuple) or len(key) != 2 \
            or key[0] != ("slice", None, None, None) or type(key[1]) is not int \
            or not 0 <= key[1] < shape[1]:
        return None
    return x, key[1], shape


def _columns_stacked(node, parts, graph):
    """``concat([x[:, j0], x[:, j0 + d], ...], axis=0)`` (``d`` of 1 or -1: an RNN's ids
    of each time step, stacked by the gradient code in either order) as
    ``reshape(transpose(x)[j0::d][:n], [-1])``: one copy instead of one per column."""
    found = [_column(p, graph) for p in parts]
    if len(parts) < 2 or any(f is None for f in found) \
            or len({id(f[0]) for f in found}) != 1:
        return None
    x, first, shape = found[0]
    step = found[1][1] - first
    if step not in (1, -1) or any(f[1] != first + k * step for k, f in enumerate(found)):
        return None
    rows, cols = (int(d) for d in shape)
    last = first + (len(parts) - 1) * step
    stop = last + step if last + step >= 0 else None
    columns = PlanNode.standing_for(node, REGISTRY["transpose"], [x], {"perm": (1, 0)},
                                    shape=(cols, rows), dtype=x.dtype,
                                    name=node.name + "/columns")
    picked = PlanNode.standing_for(node, REGISTRY["getitem"], [columns],
                                   {"key": (("slice", first, stop, step),
                                            ("slice", None, None, None))},
                                   shape=(len(parts), rows), dtype=x.dtype,
                                   name=node.name + "/picked")
    return PlanNode.standing_for(node, REGISTRY["reshape"], [picked],
                                 {"shape": (len(parts) * rows,)},
                                 shape=(len(parts) * rows,), dtype=x.dtype,
                                 control_inputs=node.control_inputs)


def _concat(node, inputs, graph):
    steps = _first(stacked_steps(node, inputs, graph), stacked_slices(node, inputs, graph))
    if steps is not None:
        return steps
    if node.attrs.get("axis") != 0 or len(inputs) < 2:
        return None
    if not all(map(_row_gather, inputs)):
        return _columns_stacked(node, inputs, graph)
    params = inputs[0].inputs[0]
    indices = [t.inputs[1] for t in inputs]
    if any(t.inputs[0] is not params for t in inputs) or len({i.dtype for i in indices}) != 1:
        return None
    rows = sum(int(i.shape[0]) for i in indices)
    joined = PlanNode.standing_for(node, REGISTRY["concat"], indices, {"axis": 0},
                                   shape=(rows,), dtype=indices[0].dtype,
                                   name=node.name + "/indices")
    joined = _columns_stacked(joined, indices, graph) or joined
    # named after the first lookup: an index out of range then names the user's own op
    return PlanNode.standing_for(inputs[0], REGISTRY["gather"], [params, joined],
                                 dict(inputs[0].attrs), shape=node.shape, dtype=node.dtype,
                                 control_inputs=node.control_inputs)


def _reshape(node, inputs, graph):
    """``reshape(x, dims)`` with ``dims`` a constant (after folding: ``[gf.shape(x)[0],
    -1]`` of a fed batch) as ``reshape(x)`` of that static shape: a run need not read
    ``dims`` back from the device (which a CUDA graph capture refuses)."""
    if len(inputs) != 2:
        return None
    dims = _constant_value(inputs[1], graph)
    if dims is None or dims.ndim != 1 or dims.dtype.kind not in "iu":
        return None
    return _like(node, "reshape", [inputs[0]], {"shape": tuple(int(d) for d in dims)},
                 absorbed=[inputs[1]])


def _split_like(node, inputs, graph):
    g, *parts = inputs
    axis, index = node.attrs["axis"], node.attrs["index"]
    if g.shape is None or any(p.shape is None or p.shape[axis] is None
                              for p in parts[:index + 1]):
        return None
    start = sum(int(p.shape[axis]) for p in parts[:index])
    stop = start + int(parts[index].shape[axis])
    full = ("slice", None, None, None)
    key = (full,) * axis + (("slice", start, stop, None),) + (full,) * (len(g.shape) - axis - 1)
    sliced = _like(node, "getitem", [g], {"key": key})
    return _first(sliced_slice(sliced, [g], graph), sliced)  # g may be a slice itself


def _lstm_gates(node, inputs, graph):
    (z,) = inputs
    if not _computed(z, "add") or z.control_inputs or z.shape is None \
            or len(z.shape) != 2 or not z.shape.is_fully_defined():
        return None
    head, row = z.inputs
    terms = [head]
    if _computed(head, "add") and not head.control_inputs:
        terms = list(head.inputs)
    full = tuple(z.shape)
    if row.shape is None or tuple(row.shape) != full[1:] or any(
            t.shape is None or tuple(t.shape) != full for t in terms) \
            or len({t.dtype for t in terms + [row, node]}) != 1:
        return None
    absorbed = [z] + ([head] if len(terms) == 2 else [])
    return _like(node, "lstm_gates_sum", terms + [row], dict(node.attrs), absorbed)


def _gates_part(t, wrt_op, a):
    """The inputs of ``t`` if it is ``wrt_op(g, a, state)`` for the gates, else None."""
    if not _computed(t, wrt_op) or t.attrs.get("wrt") != "gates" or t.inputs[1] is not a:
        return None
    return t.inputs


def _same_matrix(*nodes):
    shapes = [n.shape for n in nodes]
    return all(s is not None and len(s) == 2 and s.is_fully_defined() for s in shapes) \
        and len({tuple(s) for s in shapes}) == 1 and len({n.dtype for n in nodes}) == 1


def _lstm_gates_grad(node, inputs, graph):
    total, a = inputs
    if not _computed(total, "add") or total.control_inputs:
        return None
    x, y = total.inputs
    # the parts read the activations as built (``a`` may be their rewritten form)
    built = node.inputs[1]
    c_part = _gates_part(x, "lstm_c_grad", built) or _gates_part(y, "lstm_c_grad", built)
    h_part = _gates_part(y, "lstm_h_grad", built) or _gates_part(x, "lstm_h_grad", built)
    if c_part is None or h_part is None:
        return None
    (dc, _, c_prev), (dh, _, c) = c_part, h_part
    if not (_same_matrix(total, a) and _same_matrix(dc, dh, c, c_prev)
            and a.dtype is c.dtype and a.shape[0] == c.shape[0]
            and a.shape[1] == 4 * c.shape[1]):
        return None  # broadcasting batches keep the ops that handle them
    return _like(node, "lstm_cell_grad", [dc, dh, a, c, c_prev], {}, [total, x, y])


def _relu_grad(node, inputs, graph):
    d, h = inputs
    if _computed(d, "max_pool_grad") and not d.control_inputs and d.inputs[1] is h \
            and d.dtype is node.dtype:
        return _like(node, "max_pool_relu_grad", [d.inputs[0], h], dict(d.attrs), [d])
    return None


def _pow(node, inputs, graph):
    x, c = inputs
    array = _constant_value(c, graph)
    if array is None or array.size != 1 or not _absorbs(x, c, node):
        return None
    power = float(array.reshape(-1)[0])
    if power == 2:
        return _like(node, "square", [x], {})

    def inner(op, inputs):  # a node the result reads, named after it
        return PlanNode.standing_for(node, REGISTRY[op], inputs, {}, name=f"{node.name}/{op}")

    if power == 3:
        return _like(node, "multiply", [x, inner("square", [x])], {})
    if not node.dtype.is_floating or power not in (0.5, -0.5, -1):
        return None
    if power == 0.5:
        return _like(node, "sqrt", [x], {})
    # a constant of its own (no user node: the session takes its value from its attrs)
    one = PlanNode(REGISTRY["constant"], (), {
        "value": HostValue(np.ones((), node.dtype.as_numpy_dtype)), "dtype": node.dtype},
        TensorShape(()), node.dtype, f"{node.name}/one", node.source, (), origin=None,
        graph=node.graph, index=node.index)
    return _like(node, "divide", [one, x if power == -1 else inner("sqrt", [x])], {})


def _first(*found):
    """The first of ``found`` that is not None (nodes have no truth value)."""
    return next((f for f in found if f is not None), None)


RULES = {
    "log": _log,
    "concat": _concat,
    "reshape": _reshape,
    "split_like": _split_like,
    "lstm_gates": _lstm_gates,
    "lstm_gates_grad": _lstm_gates_grad,
    "matmul": _matmul,
    "negative": _negative,
    "image_layout": _image_layout,
    "transpose": _image_layout,
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "divide": _divide,
    "pow": _pow,
    "relu_grad": _relu_grad,
    "reshape_like": step_of_stack,
    "getitem": sliced_slice,
}
