"""Each GRU time step as four nodes around its products, two forward and two backward.

After the rewrites, a forward step of ``GRUCell`` (``gradflow/prim/gru.py``) is

    gates = sigmoid((x_g + y_g) + b_g)        rh = gru_rh(gates, h)
    zc    = (x_c + y_c) + b_c                 h_new = gru_h(gates, zc, h)

with ``y_g = h @ W_gh`` and ``y_c = rh @ W_ch``. This pass makes them
``gates, rh = gru_gates_step(x_g, y_g, b_g, h)`` and ``zc, h_new =
gru_h_step(x_c, y_c, b_c, gates, h)`` (each read through ``fused_output`` nodes):
one kernel each, the sums never stored but ``zc``, which the backward reads.

Backward, autodiff gives each input of ``gru_rh`` and ``gru_h`` its own gradient
node (``gru_rh_grad``/``gru_h_grad`` with ``wrt``), all reading the same arrays. The
nodes of one op that read the same inputs become one ``gru_rh_grads`` (outputs: the
gates', the state's) or ``gru_h_grads`` (the gates', the candidate's, the state's);
``gru_h_grads`` also takes the terms of its output gradient, a sum of at most four
(the loss's gradient of the step's output and the three parts coming back from the
next step) when nothing else reads the sum. Then the gates' gradient,
``sigmoid'(dgh + drg)`` as autodiff writes it (``(g * s) * (1 - s)``, ``g`` the sum of
the two ``gates`` outputs), and ``gru_rh``'s state gradient are one
``gru_gates_grad(drh, dgh, gates, h)``. A step's backward is then two kernels and two
products.

The peephole LSTM cell (``gradflow/prim/lstm_peephole.py``) is fused the same way:
``lstm_peep_c(z, c_prev, w_i, w_f)`` and ``lstm_peep_h(z, c, w_o)`` of ``z = (x + y) +
b`` become one ``z, c, h = lstm_peep_step(x, y, b, c_prev, w_i, w_f, w_o)``, and a
step's ``lstm_peep_h_grads``, ``lstm_peep_c_grads`` (of the state gradient plus the
next step's ``dc_next``) and the sum of their gates' gradients one
``lstm_peep_step_grad`` (outputs ``dz, dc_prev, dw_i, dw_f, dw_o``), which also sums
the output's gradient: one kernel and one product a step each way.

Every node involved must have a fully known shape (2-D, biases and peephole weights
1-D), one dtype and no control inputs; anything else is left as it is.
"""

from __future__ import annotations

import numpy as np

from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode
from gradflow.prim.gru import (
    GRU_GATES_GRAD,
    GRU_GATES_STEP,
    GRU_H_GRADS,
    GRU_H_STEP,
    GRU_RH_GRADS,
)
from gradflow.prim.lstm_peephole import (
    C_INPUTS,
    H_INPUTS,
    LSTM_PEEP_C_GRADS,
    LSTM_PEEP_H_GRADS,
    LSTM_PEEP_STEP,
    LSTM_PEEP_STEP_GRAD,
)

_GROUPS = {"gru_rh_grad": (GRU_RH_GRADS, ("gates", "state")),
           "gru_h_grad": (GRU_H_GRADS, ("gates", "candidate", "state")),
           "lstm_peep_c_grad": (LSTM_PEEP_C_GRADS, C_INPUTS),
           "lstm_peep_h_grad": (LSTM_PEEP_H_GRADS, H_INPUTS)}
MAX_TERMS = 4  # of a gradient sum gru_h_grads takes in (its kernels take that many)


def fuse_gru_steps(graph) -> None:
    """Make each GRU step's nodes of ``graph`` (a PlanGraph) the fused step nodes of the
    module docstring, in three rounds (each reads the last one's nodes)."""
    for round_ in (_forward, _gradient_groups, _gates_grads, _peephole_steps,
                   _peephole_step_grads):
        mapping, made = {}, []
        round_(graph, graph.consumers(), mapping, made)
        graph.replace(mapping, extra=made)


