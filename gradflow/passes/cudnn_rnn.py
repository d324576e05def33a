"""A whole unrolled LSTM layer as one sequence node each way (``prim/rnn_seq.py``).

After ``fuse_lstm_recurrence`` (``passes/lstm_recurrence.py``) an unrolled single-layer
LSTM of ``T`` steps is ``T`` forward nodes and, when trained, ``T - 1`` backward nodes
plus the last step's three (it has no recurrent term):

    a_t, c_t, h_t = lstm_step_rec(x_t, h_{t-1}, w, row, c_{t-1})           t = 1..T
    g = lstm_h_grad(dy_T, a_T, c_T, "state")
    dz_T = lstm_cell_grad(g, dy_T, a_T, c_T, c_{T-1})
    dc_{T-1} = lstm_c_grad(g, a_T, c_{T-1}, "state")
    dz_t, dc_{t-1} = lstm_step_rec_grad(dy_t, dz_{t+1}, w, dc_t, a_t, c_t, c_{t-1})  t < T

This pass (the CuPy backend's, when cuDNN loads: ``backends/cupy/cudnn_rnn.py``) makes
them

    y, c_T = lstm_seq(x, h_0, w, row, c_0)
    dz, dc_0 = lstm_seq_grad(dy, x, h_0, w, row, c_0, y)

with ``x``, ``dy``, ``y`` and ``dz`` the steps' values stacked time-major. Each ``h_t``
becomes rows of ``y`` and each ``dz_t`` rows of ``dz``: the nodes that read them (the
layers above; the weight and bias gradients' products, which ``batch_matmuls`` made one
each) stay as they are.

A concat of all the ``h_t`` (or all the ``dz_t``) in time order is the stack itself; an
output gradient arriving as ``base[t]`` of one time-major node is one reshape of it.

A layer is replaced only if: its steps chain through their ``h``/``c`` outputs with one
``w``, ``row`` and ``forget_bias``, ``T >= 2``; every ``x_t`` is rows ``t`` of one
``[T * batch, 4 * units]`` node (the input projection of all steps); the gates ``a_t``,
and the cell states but the last, are read by the backward steps alone; and the backward,
if there is one, is the whole chain above (a gradient of the last cell state from
elsewhere, or of some steps only, leaves the layer as it was).
"""

from __future__ import annotations

from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode
from gradflow.prim.plan import FUSED_OUTPUT
from gradflow.prim.registry import REGISTRY
from gradflow.prim.rnn_seq import LSTM_SEQ, LSTM_SEQ_GRAD


class SequenceLink:
    """Shared by a layer's two sequence nodes (their ``link`` attribute): where a
    backend's kernels keep what the forward saves for the backward (cuDNN's reserve
    space), and the layer's sizes ``(steps, batch, units, NumPy dtype)``. Compared by
    identity."""

    __slots__ = ("state", "sizes")

    def __init__(self, sizes=None):
        self.state = None
        self.sizes = sizes

    def __repr__(self):
        return "SequenceLink()"


def fuse_lstm_sequences(graph, accepts=None, reversed_inputs=False) -> None:
    """Replace each whole LSTM layer of ``graph`` (a PlanGraph) by ``lstm_seq`` nodes;
    with ``accepts``, only the layers for whose ``SequenceLink`` it says True (a
    backend's library taking those sizes: it may keep its state in the link). With
    ``reversed_inputs``, also a layer whose steps read the input projection's row blocks
    last to first (the backward direction of a static-length bidirectional RNN): its
    ``x`` is those blocks reversed (one copy, ``reshape``, ``reverse``, ``reshape``)."""
    mapping, made = {}, []
    readers = graph.consumers()
    for layer in find_lstm_layers(graph, reversed_inputs):
        c0 = layer["steps"][0].inputs[4]
        link = SequenceLink((len(layer["steps"]), *(int(d) for d in c0.shape),
                             c0.dtype.as_numpy_dtype))
        if accepts is None or accepts(link):
            _replace(layer, link, mapping, made, readers)
    graph.replace(mapping, extra=made)


