"""One initialization of an iterator: what a pipeline reads while it runs on the host."""

from __future__ import annotations

import threading

import numpy as np

from gradflow.graph import Tensor
from gradflow.run_state import DEFAULT_GRAPH_SEED
from gradflow.session import Session


class PipelineRun:
    """The captured values, random streams, host session and helper threads of one
    initialization of one iterator in one Session (``run``: its run state).

    ``values`` maps each captured tensor to its host value at initialization;
    ``epochs`` (kept by the iterator state across initializations) counts the
    passes each ``shuffle`` has made, so that every pass draws a new order.

    It holds neither the Session nor its run state (it keeps their graph and seed): a
    helper thread running the pipeline must not keep a Session alive that its user
    dropped.
    """

    def __init__(self, run, values, epochs, deliver):
        self.graph, self.seed = run.graph, run.seed
        self.values = values
        self.epochs = epochs
        self.deliver = deliver  # host element -> the arrays get_next returns
        self.caches: dict = {}
        self.cancelled = threading.Event()
        self._host = None
        self._helpers: dict = {}  # thread helpers running now: each has stop() and cancel()
        self._lock = threading.Lock()

    def value(self, x):
        """The host value of a tensor argument, or ``x`` itself."""
        return self.values[x] if isinstance(x, Tensor) else x

    def scalar(self, x) -> int:
        """An integer argument (a Python int, or a captured scalar tensor)."""
        return int(np.asarray(self.value(x)))

    def host_session(self):
        """The NumPy session that runs traced map/filter functions (made on first use)."""
        if self._host is None:
            self._host = Session(graph=self.graph, backend="numpy", seed=self.seed)
        return self._host

    def rng(self, owner, graph_seed, op_seed, position, reshuffle=True):
        """A generator for the next pass of ``owner`` (a shuffle made when the graph had
        ``position`` nodes): a new order each pass with ``reshuffle``, else the same.
        Without a graph or op seed it follows the Session's seed, and without that it
        is drawn once per iterator."""
        count = self.epochs.get(owner, 0)
        if reshuffle:
            self.epochs[owner] = count + 1
        if graph_seed is None and op_seed is None:
            if self.seed is not None:
                return np.random.default_rng([int(self.seed), position, count])
            entropy = self.epochs.setdefault((owner, "entropy"),
                                             np.random.SeedSequence().entropy)
            return np.random.default_rng([entropy, count])
        base = DEFAULT_GRAPH_SEED if graph_seed is None else graph_seed
        return np.random.default_rng([base, op_seed, count])

    def adopt(self, helper) -> None:
        """Note a helper (a prefetch thread): ``helper.stop()`` when this run closes,
        ``helper.cancel()`` (which must not block) when it is cancelled."""
        with self._lock:
            self._helpers[helper] = None
        if self.cancelled.is_set():
            helper.cancel()

    def release(self, helper) -> None:
        """Forget a helper that has stopped."""
        with self._lock:
            self._helpers.pop(helper, None)

    def cancel(self) -> None:
        """Cancel the run without waiting for anything (its Session closes or was
        collected): each helper stops, and a consumer waiting on one is woken with
        ``CancelledError``. Any thread may call it, at any time."""
        self.cancelled.set()
        with self._lock:
            helpers = list(self._helpers)
        for helper in helpers:
            helper.cancel()

    def close(self) -> None:
        """Stop the helpers and the host session (re-initialization, or closing)."""
        with self._lock:
            helpers, self._helpers = list(self._helpers), {}
        for helper in reversed(helpers):
            helper.stop()
        if self._host is not None:
            self._host.close()
            self._host = None
