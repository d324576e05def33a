"""One node per LSTM step forward: the gates, the new cell state and the output.

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
"""

from __future__ import annotations

from gradflow.ops.rnn_ops import LSTM_STEP
from gradflow.passes.fusion import FUSED_OUTPUT
from gradflow.passes.ir import PlanNode


def fuse_lstm_steps(graph) -> None:
    """Replace each ``lstm_gates_sum`` -> ``lstm_c`` -> ``lstm_h`` step of ``graph`` (a
    PlanGraph) by one ``lstm_step`` node and its three outputs."""
    mapping, made = {}, []
    for h in graph.nodes():
        step = _step(h)
        if step is None or any(n in mapping for n in step):
            continue
        a, c = step
        node = PlanNode(LSTM_STEP, list(a.inputs) + [c.inputs[1]],
                        {"forget_bias": a.attrs["forget_bias"]}, a.shape, a.dtype, a.name,
                        a.source, (), origin=a.origin, graph=a.graph, index=a.index)
        made.append(node)
        for index, old in enumerate((a, c, h)):
            pick = PlanNode(FUSED_OUTPUT, [node], {"index": index, "shape": old.shape,
                                                    "dtype": old.dtype},
                            old.shape, old.dtype, old.name, old.source, (),
                            origin=old.origin, graph=old.graph, index=old.index)
            mapping[old] = pick
            made.append(pick)
    graph.replace(mapping, extra=made)


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
