"""NumPy lowerings of the peephole LSTM cell's ops (``gradflow/prim/lstm_peephole.py``).

Float32 arrays of the cell's exact sizes with peephole weights go to the numba kernels
of ``peephole_jit`` where numba is installed; anything else (float64, no weights, a
broadcast batch, no numba) to the Array API impls, which stay the reference. Each
lowering takes ``out=`` (a tuple, one array or None per output, for the multi-output
gradient ops) and otherwise writes into the arrays it returned in the previous run
once nothing holds them (``OutputBuffer``).
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.numpy.lstm_kernels import OutputBuffer, into, writes_out
from gradflow.prim import lstm_peephole as prim_peep

_F32 = np.dtype(np.float32)


def _jit():
    """The numba kernels, or None without numba (imported here: importing them loads
    numba, which a NumPy session without it must not need)."""
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import peephole_jit

    return peephole_jit




def _fast(z, state, weights, *others):
    """Whether the kernels take these arrays: float32, ``z`` [batch, 4 units], the state
    and ``others`` [batch, units], the weights [units]."""
    if not (z.ndim == 2 and state.ndim == 2 and weights):
        return False
    batch, units = state.shape
    return z.shape == (batch, 4 * units) and all(w.shape == (units,) for w in weights) \
        and all(o.shape == state.shape for o in others) \
        and all(a.dtype == _F32 for a in (z, state, *weights, *others))


def _outs(out, buffers, shapes):
    out = out or (None,) * len(buffers)
    return tuple(o if o is not None else b.get(s, _F32) for o, b, s in zip(out, buffers, shapes))


def _clip_args(cell_clip):
    return _F32.type(0.0 if cell_clip is None else cell_clip), cell_clip is not None


def lstm_peep_c(xp, forget_bias, cell_clip):
    """``c = lstm_peep_c(z, c_prev, w_i, w_f)`` in one pass."""
    jit, buffer = _jit(), OutputBuffer()
    clip, has_clip = _clip_args(cell_clip)
    bias = _F32.type(forget_bias)

    @writes_out
    def c_new(z, c_prev, *w, out=None):
        if jit is None or len(w) != 2 or not _fast(z, c_prev, w):
            return into(out, prim_peep._peep_c_impl(xp, z, c_prev, *w, forget_bias=forget_bias,
                                                     cell_clip=cell_clip))
        out = buffer.get(c_prev.shape, _F32) if out is None else out
        jit.c_forward(z, c_prev, *w, bias, clip, has_clip, out)
        return out

    return c_new


def lstm_peep_h(xp):
    """``h = lstm_peep_h(z, c, w_o)`` in one pass."""
    jit, buffer = _jit(), OutputBuffer()

    @writes_out
    def h_new(z, c, *w, out=None):
        if jit is None or len(w) != 1 or not _fast(z, c, w):
            return into(out, prim_peep._peep_h_impl(xp, z, c, *w))
        out = buffer.get(c.shape, _F32) if out is None else out
        jit.h_forward(z, c, w[0], out)
        return out

    return h_new


def lstm_peep_c_grads(xp, forget_bias, cell_clip):
    """``(d z, d c_prev, d w_i, d w_f)`` of ``lstm_peep_c`` in one pass."""
    jit, buffers = _jit(), tuple(OutputBuffer() for _ in range(4))
    clip, has_clip = _clip_args(cell_clip)
    bias = _F32.type(forget_bias)

    @writes_out
    def grads(g, z, c_prev, *w, out=None):
        if jit is None or len(w) != 2 or not _fast(z, c_prev, w, g):
            values = prim_peep._peep_c_grads_impl(xp, g, z, c_prev, *w, forget_bias=forget_bias,
                                                  cell_clip=cell_clip)
            return tuple(into(o, v) for o, v in zip(out or (None,) * 4, values))
        units = (c_prev.shape[1],)
        out = _outs(out, buffers, (z.shape, c_prev.shape, units, units))
        jit.c_grads(g, z, c_prev, *w, bias, clip, has_clip, *out)
        return out

    return grads


def lstm_peep_h_grads(xp):
    """``(d z, d c, d w_o)`` of ``lstm_peep_h`` in one pass."""
    jit, buffers = _jit(), tuple(OutputBuffer() for _ in range(3))

    @writes_out
    def grads(g, z, c, *w, out=None):
        if jit is None or len(w) != 1 or not _fast(z, c, w, g):
            values = prim_peep._peep_h_grads_impl(xp, g, z, c, *w)
            return tuple(into(o, v) for o, v in zip(out or (None,) * 3, values))
        out = _outs(out, buffers, (z.shape, c.shape, (c.shape[1],)))
        jit.h_grads(g, z, c, w[0], *out)
        return out

    return grads


LOWERINGS = {"lstm_peep_c": lstm_peep_c, "lstm_peep_h": lstm_peep_h,
             "lstm_peep_c_grads": lstm_peep_c_grads, "lstm_peep_h_grads": lstm_peep_h_grads}


def lstm_peep_step(xp, forget_bias, cell_clip):
    """``(z, c, h) = lstm_peep_step(x, [y,] row, c_prev, w_i, w_f, w_o)`` in one pass."""
    jit, buffers = _jit(), tuple(OutputBuffer() for _ in range(3))
    clip, has_clip = _clip_args(cell_clip)
    bias = _F32.type(forget_bias)

    @writes_out
    def step(*inputs, out=None):
        *terms, c_prev, w_i, w_f, w_o = inputs
        ok = jit is not None and len(terms) in (2, 3) and c_prev.ndim == 2
        if ok:
            x, row = terms[0], terms[-1]
            gates = (c_prev.shape[0], 4 * c_prev.shape[1])
            ok = _fast(x, c_prev, (w_i, w_f, w_o), *()) and row.shape == gates[1:] \
                and row.dtype == _F32 and all(t.shape == gates and t.dtype == _F32
                                              for t in terms[:-1])
        if not ok:
            values = prim_peep._peep_step_impl(xp, *inputs, forget_bias=forget_bias,
                                               cell_clip=cell_clip)
            return tuple(into(o, v) for o, v in zip(out or (None,) * 3, values))
        out = _outs(out, buffers, (x.shape, c_prev.shape, c_prev.shape))
        jit.step_forward(x, terms[1] if len(terms) == 3 else x, row, len(terms), c_prev,
                         w_i, w_f, w_o, bias, clip, has_clip, *out)
        return out

    return step


def lstm_peep_step_grad(xp, forget_bias, cell_clip, terms, carry):
    """``(dz, dc_prev, dw_i, dw_f, dw_o)`` of a step in one pass."""
    jit, buffers = _jit(), tuple(OutputBuffer() for _ in range(5))
    clip, has_clip = _clip_args(cell_clip)
    bias = _F32.type(forget_bias)

    @writes_out
    def step_grad(*inputs, out=None):
        sums = list(inputs[:terms])
        dc_next = inputs[terms] if carry else None
        z, c_prev, c, w_i, w_f, w_o = inputs[terms + bool(carry):]
        states = sums + [c] + ([dc_next] if carry else [])
        if jit is None or not 1 <= terms <= 4 or not _fast(z, c_prev, (w_i, w_f, w_o),
                                                           *states):
            values = prim_peep._peep_step_grad_impl(xp, *inputs, forget_bias=forget_bias,
                                                    cell_clip=cell_clip, terms=terms,
                                                    carry=carry)
            return tuple(into(o, v) for o, v in zip(out or (None,) * 5, values))
        units = (c.shape[1],)
        out = _outs(out, buffers, (z.shape, c.shape, units, units, units))
        padded = sums + [sums[0]] * (4 - terms)
        jit.step_backward(*padded, terms, dc_next if carry else sums[0], bool(carry), z, c_prev,
                          c, w_i, w_f, w_o, bias, clip, has_clip, *out)
        return out

    return step_grad


LOWERINGS.update({"lstm_peep_step": lstm_peep_step, "lstm_peep_step_grad": lstm_peep_step_grad})
