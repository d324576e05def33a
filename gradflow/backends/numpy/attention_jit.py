"""numba kernel of the NumPy attention backward's elementwise part (``numpy/attention.py``):
the logits' gradient from the probabilities' in one pass per row, on one core.

``softmax_grad_rows(t, p, m, keep, scale)`` turns ``t`` (rows of ``g v^T``), in place,
into ``scale * p * (dp - sum(dp * p))`` with ``dp = t * m / keep`` (``m`` the dropout
mask; ``keep`` 0 for none), the unfused ops' arithmetic in their order: seven NumPy
passes over the [b, h, sq, sk] array (two temporaries) become one read of ``t``, ``p``
and ``m`` and one write of ``t``. The row sum adds in order where NumPy adds pairwise,
so float32 results differ in the last bits. Imported only where numba is available;
compiles on first call per dtype, cached on disk.
"""

from __future__ import annotations

import numba

_OPTIONS = dict(cache=True, error_model="numpy", fastmath={"contract"})


@numba.njit(**_OPTIONS)
def softmax_grad_rows(t, p, m, keep, scale):
    rows, cols = t.shape
    for r in range(rows):
        tr, pr = t[r], p[r]
        total = tr[0] * 0
        if keep != 0:
            mr = m[r]
            for j in range(cols):
                v = tr[j] * mr[j] / keep
                tr[j] = v
                total += v * pr[j]
        else:
            for j in range(cols):
                total += tr[j] * pr[j]
        for j in range(cols):
            tr[j] = (pr[j] * (tr[j] - total)) * scale
