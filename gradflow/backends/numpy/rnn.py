"""NumPy lowerings of the fused LSTM ops (``gradflow/prim/rnn.py``).

Same formulas as the Array API impls, which stay the reference (the tests
compare the two). Each op is one kernel of ``numpy_lstm_kernels``: one compiled
pass over its arrays for float32 where numba is installed, in-place ufuncs
otherwise. Inputs of different batch sizes (broadcasting) go to the reference
impl.

Every lowering takes ``out=`` (``accepts_out``): where the plan gives it a
buffer (never one of its inputs: ``reads_whole_inputs``), it writes there.
Without one it writes into the array it returned in the previous run once
nothing holds that array any more (``OutputBuffer``), so a training step
allocates nothing for these ops either way.
"""

from __future__ import annotations

from gradflow.backends.numpy.gru import LOWERINGS as GRU_LOWERINGS
from gradflow.backends.numpy.lstm_kernels import OutputBuffer, into, picker, writes_out
from gradflow.backends.numpy.peephole import LOWERINGS as PEEPHOLE_LOWERINGS
from gradflow.prim import rnn as prim_rnn


def _same_batch(gates, state):
    """Whether ``gates`` [batch, 4 * units] and ``state`` [batch, units] match exactly
    (the kernels' case; anything else broadcasts or is malformed: the reference)."""
    return gates.ndim == state.ndim == 2 and gates.shape[0] == state.shape[0] \
        and gates.shape[1] == 4 * state.shape[1] and gates.dtype == state.dtype


def lstm_gates(xp, forget_bias):
    """``a = lstm_gates(z)``: the four activations in one pass."""
    pick, buffer = picker(), OutputBuffer()
    half_bias = {}

    @writes_out
    def gates(z, out=None):
        if z.ndim != 2 or z.shape[1] % 4:
            return into(out, prim_rnn._lstm_gates_impl(xp, z, forget_bias))
        if z.dtype not in half_bias:
            half_bias[z.dtype] = z.dtype.type(0.5 * forget_bias)
        if out is None:
            out = buffer.get(z.shape, z.dtype)
        pick(z.dtype).gates_forward(z, half_bias[z.dtype], out)
        return out

    return gates


def lstm_gates_grad(xp):
    """``lstm_gates_grad(g, a) = g (1 - a)(a + m)`` in one pass."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def gates_grad(g, a, out=None):
        if g.shape != a.shape or a.ndim != 2 or a.shape[1] % 4 or g.dtype != a.dtype:
            return into(out, prim_rnn._lstm_gates_grad_impl(xp, g, a))
        if out is None:
            out = buffer.get(a.shape, a.dtype)
        pick(a.dtype).gates_backward(g, a, out)
        return out

    return gates_grad


def lstm_c(xp):
    """``c = lstm_c(a, c_prev) = f * c_prev + i * j`` in one pass."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def c_new(a, c_prev, out=None):
        if not _same_batch(a, c_prev):
            return into(out, prim_rnn._lstm_c_impl(xp, a, c_prev))
        if out is None:
            out = buffer.get(c_prev.shape, c_prev.dtype)
        pick(a.dtype).c_forward(a, c_prev, out)
        return out

    return c_new


def lstm_h(xp):
    """``h = lstm_h(a, c) = o * tanh(c)`` in one pass."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def h_new(a, c, out=None):
        if not _same_batch(a, c):
            return into(out, prim_rnn._lstm_h_impl(xp, a, c))
        if out is None:
            out = buffer.get(c.shape, c.dtype)
        pick(a.dtype).h_forward(a, c, out)
        return out

    return h_new


def lstm_c_grad(xp, wrt):
    """``lstm_c_grad(g, a, c_prev)``: ``g f`` for the state, ``[g j, g i, g c_prev, 0]``
    for the gates, in one pass."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def c_grad(g, a, c_prev, out=None):
        if not (_same_batch(a, c_prev) and g.shape == c_prev.shape and g.dtype == a.dtype):
            return into(out, prim_rnn._lstm_c_grad_impl(xp, g, a, c_prev, wrt))
        if wrt == "state":
            if out is None:
                out = buffer.get(g.shape, g.dtype)
            pick(a.dtype).c_backward_state(g, a, out)
        else:
            if out is None:
                out = buffer.get(a.shape, a.dtype)
            pick(a.dtype).c_backward_gates(g, a, c_prev, out)
        return out

    return c_grad


