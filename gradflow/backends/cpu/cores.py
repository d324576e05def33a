"""What this process may run on: the cores it is allowed (affinity, cgroup quota, the
user's OpenMP/OpenBLAS settings) and the BLAS libraries loaded in it.

Both pools read it: ``threads`` (how many threads the BLAS and OpenMP get now) and
``openmp`` (whether the BLAS may run its jobs on OpenMP's pool).

Example::

    from gradflow.backends.cpu import cores
    cores.allowed_cores()     # -> 2 on the 2-core VM, 1 with OMP_NUM_THREADS=1
"""

from __future__ import annotations

import functools
import math
import os

try:  # optional: without it gradflow leaves the BLAS's thread count alone
    from threadpoolctl import ThreadpoolController
except ImportError:
    ThreadpoolController = None


def allowed_cores() -> int:
    """The cores this process may use: affinity, cgroup quota and the user's
    ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS``, whichever is smallest (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = positive_int(os.environ.get(var, "").split(",")[0])
        if value is not None:
            cores = min(cores, value)
    return max(1, cores)


def positive_int(text):
    """``text`` as a positive int, or None."""
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


def _cgroup_quota():
    """The cgroup's CPU quota in cores, or None where it sets none."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


@functools.lru_cache(maxsize=None)
def blas_libraries():
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (found
    at the first call; ``blas_libraries.cache_clear()`` looks again)."""
    if ThreadpoolController is None:
        return []
    return ThreadpoolController().select(user_api="blas").lib_controllers
