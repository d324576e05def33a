"""Run-time range checks of index arrays (``gather``, ``embedding_lookup``, ``gather_nd``,
the scatters, sparse tensors), and the row-major positions of checked index tuples.

NumPy and array_api_strict read row ``n - 1`` for the id ``-1`` and the scatter-add
of the gradient drops an id past the end, while torch raises: a check of its own
makes every backend refuse the same ids with the same message, TF1's
``indices[3] = 10 is not in [0, 10)``. It costs one min and one max per index
array, and one transfer of their result to the host.
"""

from __future__ import annotations

import math

from array_api_compat import device as _device


class IndexOutOfRange(IndexError):
    """An id outside its axis. The session reports it as ``InvalidArgumentError``
    naming the op that read the id and the user's line that built it."""


def _position(flat_index, shape) -> str:
    """TF1's ``[i,j]`` form of the position ``flat_index`` in an array of ``shape``."""
    coords = []
    for size in reversed(shape):
        coords.append(flat_index % size if size else 0)
        flat_index //= size if size else 1
    return ",".join(str(c) for c in reversed(coords))


def first_bad(xp, bad):
    """The row-major position of the first true element of the bool array ``bad``."""
    flat = xp.reshape(bad, (-1,))
    return int(xp.nonzero(flat)[0][0])


def check_ids(xp, indices, size):
    """Raise ``IndexOutOfRange`` unless every element of ``indices`` is in ``[0, size)``.

    >>> check_ids(xp, xp.asarray([0, 10]), 10)   # IndexOutOfRange: indices[1] = 10 ...
    """
    if math.prod(indices.shape) == 0:
        return
    top = xp.iinfo(indices.dtype).max
    if size > top:  # no id of this dtype reaches past the end (and size would not fit)
        if not bool(xp.min(indices) < 0):
            return
        bad = indices < 0
    else:
        if not bool((xp.min(indices) < 0) | (xp.max(indices) >= size)):
            return
        bad = (indices < 0) | (indices >= size)
    at = first_bad(xp, bad)
    value = int(xp.reshape(indices, (-1,))[at])
    raise IndexOutOfRange(f"indices[{_position(at, tuple(indices.shape))}] = {value} is not "
                          f"in [0, {size})")


def check_index_tuples(xp, indices, bounds, target="param shape"):
    """Raise ``IndexOutOfRange`` unless every index tuple in the last axis of ``indices``
    points into an array whose leading axes are ``bounds`` (``gather_nd``; TF1's message
    names the ``target``: ``"param shape"`` there, ``"shape"`` for the scatters)."""
    if not bounds or math.prod(indices.shape) == 0:
        return
    limit = xp.asarray(bounds, dtype=indices.dtype, device=_device(indices))
    low = xp.min(indices, axis=tuple(range(indices.ndim - 1)))
    high = xp.max(indices, axis=tuple(range(indices.ndim - 1)))
    if not bool(xp.any((low < 0) | (high >= limit))):
        return
    bad = xp.any((indices < 0) | (indices >= limit), axis=-1)
    at = first_bad(xp, bad)
    row = xp.reshape(indices, (-1, len(bounds)))[at, :]
    values = ", ".join(str(int(v)) for v in row)
    shape = ",".join(str(b) for b in bounds)
    raise IndexOutOfRange(f"indices[{_position(at, tuple(indices.shape[:-1]))}] = [{values}] "
                          f"does not index into {target} [{shape}]")


def as_take_index(xp, indices):
    """``indices`` in a dtype every backend's ``take`` and scatter accept (int32/int64;
    torch takes no unsigned or 8/16-bit indices). Called after ``check_ids``, so
    the values fit."""
    if indices.dtype in (xp.int32, xp.int64):
        return indices
    return xp.astype(indices, xp.int64)


def row_major_positions(xp, indices, bounds, target="param shape"):
    """The row-major positions in an array whose leading axes are ``bounds`` of the index
    tuples in the last axis of ``indices`` (int64), after checking that each points into
    it (``check_index_tuples``)."""
    idx = xp.astype(indices, xp.int64)
    check_index_tuples(xp, idx, bounds, target)
    out = xp.zeros(idx.shape[:-1], dtype=xp.int64, device=_device(idx))
    stride = 1
    for k in reversed(range(len(bounds))):
        out = out + idx[..., k] * stride
        stride *= bounds[k]
    return out
