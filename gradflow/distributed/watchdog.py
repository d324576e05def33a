"""Collectives that end: waiting without burning a core, ranks that leave, and stalls.

Every collective of the MPI engine is started non-blocking and handed to
``Watchdog.wait``, which tests it in a loop: first without sleeping, only
yielding the core to ranks that share it (most collectives end within
``SPIN_SECONDS``; MPI progresses only while the request is tested, so sleeping
sooner slowed 4 ranks on 2 cores), then with sleeps that grow with the time
already waited (a twentieth of it, at most ``MAX_SLEEP_SECONDS``), so that a
rank waiting for a slow or stalled peer uses almost no CPU. While it sleeps it
reads a private communicator (a duplicate of the job's) that carries three
kinds of small message between the ranks:

* **departure**: at interpreter exit (``atexit``, which runs before mpi4py
  finalizes MPI) every rank tells the others how many collectives it has
  finished. A rank that waits in its collective number ``n`` for a rank that
  left after fewer than ``n`` collectives knows that it waits forever, and
  aborts the job naming that rank. This covers ``sys.exit(3)``, an early
  ``sys.exit(0)`` and a script that simply ends sooner on one rank. A rank
  that leaves once the others need it no more ends nothing: MPICH keeps it in
  ``MPI_Finalize`` until every rank gets there.
* **query** and **reply**: after the stall check time a waiting rank asks the
  others where they are; those waiting in a collective answer with its number
  and name (they answer within one sleep), and those that do not answer within
  ``REPLY_SECONDS`` are busy outside gradflow's collectives (a slow step, a
  sleep, a deadlock in user code). The rank prints which ranks have not reached
  its collective, again every check time, and after the shutdown time, if one
  is set, prints it once more and aborts the job.

The limits follow Horovod's: ``HOROVOD_STALL_CHECK_TIME_SECONDS`` (default 60),
``HOROVOD_STALL_SHUTDOWN_TIME_SECONDS`` (default 0: never abort) and
``HOROVOD_STALL_CHECK_DISABLE=1``, or the arguments of
``gradflow.distributed.init``, which win over the environment.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from dataclasses import dataclass

ENV_CHECK = "HOROVOD_STALL_CHECK_TIME_SECONDS"
ENV_SHUTDOWN = "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"
ENV_DISABLE = "HOROVOD_STALL_CHECK_DISABLE"
DEFAULT_CHECK_SECONDS = 60.0

SPIN_SECONDS = 0.1
MIN_SLEEP_SECONDS = 1e-4
MAX_SLEEP_SECONDS = 0.02
REPLY_SECONDS = 0.5
SEND_SECONDS = 2.0

_DEPART, _QUERY, _REPLY = 1, 2, 3
_yield = getattr(os, "sched_yield", lambda: None)


@dataclass(frozen=True)
class StallLimits:
    """When a waiting rank reports the ranks it waits for (``check_seconds``) and when it
    aborts the job (``shutdown_seconds``); ``None`` turns either off."""

    check_seconds: float | None = DEFAULT_CHECK_SECONDS
    shutdown_seconds: float | None = None


def stall_limits(check_seconds=None, shutdown_seconds=None) -> StallLimits:
    """The limits from the arguments, else Horovod's environment variables, else the
    defaults (report after 60 s, never abort). 0 turns a limit off.

    >>> stall_limits(5, 30)
    StallLimits(check_seconds=5.0, shutdown_seconds=30.0)
    """
    check = _seconds(check_seconds, "stall_check_time_seconds", ENV_CHECK,
                     DEFAULT_CHECK_SECONDS)
    if check_seconds is None and os.environ.get(ENV_DISABLE, "").strip().lower() in (
            "1", "true", "yes"):
        check = None
    shutdown = _seconds(shutdown_seconds, "stall_shutdown_time_seconds", ENV_SHUTDOWN, None)
    return StallLimits(check, shutdown)


def _seconds(value, argument, variable, default):
    source = argument
    if value is None:
        value, source = os.environ.get(variable, "").strip() or None, variable
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a number of seconds; got {value!r}") from None
    if not seconds >= 0:
        raise ValueError(f"{source} must be 0 (off) or a positive number of seconds; "
                         f"got {value!r}")
    return seconds or None


class Watchdog:
    """Waits for the non-blocking collectives of ``comm`` (an mpi4py communicator) and ends
    the job, through ``abort(code)``, when a rank it waits for has left or stalls."""

    def __init__(self, comm, limits: StallLimits, abort):
        from mpi4py import MPI

        self.MPI = MPI
        self.control = comm.Dup()
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.limits = limits
        self.abort = abort
        self.finished = 0  # collectives this rank has completed
        self.where = None  # (number, name) of the collective this rank waits in
        self.departed: dict[int, int] = {}  # rank -> collectives it completed before leaving
        self._sends: list = []
        self._query = 0  # the number of this rank's latest query
        self._replies: dict[int, tuple | None] = {}
        atexit.register(self.depart)

    # -- waiting ------------------------------------------------------------------------
    def wait(self, request, name: str) -> None:
        """Return when the mpi4py ``request`` (of the collective ``name``) is complete."""
        number = self.finished + 1
        start = time.monotonic()
        while not request.Test():
            _yield()  # to the other ranks, where they share this core
            if time.monotonic() - start > SPIN_SECONDS:
                self.where = (number, name)
                try:
                    self._wait_patiently(request, start)
                finally:
                    self.where = None
                break
        self.finished = number

    def _wait_patiently(self, request, start):
        stall = _StallClock(self.limits)
        while not request.Test():
            self._serve()
            self._check_departures()
            now = time.monotonic()
            stall.tick(self, now - start)
            time.sleep(min(MAX_SLEEP_SECONDS, max(MIN_SLEEP_SECONDS, (now - start) / 20)))

    def _check_departures(self):
        number, name = self.where
        gone = sorted(r for r, done in self.departed.items() if done < number)
        if gone:
            left = " and ".join(f"rank {r} left the job (the process is exiting, after "
                                f"{self.departed[r]} collectives)" for r in gone)
            self._end(f"{left} while rank {self.rank} of {self.size} waits for "
                      f"{'it' if len(gone) == 1 else 'them'} in collective #{number} {name}")

    def _end(self, message):
        sys.stderr.write(f"gradflow.distributed: {message}; aborting the job\n")
        self.abort(1)

    # -- messages -----------------------------------------------------------------------
    def _send(self, payload, dest, tag):
        self._sends = [r for r in self._sends if not r.Test()]
        self._sends.append(self.control.isend(payload, dest=dest, tag=tag))

    def _serve(self):
        """Read every message that has arrived: note departures, answer queries, keep
        replies to this rank's latest query."""
        status = self.MPI.Status()
        while True:
            message = self.control.improbe(source=self.MPI.ANY_SOURCE, tag=self.MPI.ANY_TAG,
                                           status=status)
            if message is None:
                return
            source, tag = status.Get_source(), status.Get_tag()
            payload = message.recv()
            if tag == _DEPART:
                self.departed[source] = payload
            elif tag == _QUERY:
                self._send((payload, self.where), source, _REPLY)
            elif tag == _REPLY and payload[0] == self._query:
                self._replies[source] = payload[1]

    def ask_where(self) -> list[int]:
        """Send every rank still here a query; returns the ranks asked."""
        self._query += 1
        self._replies = {}
        asked = [r for r in range(self.size) if r != self.rank and r not in self.departed]
        for r in asked:
            self._send(self._query, r, _QUERY)
        return asked

    # -- leaving --------------------------------------------------------------------------
    def depart(self) -> None:
        """Tell every other rank that this one leaves, having completed ``finished``
        collectives (run at interpreter exit)."""
        if self.MPI.Is_finalized():
            return
        self._serve()
        for r in range(self.size):
            if r != self.rank and r not in self.departed:
                self._send(self.finished, r, _DEPART)
        deadline = time.monotonic() + SEND_SECONDS
        while self._sends and time.monotonic() < deadline:
            self._sends = [r for r in self._sends if not r.Test()]
            time.sleep(MIN_SLEEP_SECONDS)


