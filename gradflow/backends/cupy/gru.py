"""The CuPy backend's GRU steps (``passes/gru_steps.py``): one generated kernel per
step node, one thread per (batch row, unit) (``gradflow.backends.cuda.gru``).

A step forward is ``gru_gates_step`` and ``gru_h_step`` around its two recurrent
products, backward ``gru_h_grads`` and ``gru_gates_grad`` around theirs: four
kernels and four products a time step. Each lowering checks what its kernel takes
(2-D/1-D C-ordered float32/float64 arrays of the step's sizes) and otherwise runs the
op's Array API function. ``out`` is a tuple, one array (or None) per output, never
one of the inputs.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import gru as cuda_gru
from gradflow.backends.cupy.emit import _Compiled, _contiguous, _grid, _into, _outputs
from gradflow.prim.registry import REGISTRY

_KERNELS = _Compiled(cuda_gru.step_sources, "the GRU steps run op by op")


def _marked(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def _takes(inputs, shapes):
    return all(v.shape == s for v, s in zip(inputs, shapes)) \
        and all(v.dtype == inputs[0].dtype for v in inputs) and _contiguous(inputs)


def _launch(kernels, key, h, inputs, out, shapes):
    batch, units = h.shape
    outs = _outputs(out, shapes, h.dtype)
    kernels[key](*_grid(batch * units), (*inputs, *outs, np.int64(batch), np.int64(units)))
    return outs


def _sum_shapes(terms, width, batch):
    """The shapes a step's sum ``x [+ y] + row`` must have, or None for another count."""
    if len(terms) not in (2, 3):
        return None
    return [(batch, width)] * (len(terms) - 1) + [(width,)]


def lower_gru_gates_step(xp):
    """``gru_gates_step(x, [y,] row, h) -> (gates, rh)``: one kernel."""
    impl = REGISTRY["gru_gates_step"].impl

    def step(*inputs, out=None):
        *terms, h = inputs
        kernels = _KERNELS.get(h.dtype) if h.ndim == 2 else None
        shapes = _sum_shapes(terms, 2 * h.shape[-1], h.shape[0]) if kernels else None
        if shapes is None or not _takes(inputs, shapes + [h.shape]):
            return _into(out, impl(xp, *inputs))
        return _launch(kernels, f"gates_step{len(terms)}", h, inputs, out,
                       ((h.shape[0], 2 * h.shape[1]), h.shape))

    return _marked(step)


def lower_gru_h_step(xp):
    """``gru_h_step(x, [y,] row, gates, h) -> (zc, h_new)``: one kernel."""
    impl = REGISTRY["gru_h_step"].impl

    def step(*inputs, out=None):
        *terms, gates, h = inputs
        kernels = _KERNELS.get(h.dtype) if h.ndim == 2 else None
        shapes = _sum_shapes(terms, h.shape[-1], h.shape[0]) if kernels else None
        if shapes is None or not _takes(inputs, shapes + [(h.shape[0], 2 * h.shape[1]),
                                                           h.shape]):
            return _into(out, impl(xp, *inputs))
        return _launch(kernels, f"h_step{len(terms)}", h, inputs, out, (h.shape, h.shape))

    return _marked(step)


def lower_gru_h_grads(xp):
    """``gru_h_grads(t0, ..., gates, zc, h) -> (dgates, dzc, dh)``: one kernel for one to
    four terms."""
    impl = REGISTRY["gru_h_grads"].impl

    def grads(*inputs, out=None):
        *terms, gates, zc, h = inputs
        kernels = _KERNELS.get(h.dtype) if h.ndim == 2 and 1 <= len(terms) <= 4 else None
        gate_shape = (h.shape[0], 2 * h.shape[-1])
        if kernels is None or not _takes(inputs, [h.shape] * len(terms) +
                                         [gate_shape, h.shape, h.shape]):
            return _into(out, impl(xp, *inputs))
        return _launch(kernels, f"h_grads{len(terms)}", h, inputs, out,
                       (gate_shape, h.shape, h.shape))

    return _marked(grads)


def lower_gru_gates_grad(xp):
    """``gru_gates_grad(drh, dgh, gates, h) -> (dz, dh)``: one kernel."""
    impl = REGISTRY["gru_gates_grad"].impl

    def grads(drh, dgh, gates, h, out=None):
        inputs = (drh, dgh, gates, h)
        kernels = _KERNELS.get(h.dtype) if h.ndim == 2 else None
        gate_shape = (h.shape[0], 2 * h.shape[-1])
        if kernels is None or not _takes(inputs, (h.shape, gate_shape, gate_shape, h.shape)):
            return _into(out, impl(xp, *inputs))
        return _launch(kernels, "gates_grad", h, inputs, out, (gate_shape, h.shape))

    return _marked(grads)


LOWERINGS = {"gru_gates_step": lower_gru_gates_step, "gru_h_step": lower_gru_h_step,
             "gru_h_grads": lower_gru_h_grads, "gru_gates_grad": lower_gru_gates_grad}
