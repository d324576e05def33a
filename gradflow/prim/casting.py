"""When converting a value to a dtype would change it: the rule for every value that
enters a graph from Python (feeds, variable loads, ``py_func`` results)."""

from __future__ import annotations

import math

import numpy as np

from gradflow.errors import ResourceExhaustedError
from gradflow.prim.memory import needed_bytes, readable_bytes, shortfall

# the elements a pass over a large array takes at a time (its temporaries' size)
_BLOCK = 1 << 20


def loses_kind(value, array, np_dtype) -> bool:
    """Whether converting ``array`` (made from ``value``) to ``np_dtype`` crosses kinds
    in a way that can change values (floats to integers, integers to bools...). Python
    integers that all fit an integer dtype do not (``[0, 255]`` becomes uint8)."""
    if np.can_cast(array.dtype, np_dtype, casting="same_kind"):
        return False
    return not _python_ints_fit(value, array, np_dtype)


def whole_numbers_fit(array, np_dtype) -> bool:
    """Whether the floats of ``array`` are whole numbers that the integer dtype
    ``np_dtype`` holds exactly (``[1.0, 0.0]`` as int32), so converting changes nothing."""
    if array.dtype.kind != "f" or np.dtype(np_dtype).kind not in "iu":
        return False
    if not array.size:
        return True
    info = np.iinfo(np_dtype)
    low, high = array.min(), array.max()  # NaN compares false below
    return bool(low >= info.min and high <= info.max and
                all(np.array_equal(np.trunc(b), b) for b in blocks(array)))


def blocks(array, limit=_BLOCK):
    """Views of ``array`` that cover it, each of at most ``limit`` elements where its last
    axis allows: a pass over them makes only small temporaries, also over a broadcast
    view far larger than memory."""
    if array.ndim == 0 or array.size <= limit:
        yield array
        return
    inner = math.prod(array.shape[1:])
    if inner > limit and array.ndim > 1:
        for row in array:
            yield from blocks(row, limit)
        return
    step = max(1, limit // max(inner, 1))
    for start in range(0, array.shape[0], step):
        yield array[start:start + step]


def check_room(tensor, shape, np_dtype, what="converting the value fed"):
    """``ResourceExhaustedError`` naming the placeholder (or variable) ``tensor`` where an
    array of ``shape`` and ``np_dtype`` would not fit in the host's memory."""
    lack = shortfall(needed_bytes(shape, np.dtype(np_dtype).itemsize))
    if lack is not None:
        raise ResourceExhaustedError(
            f"{what} to '{tensor.name}' ({np.dtype(np_dtype).name}, shape "
            f"{tuple(int(d) for d in shape)}) needs {readable_bytes(lack[0])}, more than the "
            f"{readable_bytes(lack[1])} of memory available (created at "
            f"{getattr(tensor, 'source', '?')})")


def converted(tensor, array, np_dtype):
    """``array`` as ``np_dtype`` for ``tensor`` (a placeholder or variable): its memory is
    checked first, and an allocation that fails anyway is ``ResourceExhaustedError``
    naming ``tensor``."""
    check_room(tensor, array.shape, np_dtype)
    try:
        return array.astype(np_dtype)
    except MemoryError as err:
        raise ResourceExhaustedError(
            f"converting the value fed to '{tensor.name}' ({np.dtype(np_dtype).name}, shape "
            f"{tuple(array.shape)}) ran out of memory ({err})") from None


def out_of_range(array, np_dtype):
    """``(bad value, dtype info)`` for the first integer of ``array`` outside the integer
    dtype ``np_dtype`` (a cast would wrap it), else None."""
    if array.dtype.kind not in "iu" or np.dtype(np_dtype).kind not in "iu" or not array.size:
        return None
    info = np.iinfo(np_dtype)
    low, high = int(array.min()), int(array.max())
    if low >= info.min and high <= info.max:
        return None
    return (low if low < info.min else high), info


def _python_ints_fit(value, array, np_dtype):
    if isinstance(value, (np.ndarray, np.generic)) or array.dtype.kind not in "iu" \
            or np.dtype(np_dtype).kind not in "iu":
        return False
    info = np.iinfo(np_dtype)
    return array.size == 0 or (int(array.min()) >= info.min and int(array.max()) <= info.max)
