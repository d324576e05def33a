"""TF1's queues: ``FIFOQueue`` and ``RandomShuffleQueue``, whose ops threads of one
Session run at once (a ``QueueRunner`` enqueues while training dequeues).

A queue is a graph object; its elements live in each Session that runs its ops
(``session.resources``), so two sessions on one graph have two queues. A dequeue
waits for elements, an enqueue for room. ``close()`` lets what is queued be dequeued,
after which a dequeue raises ``gf.errors.OutOfRangeError`` (the end of the input);
``close(cancel_pending_enqueues=True)``, and closing the Session, also ends the
enqueues still waiting, with ``gf.errors.CancelledError``.

>>> q = gf.FIFOQueue(10, [gf.float32], shapes=[()])
>>> enqueue = q.enqueue_many([[1.0, 2.0, 3.0]])
>>> x = q.dequeue()

The ops' primitives, and a queue's elements in one Session (``QueueState``), are in
``gradflow.prim.queue``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import get_default_graph
from gradflow.ops.state_ops import group
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.queue import QueueState
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"]


class QueueBase:
    """A queue of elements, each a tuple of tensors of ``dtypes`` (and ``shapes``,
    where given: every element must have them, and ``dequeue_many`` needs them)."""

    _kind = "Queue"
    shuffles = False  # a dequeue takes a random element (RandomShuffleQueue)
    pads = False  # dequeue_many pads the elements' open sizes (PaddingFIFOQueue)

    def __init__(self, capacity, dtypes_, shapes=None, names=None, name="queue",
                 min_after_dequeue=0, seed=None):
        if names is not None:
            raise NotImplementedError(f"{type(self).__name__}: names= (elements as dicts) "
                                      "is not supported; use a list of dtypes")
        types = [dtypes.as_dtype(t) for t in
                 (dtypes_ if isinstance(dtypes_, (list, tuple)) else [dtypes_])]
        if shapes is not None:
            if all(s is None or isinstance(s, int) for s in shapes):
                shapes = [shapes]  # TF1: one shape (``[]``: scalars) for a single dtype
            shapes = [tuple(s) for s in shapes]
            if len(shapes) != len(types):
                raise ValueError(f"{type(self).__name__}: {len(shapes)} shapes for "
                                 f"{len(types)} dtypes")
        if int(capacity) <= 0:
            raise ValueError(f"{type(self).__name__}: capacity must be positive, got {capacity}")
        self.dtypes, self.shapes, self.capacity = types, shapes, int(capacity)
        self.min_after_dequeue, self.seed = int(min_after_dequeue), seed
        self.graph = get_default_graph()
        self.name = self.graph.unique_name(name)

    # -- ops ---------------------------------------------------------------------------

    def enqueue(self, vals, name=None):
        """An op that adds one element (waits while the queue is full)."""
        return self._enqueue(vals, many=False, name=name or f"{self.name}_enqueue")

    def enqueue_many(self, vals, name=None):
        """An op that adds the slices of ``vals`` along their first dimension as
        elements, in order."""
        return self._enqueue(vals, many=True, name=name or f"{self.name}_EnqueueMany")

    def dequeue(self, name=None):
        """The next element: a tensor for a one-component queue, else a list."""
        return self._dequeue(None, False, name or f"{self.name}_Dequeue")

    def dequeue_many(self, n, name=None):
        """The next ``n`` elements, stacked (each component gains a first dimension
        of ``n``)."""
        return self._dequeue(int(n), False, name or f"{self.name}_DequeueMany")

    def dequeue_up_to(self, n, name=None):
        """Like ``dequeue_many``, but once the queue is closed the last batch may be
        smaller."""
        return self._dequeue(int(n), True, name or f"{self.name}_DequeueUpTo")

    def close(self, cancel_pending_enqueues=False, name=None):
        """An op that closes the queue (see the module docstring)."""
        node = apply("queue_close", [], name=(name or f"{self.name}_Close") + "/run",
                     graph=self.graph, queue=self, cancel=bool(cancel_pending_enqueues),
                     shape=None, dtype=VARIANT)
        return group(node, name=name or f"{self.name}_Close")

    def size(self, name=None):
        """The number of elements in the queue now (an int32 scalar)."""
        return apply("queue_size", [], name=name or f"{self.name}_Size", graph=self.graph,
                     queue=self, shape=(), dtype=dtypes.int32)

    def is_closed(self, name=None):
        """Whether the queue is closed (a bool scalar)."""
        return apply("queue_is_closed", [], name=name or f"{self.name}_IsClosed",
                     graph=self.graph, queue=self, shape=(), dtype=dtypes.bool_)

    # -- building ----------------------------------------------------------------------

    def _enqueue(self, vals, many, name):
        items = list(vals) if isinstance(vals, (list, tuple)) else [vals]
        if len(items) != len(self.dtypes):
            raise ValueError(f"{name}: {len(items)} values for a queue of {len(self.dtypes)} "
                             "components")
        tensors = [convert_to_tensor(v, dtype=t) for v, t in zip(items, self.dtypes)]
        for k, t in enumerate(tensors):
            if t.dtype is not self.dtypes[k]:
                raise TypeError(f"{name}: component {k} is {t.dtype.name}, the queue holds "
                                f"{self.dtypes[k].name}")
            want = self.shapes[k] if self.shapes is not None else None
            have = None if t.shape is None else tuple(t.shape)
            if want is not None and have is not None:
                have = have[1:] if many else have
                if len(have) != len(want) or any(  # None: any size (PaddingFIFOQueue)
                        None not in (h, w) and h != w for h, w in zip(have, want)):
                    raise ValueError(f"{name}: component {k} has shape {have}"
                                     f"{' per element' if many else ''}; the queue's is {want}")
        node = apply("queue_enqueue", tensors, name=name + "/run", graph=self.graph,
                     queue=self, many=many, shape=None, dtype=VARIANT)
        return group(node, name=name)

    def _dequeue(self, n, up_to, name):
        if n is not None and n < 0:
            raise ValueError(f"{name}: cannot take {n} elements")
        if n is not None and self.shapes is None:
            raise ValueError(f"{name}: dequeue_many and dequeue_up_to need a queue made with "
                             "shapes=")
        shapes = self.shapes or [None] * len(self.dtypes)
        if n is not None:
            shapes = [((None if up_to else n),) + s for s in shapes]
        single = len(self.dtypes) == 1
        node = apply("queue_dequeue", [], name=name, graph=self.graph, queue=self, n=n,
                     up_to=up_to, single=single, shape=shapes[0] if single else None,
                     dtype=self.dtypes[0] if single else VARIANT)
        if single:
            return node
        return [pick(node, k, s, t) for k, (s, t) in enumerate(zip(shapes, self.dtypes))]

    # -- what the ops call -------------------------------------------------------------

    def state(self, session):
        """This queue's elements in ``session``."""
        state = session.resources.get(self)
        if state is None:
            state = session.resources.setdefault(self, QueueState(self))
        return state


