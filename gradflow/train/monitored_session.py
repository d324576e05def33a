"""TF1's ``train.MonitoredTrainingSession``: a session that initializes (or restores)
the variables, runs hooks around every ``run``, saves checkpoints and summaries, and
ends the ``with`` block quietly at the end of the input (``OutOfRangeError``).

>>> step = gf.train.get_or_create_global_step()
>>> train_op = gf.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
>>> with gf.train.MonitoredTrainingSession(
...         checkpoint_dir="/tmp/run", hooks=[gf.train.StopAtStepHook(last_step=1000)]) as sess:
...     while not sess.should_stop():
...         sess.run(train_op, feed_dict=next_feed())
"""

from __future__ import annotations

from gradflow import errors
from gradflow.config import RunMetadata, RunOptions
from gradflow.graph import get_default_graph
from gradflow.train.coordinator import Coordinator, start_queue_runners
from gradflow.train.scaffold import Scaffold
from gradflow.train.session_manager import SessionManager
from gradflow.train.session_run_hook import (
    CheckpointSaverHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunValues,
    SummarySaverHook,
)

__all__ = ["MonitoredSession", "MonitoredTrainingSession"]


class MonitoredSession:
    """A ``Session`` with hooks (see the module docstring); made by
    ``MonitoredTrainingSession``. ``run`` takes TF1's arguments; ``should_stop`` tells
    when a hook (or the coordinator) asked to stop. ``scaffold`` gives the init ops and
    the saver (default: a ``Scaffold()``, whose ops come from the graph's collections)."""

    def __init__(self, hooks=(), checkpoint_dir=None, config=None,
                 stop_grace_period_secs=120, scaffold=None):
        self._hooks = list(hooks or ())
        self.graph = get_default_graph()
        self.scaffold = scaffold if scaffold is not None else Scaffold()
        for hook in self._hooks:
            hook.begin()
        # as TF1's Scaffold: every op exists now, so a loop that builds more fails at once
        self.scaffold.finalize()
        self._coord = Coordinator()
        self._grace = stop_grace_period_secs
        self._stop = False
        self._sess = self._create(checkpoint_dir, config)

    def _create(self, checkpoint_dir, config):
        scaffold = self.scaffold
        manager = SessionManager(local_init_op=scaffold.local_init_op,
                                 ready_op=scaffold.ready_op,
                                 ready_for_local_init_op=scaffold.ready_for_local_init_op,
                                 graph=self.graph,
                                 local_init_feed_dict=scaffold.local_init_feed_dict)
        sess = manager.prepare_session("", init_op=scaffold.init_op, saver=scaffold.saver,
                                       checkpoint_dir=checkpoint_dir, config=config,
                                       init_feed_dict=scaffold.init_feed_dict,
                                       init_fn=scaffold.init_fn)
        start_queue_runners(sess, self._coord)  # TF1 starts the graph's queue runners too
        for hook in self._hooks:
            hook.after_create_session(sess, self._coord)
        return sess

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run ``fetches`` together with what the hooks ask for; returns the caller's values."""
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        asks = [hook.before_run(context) for hook in self._hooks]
        feeds = dict(feed_dict or {})
        for ask in asks:
            for key, value in ((ask.feed_dict or {}) if ask is not None else {}).items():
                if key in feeds:
                    raise RuntimeError(f"Same tensor is fed by two hooks: {key}")
                feeds[key] = value
        hook_fetches = [[] if ask is None or ask.fetches is None else ask.fetches
                        for ask in asks]
        options = _merged_options(options, asks)
        if options is not None and run_metadata is None:
            run_metadata = RunMetadata()
        results = self._sess.run({"caller": fetches, "hooks": hook_fetches}, feeds,
                                 options=options, run_metadata=run_metadata)
        for hook, ask, values in zip(self._hooks, asks, results["hooks"]):
            hook.after_run(context, SessionRunValues(None if ask is None or ask.fetches is None
                                                     else values,
                                                     options, run_metadata))
        self._stop = self._stop or context.stop_requested
        return results["caller"]

    def should_stop(self) -> bool:
        """Whether training should end: a hook asked to stop, the input ran out, or a
        thread of the coordinator failed.

        >>> while not sess.should_stop(): sess.run(train_op)
        """
        return self._stop or self._coord.should_stop()

    def close(self):
        """End the session: hooks' ``end`` runs and the underlying Session closes.

        >>> sess.close()
        """
        self._close(error=False)

    def _close(self, error):
        if self._sess is None:
            return
        try:
            if not error:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            self._coord.request_stop()
            self._sess.close()
            self._sess = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        clean = exc_type is None or issubclass(exc_type, (errors.OutOfRangeError,
                                                          StopIteration))
        self._close(error=not clean)
        return exc_type is not None and clean  # the end of the input ends the block


def _merged_options(options, asks):
    """The caller's ``RunOptions`` with the deepest ``trace_level`` any hook asks for."""
    levels = [getattr(a.options, "trace_level", 0) for a in asks
              if a is not None and a.options is not None]
    if not levels:
        return options
    merged = RunOptions(trace_level=max(levels + [getattr(options, "trace_level", 0)]))
    return merged


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,  # noqa: N802 - TF1 name
                             hooks=None, chief_only_hooks=None, save_checkpoint_secs=600,
                             save_summaries_steps=100, save_summaries_secs=None, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=None,
                             summary_dir=None):
    """A ``MonitoredSession`` for training (TF1): it initializes the variables or restores
    the latest checkpoint of ``checkpoint_dir``, then saves one there every
    ``save_checkpoint_steps`` steps (else ``save_checkpoint_secs`` seconds) and at the
    end, and writes the graph's summaries to ``summary_dir`` (default
    ``checkpoint_dir``) every ``save_summaries_steps`` steps. ``hooks`` run around each
    ``run``. One process only: ``master`` must be empty and ``is_chief`` True."""
    if master or not is_chief:
        raise NotImplementedError("MonitoredTrainingSession: distributed sessions (master=, "
                                  "is_chief=False) are not supported; see gradflow.distributed")
    all_hooks = list(hooks or ()) + list(chief_only_hooks or ())
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir and (save_summaries_steps or save_summaries_secs):
        all_hooks.append(SummarySaverHook(
            save_steps=None if save_summaries_secs else save_summaries_steps,
            save_secs=save_summaries_secs, output_dir=summary_dir, scaffold=scaffold))
    if checkpoint_dir and (save_checkpoint_steps or save_checkpoint_secs):
        all_hooks.append(CheckpointSaverHook(
            checkpoint_dir, save_secs=None if save_checkpoint_steps else save_checkpoint_secs,
            save_steps=save_checkpoint_steps, scaffold=scaffold))
    return MonitoredSession(all_hooks, checkpoint_dir, config, stop_grace_period_secs,
                            scaffold=scaffold)
