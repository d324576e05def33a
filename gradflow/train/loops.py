"""TF1's training loops: ``LooperThread`` (a thread calling a function on a timer until
its coordinator stops), ``basic_train_loop`` (a ``Supervisor``'s managed session
stepped until it should stop) and ``assert_global_step``."""

from __future__ import annotations

import threading
import time

from gradflow import errors
from gradflow.graph import Tensor
from gradflow.train.coordinator import Coordinator

__all__ = ["LooperThread", "assert_global_step", "basic_train_loop"]


class LooperThread(threading.Thread):
    """A daemon thread, registered with ``coord``, that calls ``run_loop()`` every
    ``timer_interval_secs`` seconds (at once first; back to back when ``None``) until
    ``coord`` stops; an exception stops ``coord`` with it (TF1). ``run_loop`` calls
    ``target(*args, **kwargs)``; subclasses may override it, and ``start_loop`` /
    ``stop_loop``, which run before the first and after the last call.

    >>> gf.train.LooperThread.loop(coord, 30, report, args=(sess,))
    """

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord!r}")
        super().__init__(daemon=True)
        self._coord, self._interval = coord, timer_interval_secs
        self._target = target
        if target is None and (args or kwargs):
            raise ValueError("'args' and 'kwargs' argument require that you also pass "
                             "'target'")
        self._args, self._kwargs = tuple(args or ()), dict(kwargs or {})
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Start a ``LooperThread`` calling ``target``; returns it.

        >>> thread = gf.train.LooperThread.loop(coord, 10, print_step)
        """
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._interval is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                due = time.time()
                while not self._coord.wait_for_stop(max(due - time.time(), 0.0)):
                    due += self._interval
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once in the thread before the first ``run_loop``."""

    def stop_loop(self):
        """Called once in the thread after the last ``run_loop``."""

    def run_loop(self):
        """One call of the loop: ``target(*args, **kwargs)``."""
        if self._target is not None:
            self._target(*self._args, **self._kwargs)


def basic_train_loop(supervisor, train_step_fn, args=None, kwargs=None, master=""):
    """Call ``train_step_fn(sess, *args, **kwargs)`` in ``supervisor.managed_session``
    until the supervisor should stop; an ``AbortedError`` starts a new session and goes on
    (TF1).

    >>> gf.train.basic_train_loop(sv, lambda sess: sess.run(train_op))
    """
    args, kwargs = list(args or ()), dict(kwargs or {})
    while True:
        try:
            with supervisor.managed_session(master) as sess:
                while not supervisor.should_stop():
                    train_step_fn(sess, *args, **kwargs)
            return
        except errors.AbortedError:
            continue


def assert_global_step(global_step_tensor):
    """Check that ``global_step_tensor`` can be a global step: a variable or tensor of an
    integer dtype that is a scalar (or of a shape not fully known); ``TypeError`` if not
    (TF1).

    >>> gf.train.assert_global_step(gf.train.get_or_create_global_step())
    """
    if not isinstance(global_step_tensor, Tensor):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: '
                        f"{global_step_tensor!r}.")
    dtype = global_step_tensor.dtype
    if dtype is None or not dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {dtype!r}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
