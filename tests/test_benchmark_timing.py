"""``benchmarks/timing.time_ms_each``: its rounds per function, and the figure it keeps
(``conv.py`` keeps the best round quiet and the median round loaded), on a clock the
test moves itself."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import types

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")


@pytest.fixture
def timing(monkeypatch):
    sys.path.insert(0, BENCHMARKS)
    try:
        import timing
    finally:
        sys.path.remove(BENCHMARKS)
    clock = {"now": 0.0}
    # the module's own name for ``time``, not the time module every other caller shares
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: clock["now"]))
    return timing, clock


def _visiting(clock, costs):
    """Steps that move the clock by their cost in seconds per call: ``costs[name][k]``
    in the k-th round of ``name``. A round of one function begins at its first call
    after another function's (``time_ms_each`` takes them in turn; the first visit is
    the warm-up)."""
    last, visits = [None], dict.fromkeys(costs, 0)

    def make(name):
        def step():
            if last[0] != name:
                last[0] = name
                visits[name] += 1
            rounds = costs[name]
            clock["now"] += rounds[min(max(visits[name] - 2, 0), len(rounds) - 1)]
        return step

    return {name: make(name) for name in costs}


@pytest.mark.parametrize("stat, expected", [("best", {"steady": 2.0, "swinging": 1.0}),
                                            ("median", {"steady": 2.0, "swinging": 4.0})])
def test_each_function_keeps_its_best_or_its_median_round(timing, stat, expected):
    timing, clock = timing
    costs = {"steady": [0.002] * 5, "swinging": [0.001, 0.004, 0.004, 0.001, 0.004]}
    times = timing.time_ms_each(_visiting(clock, costs), seconds=0.5, rounds=5, stat=stat)
    assert times == pytest.approx(expected)


def test_an_unknown_statistic_is_refused(timing):
    timing, _ = timing
    with pytest.raises(ValueError, match="stat='mean'"):
        timing.time_ms_each({"f": lambda: None}, stat="mean")


def test_conv_times_quiet_rows_by_the_best_round_and_loaded_rows_by_the_median():
    sys.path.insert(0, BENCHMARKS)
    try:
        import conv
    finally:
        sys.path.remove(BENCHMARKS)
    assert conv.timing_rule(0) == {"rounds": 5, "stat": "best"}
    assert conv.timing_rule(1) == {"rounds": 9, "stat": "median"}


_REUSE_SCRIPT = """
import resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import timing

def faults_on_reuse(nbytes=64 << 20):
    a = np.empty(nbytes // 4, np.float32); a.fill(1); del a
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    b = np.empty(nbytes // 4, np.float32); b.fill(1); del b
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = faults_on_reuse()
print(timing.reuse_freed_memory(default_malloc=True))
print(timing.reuse_freed_memory())
print(default, faults_on_reuse())
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_reuse_freed_memory_spares_a_reused_64_mb_block_its_page_faults():
    """With glibc's default, a freed 64 MB block goes back to the kernel and its next
    allocation faults on every page; the benchmarks' setting keeps it for reuse."""
    done = subprocess.run([sys.executable, "-c", _REUSE_SCRIPT, BENCHMARKS],
                          capture_output=True, text=True, check=True)
    kept_default, kept, counts = done.stdout.splitlines()
    assert kept_default.startswith("glibc's default")
    assert kept.startswith("freed memory kept for reuse")
    default, reused = map(int, counts.split())
    assert default > 100 and reused == 0