def find_lstm_layers(graph, reversed_inputs=False):
    """The layers this pass replaces: one dict each with ``steps`` (the forward nodes in
    time order), ``x`` (the stacked input projection), ``x_reversed`` (whether the steps
    read its row blocks last to first: only with ``reversed_inputs``), ``outs``
    (``[a, c, h]`` output nodes per step, None where unread), and ``grads`` (None, or
    ``dy`` per step, the ``dz_t`` nodes and the ``dc_0`` node or None)."""
    readers = graph.consumers()
    layers = []
    for node in graph.nodes():
        if _is(node, "lstm_step_rec") and _step_of(node.inputs[1], readers) is None:
            layer = _layer_from(node, readers, reversed_inputs)
            if layer is not None:
                layers.append(layer)
    return layers


def _is(node, op):
    return isinstance(node, PlanNode) and node.opdef.name == op \
        and node.opdef.kind == "compute" and not node.control_inputs


def _outs(node, readers, count):
    """``node``'s ``fused_output`` readers by index (None where unread), or None if
    something else reads it or an index is read twice."""
    outs = [None] * count
    for r in readers.get(node, []):
        if not _is(r, "fused_output") or outs[r.attrs["index"]] is not None:
            return None
        outs[r.attrs["index"]] = r
    return outs


def _step_of(value, readers):
    """The ``lstm_step_rec`` whose ``h`` output ``value`` is, else None."""
    if not _is(value, "fused_output") or value.attrs["index"] != 2:
        return None
    step = value.inputs[0]
    return step if _is(step, "lstm_step_rec") else None


def _next_step(step, outs, readers):
    """The step reading ``step``'s h and c as its state, else None."""
    h, c = outs[2], outs[1]
    if h is None or c is None:
        return None
    for r in readers.get(h, []):
        if _is(r, "lstm_step_rec") and r.inputs[1] is h and r.inputs[4] is c \
                and r.inputs[2] is step.inputs[2] and r.inputs[3] is step.inputs[3] \
                and r.attrs == step.attrs:
            return r
    return None


def _layer_from(first, readers, reversed_inputs=False):
    steps, outs = [], []
    step = first
    while step is not None:
        o = _outs(step, readers, 3)
        if o is None:
            return None
        steps.append(step)
        outs.append(o)
        step = _next_step(step, o, readers)
    if len(steps) < 2 or not _known(first):
        return None
    xs = [s.inputs[0] for s in steps]
    x, backwards = _stacked(xs, first.inputs[0].shape), False
    if x is None and reversed_inputs:
        x, backwards = _stacked(xs[::-1], first.inputs[0].shape), True
    if x is None:
        return None
    layer = {"steps": steps, "x": x, "x_reversed": backwards, "outs": outs, "grads": None}
    if all(o[0] is None for o in outs):  # inference: no backward reads the gates
        return layer if _forward_only_ok(layer, readers) else None
    grads = _backward(layer, readers)
    if grads is None:
        return None
    layer["grads"] = grads
    return layer


def _known(step):
    x, h_prev, w, row, c_prev = step.inputs
    return all(v.shape is not None and v.shape.is_fully_defined() and v.dtype == step.dtype
               for v in step.inputs) and len(x.shape) == 2 and len(c_prev.shape) == 2 \
        and tuple(w.shape) == (c_prev.shape[1], x.shape[1]) == (h_prev.shape[1], x.shape[1]) \
        and x.shape[1] == 4 * c_prev.shape[1] and tuple(row.shape) == (x.shape[1],)


def _stacked(values, shape):
    """The node whose consecutive row blocks ``values`` are (in order), else None."""
    batch = shape[0]
    base = values[0].inputs[0] if _is(values[0], "getitem") else None
    if base is None or base.shape is None or tuple(base.shape) != \
            (batch * len(values), shape[1]):
        return None
    for t, v in enumerate(values):
        if not _is(v, "getitem") or v.inputs[0] is not base or \
                tuple(v.attrs.get("key", ())) not in (_rows_key(t, batch, None),
                                                      _rows_key(t, batch, 1)):
            return None
    return base


