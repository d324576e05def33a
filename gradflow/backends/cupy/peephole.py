"""The CuPy backend's peephole LSTM cell (``gradflow.prim.lstm_peephole``): one generated
kernel per op and per gradient node (``gradflow.backends.cuda.lstm_peephole``).

Each lowering checks what its kernel takes (C-ordered float32/float64 arrays of the
cell's sizes, the peephole weights given) and otherwise runs the op's Array API
function. ``out`` is one array, or a tuple (one array or None per output) for the
gradient nodes, never one of the inputs.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import lstm_peephole as cuda_peep
from gradflow.backends.cupy.emit import _Compiled, _contiguous, _grid, _into, _outputs
from gradflow.prim.registry import REGISTRY

_KERNELS = _Compiled(cuda_peep.sources, "the peephole LSTM cell runs op by op")


def _marked(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def _takes(z, state, weights, count, others=()):
    """The kernels of the arrays' dtype if they take these arrays, else None."""
    if len(weights) != count or z.ndim != 2 or state.ndim != 2:
        return None
    batch, units = state.shape
    arrays = (z, state, *weights, *others)
    if z.shape != (batch, 4 * units) or any(w.shape != (units,) for w in weights) \
            or any(o.shape != state.shape for o in others) \
            or any(a.dtype != z.dtype for a in arrays) or not _contiguous(arrays):
        return None
    return _KERNELS.get(z.dtype)


def _clip_args(dtype, cell_clip):
    return dtype.type(0.0 if cell_clip is None else cell_clip), np.int32(cell_clip is not None)


def lower_lstm_peep_c(xp, forget_bias, cell_clip):
    """``lstm_peep_c(z, c_prev, w_i, w_f)``: one kernel."""
    impl = REGISTRY["lstm_peep_c"].impl

    def c_new(z, c_prev, *w, out=None):
        kernels = _takes(z, c_prev, w, 2)
        if kernels is None:
            value = impl(xp, z, c_prev, *w, forget_bias=forget_bias, cell_clip=cell_clip)
            return value if out is None else _into((out,), (value,))[0]
        (c,) = _outputs(None if out is None else (out,), (c_prev.shape,), z.dtype)
        batch, units = c_prev.shape
        kernels["c_forward"](*_grid(batch * units),
                             (z, c_prev, *w, c, np.int64(batch), np.int64(units),
                              z.dtype.type(forget_bias), *_clip_args(z.dtype, cell_clip)))
        return c

    return _marked(c_new)


def lower_lstm_peep_h(xp):
    """``lstm_peep_h(z, c, w_o)``: one kernel."""
    impl = REGISTRY["lstm_peep_h"].impl

    def h_new(z, c, *w, out=None):
        kernels = _takes(z, c, w, 1)
        if kernels is None:
            value = impl(xp, z, c, *w)
            return value if out is None else _into((out,), (value,))[0]
        (h,) = _outputs(None if out is None else (out,), (c.shape,), z.dtype)
        batch, units = c.shape
        kernels["h_forward"](*_grid(batch * units),
                             (z, c, *w, h, np.int64(batch), np.int64(units)))
        return h

    return _marked(h_new)


def lower_lstm_peep_c_grads(xp, forget_bias, cell_clip):
    """``lstm_peep_c_grads(g, z, c_prev, w_i, w_f)``: one kernel, four outputs."""
    impl = REGISTRY["lstm_peep_c_grads"].impl

    def grads(g, z, c_prev, *w, out=None):
        kernels = _takes(z, c_prev, w, 2, (g,))
        if kernels is None:
            return _into(out, impl(xp, g, z, c_prev, *w, forget_bias=forget_bias,
                                   cell_clip=cell_clip))
        batch, units = c_prev.shape
        outs = _outputs(out, (z.shape, c_prev.shape, (units,), (units,)), z.dtype)
        kernels["c_grads"](*_grid(units),
                           (g, z, c_prev, *w, *outs, np.int64(batch), np.int64(units),
                            z.dtype.type(forget_bias), *_clip_args(z.dtype, cell_clip)))
        return outs

    return _marked(grads)