def _outputs(fused, olds, mapping, made):
    for index, old in enumerate(olds):
        if old is not None:
            mapping[old] = output_of(fused, index, old)
            made.append(mapping[old])


def _known(node):
    return node.shape is not None and node.shape.is_fully_defined()


def _plain(node, op=None):
    return isinstance(node, PlanNode) and (op is None or node.opdef.name == op) \
        and node.opdef.kind == "compute" and not node.control_inputs and _known(node) \
        and len(node.shape) == 2


def _terms(node, readers, limit, row=True):
    """The leaves of the sum ``node`` (``add`` nodes, each inner one read only by the
    next), left to right, shaped like ``node`` but for a last row [width] when ``row``;
    None when ``node`` is no such sum of at most ``limit`` leaves."""
    leaves, inner = [node], True
    while inner:
        inner = False
        for k, leaf in enumerate(leaves):
            if _plain(leaf, "add") and (leaf is node or len(readers.get(leaf, [])) == 1) \
                    and leaf.dtype == node.dtype:
                leaves[k:k + 1] = list(leaf.inputs)
                inner = True
                break
    if leaves == [node] or len(leaves) > limit:
        return None
    full = leaves[:-1] if row else leaves
    if row and not (leaves[-1].shape is not None and tuple(leaves[-1].shape)
                    == tuple(node.shape[1:]) and leaves[-1].dtype == node.dtype):
        return None
    if not all(_known(t) and tuple(t.shape) == tuple(node.shape) and t.dtype == node.dtype
               for t in full):
        return None
    return leaves


def _forward(graph, readers, mapping, made):
    for node in graph.nodes():
        if _plain(node, "gru_rh"):
            gates, h = node.inputs
            if _plain(gates, "sigmoid") and gates not in mapping:
                terms = _terms(gates.inputs[0], readers, 3)
                if terms is not None and _same(node, gates, h):
                    fused = PlanNode.standing_for(gates, GRU_GATES_STEP, terms + [h], {})
                    made.append(fused)
                    _outputs(fused, (gates, node), mapping, made)
        elif _plain(node, "gru_h"):
            gates, zc, h = node.inputs
            terms = _terms(zc, readers, 3) if _plain(zc, "add") else None
            if terms is not None and _same(node, gates, zc, h):
                fused = PlanNode.standing_for(node, GRU_H_STEP, terms + [gates, h], {})
                made.append(fused)
                _outputs(fused, (zc, node), mapping, made)


def _same(*nodes):
    return all(_known(n) and len(n.shape) == 2 for n in nodes) \
        and len({n.dtype for n in nodes}) == 1 and len({n.shape[0] for n in nodes}) == 1


def _groupable(node):
    """Whether ``node`` is a gradient node this pass joins with its siblings: fully known
    shapes, 2-D but for peephole weights (1-D), one batch and one dtype."""
    if not (isinstance(node, PlanNode) and node.opdef.name in _GROUPS
            and node.opdef.kind == "compute" and not node.control_inputs):
        return False
    _, order = _GROUPS[node.opdef.name]
    tensors = [node] + list(node.inputs)
    if len(node.inputs) != len(order) + 1 and node.opdef.name.startswith("lstm_peep") \
            or not all(_known(t) and len(t.shape) in (1, 2) for t in tensors):
        return False
    rows = {t.shape[0] for t in tensors if len(t.shape) == 2}
    return len(node.inputs[1].shape) == 2 and len(rows) == 1 \
        and len({t.dtype for t in tensors}) == 1


