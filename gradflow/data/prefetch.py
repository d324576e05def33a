"""``Dataset.prefetch``: a background thread that runs the pipeline ahead of the steps.

The thread pulls elements from the stages upstream into a bounded queue while
``Session.run`` computes a step, so the next batch is ready when ``get_next``
asks. When prefetch is the last stage, the thread also moves each element onto
the Session's device (``backend.asarray``), so a GPU step finds its batch there.
The thread ends when the pipeline is exhausted, when the iterator is
re-initialized, and when the Session closes or is collected (the thread holds no
reference to the Session). Closing the Session cancels the thread: a ``get_next``
waiting for it fails at once with ``CancelledError``, even while the stages
upstream are stalled (the thread then ends when they next give an element).
"""

from __future__ import annotations

import queue
import threading

from gradflow.data.dataset import stage
from gradflow.data.transforms import _Counted
from gradflow.errors import CancelledError

AUTOTUNE = -1  # TF1's tf.data.experimental.AUTOTUNE
_AUTOTUNE_DEPTH = 2  # what AUTOTUNE (and 0) means here: one batch in use, one ahead
_POLL_S = 0.05  # how often a blocked producer checks whether it must stop
_JOIN_S = 10.0  # how long re-initializing waits for the producer to notice
_CANCELLED_JOIN_S = 0.02  # how long closing waits for it (a stalled input never returns)


@stage
class Prefetch(_Counted):
    """``Dataset.prefetch``: ``buffer_size`` is the count."""

    def __init__(self, upstream, buffer_size):
        super().__init__(upstream, buffer_size, "prefetch: buffer_size")

    def _cardinality(self, run):
        return self._upstream._cardinality(run)

    def _iterate(self, run):
        return self._prefetched(run, None)

    def _delivered(self, run):
        return self._prefetched(run, run.deliver)

    def _prefetched(self, run, deliver):
        size = run.scalar(self._count)
        producer = _Producer(self._upstream._iterate(run), deliver,
                             size if size > 0 else _AUTOTUNE_DEPTH)
        run.adopt(producer)
        try:
            yield from producer
        finally:
            producer.stop()
            run.release(producer)


class _Producer:
    """A thread that moves the elements of ``stream`` into a queue of ``depth``."""

    _END = object()

    def __init__(self, stream, deliver, depth):
        self.queue = queue.Queue(maxsize=depth)
        self.stopping = threading.Event()
        self.cancelled = False
        self._stream, self._deliver = stream, deliver
        self.thread = threading.Thread(target=self._produce, name="gradflow-data-prefetch",
                                       daemon=True)
        self.thread.start()

    def _produce(self):
        try:
            for element in self._stream:
                if self._deliver is not None:
                    element = self._deliver(element)
                if not self._put((element, None)):
                    return
            self._put((self._END, None))
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((None, err))
        finally:
            self._stream.close()

    def _put(self, item) -> bool:
        while not self.stopping.is_set():
            try:
                self.queue.put(item, timeout=_POLL_S)
            except queue.Full:
                continue
            return not self.stopping.is_set()
        return False

    def __iter__(self):
        while True:
            element, err = self.queue.get()
            if self.cancelled:
                raise CancelledError("Dataset.prefetch: the Session was closed while this "
                                     "run waited for the next element")
            if err is not None:
                raise err
            if element is self._END:
                return
            yield element

    def cancel(self):
        """Stop the thread without waiting for it, and wake a consumer waiting in
        ``__iter__`` (it raises ``CancelledError``)."""
        self.cancelled = True
        self.stopping.set()
        try:  # the consumer waits only on an empty queue: this wakes it
            self.queue.put_nowait((self._END, None))
        except queue.Full:  # a full queue: its next get returns at once
            pass

    def stop(self):
        """Stop the thread and wait for it (it finishes the element it is making); a
        cancelled thread is waited for only briefly (its input may be stalled)."""
        self.stopping.set()
        try:  # a producer waiting to put then puts at once, and sees that it must stop
            self.queue.get_nowait()
        except queue.Empty:
            pass
        if self.thread is not threading.current_thread():
            self.thread.join(_CANCELLED_JOIN_S if self.cancelled else _JOIN_S)
