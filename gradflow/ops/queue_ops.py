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
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from gradflow import dtypes
from gradflow.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from gradflow.graph import get_default_graph
from gradflow.ops.control_flow_ops import VARIANT, _pick
from gradflow.ops.dataset_ops import _declared  # shape and dtype as the op's builder gives them
from gradflow.prim.registry import apply, convert_to_tensor, register

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"]


class QueueBase:
    """A queue of elements, each a tuple of tensors of ``dtypes`` (and ``shapes``,
    where given: every element must have them, and ``dequeue_many`` needs them)."""

    _kind = "Queue"

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
        from gradflow.ops.state_ops import group

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
        from gradflow.ops.state_ops import group

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
        return [_pick(node, k, s, t) for k, (s, t) in enumerate(zip(shapes, self.dtypes))]

    # -- what the ops call -------------------------------------------------------------

    def state(self, session):
        """This queue's elements in ``session``."""
        state = session.resources.get(self)
        if state is None:
            state = session.resources.setdefault(self, _QueueState(self))
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

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        if shapes is None or any(s is None for s in shapes):
            raise ValueError("PaddingFIFOQueue: shapes are required, each of known rank")
        super().__init__(capacity, dtypes, shapes, names, name)


def _padded(parts, fill):
    """Arrays of one rank stacked, each padded with ``fill`` at the end of every axis to
    the largest size among them."""
    parts = [np.asarray(p, dtype=object) if fill == b"" else np.asarray(p) for p in parts]
    size = tuple(max(sizes) for sizes in zip(*(p.shape for p in parts))) if parts else ()
    out = np.full((len(parts),) + size, fill, dtype=object if fill == b"" else parts[0].dtype)
    for k, p in enumerate(parts):
        out[(k,) + tuple(slice(0, d) for d in p.shape)] = p
    return out


class RandomShuffleQueue(QueueBase):
    """A queue that gives a uniformly random one of its elements, and keeps at least
    ``min_after_dequeue`` until it is closed (TF1). ``seed``: the order, for one thread
    enqueueing."""

    _kind = "RandomShuffleQueue"

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        if not 0 <= int(min_after_dequeue) < int(capacity):
            raise ValueError(f"RandomShuffleQueue: min_after_dequeue ({min_after_dequeue}) "
                             f"must be below capacity ({capacity})")
        super().__init__(capacity, dtypes, shapes, names, name, min_after_dequeue, seed)


class _QueueState:
    """The elements of one queue in one Session, and the waiting on them."""

    def __init__(self, queue):
        self.queue = queue
        self.items = collections.deque()
        self.ready = threading.Condition()
        self.closed = self.cancelled = False
        shuffled = isinstance(queue, RandomShuffleQueue)
        self.rng = np.random.default_rng(queue.seed) if shuffled else None

    def put(self, elements, node):
        queue = self.queue
        with self.ready:
            if self.closed:
                raise CancelledError(f"{queue._kind} '{queue.name}' is closed: '{node.name}' "
                                     "cannot enqueue")
            for element in elements:
                while len(self.items) >= queue.capacity:
                    if self.cancelled:
                        raise CancelledError(f"Enqueue operation '{node.name}' was cancelled: "
                                             f"{queue._kind} '{queue.name}' was closed")
                    self.ready.wait()
                self.items.append(element)
                self.ready.notify_all()

    def take(self, n, up_to, node):
        queue = self.queue
        want = 1 if n is None else n
        with self.ready:
            while True:
                keep = 0 if self.closed else queue.min_after_dequeue
                if len(self.items) - keep >= want:
                    break
                if self.closed:
                    if up_to and self.items:
                        want = len(self.items)
                        break
                    raise OutOfRangeError(
                        f"{queue._kind} '{queue.name}' is closed and has insufficient elements "
                        f"(requested {want}, current size {len(self.items)}): '{node.name}'")
                self.ready.wait()
            taken = [self._pop() for _ in range(want)]
            self.ready.notify_all()
        return taken

    def _pop(self):
        if self.rng is None:
            return self.items.popleft()
        k = int(self.rng.integers(len(self.items)))
        self.items[k], self.items[-1] = self.items[-1], self.items[k]
        return self.items.pop()

    def size(self):
        with self.ready:
            return len(self.items)

    def close(self, cancel=True):
        """Close (the Session closing cancels the waiting enqueues too)."""
        with self.ready:
            self.closed = True
            self.cancelled = self.cancelled or cancel
            self.ready.notify_all()