def _gradient_groups(graph, readers, mapping, made):
    groups: dict = {}
    for node in graph.nodes():
        if _groupable(node):
            attrs = tuple(sorted((k, v) for k, v in node.attrs.items() if k != "wrt"))
            key = (node.opdef.name, attrs) + tuple(id(x) for x in node.inputs)
            groups.setdefault(key, {})[node.attrs["wrt"]] = node
    for key, by_wrt in groups.items():
        opdef, order = _GROUPS[key[0]]
        if len(by_wrt) < 2:
            continue
        first = next(iter(by_wrt.values()))
        g, *rest = first.inputs
        terms = [g]
        if opdef is GRU_H_GRADS and _plain(g, "add") \
                and set(readers.get(g, [])) <= set(by_wrt.values()):
            terms = _terms(g, readers, MAX_TERMS, row=False) or [g]
        fused = PlanNode.standing_for(by_wrt.get("gates", first), opdef, terms + rest,
                                      dict(key[1]), shape=first.inputs[1].shape)
        made.append(fused)
        _outputs(fused, [by_wrt.get(w) for w in order], mapping, made)


def _gates_grads(graph, readers, mapping, made):
    for node in graph.nodes():
        parts = _sigmoid_grad(node, readers, graph)
        if parts is None:
            continue
        s, dgh, drg = parts
        grouped = _output_of(drg) == "gru_rh_grads"
        rh_grads = drg.inputs[0] if grouped else drg
        drh, gates, h = rh_grads.inputs
        # the state's gradient: the group's other output (a lone gates' gradient has none)
        dh_r = [r for r in readers.get(rh_grads, []) if r is not drg] if grouped else []
        if gates is not s or len(dh_r) > 1 or not _same(node, drh, h):
            continue
        fused = PlanNode.standing_for(node, GRU_GATES_GRAD, [drh, dgh, gates, h], {})
        made.append(fused)
        _outputs(fused, (node, dh_r[0] if dh_r else None), mapping, made)


def _sigmoid_grad(node, readers, graph):
    """``(s, dgh, drg)`` if ``node`` is ``(g * s) * (1 - s)`` (a sigmoid's gradient) with
    ``g = dgh + drg`` the gates' gradients of a ``gru_h_grads`` and of a ``gru_rh_grads``
    (or a lone ``gru_rh_grad``), each read nowhere else, else None."""
    if not _plain(node, "multiply"):
        return None
    left, right = node.inputs
    if not (_plain(left, "multiply") and _plain(right, "subtract")
            and len(readers.get(left, [])) == 1 and len(readers.get(right, [])) == 1):
        return None
    g, s = left.inputs
    one, s2 = right.inputs
    if s2 is not s or not _is_one(one, graph) or not _plain(g, "add") \
            or len(readers.get(g, [])) != 1:
        return None
    dgh, drg = g.inputs
    lone = _plain(drg, "gru_rh_grad") and drg.attrs.get("wrt") == "gates"
    if _output_of(dgh) != "gru_h_grads" or not (lone or _output_of(drg) == "gru_rh_grads") \
            or len(readers.get(drg, [])) != 1 or len(readers.get(dgh, [])) != 1:
        return None
    return s, dgh, drg


def _output_of(node):
    """The op of the multi-output node whose output 0 ``node`` reads, else None."""
    if isinstance(node, PlanNode) and node.opdef.name == "fused_output" \
            and node.attrs.get("index") == 0 and isinstance(node.inputs[0], PlanNode):
        return node.inputs[0].opdef.name
    return None


def _is_one(node, graph):
    """Whether ``node`` is a constant (not fed) whose elements are all exactly 1."""
    if node in graph.fed or node.opdef.kind != "constant" or node.control_inputs:
        return False
    array = getattr(node.attrs.get("value"), "array", None)
    if array is None or np.ndim(array) > 2:
        return False
    array = np.asarray(array)
    return array.dtype.kind in "iuf" and array.size > 0 and bool(np.all(array == 1))


