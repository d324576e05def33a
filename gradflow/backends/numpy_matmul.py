"""NumPy lowering of ``matmul`` with a transposed operand.

OpenBLAS is markedly slower on ``g @ b.T`` with few rows in ``g`` and a wide
``b`` (the backward ``dgates @ kernel.T`` of an RNN step: 32 x 512 times
512 x 192) than on the same product computed as ``(b @ g.T).T``; the result
is then copied to C order, which costs little next to the product. The swap
is used only for matrices whose product has fewer rows than columns, where
it was measured to help; everything else is ``np.matmul`` on the views.
"""

from __future__ import annotations

import numpy as np


def lower_matmul(xp, transpose_a, transpose_b):
    if not transpose_a and not transpose_b:
        return xp.matmul
    if transpose_a and transpose_b:
        return lambda a, b: np.matmul(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2))
    if transpose_a:
        return lambda a, b: np.matmul(np.swapaxes(a, -1, -2), b)

    def matmul_bt(a, b):  # a @ b.T
        if a.ndim == 2 and b.ndim == 2 and a.shape[0] < b.shape[0]:
            return np.ascontiguousarray(np.matmul(b, a.T).T)
        return np.matmul(a, np.swapaxes(b, -1, -2))

    return matmul_bt
