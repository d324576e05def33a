"""The CuPy backend's LSTM steps: one generated kernel per time step each way.

- ``lstm_step``/``lstm_step_grad`` (``passes/lstm_steps.py``): the step's
  nonlinearities in one kernel, one thread per (batch row, unit)
  (``cuda_lstm.step_sources``); the recurrent product is a matmul before it.
- ``lstm_step_rec``/``lstm_step_rec_grad`` (``passes/lstm_recurrence.py``, this
  backend's kernel pass): the same with the recurrent product ``h_prev @ w`` (forward)
  or ``dz_next @ w^T`` (backward, plus the gradient from above) inside, the product's
  inner dimension split between a block's threads (``cuda_lstm.recurrent_sources``).

Each lowering checks what its kernel takes (2-D/1-D C-ordered float32/float64 arrays
of the step's sizes) and otherwise runs the op's Array API function. ``out`` is a
tuple, one array (or None) per output, never one of the inputs.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import lstm as cuda_lstm
from gradflow.backends.cupy.emit import _Compiled, _contiguous, _grid, _into, _outputs
from gradflow.backends.cupy.gru import LOWERINGS as GRU_LOWERINGS
from gradflow.backends.cupy.peephole import LOWERINGS as PEEPHOLE_LOWERINGS
from gradflow.prim.registry import REGISTRY

_STEP_KERNELS = _Compiled(cuda_lstm.step_sources, "the LSTM steps run op by op")
_REC_KERNELS = _Compiled(lambda name, tiles: cuda_lstm.recurrent_sources(
    name, tiles[:3], tiles[3:]), "the LSTM steps run their recurrent products apart")


def _rec_kernels(dtype):
    """The recurrent step kernels of ``dtype`` for the tiles now set (``cuda_lstm``)."""
    return _REC_KERNELS.get(dtype, cuda_lstm.STEP_TILE + cuda_lstm.GRAD_TILE)


def _marked(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def lower_lstm_step(xp, forget_bias):
    """``lstm_step``: one kernel where the gates, the row and the state are 2-D/1-D
    C-ordered float32/float64 of one batch; else the op's Array API function."""
    impl = REGISTRY["lstm_step"].impl

    def step(*inputs, out=None):
        x, *terms, c_prev = inputs
        y, row = (terms if len(terms) == 2 else (None, *terms)) if len(terms) in (1, 2) \
            else (None, None)
        kernels = _STEP_KERNELS.get(x.dtype) if row is not None else None
        if kernels is None or x.ndim != 2 or c_prev.ndim != 2 \
                or x.shape != (c_prev.shape[0], 4 * c_prev.shape[1]) \
                or row.shape != x.shape[1:] or (y is not None and y.shape != x.shape) \
                or any(v.dtype != x.dtype for v in inputs) or not _contiguous(inputs):
            return _into(out, impl(xp, *inputs, forget_bias=forget_bias))
        batch, units = c_prev.shape
        a, c, h = _outputs(out, (x.shape, c_prev.shape, c_prev.shape), x.dtype)
        half = x.dtype.type(0.5 * forget_bias)
        args = (x, row, c_prev) if y is None else (x, y, row, c_prev)
        kernel = kernels["step2" if y is None else "step3"]
        kernel(*_grid(batch * units), (*args, a, c, h, np.int64(batch), np.int64(units), half))
        return a, c, h

    return _marked(step)


def lower_lstm_step_grad(xp):
    """``lstm_step_grad``: one kernel where every input has the step's batch; else the
    op's Array API function."""
    impl = REGISTRY["lstm_step_grad"].impl

    def step_grad(dh, dc_next, a, c, c_prev, out=None):
        inputs = (dh, dc_next, a, c, c_prev)
        kernels = _STEP_KERNELS.get(a.dtype)
        if kernels is None or c.ndim != 2 or a.shape != (c.shape[0], 4 * c.shape[1]) \
                or any(v.shape != c.shape for v in (dh, dc_next, c_prev)) \
                or any(v.dtype != a.dtype for v in inputs) or not _contiguous(inputs):
            return _into(out, impl(xp, *inputs))
        batch, units = c.shape
        dz, dc_prev = _outputs(out, (a.shape, c.shape), a.dtype)
        kernels["grad"](*_grid(batch * units), (*inputs, dz, dc_prev, np.int64(batch),
                                                np.int64(units)))
        return dz, dc_prev

    return _marked(step_grad)


