"""TF1's ``tf.train.SessionManager``: make a session whose model is ready, restoring the
latest checkpoint of a folder when there is one and initializing otherwise.

The model is "ready" when ``ready_op`` (a tensor listing what is not ready, as
``report_uninitialized_variables`` does) evaluates to an empty array. With
``ready_op=UNINITIALIZED_GLOBALS`` (what ``Supervisor`` and ``Scaffold`` use by
default) the check is made on the host: every global variable of the graph must
have a value in the session. ``None`` checks nothing.

>>> sm = gf.train.SessionManager()
>>> sess = sm.prepare_session("", init_op=gf.global_variables_initializer(),
...                           saver=saver, checkpoint_dir="ckpt")
"""

from __future__ import annotations

import time

import numpy as np

from gradflow import errors, tf_logging
from gradflow.graph import get_default_graph
from gradflow.session import Session
from gradflow.train.saver import get_checkpoint_state
from gradflow.variables import GLOBAL_VARIABLES

__all__ = ["SessionManager", "UNINITIALIZED_GLOBALS"]

# TF1's DEADLINE_EXCEEDED; gradflow.errors gains it with TF1's other error codes (issue 47)
_DeadlineExceeded = getattr(errors, "DeadlineExceededError", errors.UnknownError)


class _UninitializedGlobals:
    """The default readiness check: the graph's global variables without a value."""

    def __repr__(self):
        return "UNINITIALIZED_GLOBALS"

    @staticmethod
    def missing(sess):
        store = sess.run_state.store
        return [v.name for v in sess.graph.get_collection(GLOBAL_VARIABLES) if v not in store]


UNINITIALIZED_GLOBALS = _UninitializedGlobals()


def not_ready(sess, ready_op, feed_dict=None):
    """The names ``ready_op`` reports in ``sess`` (empty: ready)."""
    if ready_op is None:
        return []
    if ready_op is UNINITIALIZED_GLOBALS:
        return UNINITIALIZED_GLOBALS.missing(sess)
    value = np.asarray(sess.run(ready_op, feed_dict=feed_dict))
    return [v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]


class SessionManager:
    """Makes sessions in which the model is ready (see the module docstring).
    ``local_init_op`` runs in every session it makes; ``recovery_wait_secs`` is the pause
    between looks for a checkpoint or a ready model. Sessions are in-process: ``master``
    must be ``""``."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        self._graph = graph if graph is not None else get_default_graph()
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_feed_dict = local_init_feed_dict

    def _new_session(self, master, config):
        if master:
            raise NotImplementedError(f"SessionManager: master={master!r}: only in-process "
                                      "sessions (master='') are supported")
        return Session(graph=self._graph, config=config)

    def _restore(self, master, saver, checkpoint_dir, checkpoint_filename_with_path,
                 wait_for_checkpoint, max_wait_secs, config):
        """``(session, restored)``: a new session, and whether a checkpoint was restored."""
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        sess = self._new_session(master, config)
        if saver is None or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        waited = 0.0
        state = get_checkpoint_state(checkpoint_dir)
        while state is None or not state.model_checkpoint_path:
            if not wait_for_checkpoint or waited >= max_wait_secs:
                return sess, False
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            state = get_checkpoint_state(checkpoint_dir)
        saver.restore(sess, state.model_checkpoint_path)
        return sess, True

    def _local_init(self, sess):
        """``(ok, message)``: run ``local_init_op`` once ``ready_for_local_init_op`` is."""
        if self._local_init_op is None:
            return True, None
        missing = not_ready(sess, self._ready_for_local_init_op)
        if missing:
            return False, f"Variables not initialized: {', '.join(missing)}"
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
        return True, None

    def _ready(self, sess):
        missing = not_ready(sess, self._ready_op)
        return (False, f"Variables not initialized: {', '.join(missing)}") if missing \
            else (True, None)

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        """A session with the model ready: the checkpoint restored (the latest of
        ``checkpoint_dir``, or ``checkpoint_filename_with_path``), else ``init_op`` run
        (with ``init_feed_dict``) and ``init_fn(sess)`` called; then ``local_init_op``.
        ``RuntimeError`` when the model is still not ready.

        >>> sess = sm.prepare_session("", init_op=init, saver=saver, checkpoint_dir="ckpt")
        """
        sess, restored = self._restore(master, saver, checkpoint_dir,
                                       checkpoint_filename_with_path, wait_for_checkpoint,
                                       max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                sess.close()
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, message = self._local_init(sess)
        if ok:
            ok, message = self._ready(sess)
        if not ok:
            sess.close()
            raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                               f"{_name(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{_name(self._local_init_op)}, error: {message}")
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None):
        """``(session, initialized)``: a session with the checkpoint restored and the
        local init run; ``initialized`` is False when there was no checkpoint or the
        model is not ready (then the caller initializes it).

        >>> sess, ok = sm.recover_session("", saver=saver, checkpoint_dir="ckpt")
        """
        sess, restored = self._restore(master, saver, checkpoint_dir,
                                       checkpoint_filename_with_path, wait_for_checkpoint,
                                       max_wait_secs, config)
        ok, message = self._local_init(sess)
        if not restored:
            return sess, False
        if ok:
            ok, message = self._ready(sess)
        if not ok:
            tf_logging.info("Restoring model from checkpoint did not make it ready: %s",
                            message)
            return sess, False
        return sess, True

    def wait_for_session(self, master, config=None, max_wait_secs=float("inf")):
        """A new session once the model is ready in it (its local init run), trying again
        every ``recovery_wait_secs``; ``DeadlineExceededError`` after ``max_wait_secs``.
        A gradflow session's variables are its own, so a model whose readiness needs
        variables another session initialized is never ready here.

        >>> sess = sm.wait_for_session("", max_wait_secs=60)
        """
        start = time.monotonic()
        while True:
            sess = self._new_session(master, config)
            ok, message = self._local_init(sess)
            if ok:
                ok, message = self._ready(sess)
            if ok:
                return sess
            sess.close()
            remaining = max_wait_secs - (time.monotonic() - start)
            if remaining <= 0:
                raise _DeadlineExceeded(
                    None, None, f"Session was not ready after waiting {max_wait_secs} "
                    f"secs ({message})")
            tf_logging.info("Waiting for model to be ready: %s", message)
            time.sleep(min(self._recovery_wait_secs, remaining))


def _name(op):
    return getattr(op, "name", op)