def _time_major(values, made):
    """``reshape(base, [steps * batch, units])`` where ``values`` are ``base[t]`` in order
    for a ``[steps, batch, units]`` node (``dynamic_rnn``'s outputs' gradient, time-major):
    one copy instead of a concat of ``steps`` slices; else None."""
    base = values[0].inputs[0] if _is(values[0], "getitem") else None
    if base is None or values[0].shape is None or len(values[0].shape) != 2:
        return None
    steps, (batch, units) = len(values), values[0].shape
    if base.shape is None or tuple(base.shape) != (steps, batch, units):
        return None
    whole = ("slice", None, None, None)
    if not all(_is(v, "getitem") and v.inputs[0] is base
               and tuple(v.attrs.get("key", ())) == (t, whole, whole)
               for t, v in enumerate(values)):
        return None
    rows = PlanNode.standing_for(values[-1], REGISTRY["reshape"], [base],
                                 {"shape": (steps * batch, units)},
                                 shape=(steps * batch, units), name=base.name + "/rows")
    made.append(rows)
    return rows


def _forward_only_ok(layer, readers):
    inside = set(layer["steps"])
    return all(set(readers.get(o[1], [])) <= inside for o in layer["outs"][:-1]
               if o[1] is not None)


def _rows_key(t, batch, stride=None):
    return (("slice", t * batch, (t + 1) * batch, stride), ("slice", None, None, None))


def _same(these, those):
    """Whether two sequences of nodes are the same nodes (by identity)."""
    return len(these) == len(those) and all(a is b for a, b in zip(these, those))


def _reader(value, readers, op, inputs, wrt=None):
    """The one reader of ``value`` that is ``op`` of exactly ``inputs``, else None."""
    for r in readers.get(value, []):
        if _is(r, op) and _same(r.inputs, inputs) \
                and (wrt is None or r.attrs.get("wrt") == wrt):
            return r
    return None


def _backward(layer, readers):
    """The backward of ``layer`` (see ``find_lstm_layers``), or None if it is not the
    whole chain of the module docstring."""
    steps, outs = layer["steps"], layer["outs"]
    w = steps[0].inputs[2]
    a, c, _ = outs[-1]
    c_prev = outs[-2][1]
    last = [r for r in readers.get(a, []) if _is(r, "lstm_h_grad")]
    if len(last) != 1 or last[0].attrs.get("wrt") != "state" \
            or not _same(last[0].inputs[1:], (a, c)):
        return None
    g, dy = last[0], last[0].inputs[0]
    dz = _reader(a, readers, "lstm_cell_grad", (g, dy, a, c, c_prev))
    dc = _reader(a, readers, "lstm_c_grad", (g, a, c_prev), wrt="state")
    if dz is None or dc is None:
        return None
    inside, internal = {g, dz, dc}, [a, g, dc]
    dys, dzs = [dy], [dz]
    for t in reversed(range(len(steps) - 1)):
        a, c, _ = outs[t]
        c_prev = outs[t - 1][1] if t else steps[0].inputs[4]
        found = [r for r in readers.get(a, []) if _is(r, "lstm_step_rec_grad")
                 and _same(r.inputs[1:], (dz, w, dc, a, c, c_prev))]
        step_outs = _outs(found[0], readers, 2) if len(found) == 1 else None
        if step_outs is None or (t and None in step_outs):
            return None
        inside.update([found[0], *[o for o in step_outs if o is not None]])
        internal += [a, c] + ([step_outs[1]] if t else [])
        dys.append(found[0].inputs[0])
        dz, dc = step_outs
        dzs.append(dz)
    inside.update(layer["steps"])
    inside.update(o for step in outs for o in step[:2] if o is not None)
    if any(not set(readers.get(v, [])) <= inside for v in internal):
        return None
    return {"dy": dys[::-1], "dz": dzs[::-1], "dc0": dc}


