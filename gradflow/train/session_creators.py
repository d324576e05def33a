"""TF1's session creators and the monitored sessions made from them:
``SessionCreator`` (the interface: ``create_session()``), ``ChiefSessionCreator``
(initializes the model or restores a checkpoint, through a ``SessionManager``),
``WorkerSessionCreator`` (waits until the model is ready), ``MonitoredSession`` with
TF1's ``session_creator=`` argument, and ``SingularMonitoredSession``.

>>> creator = gf.train.ChiefSessionCreator(checkpoint_dir="/tmp/run")
>>> with gf.train.MonitoredSession(session_creator=creator, hooks=hooks) as sess:
...     while not sess.should_stop():
...         sess.run(train_op)

Sessions are in-process: ``master`` must be ``""``. A worker's session waits for a model
another session initialized; since a gradflow session's variables are its own, a
``WorkerSessionCreator`` session is ready only when the model needs no initialization
(else ``DeadlineExceededError`` after ``max_wait_secs``), as a TF1 worker without a chief.
"""

from __future__ import annotations

from gradflow.train import monitored_session as _monitored
from gradflow.train.coordinator import start_queue_runners
from gradflow.train.scaffold import Scaffold
from gradflow.train.session_manager import SessionManager

__all__ = ["ChiefSessionCreator", "MonitoredSession", "SessionCreator",
           "SingularMonitoredSession", "WorkerSessionCreator"]


class SessionCreator:
    """What makes the session of a ``MonitoredSession``: subclasses define
    ``create_session()``, which returns a ready ``Session``."""

    def create_session(self):
        """A new session, with the model ready in it."""
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}")


def _manager(scaffold):
    return SessionManager(local_init_op=scaffold.local_init_op, ready_op=scaffold.ready_op,
                          ready_for_local_init_op=scaffold.ready_for_local_init_op,
                          local_init_feed_dict=scaffold.local_init_feed_dict)


class ChiefSessionCreator(SessionCreator):
    """Makes a session that restores the latest checkpoint of ``checkpoint_dir`` (or
    ``checkpoint_filename_with_path``), else runs the scaffold's init op and
    ``init_fn``; then its local init op (TF1)."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold if scaffold is not None else Scaffold()
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_path = checkpoint_filename_with_path

    def create_session(self):
        """A new session with the model initialized or restored.

        >>> sess = gf.train.ChiefSessionCreator().create_session()
        """
        scaffold = self._scaffold.finalize()
        return _manager(scaffold).prepare_session(
            self._master, init_op=scaffold.init_op, saver=scaffold.saver,
            checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_path, config=self._config,
            init_feed_dict=scaffold.init_feed_dict, init_fn=scaffold.init_fn)


class WorkerSessionCreator(SessionCreator):
    """Makes a session once the model is ready in it (its local init op run), trying
    for ``max_wait_secs`` (TF1; see the module docstring)."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold if scaffold is not None else Scaffold()
        self._master, self._config, self._max_wait = master, config, max_wait_secs

    def create_session(self):
        """A new session with the model ready; ``DeadlineExceededError`` after
        ``max_wait_secs``.

        >>> sess = gf.train.WorkerSessionCreator(max_wait_secs=5).create_session()
        """
        scaffold = self._scaffold.finalize()
        return _manager(scaffold).wait_for_session(self._master, config=self._config,
                                                   max_wait_secs=self._max_wait)


class MonitoredSession(_monitored.MonitoredSession):
    """TF1's ``tf.train.MonitoredSession(session_creator=None, hooks=None,
    stop_grace_period_secs=120)``: a session from ``session_creator`` (default: a
    ``ChiefSessionCreator()``) with ``hooks`` run around each ``run``, which starts the
    graph's queue runners and ends its ``with`` block quietly at the end of the input.
    gradflow's keywords ``checkpoint_dir``, ``config`` and ``scaffold`` make the
    ``ChiefSessionCreator`` when no creator is given."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120,
                 checkpoint_dir=None, config=None, scaffold=None):
        if session_creator is not None and not isinstance(session_creator, SessionCreator) \
                and not hasattr(session_creator, "create_session"):
            raise TypeError("MonitoredSession: session_creator must have create_session(), "
                            f"got {type(session_creator).__name__}")
        if session_creator is None:
            session_creator = ChiefSessionCreator(scaffold=scaffold, config=config,
                                                  checkpoint_dir=checkpoint_dir)
        elif scaffold is not None or checkpoint_dir is not None or config is not None:
            raise ValueError("MonitoredSession: give scaffold, checkpoint_dir and config to "
                             "the session_creator, not beside it")
        self._creator = session_creator
        scaffold = getattr(session_creator, "_scaffold", None)
        super().__init__(hooks or (), stop_grace_period_secs=stop_grace_period_secs,
                         scaffold=scaffold)

    def _create(self, checkpoint_dir, config):
        sess = self._creator.create_session()
        start_queue_runners(sess, self._coord)
        for hook in self._hooks:
            hook.after_create_session(sess, self._coord)
        return sess


class SingularMonitoredSession(MonitoredSession):
    """A ``MonitoredSession`` for one process (TF1): a ``ChiefSessionCreator`` from
    ``scaffold``, ``master``, ``config``, ``checkpoint_dir`` and
    ``checkpoint_filename_with_path``; ``raw_session()`` gives the session underneath.

    >>> with gf.train.SingularMonitoredSession(hooks=hooks, checkpoint_dir=d) as sess:
    ...     sess.run(train_op)
    """

    def __init__(self, hooks=None, scaffold=None, master="", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        """The ``Session`` underneath (hooks do not run around its ``run``).

        >>> sess.raw_session().run(w)
        """
        return self._sess
