"""``gf.data.Iterator``: graph tensors whose values come from a data set, per Session.

An iterator is graph-level and holds no position: each Session keeps its own
``IteratorState`` for it (in its run state's ``resources``), so two sessions on one graph
iterate independently, and closing a Session stops its pipelines' threads.
``get_next()`` and ``make_initializer(ds)`` are graph ops (``gradflow.prim.dataset``)
that call into that state when a run reaches them.
"""

from __future__ import annotations

import threading
import weakref

from gradflow import dtypes
from gradflow.data import structure
from gradflow.data.dataset import Dataset, stage
from gradflow.data.feeding import register_get_next
from gradflow.data.host import PipelineRun
from gradflow.errors import CancelledError, FailedPreconditionError, OutOfRangeError
from gradflow.graph import TensorShape, get_default_graph
from gradflow.ops.control_flow_ops import VARIANT
from gradflow.ops.state_ops import group
from gradflow.prim import dataset as dataset_ops  # noqa: F401 - registers the ops used here
from gradflow.prim.registry import apply

_CLOSE_WAIT_S = 0.5  # how long closing waits for a get_next running in another thread


@stage
class Iterator(structure.Elements):
    """Gives the elements of a data set, one per ``get_next()`` evaluation (TF1
    ``tf.data.Iterator``).

    >>> it = gf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    >>> x, y = it.get_next()
    >>> train_init, val_init = it.make_initializer(train), it.make_initializer(val)
    >>> sess.run(train_init)  # then sess.run(step) until gf.errors.OutOfRangeError
    """

    def __init__(self, template, types, shapes, one_shot=None):
        self._template, self._types, self._shapes = template, list(types), list(shapes)
        self._graph = get_default_graph()
        self._one_shot = one_shot
        self._initializer = None

    # -- making iterators ------------------------------------------------------------
    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        """An iterator not bound to a data set: ``make_initializer(ds)`` binds one (a
        "reinitializable" iterator, e.g. one for training and validation data)."""
        types = [dtypes.as_dtype(t) for t in structure.flatten(output_types)]
        if output_shapes is None:
            shapes = [None] * len(types)
        else:
            shapes = structure.shapes_up_to(output_types, output_shapes)
        return Iterator(output_types, types, shapes)

    @classmethod
    def _one_shot(cls, dataset):
        captures = dataset._captures()
        fed = [t for t in captures if t.opdef.kind in ("placeholder", "variable")]
        if fed:
            raise ValueError(
                "make_one_shot_iterator: the data set reads "
                + ", ".join(f"'{t.name}' ({t.opdef.kind})" for t in fed)
                + ", which a one-shot iterator cannot capture (TF1 refuses it too); use "
                "make_initializable_iterator() and feed them when running its initializer")
        return cls(dataset._template, dataset._types, dataset._shapes, one_shot=dataset)

    @classmethod
    def _initializable(cls, dataset):
        iterator = cls(dataset._template, dataset._types, dataset._shapes)
        iterator._initializer = iterator.make_initializer(dataset)
        return iterator

    # -- TF1 API -----------------------------------------------------------------------
    @property
    def initializer(self):
        """The operation that (re)starts an iterator made by
        ``make_initializable_iterator``."""
        if self._initializer is None:
            how = "it starts by itself" if self._one_shot is not None else \
                "use make_initializer(dataset)"
            raise ValueError(f"this iterator has no initializer: {how}")
        return self._initializer

    def make_initializer(self, dataset, name=None):
        """An operation that starts this iterator on ``dataset`` (from its first
        element), reading the placeholders the data set uses from the run's feeds."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"make_initializer: expected a gf.data.Dataset, got {dataset!r}")
        self._check_compatible(dataset)
        captures = dataset._captures()
        node = apply("iterator_initialize", captures, name=(name or "MakeIterator") + "/run",
                     graph=self._graph, iterator=self, dataset=dataset, shape=None,
                     dtype=VARIANT)
        return group(node, name=name or "MakeIterator")

    def get_next(self, name=None):
        """The next element, as tensors in the element's structure. Each run that
        evaluates them advances the iterator once; past the end the run raises
        ``gf.errors.OutOfRangeError``."""
        name = name or "IteratorGetNext"
        inputs = self._one_shot._captures() if self._one_shot is not None else []
        single = len(self._types) == 1
        node = apply("iterator_get_next", inputs, name=name, graph=self._graph, iterator=self,
                     single=single, shape=self._shapes[0] if single else None,
                     dtype=self._types[0] if single else VARIANT)
        parts = [node] if single else [
            apply("iterator_component", [node], name=f"{node.name}_{k}", index=k, shape=s,
                  dtype=t) for k, (t, s) in enumerate(zip(self._types, self._shapes))]
        register_get_next(node, parts)
        return structure.pack(self._template, parts)

    def string_handle(self, name=None):
        """Not supported: gradflow has no feedable iterators."""
        raise NotImplementedError("Iterator.string_handle: feedable iterators (from_string_"
                                  "handle) are not supported; use from_structure with "
                                  "make_initializer to switch data sets")

    # -- what the ops call -----------------------------------------------------------
    @property
    def one_shot_dataset(self):
        """The dataset a one-shot iterator reads (``None`` for other iterators)."""
        return self._one_shot

    def captures_of_one_shot(self):
        """The tensors a one-shot iterator's data set reads (None for other iterators)."""
        return None if self._one_shot is None else self._one_shot._captures()

    def state(self, run) -> "IteratorState":
        """This iterator's state in the Session whose run state is ``run`` (made on first
        use)."""
        state = run.resources.get(self)
        if state is None:
            state = run.resources.setdefault(self, IteratorState(run))
        return state

    def _check_compatible(self, dataset):
        if _structure_of(dataset._template) != _structure_of(self._template) or \
                dataset._types != self._types:
            raise TypeError(f"make_initializer: the data set's elements "
                            f"({dataset.output_types!r}) do not match this iterator's "
                            f"({self.output_types!r})")
        for k, (mine, theirs) in enumerate(zip(self._shapes, dataset._shapes)):
            if mine is not None and not TensorShape(mine).is_compatible_with(theirs):
                raise TypeError(f"make_initializer: component {k} of the data set has shape "
                                f"{structure.format_shape(theirs)}, not compatible with the "
                                f"iterator's {structure.format_shape(mine)}")


