"""Aligned mini-batches over arrays that share their first axis."""

from __future__ import annotations

import numpy as np


def batches(*arrays, batch_size, shuffle=True, seed=None, drop_last=False):
    """Yield tuples of aligned slices of ``arrays``, ``batch_size`` rows at a time.

    >>> for xb, yb in gf.data.batches(x, y, batch_size=128, seed=0): ...
    """
    if not arrays:
        raise ValueError("batches needs at least one array")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    count = len(arrays[0])
    for i, a in enumerate(arrays[1:], 1):
        if len(a) != count:
            raise ValueError(f"array {i} has {len(a)} rows, array 0 has {count}")
    order = np.random.default_rng(seed).permutation(count) if shuffle else None
    stop = count - count % batch_size if drop_last else count
    for start in range(0, stop, batch_size):
        if order is None:
            yield tuple(a[start:start + batch_size] for a in arrays)
        else:
            idx = order[start:start + batch_size]
            yield tuple(a[idx] for a in arrays)
