"""Rules of ``rewrite_algebra`` for the per-step stacks of an unrolled RNN.

``stack(outputs, axis)`` (``dynamic_rnn`` and ``bidirectional_dynamic_rnn`` over a static
time axis, ``stack``'s gradient of ``unstack``, an unrolled ``while_loop``'s output stack)
is a ``concat`` of one ``expand_dims`` per step, and its gradient one ``getitem`` of a
length-1 slice and one ``reshape_like`` per step. Each is a step of the plan (a biLSTM of
50 steps had 150 ``expand_dims`` and 100 ``reshape_like``), and a concat along an inner
axis cannot have its parts written straight into its rows. These rules make

    concat([expand_dims(p_k, a) for k], a)  ->  transpose(reshape(concat(p_k, 0), [n, *p]))
    reshape_like(x[..., t:t+1, ...], p)     ->  x[..., t, ...]

the first a row stack (``schedule.row_stacks``: each step's op writes its output into
its rows) seen through a reshape and, for ``a > 0``, a transpose (both views), the second
a view. Where the stacked parts are consecutive row blocks of one matrix (one product
of every step's rows), the stack is a view of it; where each part is ``a_k + b_k`` of
two such sequences (a bidirectional RNN's input gradient: the forward direction's rows
in order, the backward one's in reverse), it is one ``add`` of two views instead of one
per step. Further:

    concat([x[:, t0], x[:, t0 + d], ...], 0)   ->  reshape(transpose(x)[t0::d][:n], rows)
    x[a:b][c]  (unit-step slices)              ->  x[a + c]

the first (a batch-major RNN's inputs of every step, either direction, stacked for one
product; also ``gather(x, t, axis)`` of a constant ``t``, as an unrolled ``while_loop``
reads them) one copy instead of one step per index and a concat, the second (the
gradient of an unrolled ``while_loop``'s output stack) one view instead of two. All of
them only move values: the numbers are the same. Only nodes of fully known static (or
fed) shapes, without control inputs, are rewritten.
"""

from __future__ import annotations

import numpy as np

from gradflow.passes.ir import PlanNode
from gradflow.prim.registry import REGISTRY

MIN_STEPS = 2
_FULL = ("slice", None, None, None)


def _known(node):
    return node.shape is not None and node.shape.is_fully_defined()


def _empty_along(t, axis):
    """Whether ``t`` is a constant of known shape with no elements along ``axis``."""
    return isinstance(t, PlanNode) and t.opdef.kind == "constant" and not t.control_inputs \
        and _known(t) and len(t.shape) > axis and int(t.shape[axis]) == 0


def _expanded_part(t, axis):
    """``t``'s input if ``t`` is ``expand_dims(p, axis)`` of a fully known ``p``."""
    if not isinstance(t, PlanNode) or t.opdef.name != "expand_dims" \
            or t.opdef.kind != "compute" or t.control_inputs \
            or tuple(t.attrs.get("axes", ())) != (axis,) or not _known(t.inputs[0]):
        return None
    return t.inputs[0]


def stacked_steps(node, inputs, graph):
    """``concat([expand_dims(p_k, a)...], a)`` as ``reshape(concat(p_k, 0))``, transposed
    to put the new axis at ``a``; None where it does not apply."""
    axis = node.attrs.get("axis")
    if len(inputs) < MIN_STEPS or not isinstance(axis, int) or axis < 0 \
            or node.control_inputs or not _known(node):
        return None
    inputs = [t for t in inputs if not _empty_along(t, axis)]  # a while_loop's start
    parts = [_expanded_part(t, axis) for t in inputs]
    if len(parts) < MIN_STEPS or any(p is None for p in parts):
        return None
    shape = tuple(int(d) for d in parts[0].shape)
    if not shape or axis > len(shape) \
            or any(tuple(p.shape) != shape or p.dtype != node.dtype for p in parts):
        return None
    n = len(parts)
    stacked = _summed_blocks(node, parts, n, shape)
    if stacked is None and len(shape) == 2:  # rows of one product, of every step in turn
        stacked = _blocks(node, parts, n, shape, "rows")
    if stacked is None:
        stacked = _rows_reshaped(node, parts, n, shape, axis)
    if axis == 0:
        return stacked
    perm = tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(shape) + 1))
    return PlanNode.standing_for(node, REGISTRY["transpose"], [stacked], {"perm": perm})


