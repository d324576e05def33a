"""Distributed jobs end, naming the rank at fault: ranks that exit early, ranks that stall.

The job tests launch this file under ``mpiexec`` (``python
tests/test_distributed_faults.py SCENARIO``, through ``test_distributed.launch``,
with a timeout). The rank at fault prints the time of its fault, and the test
checks that the job ended soon after it, with a message naming that rank. The
stall clock itself (``watchdog._StallClock``) is tested in this process with a
stand-in for the ranks' answers.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_distributed import _data, _model
from test_distributed import launch as _launch

import gradflow as gf
import gradflow.distributed as hvd
from gradflow.distributed import watchdog
from gradflow.distributed.watchdog import StallLimits, stall_limits

HERE = Path(__file__).resolve()
STALL_CHECK, STALL_SHUTDOWN = 1.0, 2.0


def launch(n, *args, **options):
    """``test_distributed.launch`` of this file."""
    return _launch(n, *args, script=HERE, **options)


# -- the limits and the stall clock, in this process ----------------------------------


def test_stall_limits_from_arguments_environment_and_defaults(monkeypatch):
    for name in (watchdog.ENV_CHECK, watchdog.ENV_SHUTDOWN, watchdog.ENV_DISABLE):
        monkeypatch.delenv(name, raising=False)
    assert stall_limits() == StallLimits(60.0, None)
    monkeypatch.setenv(watchdog.ENV_CHECK, "5")
    monkeypatch.setenv(watchdog.ENV_SHUTDOWN, "30")
    assert stall_limits() == StallLimits(5.0, 30.0)
    assert stall_limits(2, 0) == StallLimits(2.0, None)  # arguments win; 0 is off
    monkeypatch.setenv(watchdog.ENV_DISABLE, "1")
    assert stall_limits() == StallLimits(None, 30.0)
    monkeypatch.setenv(watchdog.ENV_CHECK, "soon")
    with pytest.raises(ValueError, match="HOROVOD_STALL_CHECK_TIME_SECONDS must be a number"):
        stall_limits()
    with pytest.raises(ValueError, match="stall_shutdown_time_seconds must be 0 .off. or a"):
        stall_limits(1, -2)


class _Ranks:
    """A stand-in for the watchdog of rank 0 of 3: ``answers`` are the other ranks'
    replies to its queries; ``ended`` collects what would abort the job."""

    def __init__(self, answers):
        self.rank, self.size = 0, 3
        self.where = (7, "dist_allreduce 'grads'")
        self.departed = {}
        self._replies = {}
        self.answers = answers
        self.queries = 0
        self.ended = []

    def ask_where(self):
        self.queries += 1
        self._replies = dict(self.answers)
        return [1, 2]

    def _end(self, message):
        self.ended.append(message)


def _tick_until(clock, ranks, seconds):
    for waited in np.arange(0.0, seconds, 0.05):
        clock.tick(ranks, float(waited))


def test_stall_clock_warns_at_each_check_and_ends_the_job_at_shutdown(capsys):
    ranks = _Ranks({1: (7, "dist_allreduce 'grads'")})  # rank 2 never answers
    clock = watchdog._StallClock(StallLimits(1.0, 2.5))
    _tick_until(clock, ranks, 2.4)
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 2 and not ranks.ended, warnings
    assert "rank 0 of 3 has waited 1.0 s in collective #7 dist_allreduce 'grads'" in warnings[0]
    assert "; rank 2 has not reached it" in warnings[0] and "rank 1" not in warnings[0]
    assert "the job aborts after 2.5 s" in warnings[0]
    _tick_until(clock, ranks, 2.6)
    assert len(ranks.ended) == 1 and "rank 2 has not reached it" in ranks.ended[0]
    assert "stall shutdown time (2.5 s) has passed" in ranks.ended[0]


def test_stall_clock_names_ranks_in_another_collective_and_not_a_slow_one(capsys):
    ranks = _Ranks({1: (7, "dist_allreduce 'grads'"), 2: (6, "allgather_object")})
    clock = watchdog._StallClock(StallLimits(None, 1.0))
    _tick_until(clock, ranks, 1.1)
    assert ranks.ended == [ranks.ended[0]] and capsys.readouterr().err == ""
    assert "rank 2 waits in collective #6 allgather_object instead" in ranks.ended[0]
    everyone = _Ranks({1: (7, "dist_allreduce 'grads'"), 2: (7, "dist_allreduce 'grads'")})
    clock = watchdog._StallClock(StallLimits(1.0, 2.0))
    _tick_until(clock, everyone, 5.0)  # all ranks are in it: slow, not stalled
    assert everyone.queries == 5 and not everyone.ended and capsys.readouterr().err == ""


# -- jobs -------------------------------------------------------------------------------


def _fault_time(output):
    found = re.search(r"rank \d+ faults at (\d+\.\d+)", output)
    assert found, output
    return float(found.group(1))


@pytest.mark.parametrize("fault, runner", [("exit 3", "python"), ("return", "python"),
                                           ("exit 0", "python -m mpi4py")])
def test_a_rank_that_leaves_early_ends_the_job(fault, runner):
    # rank 1 leaves (sys.exit, or its script ends sooner) while rank 0 waits for it in the
    # next allreduce; before the watchdog, rank 0 spun there forever under a plain python
    code, output, _ = launch(2, "leave", fault, timeout=60, python_args=runner.split()[1:])
    ended = time.time()
    assert code != 0, output
    assert "rank 1 left the job" in output, output
    assert "while rank 0 of 2 waits for it in collective" in output, output
    assert ("dist_grouped_collective 'DistributedGradientDescentOptimizer/Allreduce' (created "
            "at ") in output and "test_distributed_faults.py:" in output, output
    assert "rank 0 finished" not in output, output
    assert ended - _fault_time(output) < 10, output


def test_a_stall_is_reported_and_the_waiting_rank_sleeps(monkeypatch):
    monkeypatch.setenv(watchdog.ENV_CHECK, str(STALL_CHECK))  # Horovod's variable
    monkeypatch.delenv(watchdog.ENV_SHUTDOWN, raising=False)
    code, output, _ = launch(2, "stall", "2.5", timeout=60)
    assert code == 0, output
    assert "gradflow.distributed: stall: rank 0 of 2 has waited 1.0 s in collective" in output
    assert "rank 1 has not reached it" in output, output
    assert "set HOROVOD_STALL_SHUTDOWN_TIME_SECONDS to abort the job" in output, output
    assert output.count("finished") == 2, output
    wall, cpu = map(float, re.search(r"rank 0 waited (\S+) s using (\S+) s of CPU",
                                     output).groups())
    assert wall > 2 and cpu < 0.25 * wall, output  # blocking MPI spun a core the whole time


def test_a_long_stall_aborts_the_job_and_every_waiting_rank_names_the_stalled_one():
    code, output, _ = launch(3, "stall", "60", str(STALL_CHECK), str(STALL_SHUTDOWN),
                             timeout=60)
    ended = time.time()
    assert code != 0, output
    for rank in (0, 1):  # both print; neither counts the other, which answered, as missing
        assert f"stall: rank {rank} of 3 has waited 1.0 s in collective" in output, output
    assert "; rank 2 has not reached it" in output, output
    assert re.search(r"has waited 2\.\d s .*rank 2 has not reached it .*aborting the job",
                     output), output
    assert "rank 2 finished" not in output, output
    assert ended - _fault_time(output) < STALL_SHUTDOWN + 5, output


# -- what the ranks run ---------------------------------------------------------------------


def _steps(fault, steps=6):
    """Train a few steps; the last rank calls ``fault()`` before its step 2 (a fault that
    returns True makes it leave the loop)."""
    graph, x, y, loss = _model(0)
    with graph.as_default():
        opt = hvd.DistributedOptimizer(gf.train.GradientDescentOptimizer(0.1))
        train_op = opt.minimize(loss)
        init = gf.global_variables_initializer()
    xs, ys = _data()
    with gf.Session(graph=graph, backend="numpy") as sess:
        sess.run(init)
        for step in range(steps):
            if step == 2 and hvd.rank() == hvd.size() - 1:
                print(f"rank {hvd.rank()} faults at {time.time():.3f}", flush=True)
                if fault():
                    return
            clock, cpu = time.monotonic(), time.process_time()
            sess.run(train_op, {x: xs[:4], y: ys[:4]})
            if step == 2 and hvd.rank() == 0:
                print(f"rank 0 waited {time.monotonic() - clock:.2f} s using "
                      f"{time.process_time() - cpu:.3f} s of CPU", flush=True)
    print(f"rank {hvd.rank()} finished", flush=True)


def _worker_leave(how):
    hvd.init()
    if how == "return":
        _steps(lambda: True)
    else:
        _steps(lambda: sys.exit(int(how.split()[1])), steps=1000)


def _worker_stall(seconds, *limits):
    hvd.init(None, None, *map(float, limits))
    _steps(lambda: time.sleep(float(seconds)))


if __name__ == "__main__":
    scenario, *rest = sys.argv[1:]
    {"leave": _worker_leave, "stall": _worker_stall}[scenario](*rest)
