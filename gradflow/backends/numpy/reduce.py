"""NumPy lowering of ``unbroadcast`` (a gradient summed down to its input's shape).

The commonest case, a bias gradient, sums a ``(rows, cols)`` gradient over its
rows. ``np.add.reduce`` over axis 0 runs at about half the speed of the same
sum as a matrix-vector product with a vector of ones through BLAS, so sums
over the leading axes alone take that form (the vector belongs to the plan's
callable and is made once per row count); other sums are the op's own impl.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow.ops.array_ops import _unbroadcast_impl


def lower_unbroadcast(xp):
    ones = {}

    def unbroadcast(g, x, out=None):
        if g.shape == x.shape:
            if out is None:
                return g
            np.copyto(out, g)
            return out
        lead = g.ndim - x.ndim
        target = x.shape
        if lead > 0 and g.shape[lead:] == target \
                and g.dtype.kind == "f" and g.flags.c_contiguous:
            rows = math.prod(g.shape[:lead])
            vector = ones.get((rows, g.dtype))
            if vector is None:
                vector = ones[(rows, g.dtype)] = np.ones(rows, g.dtype)
            if out is None:
                return np.matmul(vector, g.reshape(rows, -1)).reshape(target)
            np.matmul(vector, g.reshape(rows, -1), out=out.reshape(-1))
            return out
        if out is None:
            return _unbroadcast_impl(np, g, x)
        np.copyto(out, _unbroadcast_impl(np, g, x))
        return out

    unbroadcast.accepts_out = True
    unbroadcast.reads_whole_inputs = True
    return unbroadcast