def _rows_reshaped(node, parts, n, shape, axis):
    """``reshape(concat(parts, 0), [n, *shape])``: a row stack as ``[n, *shape]``."""
    rows = PlanNode.standing_for(node, REGISTRY["concat"], parts, {"axis": 0},
                                 shape=(n * shape[0],) + shape[1:],
                                 name=node.name + "/rows")
    stacked = PlanNode.standing_for(node, REGISTRY["reshape"], [rows],
                                    {"shape": (n,) + shape}, shape=(n,) + shape,
                                    name=node.name + "/steps" if axis else None)
    return stacked


def _row_blocks(parts):
    """``(m, start, direction)`` if ``parts`` are consecutive blocks of rows of one
    matrix ``m``, ``m[start + k * d * rows : ...]`` for the ``k``-th part (``d`` of 1 or
    -1, ``rows`` the parts' own row count), else None."""
    found = []
    for p in parts:
        if not isinstance(p, PlanNode) or p.opdef.name != "getitem" \
                or p.opdef.kind != "compute" or p.control_inputs or not _known(p) \
                or len(p.shape) != 2 or not _known(p.inputs[0]) or len(p.inputs[0].shape) != 2:
            return None
        key = p.attrs.get("key")
        if not isinstance(key, tuple) or len(key) != 2 or key[1] != _FULL \
                or not isinstance(key[0], tuple) or key[0][0] != "slice" \
                or key[0][3] not in (None, 1) or not isinstance(key[0][1], int) \
                or key[0][1] < 0 or key[0][2] != key[0][1] + int(p.shape[0]):
            return None
        found.append((p.inputs[0], key[0][1]))
    m, start = found[0]
    rows = int(parts[0].shape[0])
    if len(found) < 2 or any(f[0] is not m for f in found):
        return None
    d = (found[1][1] - start) // rows if rows else 0
    if d not in (1, -1) or any(f[1] != start + k * d * rows for k, f in enumerate(found)):
        return None
    return m, start, d


def _blocks(node, parts, n, shape, tag):
    """The ``[n, *shape]`` view of ``parts`` (row blocks of one matrix, ``_row_blocks``),
    or None."""
    found = _row_blocks(parts)
    if found is None:
        return None
    m, start, d = found
    low = start if d == 1 else start - (n - 1) * shape[0]
    key = (("slice", low, low + n * shape[0], None), _FULL)
    rows = PlanNode.standing_for(node, REGISTRY["getitem"], [m], {"key": key},
                                 shape=(n * shape[0], shape[1]), name=f"{node.name}/{tag}")
    view = PlanNode.standing_for(node, REGISTRY["reshape"], [rows], {"shape": (n,) + shape},
                                 shape=(n,) + shape, name=f"{node.name}/{tag}_steps")
    if d == 1:
        return view
    return PlanNode.standing_for(node, REGISTRY["getitem"], [view],
                                 {"key": (("slice", None, None, -1), _FULL, _FULL)},
                                 shape=(n,) + shape, name=f"{node.name}/{tag}_reversed")


