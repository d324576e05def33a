"""numba kernel of the NumPy backend's segment products, maxima and minima
(``gradflow.backends.numpy.segment``): one pass over the rows in their order, no sort.
Imported only where numba is available; compiles on first call per dtype, cached on
disk.

It replaces a stable argsort of the ids, a gather of the rows and ``ufunc.reduceat``
over them, whose strided reduction along the rows took most of the time (10^5 rows
of 64 float32 in 10^4 segments: about 70 ms against a few).
"""

from __future__ import annotations

import numba
import numpy as np

PROD, MAX, MIN = 0, 1, 2


@numba.njit(cache=True, nogil=True)
def reduce_rows(rows, ids, out, op):
    """``out`` (``(num, width)``, filled with the empty segments' value) with row ``s``
    set to the product (``op`` 0), maximum (1) or minimum (2) of the ``rows`` whose id
    is ``s``; negative ids are skipped, the others checked by the caller to be below
    ``num``. A NaN wins a maximum or minimum, as with ``np.maximum``."""
    width = out.shape[1]
    seen = np.zeros(out.shape[0], np.bool_)
    for k in range(ids.shape[0]):
        s = ids[k]
        if s < 0:
            continue
        target = out[s]
        source = rows[k]
        if not seen[s]:
            seen[s] = True
            for j in range(width):
                target[j] = source[j]
        elif op == PROD:
            for j in range(width):
                target[j] *= source[j]
        elif op == MAX:
            for j in range(width):
                v = source[j]
                if v > target[j] or v != v:
                    target[j] = v
        else:
            for j in range(width):
                v = source[j]
                if v < target[j] or v != v:
                    target[j] = v
    return out
