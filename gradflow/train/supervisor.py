"""TF1's ``tf.train.Supervisor``: a training loop's session that starts from the latest
checkpoint of ``logdir`` (or initializes), saves a checkpoint there every
``save_model_secs`` seconds and writes the summaries every ``save_summaries_secs``
seconds from background threads, and stops cleanly at the end of the input.

>>> sv = gf.train.Supervisor(logdir="/tmp/run", save_model_secs=60)
>>> with sv.managed_session() as sess:
...     while not sv.should_stop():
...         sess.run(train_op)

One process: ``master`` is ``""``; a non-chief waits for a model that is ready in
its own session (``SessionManager.wait_for_session``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from gradflow import summary as summary_module
from gradflow import tf_logging
from gradflow.graph import get_default_graph
from gradflow.lookup import tables_initializer
from gradflow.ops.state_ops import group
from gradflow.train.coordinator import Coordinator, start_queue_runners
from gradflow.train.saver import Saver
from gradflow.train.session_manager import UNINITIALIZED_GLOBALS, SessionManager
from gradflow.variables import (
    GraphKeys,
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)

__all__ = ["Supervisor"]


class _UseDefault:
    def __repr__(self):
        return "Supervisor.USE_DEFAULT"


class Supervisor:
    """See the module docstring. The arguments are TF1's; ``USE_DEFAULT`` takes the
    graph's collection (``INIT_OP``, ``LOCAL_INIT_OP``, ``READY_OP``, ``SUMMARY_OP``,
    ``SAVERS``, ``GLOBAL_STEP``) or makes the usual op; ``None`` turns the service off."""

    USE_DEFAULT = _UseDefault()

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None,
                 summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        self._graph = graph if graph is not None else get_default_graph()
        with self._graph.as_default():
            self._init_ops(init_op, ready_op, ready_for_local_init_op, local_init_op,
                           init_feed_dict, init_fn)
            self._summary_op = self._or_default(summary_op, GraphKeys.SUMMARY_OP,
                                                summary_module.merge_all)
            self._saver = self._or_default(saver, GraphKeys.SAVERS, self._default_saver)
            self._global_step = self._default_step() if global_step is self.USE_DEFAULT \
                else global_step
        self._is_chief, self._logdir = is_chief, logdir
        self._save_summaries_secs, self._save_model_secs = save_summaries_secs, save_model_secs
        self._recovery_wait_secs, self._stop_grace_secs = recovery_wait_secs, stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        if summary_writer is self.USE_DEFAULT:
            summary_writer = summary_module.FileWriter(logdir) if logdir and is_chief \
                else None
        self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs)
        self._coord = Coordinator()
        self._threads = []
        self._graph_written = False
        self._graph.finalize()

    def _or_default(self, given, key, make):
        if given is not self.USE_DEFAULT:
            return given
        found = self._graph.get_collection(key)
        if found:
            return found[0]
        made = make()
        if made is not None:
            self._graph.add_to_collection(key, made)
        return made

    def _init_ops(self, init_op, ready_op, ready_for_local_init_op, local_init_op,
                  init_feed_dict, init_fn):
        self._init_op = self._or_default(init_op, GraphKeys.INIT_OP,
                                         global_variables_initializer)
        if ready_op is self.USE_DEFAULT:  # the host check unless the graph names an op
            found = self._graph.get_collection(GraphKeys.READY_OP)
            ready_op = found[0] if found else UNINITIALIZED_GLOBALS
        self._ready_op = ready_op
        self._ready_for_local_init_op = UNINITIALIZED_GLOBALS \
            if ready_for_local_init_op is self.USE_DEFAULT else ready_for_local_init_op
        self._local_init_op = self._or_default(  # TF1's: local variables and tables
            local_init_op, GraphKeys.LOCAL_INIT_OP,
            lambda: group(local_variables_initializer(), tables_initializer()))
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn

    @staticmethod
    def _default_saver():
        return Saver() if global_variables() else None

    def _default_step(self):
        found = self._graph.get_collection(GraphKeys.GLOBAL_STEP)
        if found:
            return found[0]
        try:
            return self._graph.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return None

    # -- TF1's properties ---------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief, doc="Whether this is the chief.")
    coord = property(lambda self: self._coord, doc="The Coordinator of the threads.")
    init_op = property(lambda self: self._init_op, doc="The op that initializes the model.")
    init_feed_dict = property(lambda self: self._init_feed_dict, doc="``init_op``'s feeds.")
    ready_op = property(lambda self: self._ready_op, doc="What tells that the model is ready.")
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op,
                                       doc="What tells that local init may run.")
    summary_writer = property(lambda self: self._summary_writer, doc="The FileWriter, or None.")
    summary_op = property(lambda self: self._summary_op, doc="The merged summaries, or None.")
    save_summaries_secs = property(lambda self: self._save_summaries_secs,
                                   doc="Seconds between summaries.")
    global_step = property(lambda self: self._global_step, doc="The global step, or None.")
    saver = property(lambda self: self._saver, doc="The Saver of the checkpoints, or None.")
    session_manager = property(lambda self: self._session_manager,
                               doc="The SessionManager that makes the sessions.")
    save_model_secs = property(lambda self: self._save_model_secs,
                               doc="Seconds between checkpoints.")
    save_path = property(lambda self: self._save_path,
                         doc="The checkpoints' path prefix, ``logdir/checkpoint_basename``.")

    # -- sessions -----------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        """A session whose model is ready: the chief restores the latest checkpoint of
        ``logdir`` or initializes; then the standard services and the queue runners
        start.

        >>> sess = sv.prepare_or_wait_for_session()
        """
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        """A ``with`` block around a prepared session: an exception in it (but the end of
        the input, ``OutOfRangeError``) stops the services and is raised again after
        them; the session closes at the end.

        >>> with sv.managed_session() as sess:
        ...     while not sv.should_stop(): sess.run(train_op)
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as err:  # noqa: BLE001 - handed to the coordinator, raised by stop
            self.request_stop(err)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                if sess is not None:
                    sess.close()

    def start_standard_services(self, sess):
        """Start the summary, step-counter and checkpoint threads (chief, with a
        ``logdir``); returns them.

        >>> threads = sv.start_standard_services(sess)
        """
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        if not self._logdir:
            tf_logging.warning("Standard services need a 'logdir' passed to the Supervisor")
            return []
        threads = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(_Looper(self, self._save_summaries_secs, self._summaries, sess))
            if self._global_step is not None:
                threads.append(_StepCounter(self, sess))
        if self._saver is not None and self._save_model_secs:
            threads.append(_Looper(self, self._save_model_secs, self._checkpoint, sess))
        for thread in threads:
            thread.start()
        return threads

    def _summaries(self, sess):
        if self._global_step is not None:
            summary, step = sess.run([self._summary_op, self._global_step])
        else:
            summary, step = sess.run(self._summary_op), None
        self._summary_writer.add_summary(summary, None if step is None else int(step))

    def _checkpoint(self, sess):
        self._saver.save(sess, self._save_path, global_step=self._global_step)

    def _write_graph(self):
        if self._graph_written or not self._is_chief or self._summary_writer is None:
            return
        self._summary_writer.add_graph(self._graph)
        self._graph_written = True

    def start_queue_runners(self, sess, queue_runners=None):
        """Start the graph's queue runners under this supervisor's coordinator.

        >>> sv.start_queue_runners(sess)
        """
        if queue_runners is not None:
            threads = [t for qr in queue_runners
                       for t in qr.create_threads(sess, coord=self._coord, daemon=True,
                                                  start=True)]
        else:
            threads = start_queue_runners(sess, self._coord)
        self._threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Call ``target(*args, **kwargs)`` every ``timer_interval_secs`` seconds in a
        thread until the supervisor stops; returns the started thread.

        >>> sv.loop(60, print_loss, (sess,))
        """
        thread = _Looper(self, timer_interval_secs,
                         lambda: target(*(args or ()), **(kwargs or {})), None)
        thread.start()
        return thread

    def summary_computed(self, sess, summary, global_step=None):
        """Write ``summary`` (what a summary op computed) at ``global_step`` (default: the
        global step's value in ``sess``).

        >>> sv.summary_computed(sess, sess.run(merged))
        """
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self._summary_writer.add_summary(summary, global_step)

    # -- stopping -----------------------------------------------------------------------
    def should_stop(self) -> bool:
        """Whether a stop was requested (``sv.should_stop()`` ends the loop).

        >>> while not sv.should_stop(): sess.run(train_op)
        """
        return self._coord.should_stop()

    def request_stop(self, ex=None):
        """Ask the loop and the threads to stop; ``ex`` is raised again by ``stop``.

        >>> sv.request_stop()
        """
        self._coord.request_stop(ex)

    def stop_on_exception(self):
        """A context that requests a stop when its block raises.

        >>> with sv.stop_on_exception(): work()
        """
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        """Block until a stop is requested.

        >>> sv.wait_for_stop()
        """
        self._coord.wait_for_stop()

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stop the services and join their threads; raises what ``request_stop`` was
        given (but ``OutOfRangeError``).

        >>> sv.stop()
        """
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer is not None:
                self._summary_writer.close()
                self._graph_written = False


class _Looper(threading.Thread):
    """Run ``work(sess)`` (or ``work()``) at once and then every ``secs`` seconds until
    the coordinator stops; an error stops the coordinator with it."""

    def __init__(self, sv, secs, work, sess):
        super().__init__(daemon=True)
        self._coord, self._secs, self._work, self._sess = sv.coord, secs, work, sess
        self._coord.register_thread(self)

    def run(self):
        with self._coord.stop_on_exception():
            while not self._coord.should_stop():
                if self._sess is None:
                    self._work()
                else:
                    self._work(self._sess)
                if self._coord.wait_for_stop(self._secs):
                    break


class _StepCounter(_Looper):
    """Write ``global_step/sec`` every ``save_summaries_secs`` seconds."""

    def __init__(self, sv, sess):
        super().__init__(sv, sv.save_summaries_secs, self._count, sess)
        self._sv, self._last = sv, None
        self._tag = f"{sv.global_step.name}/sec"

    def _count(self, sess):
        step, now = int(sess.run(self._sv.global_step)), time.time()
        if self._last is not None and now > self._last[1]:
            rate = (step - self._last[0]) / (now - self._last[1])
            value = summary_module.Summary.Value(tag=self._tag, simple_value=rate)
            self._sv.summary_writer.add_summary(summary_module.Summary(value=[value]), step)
        self._last = (step, now)
