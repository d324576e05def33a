"""The LSTM ops' kernels on NumPy: numba loops for float32, NumPy ufuncs otherwise.

``kernels(dtype)`` (or ``picker()(dtype)``) gives an object with one function
per LSTM op (and per ``wrt`` of the gradients), each writing its result into a
given ``out`` array of the result's shape; the inputs have equal batch sizes (the lowerings in
``numpy_rnn`` send broadcasting batches to the Array API impls):

    gates_forward(z, half_forget_bias, out)   a = lstm_gates(z)
    gates_backward(g, a, out)                 lstm_gates_grad(g, a)
    gates_forward_sum3(x, y, row, hfb, out)   lstm_gates_sum(x, y, row)
    gates_forward_sum2(x, row, hfb, out)      lstm_gates_sum(x, row)
    step_forward_sum3(x, y, row, c_prev, hfb, a, c, h)   lstm_step: a, c and h
    step_forward_sum2(x, row, c_prev, hfb, a, c, h)
    step_backward(dh, dc_next, a, c, c_prev, dz, dc_prev)   lstm_step_grad: dz, dc_prev
    c_forward(a, c_prev, out)                 c = lstm_c(a, c_prev)
    c_backward_gates(g, a, c_prev, out)       lstm_c_grad(g, a, c_prev, wrt="gates")
    c_backward_state(g, a, out)               lstm_c_grad(..., wrt="state")
    h_forward(a, c, out)                      h = lstm_h(a, c)
    h_backward_gates(g, c, out)               lstm_h_grad(g, a, c, wrt="gates")
    h_backward_state(g, a, c, out)            lstm_h_grad(..., wrt="state")
    cell_backward(dc, dh, a, c, c_prev, out)  lstm_cell_grad(dc, dh, a, c, c_prev)

For float32 with numba installed (``numba_support.get_numba()``) they are the
compiled one-pass loops of ``numpy_lstm_jit``; otherwise ``NUMPY``'s sequences
of in-place ufuncs, which give the same numbers to float tolerance (the
compiled ``tanh`` is a rational approximation, within 4e-7 of NumPy's).

``OutputBuffer`` lets a lowering write each run into the array it returned in
the previous run, once nothing else holds that array: a training loop then
allocates (and page-faults) nothing for these ops in steady state.
"""

from __future__ import annotations

import sys

import numpy as np

from gradflow.backends.cpu.numba_support import get_numba


def compiled():
    """The numba kernels (module ``numpy_lstm_jit``), or None where numba is missing
    or disabled; importing the module compiles nothing (each kernel compiles, or loads
    from numba's cache, on its first call)."""
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import lstm_jit as numpy_lstm_jit

    return numpy_lstm_jit


def picker():
    """``pick(dtype)``: the kernels for arrays of ``dtype``, compiled for float32 when
    numba is there, else the NumPy ones (float64 and others always take NumPy's exact
    functions). Whether numba is there is settled now, so ``pick`` costs little."""
    jit = compiled()
    if jit is None:
        return lambda dtype: NUMPY
    f32 = np.dtype(np.float32)
    return lambda dtype: jit if dtype == f32 else NUMPY


def kernels(dtype):
    """The kernels for arrays of ``dtype`` (see ``picker``)."""
    return picker()(np.dtype(dtype))


