"""The CuPy backend's lowerings of ``gradflow.backends.cuda.transformer``'s kernels.

``softmax`` over the last axis of C-ordered rows wider than ``rows.MAX_COLUMNS`` (a
language model's vocabulary, a long sequence's attention row) is one kernel, one block
of ``BLOCK`` threads per row, where CuPy's own functions take five passes; narrower rows
and other layouts take the op's own CuPy functions, as before.

Not lowered yet: layer norm and GELU, whose kernels exist (and are tested by g++), need a
pass that finds ``tf.nn.moments``' and GELU's ops (and their gradients) in the plan
before the elementwise fusion; until then the fusion's own kernels run them.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import rows as cuda_rows
from gradflow.backends.cuda import transformer as cuda_transformer
from gradflow.backends.cupy.emit import _Compiled
from gradflow.prim.registry import REGISTRY

_KERNELS = _Compiled(cuda_transformer.sources, "wide softmax rows run CuPy's functions")


def lower_softmax(xp, axis):
    """``softmax``: the block-per-row kernel for C-ordered rows wider than
    ``MAX_COLUMNS`` over the last axis, into ``out``; else the op's CuPy functions."""
    impl = REGISTRY["softmax"].impl

    def softmax(x, out=None):
        cols = x.shape[-1] if x.ndim else 0
        kernels = None
        if axis in (-1, x.ndim - 1) and cols > cuda_rows.MAX_COLUMNS and x.flags.c_contiguous \
                and (out is None or out.flags.c_contiguous):
            kernels = _KERNELS.get(x.dtype)
        if kernels is None:
            y = impl(xp, x, axis)
            if out is None:
                return y
            out[...] = y
            return out
        y = xp.empty_like(x) if out is None else out
        rows = x.size // cols
        kernels["softmax_wide"]((min(rows, 65535),), (cuda_transformer.BLOCK,),
                                (x, y, np.int64(rows), np.int64(cols)))
        return y

    softmax.accepts_out = True
    softmax.reads_whole_inputs = True  # never asked to write over its input
    return softmax


LOWERINGS = {"softmax": lower_softmax}
