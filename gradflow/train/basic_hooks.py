"""TF1's other session hooks: ``LoggingTensorHook``, ``NanTensorHook``,
``StepCounterHook``, ``ProfilerHook``, ``FinalOpsHook``, ``FeedFnHook``,
``GlobalStepWaiterHook``, and the ``SecondOrStepTimer`` they pace themselves with.

>>> hooks = [gf.train.NanTensorHook(loss),
...          gf.train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=100)]
>>> with gf.train.MonitoredTrainingSession(hooks=hooks) as sess:
...     sess.run(train_op)
"""

from __future__ import annotations

import os
import time

import numpy as np

from gradflow import summary as summary_module
from gradflow import tf_logging
from gradflow.config import RunOptions
from gradflow.graph import get_default_graph
from gradflow.timeline import Timeline
from gradflow.train.session_run_hook import SessionRunArgs, SessionRunHook, _global_step_or_fail

__all__ = ["FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook", "LoggingTensorHook",
           "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook", "SecondOrStepTimer",
           "StepCounterHook"]


class SecondOrStepTimer:
    """Fires every ``every_secs`` seconds or every ``every_steps`` steps (one of them).

    >>> timer = gf.train.SecondOrStepTimer(every_steps=100)
    >>> timer.should_trigger_for_step(0)
    True
    """

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("Either every_secs or every_steps should be provided.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self):
        """Forget the last firing: the next step fires."""
        self._last_time, self._last_step = None, None

    def should_trigger_for_step(self, step) -> bool:
        """Whether ``step`` is due."""
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Mark ``step`` as fired; returns ``(seconds, steps)`` since the last firing
        (``(None, None)`` the first time)."""
        now = time.time()
        elapsed = (None, None) if self._last_time is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed

    def last_triggered_step(self):
        """The step of the last firing, or None."""
        return self._last_step


def _as_tensor(item):
    return get_default_graph().get_tensor_by_name(item) if isinstance(item, str) else item


class LoggingTensorHook(SessionRunHook):
    """Log the values of ``tensors`` (a dict tag -> tensor or name, or a list) every
    ``every_n_iter`` runs or ``every_n_secs`` seconds, and with ``at_end`` once more at
    the end; ``formatter(values_dict)`` makes the line."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            tensors = {getattr(t, "name", t): t for t in tensors}
        self._tag_order = list(tensors)
        self._tensors = tensors
        self._timer = None if only_log_at_end else \
            SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end, self._formatter = at_end, formatter

    def begin(self):
        if self._timer is not None:
            self._timer.reset()
        self._iter = 0
        self._current = {tag: _as_tensor(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._current) if self._should else None

    def _log(self, values):
        elapsed = None
        if self._timer is not None:
            elapsed, _ = self._timer.update_last_triggered_step(self._iter)
        if self._formatter is not None:
            tf_logging.info("%s", self._formatter(values))
            return
        with np.printoptions(suppress=True):
            line = ", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order)
        if elapsed is None:
            tf_logging.info("%s", line)
        else:
            tf_logging.info("%s (%.3f sec)", line, elapsed)

    def after_run(self, run_context, run_values):
        if self._should:
            self._log(run_values.results)
        self._iter += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._current))


class NanLossDuringTrainingError(RuntimeError):
    """What ``NanTensorHook`` raises when the loss is NaN."""

    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Check ``loss_tensor`` after every run: NaN raises ``NanLossDuringTrainingError``
    (with ``fail_on_nan_loss=False``: a warning, and a request to stop)."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results).any():
            message = "Model diverged with loss = NaN."
            if self._fail:
                tf_logging.error("%s", message)
                raise NanLossDuringTrainingError
            tf_logging.warning("%s", message)
            run_context.request_stop()


class StepCounterHook(SessionRunHook):
    """Write the training speed, ``global_step/sec``, to ``output_dir`` (or
    ``summary_writer``) every ``every_n_steps`` steps or ``every_n_secs`` seconds, and
    log it."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._writer, self._output_dir = summary_writer, output_dir

    def begin(self):
        if self._writer is None and self._output_dir:
            self._writer = summary_module.FileWriterCache.get(self._output_dir)
        self._step = _global_step_or_fail("StepCounterHook")
        self._tag = f"{self._step.name}/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results) + 1  # the run's increment has landed
        if self._timer.should_trigger_for_step(step):
            secs, steps = self._timer.update_last_triggered_step(step)
            if secs:
                rate = steps / secs
                if self._writer is not None:
                    value = summary_module.Summary.Value(tag=self._tag, simple_value=rate)
                    self._writer.add_summary(summary_module.Summary(value=[value]), step)
                tf_logging.info("%s: %g", self._tag, rate)


class ProfilerHook(SessionRunHook):
    """Trace one run every ``save_steps`` steps or ``save_secs`` seconds and write its
    timeline to ``output_dir/timeline-<step>.json`` (Chrome trace format, as
    ``gf.timeline``), and its run metadata to the summaries of ``output_dir``."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._output_dir = output_dir
        self._show = (show_dataflow, show_memory)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        self._next_step = None
        self._step = _global_step_or_fail("ProfilerHook")

    def before_run(self, run_context):
        self._request = self._next_step is not None and \
            self._timer.should_trigger_for_step(self._next_step)
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request else None
        return SessionRunArgs({"global_step": self._step}, options=options)

    def after_run(self, run_context, run_values):
        stale = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale)
        step = stale + 1
        if self._request:
            step = int(run_context.session.run(self._step))
            self._timer.update_last_triggered_step(step)
            trace = Timeline(run_values.run_metadata.step_stats)
            os.makedirs(self._output_dir or ".", exist_ok=True)
            with open(self._output_file.format(step), "w") as f:
                f.write(trace.generate_chrome_trace_format(*self._show))
            if self._output_dir:
                summary_module.FileWriterCache.get(self._output_dir).add_run_metadata(
                    run_values.run_metadata, f"step_{step}", step)
        self._next_step = step + 1


class FinalOpsHook(SessionRunHook):
    """Run ``final_ops`` (with ``final_ops_feed_dict``) when the session ends; their
    values are ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops, self._feed = final_ops, final_ops_feed_dict
        self._values = None

    @property
    def final_ops_values(self):
        """The values of ``final_ops`` at the end (None before).

        >>> hook.final_ops_values
        """
        return self._values

    def end(self, session):
        if self._final_ops is not None:
            self._values = session.run(self._final_ops, feed_dict=self._feed)


class FeedFnHook(SessionRunHook):
    """Feed what ``feed_fn()`` returns (a feed dict) into every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Hold every run until the global step reaches ``wait_until_step`` (a worker of a
    distributed job waits for the chief). A gradflow session's global step moves only
    by its own runs, so a step above the current one waits for ever in one process."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._step = _global_step_or_fail("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started or self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        last_logged = None
        while True:
            current = int(run_context.session.run(self._step))
            if current >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current != last_logged:
                tf_logging.info("Waiting for global step %d before starting training; "
                                "now %d.", self._wait_until_step, current)
                last_logged = current
            time.sleep(0.5)