def lstm_h_grad(xp, wrt):
    """``lstm_h_grad(g, a, c)``: ``g o (1 - tanh(c)^2)`` for the state,
    ``[0, 0, 0, g tanh(c)]`` for the gates, in one pass."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def h_grad(g, a, c, out=None):
        if not (_same_batch(a, c) and g.shape == c.shape and g.dtype == a.dtype):
            return into(out, prim_rnn._lstm_h_grad_impl(xp, g, a, c, wrt))
        if wrt == "state":
            if out is None:
                out = buffer.get(g.shape, g.dtype)
            pick(a.dtype).h_backward_state(g, a, c, out)
        else:
            if out is None:
                out = buffer.get(a.shape, a.dtype)
            pick(a.dtype).h_backward_gates(g, c, out)
        return out

    return h_grad


def lstm_gates_sum(xp, forget_bias):
    """``lstm_gates(x + y + row)`` (or ``x + row``) in one pass; ``row`` is a bias
    [4 * units]; other terms go to the reference impl."""
    pick, buffer = picker(), OutputBuffer()
    half_bias = {}

    @writes_out
    def gates_sum(*terms, out=None):
        *full, row = terms
        x = full[0]
        if not (x.ndim == 2 and x.shape[1] % 4 == 0 and row.shape == x.shape[1:]
                and len(full) <= 2 and all(t.shape == x.shape for t in full)
                and all(t.dtype == x.dtype for t in terms)):
            return into(out, prim_rnn._lstm_gates_sum_impl(xp, *terms, forget_bias=forget_bias))
        if x.dtype not in half_bias:
            half_bias[x.dtype] = x.dtype.type(0.5 * forget_bias)
        if out is None:
            out = buffer.get(x.shape, x.dtype)
        kernels = pick(x.dtype)
        if len(full) == 2:
            kernels.gates_forward_sum3(x, full[1], row, half_bias[x.dtype], out)
        else:
            kernels.gates_forward_sum2(x, row, half_bias[x.dtype], out)
        return out

    return gates_sum


def lstm_step(xp, forget_bias):
    """``(a, c, h) = lstm_step(x[, y], row, c_prev)``: the gates of the sum, the new cell
    state and the output of one step in one call. ``out`` is a tuple with one array (or
    None) per output. The checks are spelled out: this runs once per step."""
    pick = picker()
    buffers = (OutputBuffer(), OutputBuffer(), OutputBuffer())
    half_bias = {}

    def reference(inputs, out):
        values = prim_rnn._lstm_step_impl(xp, *inputs, forget_bias=forget_bias)
        return tuple(into(o, v) for o, v in zip(out or (None,) * 3, values))

    @writes_out
    def step(*inputs, out=None):
        if len(inputs) == 4:
            x, y, row, c_prev = inputs
        elif len(inputs) == 3:
            (x, row, c_prev), y = inputs, None
        else:
            return reference(inputs, out)
        dtype, shape = x.dtype, x.shape
        if x.ndim != 2 or row.shape != shape[1:] or c_prev.dtype != dtype \
                or row.dtype != dtype or not _same_batch(x, c_prev) \
                or (y is not None and (y.shape != shape or y.dtype != dtype)):
            return reference(inputs, out)
        half = half_bias.get(dtype)
        if half is None:
            half = half_bias[dtype] = dtype.type(0.5 * forget_bias)
        if out is None or out[0] is None or out[1] is None or out[2] is None:
            out = out or (None, None, None)
            out = tuple(o if o is not None else buffer.get(s, dtype) for o, buffer, s in
                        zip(out, buffers, (shape, c_prev.shape, c_prev.shape)))
        a, c, h = out
        if y is None:
            pick(dtype).step_forward_sum2(x, row, c_prev, half, a, c, h)
        else:
            pick(dtype).step_forward_sum3(x, y, row, c_prev, half, a, c, h)
        return out

    return step


def lstm_step_grad(xp):
    """``(dz, dc_prev) = lstm_step_grad(dh, dc_next, a, c, c_prev)`` in one call;
    ``out`` is a tuple with one array (or None) per output."""
    pick = picker()
    buffers = (OutputBuffer(), OutputBuffer())

    @writes_out
    def step_grad(dh, dc_next, a, c, c_prev, out=None):
        shape = c.shape
        if not (_same_batch(a, c) and _same_batch(a, c_prev) and dh.shape == shape
                and dc_next.shape == shape and dh.dtype == a.dtype
                and dc_next.dtype == a.dtype):
            values = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        if out is None or out[0] is None or out[1] is None:
            out = out or (None, None)
            out = (out[0] if out[0] is not None else buffers[0].get(a.shape, a.dtype),
                   out[1] if out[1] is not None else buffers[1].get(shape, a.dtype))
        pick(a.dtype).step_backward(dh, dc_next, a, c, c_prev, out[0], out[1])
        return out

    return step_grad


def lstm_cell_grad(xp):
    """``lstm_cell_grad(dc, dh, a, c, c_prev)``: the gate gradient of one step in one pass
    (what ``lstm_c_grad``, ``lstm_h_grad`` for the gates, their sum and
    ``lstm_gates_grad`` compute in four)."""
    pick, buffer = picker(), OutputBuffer()

    @writes_out
    def cell_grad(dc, dh, a, c, c_prev, out=None):
        if not (_same_batch(a, c) and _same_batch(a, c_prev) and dc.shape == c.shape
                and dh.shape == c.shape and dc.dtype == dh.dtype == a.dtype):
            return into(out, prim_rnn._lstm_cell_grad_impl(xp, dc, dh, a, c, c_prev))
        if out is None:
            out = buffer.get(a.shape, a.dtype)
        pick(a.dtype).cell_backward(dc, dh, a, c, c_prev, out)
        return out

    return cell_grad


LOWERINGS = {
    "lstm_step": lstm_step,
    "lstm_step_grad": lstm_step_grad,
    "lstm_gates_sum": lstm_gates_sum,
    "lstm_cell_grad": lstm_cell_grad,
    "lstm_gates": lstm_gates,
    "lstm_gates_grad": lstm_gates_grad,
    "lstm_c": lstm_c,
    "lstm_h": lstm_h,
    "lstm_c_grad": lstm_c_grad,
    "lstm_h_grad": lstm_h_grad,
    **GRU_LOWERINGS,
    **PEEPHOLE_LOWERINGS,
}
