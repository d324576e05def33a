"""How many threads the BLAS under the NumPy backend may use: the cores that are free.

OpenBLAS splits each matrix product into one part per thread and waits for all of
them at several barriers per call. When another process holds one of the cores,
the part on that core waits a whole scheduling slice at every barrier: measured on
the 2-core VM with one CPU-bound process beside it, a 5x5 convolution's filter
gradient took 161 ms on 2 threads and 13 ms on one (``benchmarks/conv.py``). On
a quiet machine the second thread roughly halves a large product. So the count
follows the cores this process may run on and that no other process is using:

* the cores it may use at all: its CPU affinity (``os.sched_getaffinity``), the
  cgroup's CPU quota (``/sys/fs/cgroup/cpu.max``, or v1's ``cpu.cfs_quota_us``),
  and ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` when the user set them;
* of those, the ones other processes left idle since the last look, read from
  ``/proc/stat`` (busy time of those cores less this process's own CPU time) at
  most every ``INTERVAL`` seconds, when a lowering that calls the BLAS starts
  (:func:`refresh`): a few microseconds every quarter second.

OpenMP's pool (oneDNN's convolutions, ``onednn_conv``; numba's parallel kernels)
gets the same count. Where OpenBLAS runs its jobs on that pool too
(``openmp.shared()``, the usual case) that is all. Elsewhere, while OpenMP's pool is
in use (a kernel of it ran in the last ``OPENMP_HOLD`` seconds) the BLAS gets one
thread: two pools on two cores spin against each other (OpenBLAS's idle threads
spin about 0.1 s after each product, on the cores OpenMP's threads wait for), and
the step of a CNN with both took 60 ms where it takes 35 ms this way (deep-MNIST at
batch 50, ``benchmarks/conv.py``).

OpenBLAS's bits differ between one and two threads for some shapes (16 x 784 x 512
did), so under ``auto`` a run's last bits can follow the load; a fixed count
(below) gives every pool exactly that count, always, for runs that must repeat
bit for bit.

``GRADFLOW_THREADS`` overrides it: a number fixes the count (``1`` for one BLAS
thread, whatever the load), ``off`` leaves the BLAS's own setting alone, and
``auto`` (or unset) is the policy above. numba's large kernels run on the same count
(:func:`team`) where the pool is shared; elsewhere they run on one thread.

Example::

    from gradflow.backends.cpu import threads
    threads.refresh()          # what the NumPy lowerings call
    threads.current()          # -> 1 on a 2-core machine with one other busy process
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time

from gradflow.backends.cpu import openmp
from gradflow.backends.cpu.cores import allowed_cores, blas_libraries, positive_int

# Seconds between two looks at how busy the other processes keep the cores.
INTERVAL = 0.25
# A core counts as free when other processes used less than this share of it: a
# thread that shares its core costs far more (whole scheduling slices per barrier)
# than one thread too few (at most half of a product on 2 cores).
BUSY_SHARE = 0.25
# Seconds after the last OpenMP kernel during which the BLAS keeps to one thread.
OPENMP_HOLD = 1.0
_ENV = "GRADFLOW_THREADS"

_lock = threading.Lock()
_state = {"next": 0.0, "sample": None, "threads": None, "blas_threads": None,
          "openmp_seen": -OPENMP_HOLD, "cores": None}


def _setting():
    """``("auto", None)``, ``("off", None)`` or ``("fixed", n)`` from ``GRADFLOW_THREADS``."""
    text = os.environ.get(_ENV, "").strip().lower()
    if text in ("", "auto"):
        return "auto", None
    if text == "off":
        return "off", None
    value = positive_int(text)
    if value is None:
        raise ValueError(f"{_ENV}={text!r}: expected a positive number of threads, 'auto' "
                         "or 'off'")
    return "fixed", value


def _busy_ticks(cpus):
    """Clock ticks the cores ``cpus`` spent busy (not idle or waiting for I/O)."""
    busy = 0
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu") or line[3] == " ":
                continue
            name, *fields = line.split()
            if int(name[3:]) in cpus:
                values = [int(v) for v in fields[:8]]
                busy += sum(values) - values[3] - values[4]
    return busy


def _sample():
    """(wall seconds, busy seconds of this process's cores, this process's CPU seconds)."""
    try:
        cpus = os.sched_getaffinity(0)
        busy = _busy_ticks(cpus) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError):
        return None
    own = os.times()
    return time.monotonic(), busy, own.user + own.system


def free_cores(before, after, cores):
    """The cores of ``cores`` that other processes left free between two samples."""
    wall = after[0] - before[0]
    if wall <= 0:
        return cores
    others = max(0.0, (after[1] - before[1]) - (after[2] - before[2])) / wall
    return max(1, min(cores, math.floor(cores - others + BUSY_SHARE)))


def _runnable_free(cores):
    """A first guess before there are two samples: the cores less the other threads
    that are runnable right now (``/proc/loadavg``), counting this one as running."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return cores
    return max(1, min(cores, cores - (running - 1)))