def _replace(layer, link, mapping, made, readers):
    steps, outs, x = layer["steps"], layer["outs"], layer["x"]
    first, last = steps[0], steps[-1]
    _, h0, w, row, c0 = first.inputs
    batch, units = c0.shape
    total = batch * len(steps)
    if layer["x_reversed"]:
        x = _reversed_blocks(x, len(steps), batch, made)
    attrs = {"forget_bias": first.attrs["forget_bias"], "steps": len(steps),
             "link": link}
    seq = PlanNode.standing_for(last, LSTM_SEQ, [x, h0, w, row, c0], attrs,
                                shape=(total, units), name=last.name + "/sequence")
    y = _output(seq, 0, (total, units))
    made += [seq, y]
    if outs[-1][1] is not None:
        mapping[outs[-1][1]] = output_of(seq, 1, outs[-1][1])
        made.append(mapping[outs[-1][1]])
    _rows_of(y, [o[2] for o in outs], batch, mapping, made, readers)
    grads = layer["grads"]
    if grads is None:
        return
    dy = _stacked(grads["dy"], (batch, units)) or _time_major(grads["dy"], made)
    if dy is None:
        dy = PlanNode.standing_for(grads["dy"][-1], REGISTRY["concat"], grads["dy"],
                                   {"axis": 0}, shape=(total, units),
                                   name=last.name + "/sequence_dy")
        made.append(dy)
    grad = PlanNode.standing_for(grads["dz"][-1], LSTM_SEQ_GRAD, [dy, x, h0, w, row, c0, y],
                                 attrs, shape=(total, 4 * units),
                                 name=last.name + "/sequence_grad")
    dz = _output(grad, 0, (total, 4 * units))
    made += [grad, dz]
    _rows_of(dz, grads["dz"], batch, mapping, made, readers)
    if grads["dc0"] is not None:
        mapping[grads["dc0"]] = output_of(grad, 1, grads["dc0"])
        made.append(mapping[grads["dc0"]])


def _reversed_blocks(x, steps, batch, made):
    """``x`` ([steps * batch, width]) with its blocks of ``batch`` rows last to first."""
    width = int(x.shape[1])
    blocks = PlanNode.standing_for(x, REGISTRY["reshape"], [x],
                                   {"shape": (steps, batch, width)},
                                   shape=(steps, batch, width), name=x.name + "/blocks")
    flipped = PlanNode.standing_for(x, REGISTRY["reverse"], [blocks], {"axes": (0,)},
                                    shape=(steps, batch, width),
                                    name=x.name + "/blocks_reversed")
    rows = PlanNode.standing_for(x, REGISTRY["reshape"], [flipped],
                                 {"shape": (steps * batch, width)},
                                 shape=(steps * batch, width), name=x.name + "/reversed")
    made += [blocks, flipped, rows]
    return rows


def _output(node, index, shape):
    return PlanNode.standing_for(node, FUSED_OUTPUT, [node],
                                 {"index": index, "shape": shape, "dtype": node.dtype},
                                 shape=shape, name=f"{node.name}/{index}")


def _rows_of(stack, olds, batch, mapping, made, readers):
    """Map each of ``olds`` (None: unread) to its rows of ``stack``, and a ``concat`` of
    all of them in order along the rows (``static_rnn``'s outputs stacked for the layer
    above; the steps' gate gradients stacked for the weights' products) to ``stack``
    itself: no copy of what the sequence node wrote in one piece."""
    if None not in olds:
        for r in readers.get(olds[0], []):
            if _is(r, "concat") and r.attrs.get("axis") in (0, -2) and _same(r.inputs, olds) \
                    and r.shape is not None and tuple(r.shape) == tuple(stack.shape) \
                    and r.dtype == stack.dtype:
                mapping[r] = stack
    for t, old in enumerate(olds):
        if old is not None:
            mapping[old] = PlanNode.standing_for(old, REGISTRY["getitem"], [stack],
                                                 {"key": _rows_key(t, batch)})
            made.append(mapping[old])