def _structure_of(template):
    return structure.pack(template, [None] * len(structure.flatten(template)))


class IteratorState:
    """Where one iterator stands in one Session: the running pipeline, if any.

    Closing the Session cancels it: a ``get_next`` waiting in another thread fails
    with ``CancelledError``, and ``close()`` returns within a second even when the
    pipeline's input has stalled. The pipeline's threads do not keep the Session
    alive, and they are cancelled when it is collected without ``close()``.
    """

    def __init__(self, run):
        self.run = run  # the Session's run state
        self.lock = threading.Lock()
        self.epochs: dict = {}  # passes made by each shuffle, across initializations
        self.cancelled = False
        self._run = None
        self._stream = None
        self._finalizer = None

    @property
    def initialized(self) -> bool:
        return self._stream is not None

    def initialize(self, dataset, captures, values):
        """Start ``dataset`` from its first element; ``values`` are the backend values
        of the tensors it captures, in the order of ``captures``."""
        to_numpy = self.run.backend.to_numpy
        # strings are host (NumPy) arrays on every backend already
        host = {t: v if t.dtype is dtypes.string else to_numpy(v)
                for t, v in zip(captures, values)}
        run = PipelineRun(self.run, host, self.epochs, self._deliverer())
        with self.lock:
            self._check_cancelled("the iterator's initializer")
            self._close_locked()
            self._run, self._stream = run, dataset._delivered(run)
            # the pipeline's threads end when the Session is collected unclosed
            self._finalizer = weakref.finalize(self.run, run.cancel)

    def get_next(self, node):
        with self.lock:
            self._check_cancelled(f"'{node.name}'")
            if self._stream is None:
                raise FailedPreconditionError(
                    f"GetNext() failed because the iterator has not been initialized: run "
                    f"the iterator's initializer in this Session before '{node.name}' "
                    f"(created at {node.source})")
            try:
                element = next(self._stream)
            except StopIteration:
                raise OutOfRangeError(
                    f"End of sequence: '{node.name}' (created at {node.source}) has no more "
                    "elements; run the iterator's initializer to start again") from None
            if self.cancelled:  # closed while a stalled stage kept this run waiting
                self._close_locked()
                self._check_cancelled(f"'{node.name}'")
            return element

    def _check_cancelled(self, what):
        if self.cancelled:
            raise CancelledError(f"{what}: cancelled, its Session was closed")

    def _deliverer(self):
        asarray = self.run.backend.asarray

        def deliver(element):
            return tuple(c if c.dtype.kind == "O" else asarray(c) for c in element)

        return deliver

    def close(self):
        """Cancel (waking a ``get_next`` that waits for a prefetch thread), then stop the
        pipeline. A ``get_next`` stuck in a stalled stage of its own thread is not
        waited for past ``_CLOSE_WAIT_S``: it stops the pipeline when it returns."""
        self.cancelled = True
        run = self._run
        if run is not None:
            run.cancel()
        if not self.lock.acquire(timeout=_CLOSE_WAIT_S):
            return
        try:
            self._close_locked()
        finally:
            self.lock.release()

    def _close_locked(self):
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._stream is not None:
            self._stream.close()
        if self._run is not None:
            self._run.close()
        self._run = self._stream = self._finalizer = None


def make_one_shot_iterator(dataset):
    """``dataset.make_one_shot_iterator()`` (TF1 ``tf.compat.v1.data`` function form)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    """``dataset.make_initializable_iterator()`` (TF1 function form)."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    """``dataset_or_iterator.output_types`` (TF1 ``tf.compat.v1.data.get_output_types``)."""
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    """``dataset_or_iterator.output_shapes`` (TF1 function form)."""
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    """``dataset_or_iterator.output_classes`` (TF1 function form)."""
    return dataset_or_iterator.output_classes
