"""Data sets made of data sets: ``Dataset.flat_map``, ``Dataset.interleave`` and
``tf.data.experimental.parallel_interleave``.

The function is traced once, as ``map``'s, and returns a data set built on the
symbolic arguments (``Dataset.from_tensor_slices(x)``, ``TextLineDataset(path)``).
For each input element, the tensors that inner data set reads from the graph are
computed in the host session with the arguments bound to that element, and the
inner data set is run in a ``ScopedRun``: the pipeline's run with those values.
"""

from __future__ import annotations

import os

from gradflow.data.dataset import Dataset, stage
from gradflow.data.functions import TracedFunction, _run_graph, _subgraph
from gradflow.data.transforms import _Unary, scalar_argument
from gradflow.graph import Tensor

_EXTERNAL = ("placeholder", "variable")


class ScopedRun:
    """A pipeline run (``gradflow.data.host.PipelineRun``) with more captured values:
    those an inner data set reads for one element. Everything else is the run's."""

    def __init__(self, parent, values):
        self._parent = parent
        self.values = {**parent.values, **values}
        self.caches: dict = {}  # an inner data set's cache is its element's own

    def __getattr__(self, name):
        return getattr(self._parent, name)

    def value(self, x):
        """The host value of a tensor argument, or ``x`` itself."""
        return self.values[x] if isinstance(x, Tensor) else x

    def scalar(self, x) -> int:
        """An integer argument (a Python int, or a captured scalar tensor)."""
        return int(self.value(x))


class DatasetFunction:
    """``fn`` traced over elements of ``upstream``; it must return a Dataset."""

    def __init__(self, fn, upstream, what):
        traced = TracedFunction(fn, upstream._template, upstream._types, upstream._shapes,
                                what, allow_dataset=True)
        inner = traced.template
        if not isinstance(inner, Dataset):
            raise TypeError(f"{what}: {traced.label} must return a gf.data.Dataset, got "
                            f"{type(inner).__name__}")
        self.what, self.inner, self.args = what, inner, traced.args
        reads = inner._captures()
        # per element: what the inner data set reads that is not a fed graph value
        self.computed = [t for t in reads if t.opdef.kind not in _EXTERNAL]
        nodes = _subgraph(self.computed, self.args)
        external = [t for t in reads if t.opdef.kind in _EXTERNAL]
        external += [n for n in nodes if n.opdef.kind in _EXTERNAL or
                     (n.opdef.name == "dataset_function_arg" and n not in self.args)]
        self.captures = list(dict.fromkeys(external))

    def dataset_run(self, run, element):
        """The run in which the inner data set gives the elements of ``element``."""
        if not self.computed:
            return ScopedRun(run, {})
        values = _run_graph(run, self.args, self.computed, self.captures, element)
        return ScopedRun(run, dict(zip(self.computed, values)))


@stage
class Interleave(_Unary):
    """``Dataset.interleave``: ``block_length`` elements from each of ``cycle_length``
    inner data sets in turn; an inner data set that ends gives its place to the next
    input element's when the cycle comes back to it (TF's deterministic order)."""

    def __init__(self, upstream, fn, cycle_length, block_length, what="Dataset.interleave"):
        self._fn = DatasetFunction(fn, upstream, what)
        inner = self._fn.inner
        super().__init__(upstream, inner._template, inner._types, inner._shapes)
        if cycle_length is None or (isinstance(cycle_length, int) and cycle_length == -1):
            cycle_length = os.cpu_count() or 1  # TF's AUTOTUNE: the schedulable cores
        self._cycle = scalar_argument(cycle_length, f"{what}: cycle_length")
        self._block = scalar_argument(1 if block_length is None else block_length,
                                      f"{what}: block_length")
        self._scalars = (self._cycle, self._block)
        self._what = what

    def _own_captures(self):
        return [*self._fn.captures, *super()._own_captures()]

    def _iterate(self, run):
        cycle, block = run.scalar(self._cycle), run.scalar(self._block)
        if cycle < 1 or block < 1:
            raise ValueError(f"{self._what}: cycle_length and block_length must be positive, "
                             f"got {cycle} and {block}")
        source = self._upstream._iterate(run)
        slots = [None] * cycle
        index = taken = 0
        ended, open_count = False, 0
        try:
            while not ended or open_count:
                if slots[index] is not None:
                    element = next(slots[index], None)
                    if element is not None:
                        taken += 1
                        if taken == block:
                            index, taken = (index + 1) % cycle, 0
                        yield element
                        continue
                    slots[index] = None
                    open_count -= 1
                    index, taken = (index + 1) % cycle, 0
                elif not ended:
                    outer = next(source, None)
                    if outer is None:
                        ended = True
                        continue
                    inner_run = self._fn.dataset_run(run, outer)
                    slots[index] = self._fn.inner._iterate(inner_run)
                    open_count += 1
                else:
                    index, taken = (index + 1) % cycle, 0
        finally:
            for s in slots:
                if s is not None:
                    s.close()
            source.close()


@stage
class FlatMap(Interleave):
    """``Dataset.flat_map``: the elements of each inner data set, one after another."""

    def __init__(self, upstream, fn):
        super().__init__(upstream, fn, 1, 1, "Dataset.flat_map")


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """For ``Dataset.apply``: ``interleave(map_func, cycle_length, block_length)``
    (TF1's ``tf.data.experimental.parallel_interleave``). The inner data sets are read
    in turn on the pipeline's thread; the order is the deterministic one, which
    ``sloppy=True`` allows too. ``buffer_output_elements`` and
    ``prefetch_input_elements`` size TF's read-ahead buffers, which gradflow does not
    keep (put a ``prefetch`` after it).

    >>> files = gf.data.Dataset.from_tensor_slices(["a.tfrecord", "b.tfrecord"])
    >>> ds = files.apply(gf.data.experimental.parallel_interleave(
    ...     gf.data.TFRecordDataset, cycle_length=2))
    """
    return lambda dataset: Interleave(dataset, map_func, cycle_length, block_length,
                                      "parallel_interleave")