# -- the ops -------------------------------------------------------------------------


def _host_elements(arrays, queue, node, many):
    """The elements of one enqueue's component values (host arrays), checked against
    the queue."""
    if many:
        counts = {int(a.shape[0]) if a.ndim else -1 for a in arrays}
        if len(counts) != 1 or -1 in counts:
            raise InvalidArgumentError(f"'{node.name}': enqueue_many needs components with "
                                       f"one first dimension, got shapes "
                                       f"{[tuple(a.shape) for a in arrays]}")
        elements = [tuple(a[i] for a in arrays) for i in range(counts.pop())]
    else:
        elements = [tuple(arrays)]
    if any(a.dtype.kind == "O" for a in arrays):  # a scalar string: its bytes, not a 0-d array
        elements = [tuple(c.item() if isinstance(c, np.ndarray) and c.ndim == 0
                          and c.dtype.kind == "O" else c for c in element)
                    for element in elements]
    if queue.shapes is not None and elements:
        for k, (component, want) in enumerate(zip(elements[0], queue.shapes)):
            have = np.shape(component)
            if len(have) != len(want) or any(w is not None and w != h
                                             for h, w in zip(have, want)):
                raise InvalidArgumentError(
                    f"'{node.name}': component {k} of an element has shape {tuple(have)}; "
                    f"{queue._kind} '{queue.name}' holds {want}")
    return elements


def _enqueue_impl(session, node):
    queue, many = node.attrs["queue"], node.attrs["many"]
    to_host = session.backend.host_value

    def run(*values):
        arrays = [np.array(to_host(v), copy=True) for v in values]
        queue.state(session).put(_host_elements(arrays, queue, node, many), node)
        return ()

    return run


def _dequeue_impl(session, node):
    queue, n, up_to = node.attrs["queue"], node.attrs["n"], node.attrs["up_to"]
    single, asarray = node.attrs["single"], session.backend.asarray

    padding = isinstance(queue, PaddingFIFOQueue)

    def deliver(parts, dtype):
        if padding and n is not None:
            parts = _padded(parts, b"" if dtype is dtypes.string else 0)
        if dtype is dtypes.string:  # strings stay on the host, as object arrays of bytes
            return dtypes.bytes_array(parts)
        return asarray(np.asarray(parts, dtype=dtype.as_numpy_dtype))

    def run():
        elements = queue.state(session).take(n, up_to, node)
        if n is None:
            out = [deliver(c, t) for c, t in zip(elements[0], queue.dtypes)]
        else:
            out = [deliver([e[k] for e in elements], t) for k, t in enumerate(queue.dtypes)]
        return out[0] if single else tuple(out)

    return run


def _close_impl(session, node):
    queue, cancel = node.attrs["queue"], node.attrs["cancel"]

    def run():
        queue.state(session).close(cancel)
        return ()

    return run


def _size_impl(session, node):
    queue = node.attrs["queue"]
    return lambda: np.int32(queue.state(session).size())


def _is_closed_impl(session, node):
    queue = node.attrs["queue"]
    return lambda: np.bool_(queue.state(session).closed)


def _epochs_impl(session, node):
    limit, shuffle, seed = node.attrs["limit"], node.attrs["shuffle"], node.attrs["seed"]
    to_host, asarray = session.backend.host_value, session.backend.asarray

    def run(x):
        state = session.resources.setdefault(node, {"epochs": 0, "rng": None})
        state["epochs"] += 1
        if limit is not None and state["epochs"] > limit:
            raise OutOfRangeError(f"Reached limit of {limit} epochs: '{node.name}'")
        if not shuffle:
            return x
        if state["rng"] is None:
            state["rng"] = np.random.default_rng(seed)
        host = np.asarray(to_host(x))
        rows = host[state["rng"].permutation(len(host))]
        return rows if rows.dtype.kind == "O" else asarray(rows)

    return run


register("queue_enqueue", _enqueue_impl, _declared, grad=None, kind="call", takes_strings=True)
register("queue_dequeue", _dequeue_impl, _declared, grad=None, kind="call", takes_strings=True)
register("queue_close", _close_impl, _declared, grad=None, kind="call")
register("queue_size", _size_impl, _declared, grad=None, kind="call")
register("queue_is_closed", _is_closed_impl, _declared, grad=None, kind="call")
# an input producer's rows, shuffled per epoch where asked, for a number of epochs
register("input_epochs", _epochs_impl, _declared, grad=None, kind="call", takes_strings=True)
