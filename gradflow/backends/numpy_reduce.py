"""NumPy lowering of ``unbroadcast`` (a gradient summed down to its input's shape).

The commonest case, a bias gradient, sums a ``(rows, cols)`` gradient over its
rows. ``np.add.reduce`` over axis 0 runs at about half the speed of the same
sum as a matrix-vector product with a vector of ones through BLAS, so sums
over the leading axes alone take that form (the vector belongs to the plan's
callable and is made once per row count).
"""

from __future__ import annotations

import math

import numpy as np


def lower_unbroadcast(xp):
    ones = {}

    def unbroadcast(g, x):
        if g.shape == x.shape:
            return g
        lead = g.ndim - x.ndim
        target = x.shape
        if lead > 0 and g.shape[lead:] == target \
                and g.dtype.kind == "f" and g.flags.c_contiguous:
            rows = math.prod(g.shape[:lead])
            vector = ones.get((rows, g.dtype))
            if vector is None:
                vector = ones[(rows, g.dtype)] = np.ones(rows, g.dtype)
            return np.matmul(vector, g.reshape(rows, -1)).reshape(target)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, d in enumerate(target) if d == 1 and g.shape[i + lead] != 1)
        if axes:
            g = np.sum(g, axis=axes, keepdims=True, dtype=g.dtype)
        return np.reshape(g, target)

    return unbroadcast