class FIFOQueue(QueueBase):
    """A queue that gives its elements in the order they came (TF1)."""

    _kind = "FIFOQueue"

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        super().__init__(capacity, dtypes, shapes, names, name)


class PaddingFIFOQueue(QueueBase):
    """A ``FIFOQueue`` whose ``shapes`` may leave sizes open (``None``): ``dequeue_many``
    pads each component of its elements with zeros (empty strings) to the largest size
    among them, per open axis (TF1). The shapes are required, with a known rank."""

    _kind = "PaddingFIFOQueue"
    pads = True

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        if shapes is None or any(s is None for s in shapes):
            raise ValueError("PaddingFIFOQueue: shapes are required, each of known rank")
        super().__init__(capacity, dtypes, shapes, names, name)


class RandomShuffleQueue(QueueBase):
    """A queue that gives a uniformly random one of its elements, and keeps at least
    ``min_after_dequeue`` until it is closed (TF1). ``seed``: the order, for one thread
    enqueueing."""

    _kind = "RandomShuffleQueue"
    shuffles = True

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        if not 0 <= int(min_after_dequeue) < int(capacity):
            raise ValueError(f"RandomShuffleQueue: min_after_dequeue ({min_after_dequeue}) "
                             f"must be below capacity ({capacity})")
        super().__init__(capacity, dtypes, shapes, names, name, min_after_dequeue, seed)
