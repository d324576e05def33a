"""Refusing an array larger than the memory there is, before allocating it.

Linux overcommits memory: NumPy's ``empty`` of 20 GB on a machine with 16 GB free
succeeds, and the process is killed when the array is filled. An op whose output
size comes from a value (a segment id, a ``fill``'s dims, a fed shape) asks
``check_fits`` first: an array that needs more bytes than the host has available
raises ``MemoryError`` there (the session reports it as ``ResourceExhaustedError``
naming the op and the line that built it), before anything is allocated. Arrays on a
CUDA device are left to the device's allocator, which refuses them cleanly.
"""

from __future__ import annotations

import math
import os

import numpy as np

# below this many bytes an array is allocated without asking
SMALL = 1 << 26


def _meminfo_available():
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _read_int(path):
    try:
        with open(path, "rb") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_room():
    """What the process's cgroup (a container's memory limit) still allows, or None."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        cap, used = _read_int(limit), _read_int(usage)
        if cap is not None and used is not None and cap < 1 << 60:
            return max(cap - used, 0)
    return None


def available_bytes():
    """The bytes of host memory a new array can take now, or None where unknown."""
    rooms = [r for r in (_meminfo_available(), _cgroup_room()) if r is not None]
    return min(rooms) if rooms else None


def readable_bytes(n) -> str:
    """``n`` bytes as people write them: ``3.6 TiB``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # (not reached)


def on_device(like) -> bool:
    """Whether the array ``like`` lives on a CUDA device (CuPy's, torch's)."""
    return like is not None and "cuda" in str(getattr(like, "device", "")).lower()


def needed_bytes(shape, itemsize, copies=1) -> int:
    """The bytes of ``copies`` arrays of ``shape`` (Python ints: no overflow)."""
    return math.prod(int(d) for d in shape) * int(itemsize) * copies


def shortfall(nbytes):
    """``(needed, available)`` where ``nbytes`` do not fit in the host's memory, else
    None (also where the available memory is unknown)."""
    if nbytes < SMALL:
        return None
    room = available_bytes()
    if room is None or nbytes <= room:
        return None
    return nbytes, room


def check_fits(what, shape, dtype, like=None, copies=1):
    """Raise ``MemoryError`` naming ``what`` where ``copies`` arrays of ``shape`` and
    ``dtype`` (anything with an ``itemsize``, or the itemsize) would not fit in the
    host's available memory; nothing for arrays on a CUDA device (``like``'s)."""
    itemsize = getattr(dtype, "itemsize", None) or _itemsize(dtype)
    lack = shortfall(needed_bytes(shape, itemsize, copies))
    if lack is None or on_device(like):
        return
    shape = "[" + ",".join(str(int(d)) for d in shape) + "]"
    raise MemoryError(f"{what}: an output of shape {shape} needs "
                      f"{readable_bytes(lack[0])}, more than the "
                      f"{readable_bytes(lack[1])} of memory available")


def _itemsize(dtype):
    if isinstance(dtype, int):
        return dtype
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # a library's own dtype object (torch.float32): its size by name
        return np.dtype(str(dtype).rsplit(".", 1)[-1]).itemsize
