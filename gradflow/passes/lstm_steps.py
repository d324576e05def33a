"""One node per LSTM step, forward and backward.

After the rewrites, a step of ``LSTMCell`` is three nodes:

    a = lstm_gates_sum(x, y, bias)      (the input and state products, the bias)
    c = lstm_c(a, c_prev)
    h = lstm_h(a, c)

This pass replaces them by one ``lstm_step(x, y, bias, c_prev)`` node whose value
is the tuple ``(a, c, h)``, read through three ``fused_output`` nodes: one kernel
per step, which reads each gate once and never reads ``c`` back. The gradient
reads ``a`` and ``c`` (``lstm_cell_grad``, ``lstm_h_grad``) and the next step
reads ``c`` and ``h``, so all three stay outputs.

The three must have fully known 2-D shapes of one batch and one dtype, and no
control inputs; ``c`` must be computed from the same ``a`` that ``h`` reads.

Backward, after the rewrites, a step is

    dc = lstm_h_grad(dh, a, c, "state") + dc_next
    dz = lstm_cell_grad(dc, dh, a, c, c_prev)
    dc_prev = lstm_c_grad(dc, a, c_prev, "state")     (absent for the first step)

which becomes one ``lstm_step_grad(dh, dc_next, a, c, c_prev)`` with the outputs
``(dz, dc_prev)``, where ``dc`` and its first term have no other reader.
"""

from __future__ import annotations

from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode
from gradflow.prim.rnn import LSTM_STEP, LSTM_STEP_GRAD, TRANSPOSED_COPY

# Products by one transposed matrix from this many on read a row-major copy of it.
MIN_TRANSPOSED_READERS = 3


def fuse_lstm_steps(graph) -> None:
    """Replace each forward step of ``graph`` (a PlanGraph) by one ``lstm_step`` node and
    each backward step by one ``lstm_step_grad`` node (see the module docstring)."""
    mapping, made = {}, []
    readers = graph.consumers()
    for node in graph.nodes():
        step = _step(node)
        if step is not None and not any(n in mapping for n in step):
            a, c = step
            fused = PlanNode.standing_for(a, LSTM_STEP, list(a.inputs) + [c.inputs[1]],
                                          {"forget_bias": a.attrs["forget_bias"]})
            made.append(fused)
            _outputs(fused, (a, c, node), mapping, made)
        backward = _step_grad(node, readers)
        if backward is not None:
            dh, dc_next, a, c, c_prev, dc_prev = backward
            fused = PlanNode.standing_for(node, LSTM_STEP_GRAD, [dh, dc_next, a, c, c_prev], {})
            made.append(fused)
            _outputs(fused, (node, dc_prev), mapping, made)
    graph.replace(mapping, extra=made)


def _outputs(fused, olds, mapping, made):
    """One ``fused_output`` of ``fused`` standing for each of ``olds`` (None: unread)."""
    for index, old in enumerate(olds):
        if old is not None:
            mapping[old] = output_of(fused, index, old)
            made.append(mapping[old])


def _step_grad(g, readers):
    """``(dh, dc_next, a, c, c_prev, dc_prev or None)`` if ``g`` is the gate gradient of a
    backward step this pass can fuse, else None."""
    if not _plain(g, "lstm_cell_grad"):
        return None
    dc, dh, a, c, c_prev = g.inputs
    if not _plain(dc, "add"):
        return None
    first, dc_next = dc.inputs
    if not _state_grad(first, "lstm_h_grad", (dh, a, c)):
        first, dc_next = dc_next, first
        if not _state_grad(first, "lstm_h_grad", (dh, a, c)):
            return None
    if readers.get(first, []) != [dc] or dc_next.shape is None \
            or tuple(dc_next.shape) != tuple(c.shape) or dc_next.dtype != c.dtype:
        return None
    dc_prev = None
    for reader in readers.get(dc, []):
        if reader is g:
            continue
        if dc_prev is None and _state_grad(reader, "lstm_c_grad", (dc, a, c_prev)):
            dc_prev = reader
        else:
            return None  # dc is needed elsewhere: leave the step as it is
    return dh, dc_next, a, c, c_prev, dc_prev


def _state_grad(node, op, inputs):
    return _plain(node, op) and node.attrs.get("wrt") == "state" \
        and all(x is y for x, y in zip(node.inputs, inputs))


def _plain(node, op):
    return isinstance(node, PlanNode) and node.opdef.name == op \
        and node.opdef.kind == "compute" and not node.control_inputs \
        and node.shape is not None and len(node.shape) == 2 and node.shape.is_fully_defined()


def _step(h):
    """``(a, c)`` if ``h`` is the output of a step this pass can fuse, else None."""
    if not _plain(h, "lstm_h"):
        return None
    a, c = h.inputs
    if not (_plain(a, "lstm_gates_sum") and _plain(c, "lstm_c") and c.inputs[0] is a):
        return None
    c_prev = c.inputs[1]
    if c_prev.shape is None or tuple(c_prev.shape) != tuple(c.shape) \
            or tuple(h.shape) != tuple(c.shape) or a.shape[0] != c.shape[0] \
            or a.shape[1] != 4 * c.shape[1] or len({a.dtype, c.dtype, h.dtype,
                                                    c_prev.dtype}) != 1:
        return None
    return a, c


def contiguous_recurrent_transposes(graph) -> None:
    """Products ``matmul(g, w, transpose_b=True)`` that share their ``w`` (an unrolled
    RNN's backward recurrent products ``dz_t @ w^T``, one per step) read one row-major
    copy of ``w^T`` made once per run: OpenBLAS multiplies a [32, 512] by a [512, 128]
    about 1.5x faster than by the transposed view of a [128, 512]. A CPU backend's kernel
    pass (the CuPy backend folds these products into its LSTM kernels instead)."""
    groups: dict = {}
    for node in graph.nodes():
        if _plain_product(node):
            groups.setdefault(node.inputs[1], []).append(node)
    mapping, made = {}, []
    for w, users in groups.items():
        if len(users) < MIN_TRANSPOSED_READERS:
            continue
        wt = PlanNode.standing_for(users[0], TRANSPOSED_COPY, [w], {},
                                   shape=(w.shape[1], w.shape[0]), dtype=w.dtype,
                                   name=f"{users[0].name}/transposed")
        made.append(wt)
        for user in users:
            mapping[user] = PlanNode.standing_for(user, user.opdef, [user.inputs[0], wt],
                                                  {**user.attrs, "transpose_b": False})
            made.append(mapping[user])
    graph.replace(mapping, extra=made)


def _plain_product(node):
    if not (isinstance(node, PlanNode) and node.opdef.name == "matmul"
            and node.attrs.get("transpose_b") and not node.attrs.get("transpose_a")
            and not node.control_inputs):
        return False
    a, w = node.inputs
    return all(t.shape is not None and len(t.shape) == 2 and t.shape.is_fully_defined()
               and t.dtype == node.dtype for t in (a, w))
