"""What the benchmarks share: BLAS thread pinning from the command line, and timing.

``--threads N`` must take effect before NumPy loads its BLAS, so the scripts
call ``pin_threads_from_argv()`` before importing NumPy. On a small or shared
machine, OpenBLAS with more threads than free cores makes small matmuls far
slower (threads spin waiting for each other), so figures taken on a busy
machine should use ``--threads 1`` for both NumPy and PyTorch.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import time

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def pin_threads_from_argv(argv=None):
    """Set the BLAS thread variables from ``--threads N`` in ``argv`` (default sys.argv)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--threads" in argv[:-1]:
        threads = argv[argv.index("--threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = threads


def pin_torch_threads(threads):
    """torch.set_num_threads(threads) when torch is installed and ``threads`` is given."""
    if threads:
        try:
            import torch
        except ImportError:
            return
        torch.set_num_threads(threads)


def reuse_freed_memory(default_malloc=False):
    """Keep the process's freed memory for its next allocations, so that every library
    timed in it is timed on its work, not on fresh pages from the kernel; returns the
    setting in words, for the benchmark's header.

    glibc's ``malloc`` gives blocks above its mmap threshold (128 KiB at first, rising to
    the largest such block freed, at most 32 MiB) fresh pages, and gives them back on
    ``free``. The first touch of each page then faults. PyTorch and TensorFlow allocate
    every op's output per call, so whether a multi-MB output costs them these faults
    depends on what the process freed before: PyTorch's 5x5 1 -> 32 forward pass at batch
    128 (a 12.8 MB output) took 10-11 ms fresh and 1.1-1.5 ms on reused memory on the
    2-core VM, its MNIST CNN step at batch 128 47.5 against 36.8 ms. gradflow's plans keep
    their buffers from run to run, so the setting hardly moves its own rows. The peers
    are timed at their best unless ``default_malloc`` (``--default-malloc``)."""
    if default_malloc:
        return "glibc's default (freed blocks above its mmap threshold go back to the kernel)"
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return "the C library's default (no mallopt)"
    if mallopt(_M_MMAP_THRESHOLD, 1 << 30) != 1 or mallopt(_M_TRIM_THRESHOLD, 2 ** 31 - 1) != 1:
        return "the C library's default (mallopt refused)"
    return "freed memory kept for reuse (mallopt: mmap and trim thresholds raised)"


def parse_args(parser, argv=None):
    """``parser.parse_args(argv)`` with ``--default-malloc`` added; the malloc setting of
    ``reuse_freed_memory`` applied and printed, for the benchmark's header."""
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's malloc as it is: large outputs of the peers then "
                             "get fresh pages (and their faults) or not, as the process's "
                             "history has it")
    args = parser.parse_args(argv)
    print("malloc: " + reuse_freed_memory(args.default_malloc))
    return args


def time_ms(step, seconds=1.0):
    """Milliseconds per call of ``step``: two warm-up calls, then the best of 5 rounds."""
    step()
    step()
    best = float("inf")
    for _ in range(5):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / 5:
            step()
            count += 1
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e3


def time_ms_each(steps, seconds=1.0, rounds=5, stat="best"):
    """Milliseconds per call of each function in the dict ``steps``, like ``time_ms`` but
    with the rounds of all of them taken in turn, so that a slow spell of a shared machine
    hits them all alike: two warm-up calls each, then ``rounds`` rounds of about
    ``seconds / rounds`` per function. Each round starts with a quarter of its time (at
    most 0.1 s) untimed, for the threads of the previous function's library to go idle:
    OpenBLAS's spin for about 0.1 s after their last product, on the cores that the next
    library's threads want.

    ``stat`` picks each function's figure from its rounds: ``"best"`` (the least
    disturbed round: the cost of the work on a quiet machine) or ``"median"`` (the
    typical round: what a run gets while another process shares the cores, where the
    best round only says how lucky the luckiest round was: a library whose share of the
    cores swings more gets luckier rounds)."""
    if stat not in ("best", "median"):
        raise ValueError(f"stat={stat!r}: expected 'best' or 'median'")
    for step in steps.values():
        step()
        step()
    per_round = {name: [] for name in steps}
    settle = min(0.1, seconds / rounds / 4)
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            while time.perf_counter() - start < settle:
                step()
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / rounds:
                step()
                count += 1
            per_round[name].append((time.perf_counter() - start) / count)
    pick = min if stat == "best" else statistics.median
    return {name: pick(times) * 1e3 for name, times in per_round.items()}


class OtherLoad:
    """How much CPU other processes used while this one timed: ``start()``, then
    ``cores()``, the average number of cores busy with other processes since (None where
    /proc/stat cannot be read). Timings taken while it is well above 0 are disturbed."""

    def __init__(self):
        self.start()

    @staticmethod
    def _busy_seconds():
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()[1:]
        except OSError:
            return None
        # user nice system (idle iowait) irq softirq steal, in clock ticks
        busy = sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))
        return busy / os.sysconf("SC_CLK_TCK")

    def start(self):
        times = os.times()
        self._t0 = (time.perf_counter(), self._busy_seconds(), times.user + times.system)

    def cores(self):
        wall0, busy0, mine0 = self._t0
        busy = self._busy_seconds()
        if busy is None or busy0 is None:
            return None
        times = os.times()
        mine = times.user + times.system - mine0
        return max(0.0, (busy - busy0 - mine) / (time.perf_counter() - wall0))
