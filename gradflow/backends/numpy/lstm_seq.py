"""NumPy lowerings of a whole LSTM layer, ``lstm_seq`` and ``lstm_seq_grad``
(``gradflow/prim/rnn_seq.py``, made by ``passes/cudnn_rnn.py``).

Each is one Python loop over the time steps, with the same array calls, in the same
order, as the per-step plan they replace (``lstm_step`` / ``lstm_step_grad`` of
``backends/numpy/rnn.py`` and the recurrent products of ``backends/numpy/matmul.py``),
so the numbers are those of that plan, bit for bit, while the plan's per-node costs
(its generated call, ``uses_blas``, the oneDNN size check, the output buffers) are paid
once per layer instead of once per step:

    forward, t = 0..T-1:    p = h_{t-1} @ w;  a_t, c_t, h_t = step(x_t, p, row, c_{t-1})
    backward, t = T-1..0:   dh = dy_t + dz_{t+1} @ w^T  (dy_T alone at the last step)
                            dz_t, dc_{t-1} = step_grad(dh, dc_t, a_t, c_t, c_{t-1})

``h_t`` goes straight into rows ``t`` of the output ``y``; the gates ``a_t`` and the cell
states ``c_t`` into two stacks the forward keeps for the backward (in ``link.state``, the
``SequenceLink`` both nodes of a layer share), and ``dz_t`` into rows ``t`` of ``dz``.
``w^T`` is one row-major copy made once per backward, as the step plan's
``contiguous_recurrent_transposes`` makes it (for float32, numba's strip-wise transpose
of ``lstm_seq_jit``, whose step kernel also adds ``dy_t`` to the product: the same
sums). The last backward step has no recurrent term: it runs the three kernels the step
plan has there (``lstm_h_grad``, ``lstm_cell_grad``, ``lstm_c_grad``).

float32 runs numba's kernels (``lstm_jit``) where numba is there, float64 (and float32
without numba) NumPy's ufunc sequences (``lstm_kernels.NUMPY``); any other dtype, shape
or layout, and a backward whose forward did not run here, goes to the op's Array API
function (which recomputes the forward); an input that is not C-ordered is copied
into a kept array first. Outputs go into the plan's ``out=`` buffers, or
into the arrays of the previous run once nothing holds them (``OutputBuffer``); the
stacks and scratch rows are kept per lowering (``KeptArrays``): a steady training step
allocates nothing here for float32.

Threads: a plan instance runs in one thread at a time (the Session's plan lock; a
concurrent run of the same fetches gets its own instance, compiled with its own passes,
so its own ``SequenceLink`` and lowerings). The state in the link is therefore never
shared by two runs; the backward still checks that the forward it reads from wrote the
``y`` it is given, so a stale state is never used.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import KeptArrays
from gradflow.backends.cpu.threads import uses_blas
from gradflow.backends.numpy.lstm_kernels import (
    OutputBuffer,
    compiled,
    into,
    picker,
    writes_out,
)
from gradflow.backends.numpy.matmul import product_into
from gradflow.backends.onednn.matmul import MIN_WORK
from gradflow.passes.cudnn_rnn import fuse_lstm_sequences
from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence, unfuse_lstm_recurrence
from gradflow.prim.registry import REGISTRY

# the dtypes with kernels here (numba's float32, NumPy's float64); others: the reference
DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def accepts(link):
    """Whether these lowerings take the layer of ``link`` (``passes.cudnn_rnn``'s
    ``SequenceLink``, sizes ``(steps, batch, units, dtype)``): float32 and float64."""
    return np.dtype(link.sizes[3]) in DTYPES


def fuse_lstm_layers(graph) -> None:
    """The NumPy backend's kernel pass for LSTM layers: each whole layer these lowerings
    take becomes ``lstm_seq`` / ``lstm_seq_grad`` (the recurrence pass, then the sequence
    pass); the steps of a layer the sequence pass leaves go back to the step plan's
    nodes (``unfuse_lstm_recurrence``), which run as fast as before."""
    fuse_lstm_recurrence(graph)
    fuse_lstm_sequences(graph, accepts=accepts, reversed_inputs=True)
    unfuse_lstm_recurrence(graph)


def _seq_jit():
    """The numba kernels of these loops (``lstm_seq_jit``), or None without numba."""
    if compiled() is None:
        return None
    # imported here: the module imports numba, which may be missing or disabled
    from gradflow.backends.numpy import lstm_seq_jit

    return lstm_seq_jit


class _Saved:
    """What a layer's forward keeps for its backward: the gates and cell-state stacks
    ``[T, batch, 4 units]`` and ``[T, batch, units]``, and ``id`` of the ``y`` it wrote
    (None until a forward here has run)."""

    __slots__ = ("gates", "cells", "y_id")

    def __init__(self):
        self.gates = self.cells = self.y_id = None


def _saved(link):
    """The ``_Saved`` of ``link`` (made on first use), or a private one without a link."""
    if link is None:
        return _Saved()
    if not isinstance(link.state, _Saved):
        link.state = _Saved()
    return link.state


def _fits(steps, x, h0, w, row, c0):
    """Whether the arrays are the kernels' case: one float dtype of ``DTYPES`` and the
    layer's shapes (any layout: ``_c_order`` copies what is not C-ordered)."""
    dtype = c0.dtype
    if dtype not in DTYPES or c0.ndim != 2:
        return False
    batch, units = c0.shape
    return x.shape == (steps * batch, 4 * units) and h0.shape == (batch, units) \
        and w.shape == (units, 4 * units) and row.shape == (4 * units,) \
        and x.dtype == h0.dtype == w.dtype == row.dtype == dtype