def _peephole_steps(graph, readers, mapping, made):
    for node in graph.nodes():
        if not _plain(node, "lstm_peep_h") or len(node.inputs) != 3:
            continue
        z, c, w_o = node.inputs
        if not (_plain(c, "lstm_peep_c") and len(c.inputs) == 4 and c.inputs[0] is z
                and _plain(z, "add")) or c in mapping:
            continue
        terms = _terms(z, readers, 3)
        c_prev, w_i, w_f = c.inputs[1:]
        if terms is None or not _same(node, c, c_prev, z) \
                or not all(_known(w) and w.dtype == c.dtype for w in (w_i, w_f, w_o)):
            continue
        fused = PlanNode.standing_for(c, LSTM_PEEP_STEP, terms + [c_prev, w_i, w_f, w_o],
                                      dict(c.attrs), shape=z.shape)
        made.append(fused)
        _outputs(fused, (z, c, node), mapping, made)


def _peephole_step_grads(graph, readers, mapping, made):
    for node in graph.nodes():
        found = _peephole_grad(node, readers)
        if found is None:
            continue
        h_grads, c_grads, dc_next, outs = found
        g, z, c, w_o = h_grads.inputs
        _, _, c_prev, w_i, w_f = c_grads.inputs
        terms = [g]
        if _plain(g, "add") and readers.get(g, []) == [h_grads]:
            terms = _terms(g, readers, MAX_TERMS, row=False) or [g]
        carry = [dc_next] if dc_next is not None else []
        attrs = dict(c_grads.attrs, terms=len(terms), carry=bool(carry))
        fused = PlanNode.standing_for(node, LSTM_PEEP_STEP_GRAD, terms + carry +
                                      [z, c_prev, c, w_i, w_f, w_o], attrs)
        made.append(fused)
        _outputs(fused, outs, mapping, made)


def _peephole_grad(node, readers):
    """``(h_grads, c_grads, dc_next or None, the five nodes the step's outputs stand
    for)`` if ``node`` is the sum of the gates' gradients of a peephole step's
    ``lstm_peep_h_grads`` and ``lstm_peep_c_grads``, else None."""
    if not _plain(node, "add"):
        return None
    parts = {_output_of(x): x for x in node.inputs}
    dzh, dzc = parts.get("lstm_peep_h_grads"), parts.get("lstm_peep_c_grads")
    if dzh is None or dzc is None or any(readers.get(x, []) != [node] for x in (dzh, dzc)):
        return None
    h_grads, c_grads = dzh.inputs[0], dzc.inputs[0]
    if h_grads.inputs[1] is not c_grads.inputs[1] or len(h_grads.inputs) != 4 \
            or len(c_grads.inputs) != 5:
        return None
    h_outs = _outputs_of(h_grads, readers, 3)
    c_outs = _outputs_of(c_grads, readers, 4)
    if h_outs is None or c_outs is None or h_outs[1] is None:
        return None
    gc, dch, dc_next = c_grads.inputs[0], h_outs[1], None
    if gc is not dch:
        if not _plain(gc, "add") or readers.get(gc, []) != [c_grads] or dch not in gc.inputs:
            return None
        dc_next = gc.inputs[1] if gc.inputs[0] is dch else gc.inputs[0]
        if not _known(dc_next) or tuple(dc_next.shape) != tuple(dch.shape) \
                or dc_next.dtype != dch.dtype:
            return None
    if readers.get(dch, []) != [gc]:
        return None
    return h_grads, c_grads, dc_next, (node, c_outs[1], c_outs[2], c_outs[3], h_outs[2])


def _outputs_of(multi, readers, count):
    """The ``fused_output`` node of each output of ``multi`` (None: unread), or None if
    an output has several."""
    outs = [None] * count
    for reader in readers.get(multi, []):
        if not (isinstance(reader, PlanNode) and reader.opdef.name == "fused_output"):
            return None
        index = reader.attrs.get("index")
        if outs[index] is not None:
            return None
        outs[index] = reader
    return outs