def lower_lstm_peep_h_grads(xp):
    """``lstm_peep_h_grads(g, z, c, w_o)``: one kernel, three outputs."""
    impl = REGISTRY["lstm_peep_h_grads"].impl

    def grads(g, z, c, *w, out=None):
        kernels = _takes(z, c, w, 1, (g,))
        if kernels is None:
            return _into(out, impl(xp, g, z, c, *w))
        batch, units = c.shape
        outs = _outputs(out, (z.shape, c.shape, (units,)), z.dtype)
        kernels["h_grads"](*_grid(units), (g, z, c, *w, *outs, np.int64(batch),
                                           np.int64(units)))
        return outs

    return _marked(grads)


def lower_lstm_peep_step(xp, forget_bias, cell_clip):
    """``lstm_peep_step(x, [y,] row, c_prev, w_i, w_f, w_o) -> (z, c, h)``: one kernel."""
    impl = REGISTRY["lstm_peep_step"].impl

    def step(*inputs, out=None):
        *terms, c_prev, w_i, w_f, w_o = inputs
        kernels = None
        if len(terms) in (2, 3):
            x, row = terms[0], terms[-1]
            kernels = _takes(x, c_prev, (w_i, w_f, w_o), 3, ())
            if kernels is not None and not (
                    row.shape == x.shape[1:] and row.dtype == x.dtype
                    and all(t.shape == x.shape and t.dtype == x.dtype for t in terms[1:-1])
                    and _contiguous(terms)):
                kernels = None
        if kernels is None:
            return _into(out, impl(xp, *inputs, forget_bias=forget_bias, cell_clip=cell_clip))
        batch, units = c_prev.shape
        outs = _outputs(out, (x.shape, c_prev.shape, c_prev.shape), x.dtype)
        y = terms[1] if len(terms) == 3 else x
        kernels["step"](*_grid(batch * units),
                        (x, y, row, np.int32(len(terms)), c_prev, w_i, w_f, w_o, *outs,
                         np.int64(batch), np.int64(units), x.dtype.type(forget_bias),
                         *_clip_args(x.dtype, cell_clip)))
        return outs

    return _marked(step)


def lower_lstm_peep_step_grad(xp, forget_bias, cell_clip, terms, carry):
    """``lstm_peep_step_grad(t0, ..., [dc_next,] z, c_prev, c, w_i, w_f, w_o) -> (dz,
    dc_prev, dw_i, dw_f, dw_o)``: one kernel for one to four terms."""
    impl = REGISTRY["lstm_peep_step_grad"].impl

    def step_grad(*inputs, out=None):
        sums = list(inputs[:terms])
        dc_next = inputs[terms] if carry else None
        z, c_prev, c, w_i, w_f, w_o = inputs[terms + bool(carry):]
        states = sums + [c] + ([dc_next] if carry else [])
        kernels = _takes(z, c_prev, (w_i, w_f, w_o), 3, states) if 1 <= terms <= 4 else None
        if kernels is None:
            return _into(out, impl(xp, *inputs, forget_bias=forget_bias, cell_clip=cell_clip,
                                   terms=terms, carry=carry))
        batch, units = c.shape
        outs = _outputs(out, (z.shape, c.shape, (units,), (units,), (units,)), z.dtype)
        padded = sums + [sums[0]] * (4 - terms)
        kernels["step_grad"](*_grid(units),
                             (*padded, np.int32(terms), dc_next if carry else sums[0],
                              np.int32(bool(carry)), z, c_prev, c, w_i, w_f, w_o, *outs,
                              np.int64(batch), np.int64(units), z.dtype.type(forget_bias),
                              *_clip_args(z.dtype, cell_clip)))
        return outs

    return _marked(step_grad)


LOWERINGS = {"lstm_peep_c": lower_lstm_peep_c, "lstm_peep_h": lower_lstm_peep_h,
             "lstm_peep_c_grads": lower_lstm_peep_c_grads,
             "lstm_peep_h_grads": lower_lstm_peep_h_grads,
             "lstm_peep_step": lower_lstm_peep_step,
             "lstm_peep_step_grad": lower_lstm_peep_step_grad}