def _multiplier(rows, inner, cols):
    """``matmul``'s function for products of these sizes: ``np.matmul`` itself below
    oneDNN's ``MIN_WORK`` (where ``product_into`` would ask oneDNN, be told no, and call it:
    the same numbers, a microsecond later, a hundred times a layer)."""
    return np.matmul if rows * inner * cols < MIN_WORK else product_into


def _c_order(kept, role, array):
    """``array``, or its copy in a kept C-ordered array if it is not C-ordered (so that
    every step's rows are C-ordered views, as the kernels are compiled for)."""
    if array.flags.c_contiguous:
        return array
    copy = kept.get_array(role, array.shape, array.dtype)
    np.copyto(copy, array)
    return copy


def _usable(out, shape, dtype):
    return out is not None and out.shape == shape and out.dtype == dtype \
        and out.flags.c_contiguous


def _outputs(out, buffers, shapes, dtype):
    """The two output arrays: the plan's where it gives usable ones, else the buffers'."""
    out = out or (None, None)
    return tuple(o if _usable(o, s, dtype) else b.get(s, dtype)
                 for o, b, s in zip(out, buffers, shapes))


def _finish(out, results):
    """``results`` copied into the plan's buffers that were not usable as they were."""
    if out is None:
        return results
    return tuple(r if o is None or o is r else into(o, r) for o, r in zip(out, results))


def lower_lstm_seq(xp, forget_bias, steps, link=None):
    """``y, c_last = lstm_seq(x, h0, w, row, c0)``: see the module docstring."""
    impl = REGISTRY["lstm_seq"].impl
    pick, saved, kept = picker(), _saved(link), KeptArrays(np.empty)
    buffers = (OutputBuffer(), OutputBuffer())
    half_bias = {dtype: dtype.type(0.5 * forget_bias) for dtype in DTYPES}

    @writes_out
    @uses_blas
    def seq(x, h0, w, row, c0, out=None):
        saved.y_id = None
        if not _fits(steps, x, h0, w, row, c0):
            values = impl(xp, x, h0, w, row, c0, forget_bias=forget_bias, steps=steps)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        dtype, (batch, units) = c0.dtype, c0.shape
        x, h0, c0 = (_c_order(kept, role, v) for role, v in (("x", x), ("h0", h0), ("c0", c0)))
        y, c_last = _outputs(out, buffers, ((steps * batch, units), (batch, units)), dtype)
        gates = kept.get_array("gates", (steps, batch, 4 * units), dtype)
        cells = kept.get_array("cells", (steps, batch, units), dtype)
        product = kept.get_array("product", (batch, 4 * units), dtype)
        kernel, half = pick(dtype).step_forward_sum3, half_bias[dtype]
        multiply = _multiplier(batch, units, 4 * units)
        h, c = h0, c0
        for t in range(steps):
            rows = slice(t * batch, (t + 1) * batch)
            multiply(h, w, product)
            h, c = y[rows], cells[t]
            kernel(x[rows], product, row, c0 if t == 0 else cells[t - 1], half, gates[t], c, h)
        np.copyto(c_last, c)
        results = _finish(out, (y, c_last))
        saved.gates, saved.cells, saved.y_id = gates, cells, id(results[0])
        return results

    return seq


