"""The primitives of TF1's queues (``gradflow.ops.queue_ops``): enqueue, dequeue, close,
size and whether closed, and the rows of an input producer's epochs; and a queue's
elements in one Session (``QueueState``), which threads of that Session share.

They are ops of kind ``"call"``: the queue object is an attribute, and its elements
live in each Session that runs its ops (``session.resources``).
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from gradflow import dtypes
from gradflow.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


class QueueState:
    """The elements of one queue in one Session, and the waiting on them."""

    def __init__(self, queue):
        self.queue = queue
        self.items = collections.deque()
        self.ready = threading.Condition()
        self.closed = self.cancelled = False
        self.rng = np.random.default_rng(queue.seed) if queue.shuffles else None

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


def _padded(parts, fill):
    """Arrays of one rank stacked, each padded with ``fill`` at the end of every axis to
    the largest size among them."""
    parts = [np.asarray(p, dtype=object) if fill == b"" else np.asarray(p) for p in parts]
    size = tuple(max(sizes) for sizes in zip(*(p.shape for p in parts))) if parts else ()
    out = np.full((len(parts),) + size, fill, dtype=object if fill == b"" else parts[0].dtype)
    for k, p in enumerate(parts):
        out[(k,) + tuple(slice(0, d) for d in p.shape)] = p
    return out


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


def _enqueue_impl(run_state, node):
    queue, many = node.attrs["queue"], node.attrs["many"]
    to_host = run_state.backend.host_value

    def run(*values):
        arrays = [np.array(to_host(v), copy=True) for v in values]
        queue.state(run_state).put(_host_elements(arrays, queue, node, many), node)
        return ()

    return run


def _dequeue_impl(run_state, node):
    queue, n, up_to = node.attrs["queue"], node.attrs["n"], node.attrs["up_to"]
    single, asarray = node.attrs["single"], run_state.backend.asarray

    padding = queue.pads

    def deliver(parts, dtype):
        if padding and n is not None:
            parts = _padded(parts, b"" if dtype is dtypes.string else 0)
        if dtype is dtypes.string:  # strings stay on the host, as object arrays of bytes
            return dtypes.bytes_array(parts)
        return asarray(np.asarray(parts, dtype=dtype.as_numpy_dtype))

    def run():
        elements = queue.state(run_state).take(n, up_to, node)
        if n is None:
            out = [deliver(c, t) for c, t in zip(elements[0], queue.dtypes)]
        else:
            out = [deliver([e[k] for e in elements], t) for k, t in enumerate(queue.dtypes)]
        return out[0] if single else tuple(out)

    return run


def _close_impl(run_state, node):
    queue, cancel = node.attrs["queue"], node.attrs["cancel"]

    def run():
        queue.state(run_state).close(cancel)
        return ()

    return run


def _size_impl(run_state, node):
    queue = node.attrs["queue"]
    return lambda: np.int32(queue.state(run_state).size())


def _is_closed_impl(run_state, node):
    queue = node.attrs["queue"]
    return lambda: np.bool_(queue.state(run_state).closed)


def _epochs_impl(run_state, node):
    limit, shuffle, seed = node.attrs["limit"], node.attrs["shuffle"], node.attrs["seed"]
    to_host, asarray = run_state.backend.host_value, run_state.backend.asarray

    def run(x):
        state = run_state.resources.setdefault(node, {"epochs": 0, "rng": None})
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


register("queue_enqueue", _enqueue_impl, declared, grad=None, kind="call", takes_strings=True)
register("queue_dequeue", _dequeue_impl, declared, grad=None, kind="call", takes_strings=True)
register("queue_close", _close_impl, declared, grad=None, kind="call")
register("queue_size", _size_impl, declared, grad=None, kind="call")
register("queue_is_closed", _is_closed_impl, declared, grad=None, kind="call")
# an input producer's rows, shuffled per epoch where asked, for a number of epochs
register("input_epochs", _epochs_impl, declared, grad=None, kind="call", takes_strings=True)