def _summed_blocks(node, parts, n, shape):
    """Parts ``a_k + b_k`` where the ``a_k`` and the ``b_k`` are row blocks of one matrix
    each (the input gradient of a bidirectional RNN: the forward direction's per-step
    gradients and the backward one's, in reverse order) as one ``add`` of two
    ``[n, *shape]`` views, or None."""
    if len(shape) != 2 or any(
            not isinstance(p, PlanNode) or p.opdef.name != "add" or p.opdef.kind != "compute"
            or p.control_inputs or len(p.inputs) != 2 for p in parts):
        return None
    left = _blocks(node, [p.inputs[0] for p in parts], n, shape, "left")
    right = _blocks(node, [p.inputs[1] for p in parts], n, shape, "right")
    if left is None or right is None:
        return None
    return PlanNode.standing_for(node, REGISTRY["add"], [left, right], dict(parts[0].attrs),
                                 shape=(n,) + shape, name=node.name + "/steps")


def step_of_stack(node, inputs, graph):
    """``reshape_like(x[..., t:t+1, ...], p)`` dropping that axis as ``x[..., t, ...]`` (the
    other axes of the key unit-step slices, kept as they are)."""
    x = inputs[0]
    if not isinstance(x, PlanNode) or x.opdef.name != "getitem" \
            or x.opdef.kind != "compute" or x.control_inputs or node.control_inputs \
            or not _known(node) or not _known(x):
        return None
    key, whole = x.attrs.get("key"), _fed_or_known(x.inputs[0], graph)
    if whole is None or not isinstance(key, tuple) or len(key) != len(whole) \
            or len(x.shape) != len(whole) \
            or any(_plain_slice(k, size) is None for k, size in zip(key, whole)):
        return None
    sliced = tuple(int(d) for d in x.shape)
    for axis, k in enumerate(key):
        start, stop = _plain_slice(k, whole[axis])
        if stop == start + 1 and sliced[:axis] + sliced[axis + 1:] == tuple(node.shape):
            new_key = key[:axis] + (start,) + key[axis + 1:]
            return PlanNode.standing_for(node, REGISTRY["getitem"], [x.inputs[0]],
                                         {"key": new_key})
    return None


def _fed_or_known(node, graph):
    """The fully known shape of ``node`` (of a fed tensor: the shape fed), or None."""
    shape = getattr(graph, "feed_shapes", {}).get(node, node.shape)
    if shape is None or not shape.is_fully_defined():
        return None
    return tuple(int(d) for d in shape)


def _picked_index(t, graph):
    """``(x, axis, i, shape of x)`` if ``t`` is ``x[..., i, ...]``: one int index on one
    axis of an ``x`` of known (or fed) shape, every other axis whole; or ``gather(x, i,
    axis)`` of a constant scalar ``i`` in range (a ``while_loop``'s step ``t`` reading its
    inputs, unrolled)."""
    if not isinstance(t, PlanNode) or t.opdef.kind != "compute" or t.control_inputs \
            or t.opdef.name not in ("getitem", "gather"):
        return None
    x = t.inputs[0]
    shape = _fed_or_known(x, graph)
    if shape is None:
        return None
    if t.opdef.name == "gather":
        return _gathered_index(t, shape, graph)
    key = t.attrs.get("key")
    if not isinstance(key, tuple) or len(key) != len(shape):
        return None
    picked = [(a, k) for a, k in enumerate(key) if k != _FULL]
    if len(picked) != 1 or type(picked[0][1]) is not int \
            or not 0 <= picked[0][1] < shape[picked[0][0]]:
        return None
    return x, picked[0][0], picked[0][1], shape


def _gathered_index(t, shape, graph):
    x, index = t.inputs[0], t.inputs[1]
    axis = t.attrs.get("axis")
    if set(t.attrs) - {"axis", "validate", "batch_dims"} or t.attrs.get("batch_dims", 0) \
            or len(t.inputs) != 2 or type(axis) is not int or not 0 <= axis < len(shape) \
            or index in graph.fed or index.opdef.kind != "constant" or index.control_inputs:
        return None
    value = getattr(index.attrs.get("value"), "array", None)
    if not isinstance(value, np.ndarray) or value.shape != () or value.dtype.kind not in "iu" \
            or not 0 <= int(value) < shape[axis]:
        return None
    return x, axis, int(value), shape


