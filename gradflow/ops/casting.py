"""When converting a value to a dtype would change it: the rule for every value that
enters a graph from Python (feeds, variable loads, ``py_func`` results)."""

from __future__ import annotations

import numpy as np


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
    return bool(low >= info.min and high <= info.max and np.array_equal(np.trunc(array), array))


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
