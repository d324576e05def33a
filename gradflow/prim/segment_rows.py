"""Laying reduced rows out as a segment op's result without temporaries of its size.

A segment op's result can be far larger than its input: one row with the id 2**30
asks for 2**30 rows, all but one of them the empty segments' value. The reductions
therefore work on the segments that have rows (at most one per input row, "compact"
rows) and ``spread_rows`` lays those out as the ``num`` rows of the result in blocks
of about ``BLOCK`` elements: each block's temporaries are small, the blocks that hold
no row share one array, and the result is the only array of its size that is made
(the Array API has no scatter to write into it).
"""

from __future__ import annotations

from array_api_compat import device as _device

# elements of one block of a result built by ``spread_rows``
BLOCK = 1 << 16


def spread_rows(xp, compact, present, num, empty):
    """``(num, width)``: row ``present[j]`` is ``compact[j]``, the others ``empty``;
    ``present`` holds increasing ids in ``[0, num)``, one per row of ``compact``."""
    width = compact.shape[1]
    dev = _device(compact)
    step = max(1, BLOCK // max(width, 1))
    starts = list(range(0, num, step))
    if not starts:
        return xp.full((0, width), empty, dtype=compact.dtype, device=dev)
    marks = xp.asarray(starts + [num], dtype=present.dtype, device=dev)
    cuts = xp.searchsorted(present, marks)  # the rows of each block: present[lo:hi]
    fill = xp.asarray(empty, dtype=compact.dtype, device=dev)
    shared = {}  # block size -> a block of `empty` rows, shared by the empty blocks
    blocks = []
    for k, start in enumerate(starts):
        stop = min(start + step, num)
        lo, hi = int(cuts[k]), int(cuts[k + 1])
        if lo == hi:
            if stop - start not in shared:
                shared[stop - start] = xp.full((stop - start, width), empty,
                                               dtype=compact.dtype, device=dev)
            blocks.append(shared[stop - start])
        elif hi - lo == stop - start:  # every row of the block is there
            blocks.append(compact[lo:hi, ...])
        else:
            blocks.append(_block(xp, compact[lo:hi, ...], present[lo:hi], start, stop, fill))
    return blocks[0] if len(blocks) == 1 else xp.concat(blocks, axis=0)


def _block(xp, rows, ids, start, stop, fill):
    """Rows ``start`` to ``stop`` of the result: ``rows[j]`` at ``ids[j]``, else ``fill``."""
    positions = xp.arange(start, stop, dtype=ids.dtype, device=_device(ids))
    last = xp.asarray(ids.shape[0] - 1, dtype=ids.dtype, device=_device(ids))
    at = xp.minimum(xp.astype(xp.searchsorted(ids, positions), ids.dtype), last)
    hit = xp.take(ids, at) == positions
    return xp.where(hit[:, None], xp.take(rows, at, axis=0), fill)


def sorted_runs(xp, ids):
    """For non-negative non-decreasing ``ids`` (int64): ``(present, rank, sizes)``, the
    distinct ids, each id's index among them, and how many times each occurs."""
    dev = _device(ids)
    count = ids.shape[0]
    first = xp.concat([xp.ones((1,), dtype=xp.bool, device=dev), ids[1:] != ids[:-1]])
    rank = xp.cumulative_sum(xp.astype(first, xp.int64)) - 1
    starts = xp.nonzero(first)[0]
    ends = xp.concat([starts[1:], xp.asarray([count], dtype=starts.dtype, device=dev)])
    return ids[first], rank, ends - starts


def divided(xp, sums, sizes):
    """``sums`` (rows) divided by ``sizes`` (one per row, at least 1); integers are
    divided toward zero, as TF1's kernel (C++ ``/``) does."""
    sizes = xp.astype(sizes, sums.dtype)[:, None]
    if xp.isdtype(sums.dtype, "real floating"):
        return sums / sizes
    quotient = xp.abs(sums) // sizes
    return xp.where(sums < 0, -quotient, quotient)
