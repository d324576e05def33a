"""The NumPy backend's reduction of rows by segment id (``segment_reduce``,
``unsorted_segment_reduce``, ``segment_counts``): the same ops as the Array API form in
``gradflow.ops.segment_ops``, with its doubling scan (``log2 n`` passes over the rows)
replaced by one pass.

Sums of unsorted ids go through the backend's scatter-add of rows (``gather``'s
gradient: a numba kernel or a one-hot product); the other reductions, and sums of
sorted ids, sort the rows by id where they are not sorted (a stable argsort of the
ids and one gather of the rows) and reduce each run of equal ids with the ufunc's
``reduceat``. For 10^5 rows of 64 float32 into 10^4 segments that is a few
milliseconds.
"""

from __future__ import annotations

import numpy as np

_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def segment_reducer(scatter_add_rows):
    """A ``reduce_rows`` (see ``gradflow.ops.segment_ops.reduce_rows``) over NumPy arrays,
    with ``scatter_add_rows(xp, rows, ids, num)`` for the sums of unsorted ids."""

    def reduce_rows(xp, reduce, rows, ids, num, presorted, empty):
        if reduce == "sum" and not presorted:
            kept = ids >= 0
            if not kept.all():
                rows, ids = rows[kept], ids[kept]
            return scatter_add_rows(xp, rows, ids, num)
        if not presorted:
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
        first = int(np.searchsorted(ids, 0))  # negative ids (sorted first) take no part
        ids, rows = ids[first:], rows[first:]
        out = np.full((num, rows.shape[1]), empty, dtype=rows.dtype)
        if ids.shape[0]:
            starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
            out[ids[starts]] = _UFUNCS[reduce].reduceat(rows, starts, axis=0)
        return out

    return reduce_rows
