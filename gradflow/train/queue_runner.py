"""TF1's ``QueueRunner``: threads that run a queue's enqueue ops in one Session until
the input ends, ``add_queue_runner``, and (as TF1's ``tf.train.queue_runner``)
``start_queue_runners``, which starts those a graph holds.

>>> qr = gf.train.QueueRunner(queue, [enqueue_op] * 4)
>>> gf.train.add_queue_runner(qr)
"""

from __future__ import annotations

import logging
import threading

from gradflow import errors
from gradflow.graph import get_default_graph
from gradflow.train.coordinator import start_queue_runners

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

QUEUE_RUNNERS = "queue_runners"
_log = logging.getLogger("gradflow.train")


class QueueRunner:
    """Threads that each run one of ``enqueue_ops`` over and over (TF1). A thread ends
    when its op raises one of ``queue_closed_exception_types`` (the end of the input:
    ``OutOfRangeError``, ``CancelledError``); the last to end runs ``close_op`` (default
    ``queue.close()``), so that what is queued is still dequeued, then the end of the
    input reaches the readers. With a ``Coordinator``, one more thread runs
    ``cancel_op`` (default ``queue.close(cancel_pending_enqueues=True)``) once a stop is
    requested, which ends the enqueues waiting for room; any other error requests the
    stop and is re-raised by ``coord.join``."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None):
        if queue is None or not enqueue_ops:
            raise ValueError("QueueRunner: a queue and at least one enqueue op are needed")
        self.queue, self.enqueue_ops = queue, list(enqueue_ops)
        self.close_op = close_op if close_op is not None else queue.close()
        self.cancel_op = cancel_op if cancel_op is not None else queue.close(
            cancel_pending_enqueues=True)
        self.queue_closed_exception_types = tuple(
            queue_closed_exception_types or (errors.OutOfRangeError, errors.CancelledError))
        self.name = queue.name
        self._lock = threading.Lock()
        self._running = {}  # session -> threads of this runner still enqueueing

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        """The threads for ``sess`` (started where ``start``), registered with ``coord``."""
        with self._lock:
            self._running[sess] = len(self.enqueue_ops)
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunner {self.name} {k}")
                   for k, op in enumerate(self.enqueue_ops)]
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, coord),
                                            daemon=daemon, name=f"QueueRunner {self.name} stop"))
        for thread in threads:
            if coord is not None:
                coord.register_thread(thread)
            if start:
                thread.start()
        return threads

    def _run(self, sess, enqueue_op, coord):
        try:
            while coord is None or not coord.should_stop():
                try:
                    sess.run(enqueue_op)
                except self.queue_closed_exception_types:
                    with self._lock:
                        self._running[sess] -= 1
                        last = self._running[sess] == 0
                    if last:
                        self._quietly(sess, self.close_op)
                    return
        except Exception as err:  # noqa: BLE001 - handed to the coordinator, as TF1 does
            if getattr(sess, "_closed", False):
                return  # the session closed under the thread: nothing more to enqueue
            if coord is None:
                _log.error("QueueRunner %s: %s", self.name, err)
                raise
            coord.request_stop(err)

    def _close_on_stop(self, sess, coord):
        coord.wait_for_stop()
        self._quietly(sess, self.cancel_op)

    @staticmethod
    def _quietly(sess, op):
        try:
            sess.run(op)
        except Exception as err:  # noqa: BLE001 - the session may be closed by now
            _log.debug("QueueRunner: closing the queue failed: %s", err)


def add_queue_runner(qr, collection=QUEUE_RUNNERS):
    """Add ``qr`` to the graph's queue runners, which ``start_queue_runners`` starts."""
    get_default_graph().add_to_collection(collection, qr)