def _apply(count, fixed=False):
    _state["threads"] = count
    blas = 1 if openmp_in_use() and not fixed and not openmp.shared() else count
    if blas != _state["blas_threads"]:
        for lib in blas_libraries():
            lib.set_num_threads(blas)
        _state["blas_threads"] = blas


def cores():
    """``allowed_cores()`` as of the last look (it reads files: not on every call)."""
    if _state["cores"] is None:
        _state["cores"] = allowed_cores()
    return _state["cores"]


def openmp_in_use():
    """Whether an OpenMP kernel ran in the last ``OPENMP_HOLD`` seconds (the BLAS is then
    kept to one thread)."""
    return time.monotonic() - _state["openmp_seen"] < OPENMP_HOLD


def openmp_ran():
    """Note that an OpenMP kernel just ran (called by ``onednn``): the BLAS keeps to
    one thread from the next :func:`refresh` until ``OPENMP_HOLD`` seconds after the
    last such call."""
    now = time.monotonic()
    if now - _state["openmp_seen"] >= OPENMP_HOLD:
        _state["next"] = 0.0  # decide again at the next refresh
    _state["openmp_seen"] = now


def refresh():
    """Set the thread counts to the free cores, if ``INTERVAL`` has passed since the last
    look (else return at once). Called by the NumPy lowerings that multiply."""
    now = time.monotonic()
    if now < _state["next"]:
        return
    with _lock:
        if now < _state["next"]:
            return
        _state["next"] = now + INTERVAL
        mode, fixed = _setting()
        if mode == "off":
            return
        if mode == "fixed":  # no file read: a fixed count costs nothing after the first call
            _apply(fixed, fixed=True)
            return
        cores = _state["cores"] = allowed_cores()
        sample = _sample()
        before, _state["sample"] = _state["sample"], sample
        if sample is None:
            _apply(cores)
        elif before is not None:
            _apply(free_cores(before, sample, cores))
        else:
            _apply(_runnable_free(cores))


def current():
    """The thread count gradflow last chose for its pools (None before the first
    :func:`refresh`, or with ``GRADFLOW_THREADS=off``): OpenMP's, and the BLAS's
    unless OpenMP is in use (:func:`blas_current`)."""
    return _state["threads"]


def team():
    """The threads a parallel kernel (``numpy_fused``, the pooling kernels of
    ``numpy_windows``) should run on now: the count
    chosen for the pools (refreshed when a look is due), at most numba's
    ``NUMBA_NUM_THREADS``; 1 in a child forked after OpenMP started."""
    if time.monotonic() >= _state["next"]:
        refresh()
    if not openmp.usable():
        return 1
    return max(1, min(_state["threads"] or cores(), openmp.numba_threads()))


def blas_current():
    """The thread count gradflow last set for the BLAS (None as for :func:`current`)."""
    return _state["blas_threads"]


def reset():
    """Forget the last look, so that the next :func:`refresh` decides afresh (tests)."""
    with _lock:
        _state.update(next=0.0, sample=None, threads=None, blas_threads=None,
                      openmp_seen=-OPENMP_HOLD, cores=None)


def uses_blas(fn):
    """``fn`` with a :func:`refresh` before each call: for lowerings that multiply."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if time.monotonic() >= _state["next"]:
            refresh()
        return fn(*args, **kwargs)

    return call
