"""TF1's thread coordination: ``train.Coordinator`` and ``train.start_queue_runners``.

A ``Coordinator`` lets threads that feed or train together stop together: any
of them may ``request_stop`` (with the exception that made it stop), the others
poll ``should_stop``, and ``join`` waits for them all and re-raises that
exception in the main thread.

>>> coord = gf.train.Coordinator()
>>> threads = gf.train.start_queue_runners(sess=sess, coord=coord)
>>> try:
...     while not coord.should_stop():
...         sess.run(train_op)
... except gf.errors.OutOfRangeError:
...     pass
... finally:
...     coord.request_stop()
>>> coord.join(threads)
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from gradflow import errors

__all__ = ["Coordinator", "start_queue_runners"]


class Coordinator:
    """Stop a group of threads together and pass on the exception that stopped them.

    ``clean_stop_exception_types`` (default ``(errors.OutOfRangeError,)``) stop the
    threads without being re-raised by ``join``: the end of an input is no error.
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info = None
        self._registered = set()
        self._joined = False

    def request_stop(self, ex=None):
        """Ask every thread to stop; ``ex`` (an exception or an ``exc_info`` triple),
        unless a clean-stop type, is re-raised by ``join`` (the first one only)."""
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean):
                    self._exc_info = info
            self._stop_event.set()

    def clear_stop(self):
        """Forget the stop request and its exception, to start the threads again."""
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Whether a stop was requested."""
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """A block whose exception (if any) requests the stop instead of propagating."""
        try:
            yield
        except Exception:  # noqa: BLE001 - passed on to join(), as TF1 does
            self.request_stop(sys.exc_info())

    def wait_for_stop(self, timeout=None) -> bool:
        """Wait until a stop is requested (at most ``timeout`` seconds); whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        """Add ``thread`` to those that ``join`` waits for."""
        with self._lock:
            self._registered.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Wait for the registered threads and ``threads`` once a stop is requested, then
        re-raise the exception passed to ``request_stop``. Threads still running
        ``stop_grace_period_secs`` after the stop are a RuntimeError, unless
        ``ignore_live_threads``."""
        with self._lock:
            threads = set(threads or ()) | self._registered
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._registered = set()
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(alive)}")

    @property
    def joined(self) -> bool:
        """Whether ``join()`` has returned (TF1's ``Coordinator.joined``).

        >>> coord.join(threads); coord.joined   # True
        """
        return self._joined

    def raise_requested_exception(self):
        """Re-raise the exception passed to ``request_stop``, if any."""
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection="queue_runners"):
    """Start the threads of the queue runners in ``collection`` and return them (TF1).

    The runners are ``gf.train.QueueRunner`` objects (added by ``batch``, the input
    producers or ``add_queue_runner``), or any object with TF1's
    ``create_threads(sess, coord, daemon, start)``; with none it returns ``[]``.
    """
    from gradflow.graph import get_default_graph
    from gradflow.session import get_default_session

    sess = sess if sess is not None else get_default_session()
    if sess is None:
        raise RuntimeError("Cannot start queue runners: No default session is registered. "
                           "Use `with sess.as_default()` or pass an explicit session to "
                           "tf.start_queue_runners(sess=sess)")
    graph = getattr(sess, "graph", None) or get_default_graph()
    threads = []
    for runner in graph.get_collection(collection):
        threads.extend(runner.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
