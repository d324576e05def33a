"""Aligned mini-batches over arrays that share their first axis."""

from __future__ import annotations

import numpy as np


def batches(*arrays, batch_size=None, shuffle=True, seed=None, drop_last=False, shard=None):
    """Yield tuples of aligned slices of ``arrays``, ``batch_size`` rows at a time.

    >>> for xb, yb in gf.data.batches(x, y, batch_size=128, seed=0): ...

    ``batch_size`` may also come last among the positional arguments
    (``batches(x, y, 128)``). ``shard=(rank, size)`` gives the part of rank
    ``rank`` of a data-parallel job of ``size`` processes: every rank draws the
    same order (so ``seed`` is required when shuffling) and, of each run of
    ``batch_size * size`` rows, rank ``r`` takes the ``r``-th ``batch_size``
    rows. The ranks' batches of one step together are then exactly one batch of
    ``batch_size * size`` rows without ``shard``, and every rank yields the same
    number of batches: a last, short run is split evenly (dropped if it has fewer
    rows than ranks, or with ``drop_last``).
    """
    if batch_size is None and arrays and isinstance(arrays[-1], int) \
            and not isinstance(arrays[-1], bool):
        *arrays, batch_size = arrays
    if batch_size is None:
        raise TypeError("batches() needs batch_size")
    if not arrays:
        raise ValueError("batches needs at least one array")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    count = len(arrays[0])
    for i, a in enumerate(arrays[1:], 1):
        if len(a) != count:
            raise ValueError(f"array {i} has {len(a)} rows, array 0 has {count}")
    if shard is not None:
        yield from _sharded(arrays, count, batch_size, shuffle, seed, drop_last, shard)
        return
    order = np.random.default_rng(seed).permutation(count) if shuffle else None
    stop = count - count % batch_size if drop_last else count
    for start in range(0, stop, batch_size):
        if order is None:
            yield tuple(a[start:start + batch_size] for a in arrays)
        else:
            idx = order[start:start + batch_size]
            yield tuple(a[idx] for a in arrays)


def _sharded(arrays, count, batch_size, shuffle, seed, drop_last, shard):
    """The batches of one rank: see ``batches(shard=...)``."""
    try:
        rank, size = (int(v) for v in shard)
    except (TypeError, ValueError):
        raise ValueError(f"shard must be (rank, size), two ints, got {shard!r}") from None
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"shard=(rank, size) needs 0 <= rank < size, got {shard!r}")
    if shuffle and seed is None and size > 1:
        raise ValueError("shard with shuffle=True needs seed=: every rank must draw the same "
                         "order, or the shards overlap (pass the same seed on every rank, "
                         "e.g. one per epoch)")
    order = np.random.default_rng(seed).permutation(count) if shuffle else np.arange(count)
    step = batch_size * size
    for start in range(0, count, step):
        rows = min(step, count - start)
        if rows < step:  # the last run: split evenly, or drop it
            if drop_last or rows < size:
                return
            cuts = [start + rows * r // size for r in range(size + 1)]
            first, stop = cuts[rank], cuts[rank + 1]
        else:
            first = start + rank * batch_size
            stop = first + batch_size
        idx = order[first:stop]
        yield tuple(a[idx] for a in arrays)
