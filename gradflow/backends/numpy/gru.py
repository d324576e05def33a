"""NumPy lowerings of the GRU step's ops (``gradflow/prim/gru.py``).

Float32 arrays of matching 2-D shapes go to the numba kernels of ``gru_jit``
where numba is installed; anything else (float64, a broadcast batch, no numba)
to the Array API impls, which stay the reference. Every lowering takes ``out=``
(one array, or a tuple of one per output for the multi-output ``gru_rh_grads`` and
``gru_h_grads``) and otherwise writes into the array it returned in the previous
run once nothing holds it (``OutputBuffer``).
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.numpy.lstm_kernels import OutputBuffer, into, writes_out
from gradflow.passes.gru_steps import MAX_TERMS
from gradflow.prim import gru as prim_gru

_F32 = np.dtype(np.float32)


def _jit():
    """The numba kernels, or None without numba (imported here: importing them loads
    numba, which a NumPy session without it must not need)."""
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import gru_jit

    return gru_jit




def _fast(gates, *states):
    """Whether the kernels take these arrays: float32, 2-D, one batch, gates 2 x units."""
    h = states[-1]
    return gates.dtype == _F32 and gates.ndim == 2 and h.ndim == 2 \
        and gates.shape == (h.shape[0], 2 * h.shape[1]) \
        and all(s.shape == h.shape and s.dtype == _F32 for s in states)


def _outs(out, buffers, shapes, dtype):
    out = out or (None,) * len(buffers)
    return tuple(o if o is not None else b.get(s, dtype)
                 for o, b, s in zip(out, buffers, shapes))


def gru_rh(xp):
    """``rh = r * h`` in one pass."""
    jit, buffer = _jit(), OutputBuffer()

    @writes_out
    def rh(gates, h, out=None):
        if jit is None or not _fast(gates, h):
            return into(out, prim_gru._gru_rh_impl(xp, gates, h))
        out = buffer.get(h.shape, h.dtype) if out is None else out
        jit.rh_forward(gates, h, out)
        return out

    return rh


def gru_h(xp):
    """``h_new = u * h + (1 - u) * tanh(zc)`` in one pass."""
    jit, buffer = _jit(), OutputBuffer()

    @writes_out
    def h_new(gates, zc, h, out=None):
        if jit is None or not _fast(gates, zc, h):
            return into(out, prim_gru._gru_h_impl(xp, gates, zc, h))
        out = buffer.get(h.shape, h.dtype) if out is None else out
        jit.h_forward(gates, zc, h, out)
        return out

    return h_new


def gru_rh_grads(xp):
    """``(d gates, d h)`` of ``gru_rh`` in one pass."""
    jit, buffers = _jit(), (OutputBuffer(), OutputBuffer())

    @writes_out
    def grads(g, gates, h, out=None):
        if jit is None or not _fast(gates, g, h):
            values = prim_gru._gru_rh_grads_impl(xp, g, gates, h)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        out = _outs(out, buffers, (gates.shape, h.shape), h.dtype)
        jit.rh_grads(g, gates, h, *out)
        return out

    return grads


def gru_h_grads(xp):
    """``(d gates, d zc, d h)`` of ``gru_h``, its output gradient the sum of the leading
    inputs (up to ``MAX_TERMS``), in one pass."""
    jit, buffers = _jit(), (OutputBuffer(), OutputBuffer(), OutputBuffer())

    @writes_out
    def grads(*inputs, out=None):
        *terms, gates, zc, h = inputs
        if jit is None or not 1 <= len(terms) <= MAX_TERMS or not _fast(gates, zc, h, *terms):
            values = prim_gru._gru_h_grads_impl(xp, *inputs)
            return tuple(into(o, v) for o, v in zip(out or (None,) * 3, values))
        out = _outs(out, buffers, (gates.shape, h.shape, h.shape), h.dtype)
        padded = terms + [terms[0]] * (MAX_TERMS - len(terms))
        jit.h_grads(*padded, len(terms), gates, zc, h, *out)
        return out

    return grads


def _row_terms(inputs, like):
    """``(x, y, row, count)`` of a step's sum ``x + y + row`` or ``x + row``, or None for
    anything else (the reference takes it)."""
    if len(inputs) == 3:
        x, y, row = inputs
    elif len(inputs) == 2:
        (x, row), y = inputs, inputs[0]
    else:
        return None
    if row.shape != x.shape[1:] or row.dtype != _F32 or x.shape != like or y.shape != like \
            or x.dtype != _F32 or y.dtype != _F32:
        return None
    return x, y, row, len(inputs)


def gru_gates_step(xp):
    """``(gates, rh)`` of a step: the gates of its sum and ``r h``, in one pass."""
    jit, buffers = _jit(), (OutputBuffer(), OutputBuffer())

    @writes_out
    def step(*inputs, out=None):
        *terms, h = inputs
        sums = None
        if jit is not None and h.ndim == 2 and h.dtype == _F32:
            sums = _row_terms(terms, (h.shape[0], 2 * h.shape[1]))
        if sums is None:
            values = prim_gru._gru_gates_step_impl(xp, *inputs)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        out = _outs(out, buffers, ((h.shape[0], 2 * h.shape[1]), h.shape), h.dtype)
        jit.gates_step(*sums, h, *out)
        return out

    return step


def gru_h_step(xp):
    """``(zc, h_new)`` of a step: the candidate's sum and the new state, in one pass."""
    jit, buffers = _jit(), (OutputBuffer(), OutputBuffer())

    @writes_out
    def step(*inputs, out=None):
        *terms, gates, h = inputs
        sums = _row_terms(terms, h.shape) if jit is not None and _fast(gates, h) else None
        if sums is None:
            values = prim_gru._gru_h_step_impl(xp, *inputs)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        out = _outs(out, buffers, (h.shape, h.shape), h.dtype)
        jit.h_step(*sums, gates, h, *out)
        return out

    return step


def gru_gates_grad(xp):
    """``(dz, dh)`` of a step's gates in one pass."""
    jit, buffers = _jit(), (OutputBuffer(), OutputBuffer())

    @writes_out
    def grads(drh, dgh, gates, h, out=None):
        if jit is None or not _fast(gates, drh, h) or dgh.shape != gates.shape \
                or dgh.dtype != _F32:
            values = prim_gru._gru_gates_grad_impl(xp, drh, dgh, gates, h)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        out = _outs(out, buffers, (gates.shape, h.shape), h.dtype)
        jit.gates_grad(drh, dgh, gates, h, *out)
        return out

    return grads


LOWERINGS = {"gru_rh": gru_rh, "gru_h": gru_h, "gru_rh_grads": gru_rh_grads,
             "gru_h_grads": gru_h_grads, "gru_gates_step": gru_gates_step,
             "gru_h_step": gru_h_step, "gru_gates_grad": gru_gates_grad}
