"""numba kernel of the NumPy backend's scatter-add of rows (``gather``'s gradient, the
sparse-dense product's rows): ``out[indices[k]] += rows[k]`` for each ``k`` in turn.
Imported only where numba is available; compiles on first call, cached on disk.

It replaces a stable argsort and ``np.add.reduceat``, whose sort took most of the
time (GCN on Cora: 49,216 rows of 16 into 1,433). The sums run in float64 whatever the
rows' dtype: adding in turn is exact to a few units of float64 however many rows meet
in one target (an embedding's padding id may take 10^5), and the float32 result is
that sum rounded once, closer than the pairwise float32 sums of ``reduceat``.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def scatter_add_rows(rows, indices, out, total):
    """``out`` (``(num_rows, width)``) set to the sum of the ``rows`` (``(count,
    width)``) at each row ``indices[k]`` (checked by the caller to lie in ``[0,
    num_rows)``), zeros where none lands; ``total`` is a float64 buffer of ``out``'s
    shape for the sums (a plan's scratch: a steady step allocates nothing)."""
    width = rows.shape[1]
    total[:] = 0.0
    for k in range(indices.shape[0]):
        target = total[indices[k]]
        source = rows[k]
        for j in range(width):
            target[j] += source[j]
    for i in range(out.shape[0]):
        for j in range(width):
            out[i, j] = total[i, j]
    return out
