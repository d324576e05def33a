"""TF1's LSTM weights in cuDNN's weight space, and back (no GPU needed: NumPy or CuPy).

TF1's ``LSTMCell`` has one kernel ``[input + units, 4 * units]`` (rows: the input, then
the state; columns: the gates ``i, j, f, o``) and one bias ``[4 * units]``, with
``forget_bias`` added to ``f`` inside the cell. cuDNN's LSTM (``CUDNN_LSTM``) has, per
gate in its order ``i, f, g, o`` (``linLayerID`` 0-3 on the input, 4-7 on the state), an
input matrix ``W`` ``[units, input]``, a recurrent matrix ``R`` ``[units, units]`` (both
row-major, output by input: ``W @ x``) and, with ``CUDNN_RNN_DOUBLE_BIAS``, two biases
``bW`` and ``bR``. cuDNN's ``g`` is TF's ``j``. TF's bias (with ``forget_bias`` on ``f``)
goes into ``bW``; ``bR`` stays zero (the cell adds the two, so either could take it).

``expected_offsets`` is the packed layout of one unidirectional layer as the cuDNN
reference describes ``cudnnGetRNNWeightParams`` reporting it (``linLayerID`` order, the
eight matrices first, then the eight biases); the CuPy lowering asks the library itself
and refuses (keeping the step kernels) if the two disagree.
"""

from __future__ import annotations

import numpy as np

CUDNN_FROM_TF = (0, 2, 1, 3)  # cuDNN gate k (i, f, g, o) is TF's block CUDNN_FROM_TF[k]
FORGET = 1  # cuDNN's index of the forget gate


def expected_offsets(input_size, units):
    """``({(kind, gate): (offset, shape)}, total)`` in elements, ``kind`` one of ``W``,
    ``R``, ``bW``, ``bR`` and ``gate`` cuDNN's (0-3)."""
    offsets, at = {}, 0
    for kind, shape in (("W", (units, input_size)), ("R", (units, units))):
        for gate in range(4):
            offsets[kind, gate] = (at, shape)
            at += units * shape[1]
    for kind in ("bW", "bR"):
        for gate in range(4):
            offsets[kind, gate] = (at, (units,))
            at += units
    return offsets, at


def views(flat, offsets):
    """Each part of the 1-D weight space ``flat`` as an array of its shape (views)."""
    return {key: flat[off:off + int(np.prod(shape))].reshape(shape)
            for key, (off, shape) in offsets.items()}


def _block(a, tf_block, units):
    return a[..., tf_block * units:(tf_block + 1) * units]


def pack_tf(kernel, bias, forget_bias, input_size, units, offsets, total):
    """TF1's ``kernel`` and ``bias`` (NumPy) as cuDNN's weight space (1-D NumPy)."""
    flat = np.zeros(total, dtype=kernel.dtype)
    parts = views(flat, offsets)
    for gate, tf_block in enumerate(CUDNN_FROM_TF):
        parts["W", gate][...] = _block(kernel[:input_size], tf_block, units).T
        parts["R", gate][...] = _block(kernel[input_size:], tf_block, units).T
        parts["bW", gate][...] = _block(bias, tf_block, units) + \
            (forget_bias if gate == FORGET else 0.0)
    return flat


def unpack_tf_grads(dflat, input_size, units, offsets):
    """The gradients of TF1's kernel and bias from cuDNN's weight-space gradient."""
    parts = views(dflat, offsets)
    dkernel = np.zeros((input_size + units, 4 * units), dtype=dflat.dtype)
    dbias = np.zeros(4 * units, dtype=dflat.dtype)
    for gate, tf_block in enumerate(CUDNN_FROM_TF):
        _block(dkernel[:input_size], tf_block, units)[...] = parts["W", gate].T
        _block(dkernel[input_size:], tf_block, units)[...] = parts["R", gate].T
        _block(dbias, tf_block, units)[...] = parts["bW", gate]
    return dkernel, dbias


def input_selection(units, dtype):
    """``[4, units, 4 * units]``: cuDNN's input matrices when its input is TF's gate
    pre-activations ``x @ kernel[:input]`` (each gate picks its block): 0/1 values."""
    sel = np.zeros((4, units, 4 * units), dtype=dtype)
    rows = np.arange(units)
    for gate, tf_block in enumerate(CUDNN_FROM_TF):
        sel[gate, rows, tf_block * units + rows] = 1
    return sel


def fill_input_selection(parts, units, xp):
    """Write ``input_selection`` into the ``W`` parts, and zeros into the ``bR`` parts."""
    sel = input_selection(units, parts["W", 0].dtype)
    for gate in range(4):
        parts["W", gate][...] = xp.asarray(sel[gate])
        parts["bR", gate][...] = 0


def fill_recurrent(parts, w, row, forget_bias, xp):
    """Write TF's recurrent block ``w`` ``[units, 4 * units]`` and bias ``row`` into the
    ``R`` and ``bW`` parts (run before each forward: eight small copies, no allocation)."""
    units = w.shape[0]
    for gate, tf_block in enumerate(CUDNN_FROM_TF):
        xp.copyto(parts["R", gate], _block(w, tf_block, units).T)
        if gate == FORGET:
            xp.add(_block(row, tf_block, units), forget_bias, out=parts["bW", gate])
        else:
            xp.copyto(parts["bW", gate], _block(row, tf_block, units))


def _stacked(flat, offsets, kind):
    """The four ``kind`` parts as one ``[4, ...]`` view where they lie one after another
    in gate order, else None."""
    first, shape = offsets[kind, 0]
    size = int(np.prod(shape))
    if any(offsets[kind, g][0] != first + g * size for g in range(4)):
        return None
    return flat[first:first + 4 * size].reshape((4, *shape))


class RecurrentFiller:
    """``fill_recurrent`` in four copies rather than eight where the ``R`` and the ``bW``
    parts each lie in gate order (cuDNN's documented packing): cuDNN's ``i, f, g, o``
    are TF's blocks ``0, 2, 1, 3``, so gates 0 and 3 are one strided copy and gates 1-2
    one copy of TF's blocks 2-1 (a negative stride), ``forget_bias`` added on the way."""

    def __init__(self, flat, offsets, parts, units, forget_bias, xp):
        self.parts, self.units, self.forget_bias, self.xp = parts, units, forget_bias, xp
        self.r, self.b = _stacked(flat, offsets, "R"), _stacked(flat, offsets, "bW")
        shift = np.zeros((2, 1), dtype=flat.dtype)
        shift[0] = forget_bias  # onto cuDNN's gate 1 (f), TF's block 2
        self.shift = xp.asarray(shift)

    def __call__(self, w, row):
        xp, units = self.xp, self.units
        if self.r is None or self.b is None:
            fill_recurrent(self.parts, w, row, self.forget_bias, xp)
            return
        t = w.reshape(units, 4, units).transpose(1, 2, 0)  # t[k] = TF block k, transposed
        xp.copyto(self.r[0::3], t[0::3])
        xp.copyto(self.r[1:3], t[2:0:-1])
        blocks = row.reshape(4, units)
        xp.copyto(self.b[0::3], blocks[0::3])
        xp.add(blocks[2:0:-1], self.shift, out=self.b[1:3])
