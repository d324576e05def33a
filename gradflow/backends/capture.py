"""What a backend needs to capture a plan's run (``gradflow.capture`` drives it).

``NotCapturable`` is the reason a plan runs uncaptured; ``RecordingCapturer`` is the
CPU's capturer (every backend's default, ``Backend.capturer``); ``CaptureGate``
keeps a device stream to one thread while it captures. They sit with the backends,
below the session layer that drives a captured run with a Session's run state.
"""

from __future__ import annotations

import contextlib
import re
import threading

# The names of a plan's op steps in its generated function's globals (``F3``) and of
# its in-place takers (``I3``), which a capture swaps for its own.
STEP = re.compile(r"[FI]\d+")


class NotCapturable(Exception):
    """Why a plan runs uncaptured."""


class RecordingCapturer:
    """The CPU's capture: record each op call of one run (its function, its argument
    arrays and output buffers) and replay by making the same calls again (run-time
    checks included: they are calls like the others)."""

    executes = True
    checks_feeds_first = False

    def check(self, schedule):
        if not schedule.replayable:
            raise NotCapturable(schedule.why_not_replayable())

    def capture(self, plan, run):
        env = plan.fn.__globals__
        originals = {k: f for k, f in env.items() if k[0] == "F" and STEP.fullmatch(k)}
        calls, results = [], []

        def recorder(fn):
            def record(*args, **kwargs):
                value = fn(*args, **kwargs)
                calls.append((fn, args, kwargs))
                results.append(value)
                return value

            return record

        env.update({k: recorder(f) for k, f in originals.items()})
        try:
            values = run()
        finally:
            env.update(originals)
        where = _producers(values, results)

        def replay():
            out = [None] * len(calls)
            for k, (fn, args, kwargs) in enumerate(calls):
                out[k] = fn(*args, **kwargs)
            return tuple(v if at is None else (out[at[0]] if at[1] is None else out[at[0]][at[1]])
                         for v, at in zip(values, where))

        return values, replay, True


def _producers(values, results):
    """For each fetched value, ``(call, output)`` of the call that returned it (output
    None for the whole result), or None for a value no call made (a fed or variable
    array, the same on every run)."""
    made = {}
    for k, result in enumerate(results):
        if isinstance(result, tuple):
            for j, part in enumerate(result):
                made[id(part)] = (k, j)
        else:
            made[id(result)] = (k, None)
    return [made.get(id(v)) if v is not None else None for v in values]


class CaptureGate:
    """Keeps a device stream to one thread while it captures. A thread works on the
    device inside ``run()`` (a session run, a copy in or out); ``exclusive()`` yields
    True, and makes the others wait at ``run()`` until it ends, only where no other
    thread is inside ``run()``. Whatever a thread enqueued during another's capture
    would be captured with it, or end it with an error.

    The capturing thread holds the session's store lock first, so a thread that waits
    here while holding that lock (a Saver) cannot be waited for by the capture.
    """

    def __init__(self):
        self._changed = threading.Condition()
        self._inside = {}  # thread id -> depth of its nested run() blocks
        self._capturer = None

    @contextlib.contextmanager
    def run(self):
        me = threading.get_ident()
        with self._changed:
            while self._capturer not in (None, me):
                self._changed.wait()
            self._inside[me] = self._inside.get(me, 0) + 1
        try:
            yield
        finally:
            with self._changed:
                depth = self._inside.pop(me) - 1
                if depth:
                    self._inside[me] = depth

    @contextlib.contextmanager
    def exclusive(self):
        me = threading.get_ident()
        with self._changed:
            alone = all(thread == me for thread in self._inside)
            if alone:
                self._capturer = me
        try:
            yield alone
        finally:
            if alone:
                with self._changed:
                    self._capturer = None
                    self._changed.notify_all()
