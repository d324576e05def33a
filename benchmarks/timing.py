"""What the benchmarks share: BLAS thread pinning from the command line, and timing.

``--threads N`` must take effect before NumPy loads its BLAS, so the scripts
call ``pin_threads_from_argv()`` before importing NumPy. On a small or shared
machine, OpenBLAS with more threads than free cores makes small matmuls far
slower (threads spin waiting for each other), so figures taken on a busy
machine should use ``--threads 1`` for both NumPy and PyTorch.
"""

from __future__ import annotations

import os
import sys
import time


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
