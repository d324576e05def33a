"""numba kernels of the whole-layer LSTM loops on NumPy (``lstm_seq``), float32.

Imported only where numba is available (``lstm_seq`` asks ``lstm_kernels.compiled()``);
each kernel compiles on its first call and is cached on disk, as ``lstm_jit``'s are,
whose row of a backward step (``step_backward_row``) these reuse.
"""

from __future__ import annotations

import numba

from gradflow.backends.numpy.lstm_jit import _OPTIONS, step_backward_row

# rows of the transpose's strips: a strip's column is 32 bytes of the result
_STRIP = 8


@numba.njit(**_OPTIONS)
def step_backward_sum(dy, m, dc_next, a, c, c_prev, dh, dz, dc_prev):
    """``lstm_jit.step_backward`` of ``dh = dy + m`` (written into ``dh`` first, row by
    row): the step plan's ``add`` of the output's and the recurrent gradient and its
    ``lstm_step_grad``, the same arithmetic in one call."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        dyr, mr, dhr = dy[b], m[b], dh[b]
        for k in range(n):
            dhr[k] = dyr[k] + mr[k]
        step_backward_row(dhr, dc_next[b], a[b], c[b], c_prev[b], dz[b], dc_prev[b], n)


@numba.njit(**_OPTIONS)
def transpose_into(w, wt):
    """``wt[...] = w.T``, a strip of ``_STRIP`` rows of ``w`` at a time: each column of a
    strip is ``_STRIP`` contiguous elements of ``wt``, and the strip's rows are read in
    order (NumPy's strided copy of a 128 x 512 matrix took 150 us, this 18)."""
    rows, cols = w.shape
    full = rows - rows % _STRIP
    for i0 in range(0, full, _STRIP):
        for j in range(cols):
            for i in range(_STRIP):
                wt[j, i0 + i] = w[i0 + i, j]
    for j in range(cols):
        for i in range(full, rows):
            wt[j, i] = w[i, j]