class _StallClock:
    """The stall checks of one wait. At each check time (every ``check_seconds``) and at
    the shutdown time, the ranks that have answered a query sent ``REPLY_SECONDS`` before
    are compared with this rank's collective: a warning, or at the shutdown time the end
    of the job, names those that are not in it."""

    def __init__(self, limits: StallLimits):
        self.check = limits.check_seconds
        self.shutdown = limits.shutdown_seconds
        self.due = self._after(0.0)
        self.asked = None

    def _after(self, t):
        """The first check or shutdown time after ``t`` seconds of waiting."""
        times = [float("inf")]
        if self.check is not None:
            times.append((t // self.check + 1) * self.check)
        if self.shutdown is not None and self.shutdown > t:
            times.append(self.shutdown)
        return min(times)

    def tick(self, dog: Watchdog, waited: float) -> None:
        if self.asked is None:
            if waited >= self.due - REPLY_SECONDS:
                self.asked = dog.ask_where()
            return
        if waited < self.due:
            return
        missing, elsewhere = _classify(dog, self.asked)
        self.asked = None
        now_due, self.due = self.due, self._after(self.due)
        if not missing and not elsewhere:
            return  # every rank is in this collective: it is slow, not stalled
        report = _report(dog, waited, missing, elsewhere)
        if self.shutdown is not None and now_due >= self.shutdown:
            dog._end(f"{report}; the stall shutdown time ({_secs(self.shutdown)}) has passed "
                     f"({ENV_SHUTDOWN})")
        elif self.check is not None:
            after = (f"the job aborts after {_secs(self.shutdown)} ({ENV_SHUTDOWN})"
                     if self.shutdown is not None else f"set {ENV_SHUTDOWN} to abort the job")
            sys.stderr.write(f"gradflow.distributed: stall: {report}; {after}\n")
            sys.stderr.flush()


def _classify(dog, asked):
    """The ranks asked that are not in this rank's collective: ``(missing, elsewhere)``,
    those that did not answer (or left) and ``{rank: (number, name)}`` of those waiting
    in another collective."""
    missing, elsewhere = [], {}
    for r in asked:
        where = dog._replies.get(r)
        if where is None or r in dog.departed:
            missing.append(r)
        elif tuple(where) != dog.where:
            elsewhere[r] = tuple(where)
    return missing, elsewhere


def _report(dog, waited, missing, elsewhere):
    number, name = dog.where
    parts = [f"rank {dog.rank} of {dog.size} has waited {_secs(waited)} in collective "
             f"#{number} {name}"]
    if missing:
        parts.append(f"{_ranks(missing)} {'has' if len(missing) == 1 else 'have'} not reached "
                     "it (busy outside gradflow's collectives: a slow step, a sleep, a deadlock "
                     "in user code?)")
    for r, (their_number, their_name) in sorted(elsewhere.items()):
        parts.append(f"rank {r} waits in collective #{their_number} {their_name} instead")
    return "; ".join(parts)


def _ranks(ranks):
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def _secs(seconds):
    return f"{seconds:.1f} s"