class OutputBuffer:
    """The array a lowering returned last time, handed out again once no one else
    holds it (``sys.getrefcount``: no variable, fetch, view or later op of the run
    can see it any more), else a new one."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None

    def get(self, shape, dtype):
        """An array of ``shape`` and ``dtype`` that the caller may overwrite."""
        array = self.array
        # Three references when free: ``self.array``, ``array`` and getrefcount's argument.
        if array is not None and sys.getrefcount(array) == 3 and array.shape == shape \
                and array.dtype == dtype:
            return array
        array = self.array = np.empty(shape, dtype)
        return array


class _NumpyKernels:
    """The kernels as NumPy ufunc sequences into ``out`` (any float dtype)."""

    def __init__(self):
        self._vectors = {}

    def _gate_vectors(self, units, dtype, half_forget_bias):
        """``scale, shift, mul, add`` with ``a = tanh(z * scale + shift) * mul + add``."""
        key = (units, np.dtype(dtype).str, float(half_forget_bias))
        vectors = self._vectors.get(key)
        if vectors is None:
            scale = np.full(4 * units, 0.5, dtype)
            mul, add = scale.copy(), scale.copy()
            scale[units:2 * units] = mul[units:2 * units] = 1.0
            add[units:2 * units] = 0.0
            shift = np.zeros(4 * units, dtype)
            shift[2 * units:3 * units] = half_forget_bias
            vectors = self._vectors[key] = (scale, shift, mul, add)
        return vectors

    def _j_mask(self, units, dtype):
        """Ones on the tanh block ``j``, zeros elsewhere."""
        key = (units, np.dtype(dtype).str)
        mask = self._vectors.get(key)
        if mask is None:
            mask = np.zeros(4 * units, dtype)
            mask[units:2 * units] = 1
            self._vectors[key] = mask
        return mask

    def gates_forward(self, z, half_forget_bias, out):
        """``out = tanh(z * scale + shift) * mul + add``: the four gate activations."""
        scale, shift, mul, add = self._gate_vectors(z.shape[1] // 4, z.dtype, half_forget_bias)
        np.multiply(z, scale, out=out)
        out += shift
        np.tanh(out, out=out)
        out *= mul
        out += add

    def gates_forward_sum3(self, x, y, row, half_forget_bias, out):
        """``out = lstm_gates((x + y) + row)``."""
        if np.may_share_memory(out, row):
            row = row.copy()
        np.add(x, y, out=out)
        out += row
        self.gates_forward(out, half_forget_bias, out)

    def gates_forward_sum2(self, x, row, half_forget_bias, out):
        """``out = lstm_gates(x + row)``."""
        if np.may_share_memory(out, row):
            row = row.copy()
        np.add(x, row, out=out)
        self.gates_forward(out, half_forget_bias, out)

    def step_forward_sum3(self, x, y, row, c_prev, half_forget_bias, a, c, h):
        """``a``, then ``c`` and ``h`` from it."""
        self.gates_forward_sum3(x, y, row, half_forget_bias, a)
        self.c_forward(a, c_prev, c)
        self.h_forward(a, c, h)

    def step_forward_sum2(self, x, row, c_prev, half_forget_bias, a, c, h):
        """``a``, then ``c`` and ``h`` from it."""
        self.gates_forward_sum2(x, row, half_forget_bias, a)
        self.c_forward(a, c_prev, c)
        self.h_forward(a, c, h)

    def step_backward(self, dh, dc_next, a, c, c_prev, dz, dc_prev):
        """``dc = h_backward_state + dc_next``, then ``dz`` and ``dc_prev`` from it."""
        dc = np.empty_like(c)
        self.h_backward_state(dh, a, c, dc)
        dc += dc_next
        self.cell_backward(dc, dh, a, c, c_prev, dz)
        self.c_backward_state(dc, a, dc_prev)

    def gates_backward(self, g, a, out):
        """``out = g (1 - a)(a + m)``, ``m`` one on the tanh block ``j``."""
        factor = np.add(a, self._j_mask(a.shape[1] // 4, a.dtype))
        factor *= np.subtract(1, a)
        np.multiply(g, factor, out=out)

    def c_forward(self, a, c_prev, out):
        """``out = f * c_prev + i * j``."""
        n = out.shape[1]
        ij = np.multiply(a[:, :n], a[:, n:2 * n])
        np.multiply(a[:, 2 * n:3 * n], c_prev, out=out)
        out += ij

    def c_backward_gates(self, g, a, c_prev, out):
        """``out = [g j, g i, g c_prev, 0]``."""
        n = g.shape[1]
        if np.may_share_memory(out, a):
            a = a.copy()
        np.multiply(g, a[:, n:2 * n], out=out[:, :n])
        np.multiply(g, a[:, :n], out=out[:, n:2 * n])
        np.multiply(g, c_prev, out=out[:, 2 * n:3 * n])
        out[:, 3 * n:] = 0

    def c_backward_state(self, g, a, out):
        """``out = g f``."""
        n = out.shape[1]
        np.multiply(g, a[:, 2 * n:3 * n], out=out)

    def h_forward(self, a, c, out):
        """``out = o * tanh(c)``."""
        n = out.shape[1]
        np.tanh(c, out=out)
        out *= a[:, 3 * n:]

    def h_backward_gates(self, g, c, out):
        """``out = [0, 0, 0, g tanh(c)]``."""
        n = g.shape[1]
        out[:, :3 * n] = 0
        np.tanh(c, out=out[:, 3 * n:])
        out[:, 3 * n:] *= g

    def h_backward_state(self, g, a, c, out):
        """``out = g o (1 - tanh(c)^2)``."""
        n = out.shape[1]
        t = np.tanh(c)
        np.multiply(t, t, out=t)
        np.subtract(1, t, out=t)
        t *= a[:, 3 * n:]
        np.multiply(g, t, out=out)

    def cell_backward(self, dc, dh, a, c, c_prev, out):
        """``out = [dc j, dc i, dc c_prev, dh tanh(c)] (1 - a)(a + m)``."""
        n = c.shape[1]
        if np.may_share_memory(out, a):
            a = a.copy()
        self.c_backward_gates(dc, a, c_prev, out)
        np.tanh(c, out=out[:, 3 * n:])
        out[:, 3 * n:] *= dh
        self.gates_backward(out, a, out)


NUMPY = _NumpyKernels()


def writes_out(fn):
    """Mark ``fn(*inputs, out=None)`` as writing its result into ``out`` when given one,
    never one of its inputs (``reads_whole_inputs``): the recurrent kernels give the right
    numbers in place too, but an ``out`` that overlaps an input stops LLVM from vectorizing
    them (its runtime overlap check sends the loop down the scalar path, 5x slower)."""
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def into(out, value):
    """``value`` (from a reference impl) in ``out`` when there is one."""
    if out is None:
        return value
    out[...] = value
    return out