def _takes(inputs, shapes):
    """Whether ``inputs`` are arrays of one dtype with exactly ``shapes``, C-ordered but
    for the first, whose rows may be strided (``_row_stride``)."""
    return all(v.shape == s for v, s in zip(inputs, shapes)) \
        and all(v.dtype == inputs[0].dtype for v in inputs) and _contiguous(inputs[1:]) \
        and _row_stride(inputs[0]) is not None


def _row_stride(x):
    """The row stride of the 2-D ``x`` in elements if its rows are C-ordered, else None."""
    size = x.dtype.itemsize
    if (x.shape[1] > 1 and x.strides[1] != size) or x.strides[0] % size or x.strides[0] < 0:
        return None
    return x.strides[0] // size if x.shape[0] > 1 else x.shape[1]


def lower_lstm_step_rec(xp, forget_bias):
    """``lstm_step_rec(x, h_prev, w, row, c_prev)``: one kernel, the product inside."""
    impl = REGISTRY["lstm_step_rec"].impl

    def step(x, h_prev, w, row, c_prev, out=None):
        inputs = (x, h_prev, w, row, c_prev)
        kernels = _rec_kernels(x.dtype)
        ok = kernels is not None and c_prev.ndim == 2 and h_prev.ndim == 2
        if ok:
            (batch, units), inner = c_prev.shape, h_prev.shape[1]
            four = 4 * units
            ok = _takes(inputs, ((batch, four), (batch, inner), (inner, four), (four,),
                                 (batch, units)))
        if not ok:
            return _into(out, impl(xp, *inputs, forget_bias=forget_bias))
        a, c, h = _outputs(out, (x.shape, c_prev.shape, c_prev.shape), x.dtype)
        tile = cuda_lstm.step_tile_for(x.dtype.name)
        kernels["step"]((cuda_lstm.step_blocks(batch, units, tile),),
                        (cuda_lstm.threads(tile),),
                        (*inputs, a, c, h, np.int64(batch), np.int64(units), np.int64(inner),
                         x.dtype.type(0.5 * forget_bias), np.int64(_row_stride(x))))
        return a, c, h

    return _marked(step)


def lower_lstm_step_rec_grad(xp):
    """``lstm_step_rec_grad(dy, dz_next, w, dc_next, a, c, c_prev)``: one kernel, the
    product inside."""
    impl = REGISTRY["lstm_step_rec_grad"].impl

    def step_grad(dy, dz_next, w, dc_next, a, c, c_prev, out=None):
        inputs = (dy, dz_next, w, dc_next, a, c, c_prev)
        kernels = _rec_kernels(a.dtype)
        ok = kernels is not None and c.ndim == 2
        if ok:
            batch, units = c.shape
            state, gates = (batch, units), (batch, 4 * units)
            ok = _takes(inputs, (state, gates, (units, 4 * units), state, gates, state,
                                 state))
        if not ok:
            return _into(out, impl(xp, *inputs))
        dz, dc_prev = _outputs(out, (a.shape, c.shape), a.dtype)
        tile = cuda_lstm.GRAD_TILE
        kernels["grad"]((cuda_lstm.grad_blocks(batch, units, tile),),
                        (cuda_lstm.threads(tile),),
                        (*inputs, dz, dc_prev, np.int64(batch), np.int64(units),
                         np.int64(_row_stride(dy))))
        return dz, dc_prev

    return _marked(step_grad)


LOWERINGS = {"lstm_step": lower_lstm_step, "lstm_step_grad": lower_lstm_step_grad,
             "lstm_step_rec": lower_lstm_step_rec,
             "lstm_step_rec_grad": lower_lstm_step_rec_grad, **GRU_LOWERINGS,
             **PEEPHOLE_LOWERINGS}