def lower_lstm_seq_grad(xp, forget_bias, steps, link=None):
    """``dz, dc0 = lstm_seq_grad(dy, x, h0, w, row, c0, y)`` from the forward's stacks:
    see the module docstring."""
    impl = REGISTRY["lstm_seq_grad"].impl
    pick, saved, kept = picker(), _saved(link), KeptArrays(np.empty)
    buffers = (OutputBuffer(), OutputBuffer())
    jit, f32 = _seq_jit(), np.dtype(np.float32)

    @writes_out
    @uses_blas
    def seq_grad(dy, x, h0, w, row, c0, y, out=None):
        batch = c0.shape[0] if c0.ndim == 2 else 0
        if saved.y_id != id(y) or not _fits(steps, x, h0, w, row, c0) \
                or dy.shape != y.shape or dy.dtype != c0.dtype \
                or saved.gates.shape[:2] != (steps, batch):
            values = impl(xp, dy, x, h0, w, row, c0, y, forget_bias=forget_bias, steps=steps)
            return tuple(into(o, v) for o, v in zip(out or (None, None), values))
        dtype, units = c0.dtype, c0.shape[1]
        dy, c0 = _c_order(kept, "dy", dy), _c_order(kept, "c0", c0)
        dz, dc0 = _outputs(out, buffers, ((steps * batch, 4 * units), (batch, units)), dtype)
        wt = kept.get_array("wt", (4 * units, units), dtype)
        fused = jit if dtype == f32 else None
        if fused is None:
            np.copyto(wt, w.T)
        else:
            fused.transpose_into(w, wt)
        scratch = [kept.get_array(role, (batch, units), dtype) for role in ("m", "dh", "0", "1")]
        _backward(pick(dtype), fused, saved, dy, c0, wt, dz, dc0, scratch)
        return _finish(out, (dz, dc0))

    return seq_grad


def _backward(kernels, fused, saved, dy, c0, wt, dz, dc0, scratch):
    """The backward loop of the module docstring into ``dz`` and ``dc0``; ``scratch``:
    four ``[batch, units]`` arrays (the product, ``dh``, two cell-state gradients).
    ``fused``: ``lstm_seq_jit`` (float32 with numba), whose kernel adds ``dy_t`` to the
    product inside the step's, or None (NumPy's add, then the step's kernel)."""
    gates, cells = saved.gates, saved.cells
    steps, batch = gates.shape[:2]
    m, dh, *dcs = scratch

    def rows(t):
        return slice(t * batch, (t + 1) * batch)

    last = steps - 1
    a, c, c_prev = gates[last], cells[last], cells[last - 1] if last else c0
    g, dc_prev = dcs[0], dc0 if last == 0 else dcs[1]
    kernels.h_backward_state(dy[rows(last)], a, c, g)
    kernels.cell_backward(g, dy[rows(last)], a, c, c_prev, dz[rows(last)])
    kernels.c_backward_state(g, a, dc_prev)
    step, multiply = kernels.step_backward, _multiplier(batch, 4 * m.shape[1], m.shape[1])
    for t in range(last - 1, -1, -1):
        dc_next = dc_prev
        dc_prev = dc0 if t == 0 else (dcs[0] if dc_next is dcs[1] else dcs[1])
        multiply(dz[rows(t + 1)], wt, m)
        c_prev = cells[t - 1] if t else c0
        if fused is None:
            np.add(dy[rows(t)], m, out=dh)
            step(dh, dc_next, gates[t], cells[t], c_prev, dz[rows(t)], dc_prev)
        else:
            fused.step_backward_sum(dy[rows(t)], m, dc_next, gates[t], cells[t], c_prev, dh,
                                    dz[rows(t)], dc_prev)


LOWERINGS = {"lstm_seq": lower_lstm_seq, "lstm_seq_grad": lower_lstm_seq_grad}
