"""The recurrent product inside the LSTM step's kernel, for backends that can do it.

After ``fuse_lstm_steps``, a forward time step of an unrolled LSTM is two nodes on the
loop's critical path, and a backward one three:

    y = matmul(h_prev, w)                        a, c, h = lstm_step(x, y, row, c_prev)
    m = matmul(dz_next, w, transpose_b=True)     dh = add(dy, m)
    dz, dc_prev = lstm_step_grad(dh, dc_next, a, c, c_prev)

where ``x`` is the step's slice of the input projection (one GEMM for every step,
``batch_matmuls``), ``w`` the recurrent block of the kernel and ``dy`` the gradient
reaching ``h`` from the layers above. On a GPU each of these is a kernel launch of a
few microseconds on the loop's sequential path, while the products themselves are
tiny (a [32, 128] x [128, 512] product is 2 MFLOP). This pass makes each step one
node each way,

    a, c, h = lstm_step_rec(x, h_prev, w, row, c_prev)
    dz, dc_prev = lstm_step_rec_grad(dy, dz_next, w, dc_next, a, c, c_prev)

which the CuPy backend runs as one kernel each (``gradflow.backends.cuda.lstm``). It is
a backend's kernel pass (``Backend.kernel_passes``), not one of every plan's: on the
CPU, BLAS does the products faster than a fused loop would.

A product joins its step only if the step is its sole reader, it has no transpose
flags other than the backward's ``transpose_b``, no control inputs, and every operand
is a fully known 2-D matrix of the step's dtype; the backward's ``add`` must be read by
the step alone and add two values of the state's shape.
"""

from __future__ import annotations

from gradflow.passes.ir import PlanNode
from gradflow.prim.registry import REGISTRY
from gradflow.prim.rnn import LSTM_STEP, LSTM_STEP_GRAD, LSTM_STEP_REC, LSTM_STEP_REC_GRAD


def fuse_lstm_recurrence(graph) -> None:
    """Fold the recurrent products of ``graph``'s (a PlanGraph) LSTM steps into them."""
    mapping, made = {}, []
    readers = graph.consumers()
    for node in graph.nodes():
        fused = _forward(node, readers) or _backward(node, readers)
        if fused is not None:
            mapping[node] = fused
            made.append(fused)
    graph.replace(mapping, extra=made)


def unfuse_lstm_recurrence(graph) -> None:
    """The inverse of ``fuse_lstm_recurrence``: each ``lstm_step_rec`` left in ``graph``
    becomes ``matmul`` + ``lstm_step`` again, each ``lstm_step_rec_grad`` ``matmul``
    (``transpose_b``) + ``add`` + ``lstm_step_grad``, built from the nodes' inputs as they
    are now. For a CPU backend whose sequence kernels take whole layers
    (``passes/cudnn_rnn.py``): a layer they leave runs as the plain steps did, its
    products on BLAS (and ``contiguous_recurrent_transposes`` can still find them)."""
    mapping, made = {}, []
    for node in graph.nodes():
        if _is(node, "lstm_step_rec"):
            x, h_prev, w, row, c_prev = node.inputs
            y = _matmul(node, h_prev, w, False, (h_prev.shape[0], w.shape[1]))
            mapping[node] = PlanNode.standing_for(node, LSTM_STEP, [x, y, row, c_prev],
                                                  dict(node.attrs))
            made += [y, mapping[node]]
        elif _is(node, "lstm_step_rec_grad"):
            dy, dz_next, w, dc_next, a, c, c_prev = node.inputs
            m = _matmul(node, dz_next, w, True, tuple(dy.shape))
            dh = PlanNode.standing_for(node, REGISTRY["add"], [dy, m], {}, shape=dy.shape,
                                       name=node.name + "/dh")
            mapping[node] = PlanNode.standing_for(node, LSTM_STEP_GRAD,
                                                  [dh, dc_next, a, c, c_prev], {})
            made += [m, dh, mapping[node]]
    graph.replace(mapping, extra=made)


def _matmul(node, a, b, transpose_b, shape):
    return PlanNode.standing_for(node, REGISTRY["matmul"], [a, b],
                                 {"transpose_a": False, "transpose_b": transpose_b},
                                 shape=shape, name=node.name + "/recurrent")


def _forward(step, readers):
    if not _is(step, "lstm_step") or len(step.inputs) != 4:
        return None
    x, y, row, c_prev = step.inputs
    if not _product(y, readers, step, transpose_b=False):
        return None
    h_prev, w = y.inputs
    if not all(_matrix(v, step.dtype) for v in (x, h_prev, w, c_prev)) \
            or tuple(w.shape) != (h_prev.shape[1], x.shape[1]):
        return None
    return PlanNode.standing_for(step, LSTM_STEP_REC, [x, h_prev, w, row, c_prev],
                                 dict(step.attrs))


def _backward(step, readers):
    if not _is(step, "lstm_step_grad"):
        return None
    dh, dc_next, a, c, c_prev = step.inputs
    if not _is(dh, "add") or readers.get(dh, []) != [step]:
        return None
    dy, m = dh.inputs
    if not _product(m, readers, dh, transpose_b=True):
        dy, m = m, dy
        if not _product(m, readers, dh, transpose_b=True):
            return None
    dz_next, w = m.inputs
    if not all(_matrix(v, step.dtype) for v in (dy, dz_next, w, c)) \
            or tuple(dy.shape) != tuple(c.shape) or tuple(w.shape) != (c.shape[1], a.shape[1]) \
            or tuple(dz_next.shape) != tuple(a.shape):
        return None
    return PlanNode.standing_for(step, LSTM_STEP_REC_GRAD,
                                 [dy, dz_next, w, dc_next, a, c, c_prev], {})


def _product(node, readers, reader, transpose_b):
    """Whether ``node`` is a plain 2-D ``matmul`` read by ``reader`` alone, with these
    transpose flags."""
    return _is(node, "matmul") and readers.get(node, []) == [reader] \
        and not node.attrs.get("transpose_a") \
        and bool(node.attrs.get("transpose_b")) == transpose_b \
        and not any(k not in ("transpose_a", "transpose_b") and v
                    for k, v in node.attrs.items())


def _is(node, op):
    return isinstance(node, PlanNode) and node.opdef.name == op \
        and node.opdef.kind == "compute" and not node.control_inputs


def _matrix(node, dtype):
    return node.shape is not None and len(node.shape) == 2 \
        and node.shape.is_fully_defined() and node.dtype == dtype
