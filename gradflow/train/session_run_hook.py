"""TF1's session hooks: ``SessionRunHook`` and the hooks ``MonitoredTrainingSession``
uses (``StopAtStepHook``, ``CheckpointSaverHook``, ``SummarySaverHook``).

A hook sees every ``run`` of a ``MonitoredSession``: ``before_run`` may add
fetches and feeds (a ``SessionRunArgs``), ``after_run`` gets their values and may
``request_stop`` through the run context.

>>> hooks = [gf.train.StopAtStepHook(last_step=1000)]
>>> with gf.train.MonitoredTrainingSession(hooks=hooks) as sess:
...     while not sess.should_stop():
...         sess.run(train_op)
"""

from __future__ import annotations

import collections
import os
import time

__all__ = ["CheckpointSaverHook", "CheckpointSaverListener", "SessionRunArgs",
           "SessionRunContext", "SessionRunHook", "SessionRunValues", "StopAtStepHook",
           "SummarySaverHook"]


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: ``fetches`` and ``feed_dict``."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


SessionRunValues = collections.namedtuple("SessionRunValues",
                                          ["results", "options", "run_metadata"])
SessionRunValues.__doc__ = "The values of a hook's fetches (``results``) after a run."


class SessionRunContext:
    """The run being made: the caller's ``original_args`` and the ``session``."""

    def __init__(self, original_args, session):
        self.original_args = original_args
        self.session = session
        self._stop_requested = False

    def request_stop(self):
        """Ask the MonitoredSession to stop: ``should_stop()`` becomes True after the run."""
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        """Whether a hook called ``request_stop()`` during this run.

        >>> run_context.stop_requested   # False until a hook asks to stop
        """
        return self._stop_requested


class SessionRunHook:
    """The base of the hooks: every method does nothing."""

    def begin(self):
        """Called once before the session is made; the graph may still grow."""

    def after_create_session(self, session, coord):
        """Called once the session is made and its variables initialized or restored."""

    def before_run(self, run_context):
        """``SessionRunArgs`` to add to the coming run, or None."""
        return None

    def after_run(self, run_context, run_values):
        """Called after each run with the values of what ``before_run`` asked for."""

    def end(self, session):
        """Called when the MonitoredSession closes without an error."""


def _global_step_or_fail(what):
    from gradflow.train.optimizers import get_global_step

    step = get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {what}.")
    return step


class StopAtStepHook(SessionRunHook):
    """Request a stop once the global step reaches ``last_step`` (or ``num_steps`` more
    than when the session started)."""

    def __init__(self, num_steps=None, last_step=None):
        if (num_steps is None) == (last_step is None):
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and num_steps < 0:
            raise ValueError("Num steps must be non-negative.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        self._step = _global_step_or_fail("StopAtStepHook")

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._step)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        # the step read in the run is the value before the run's increment lands
        if int(run_values.results) + 1 >= self._last_step:
            if int(run_context.session.run(self._step)) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Told around each save of a ``CheckpointSaverHook``: ``after_save`` returning True
    stops training."""

    def begin(self):
        """Called once, when the hook's ``begin`` runs."""

    def before_save(self, session, global_step_value):
        """Called before each save."""

    def after_save(self, session, global_step_value):
        """Called after each save; True asks the session to stop."""

    def end(self, session, global_step_value):
        """Called at the end, after the last save."""


class _EveryN(SessionRunHook):
    """A hook that acts every ``steps`` global steps or ``secs`` seconds."""

    def __init__(self, steps, secs, what):
        if (steps is None) == (secs is None):
            raise ValueError(f"{what}: exactly one of save_steps and save_secs should be "
                             "provided.")
        self._every_steps, self._every_secs = steps, secs
        self._last_step, self._last_time = None, None

    def begin(self):
        self._step = _global_step_or_fail(type(self).__name__)

    def _due(self, step) -> bool:
        if self._last_step is None:
            return True
        if self._every_steps is not None:
            return step >= self._last_step + self._every_steps
        return time.monotonic() >= self._last_time + self._every_secs

    def _mark(self, step):
        self._last_step, self._last_time = step, time.monotonic()


class CheckpointSaverHook(_EveryN):
    """Save a checkpoint to ``checkpoint_dir/checkpoint_basename`` every ``save_steps``
    steps or ``save_secs`` seconds, and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        super().__init__(save_steps, save_secs, "CheckpointSaverHook")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._saver, self._scaffold = saver, scaffold
        self._listeners = list(listeners or ())

    def begin(self):
        from gradflow.train.scaffold import get_saver_or_default

        super().begin()
        if self._saver is None and self._scaffold is None:
            self._saver = get_saver_or_default()  # the one the session's Scaffold takes
        for listener in self._listeners:
            listener.begin()

    def _save(self, session, step):
        """Save at ``step`` (each listener told before and after); True to stop."""
        for listener in self._listeners:
            listener.before_save(session, step)
        saver = self._saver if self._saver is not None else self._scaffold.saver
        saver.save(session, self._path, global_step=step)
        self._mark(step)
        return any([listener.after_save(session, step) for listener in self._listeners])

    def after_create_session(self, session, coord):
        self._save(session, int(session.run(self._step)))

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._step))
        if self._due(step) and self._save(run_context.session, step):
            run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._step))
        if step != self._last_step:
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)


class SummarySaverHook(_EveryN):
    """Run ``summary_op`` (default: every summary of the graph) every ``save_steps`` steps
    or ``save_secs`` seconds and write it to ``output_dir`` (or ``summary_writer``)."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None,
                 summary_writer=None, scaffold=None, summary_op=None):
        super().__init__(save_steps, save_secs, "SummarySaverHook")
        if (output_dir is None) == (summary_writer is None):
            raise ValueError("SummarySaverHook: exactly one of output_dir and summary_writer "
                             "should be provided.")
        self._output_dir, self._writer, self._summary_op = output_dir, summary_writer, \
            summary_op
        self._scaffold = scaffold

    def begin(self):
        from gradflow.summary import FileWriterCache, merge_all

        super().begin()
        if self._writer is None:
            self._writer = FileWriterCache.get(self._output_dir)
        if self._summary_op is None and self._scaffold is None:
            self._summary_op = merge_all()
        self._request = False

    def before_run(self, run_context):
        if self._summary_op is None and self._scaffold is not None:
            self._summary_op = self._scaffold.summary_op
        self._request = self._summary_op is not None and self._due(self._next_step)
        fetches = {"step": self._step}
        if self._request:
            fetches["summary"] = self._summary_op
        return SessionRunArgs(fetches)

    def after_create_session(self, session, coord):
        self._next_step = int(session.run(self._step))

    def after_run(self, run_context, run_values):
        step = int(run_values.results["step"])
        if self._request:
            summaries = run_values.results["summary"]
            for summary in summaries if isinstance(summaries, list) else [summaries]:
                self._writer.add_summary(summary, step)
            self._mark(step)
        self._next_step = step + 1

    def end(self, session):
        if self._writer is not None:
            self._writer.flush()