def stacked_slices(node, inputs, graph):
    """``concat([x[:, i0], x[:, i0 + d], ...], 0)`` (``d`` of 1 or -1; an RNN's inputs of
    each time step, batch-major, stacked for one product over all steps, either direction)
    as ``reshape(transpose(x)[i0::d][:n], rows)``: one copy instead of one step per index
    and a concat. Any axis of ``x`` works the same; None where it does not apply."""
    if node.attrs.get("axis") != 0 or len(inputs) < MIN_STEPS or node.control_inputs \
            or not _known(node):
        return None
    found = [_picked_index(t, graph) for t in inputs]
    if any(f is None for f in found) or any(f[0] is not found[0][0] or f[1] != found[0][1]
                                            for f in found):
        return None
    x, axis, first, shape = found[0]
    step = found[1][2] - first
    if step not in (1, -1) or any(f[2] != first + k * step for k, f in enumerate(found)):
        return None
    rank, n = len(shape), len(found)
    moved, moved_shape = x, shape
    if axis:
        perm = (axis,) + tuple(a for a in range(rank) if a != axis)
        moved_shape = tuple(shape[a] for a in perm)
        moved = PlanNode.standing_for(node, REGISTRY["transpose"], [x], {"perm": perm},
                                      shape=moved_shape, name=node.name + "/steps")
    last = first + (n - 1) * step
    stop = last + step if last + step >= 0 else None
    key = (("slice", first, stop, step),) + (_FULL,) * (rank - 1)
    picked = PlanNode.standing_for(node, REGISTRY["getitem"], [moved], {"key": key},
                                   shape=(n,) + moved_shape[1:],
                                   name=node.name + "/picked")
    return PlanNode.standing_for(node, REGISTRY["reshape"], [picked],
                                 {"shape": tuple(int(d) for d in node.shape)})


def _plain_slice(k, size):
    """``(start, stop)`` of ``k``, a unit-step slice key of non-negative (or no) bounds
    over an axis of ``size``, else None."""
    if not isinstance(k, tuple) or len(k) != 4 or k[0] != "slice" or k[3] not in (None, 1):
        return None
    start, stop = k[1] or 0, size if k[2] is None else k[2]
    if type(start) is not int or type(stop) is not int or not 0 <= start <= stop:
        return None
    return start, min(stop, size)


def sliced_slice(node, inputs, graph):
    """``x[a:b][i]`` or ``x[a:b][c:d]`` (unit-step slices, on any axes) as one ``getitem``
    of ``x``: the gradient of an unrolled ``while_loop``'s output stack takes its
    gradient for step ``t`` from the rows of the steps before ``t + 1``, one slice of a
    slice per step. None where it does not apply."""
    inner = inputs[0]
    if len(inputs) != 1 or node.control_inputs or not isinstance(inner, PlanNode) \
            or inner.opdef.name != "getitem" or inner.opdef.kind != "compute" \
            or inner.control_inputs or not _known(inner):
        return None
    x, outer_key, inner_key = inner.inputs[0], node.attrs.get("key"), inner.attrs.get("key")
    shape = _fed_or_known(x, graph)
    if shape is None or not isinstance(outer_key, tuple) or not isinstance(inner_key, tuple) \
            or len(inner_key) != len(shape) or len(outer_key) != len(shape):
        return None
    key = []
    for k_in, k_out, size, part in zip(inner_key, outer_key, shape, inner.shape):
        bounds = _plain_slice(k_in, int(size))
        if bounds is None:
            return None
        if type(k_out) is int:
            if not 0 <= k_out < int(part):
                return None
            key.append(bounds[0] + k_out)
            continue
        inner_bounds = _plain_slice(k_out, int(part))
        if inner_bounds is None:
            return None
        start, stop = (bounds[0] + b for b in inner_bounds)
        key.append(_FULL if (start, stop) == (0, int(size)) else ("slice", start, stop, None))
    return PlanNode.standing_for(node, REGISTRY["getitem"], [x], {"key": tuple(key)})
