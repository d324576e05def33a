"""The stages of ``tf.data.experimental`` that pick or number elements: ``Counter``,
``take_while``, ``unique``, ``choose_from_datasets``, ``sample_from_datasets``, and
TF's cardinality constants."""

from __future__ import annotations

import itertools

import numpy as np

from gradflow import dtypes
from gradflow.data.dataset import INFINITE, UNKNOWN, Dataset
from gradflow.data.functions import TracedFunction, check_predicate
from gradflow.data.transforms import _Unary
from gradflow.errors import InvalidArgumentError
from gradflow.graph import TensorShape, get_default_graph

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN


class CounterDataset(Dataset):
    """``start``, ``start + step``, ... without end (``tf.data.experimental.Counter``)."""

    def __init__(self, start=0, step=1, dtype=dtypes.int64):
        self._start, self._step = int(start), int(step)
        super().__init__(None, [dtypes.as_dtype(dtype)], [TensorShape(())])

    def _cardinality(self, run):
        return INFINITE

    def _iterate(self, run):
        np_type = self._types[0].as_numpy_dtype
        for i in itertools.count(self._start, self._step):
            yield (np.asarray(i, dtype=np_type),)


class TakeWhile(_Unary):
    """The elements up to the first for which ``predicate`` is false."""

    def __init__(self, upstream, predicate):
        super().__init__(upstream)
        self._fn = TracedFunction(predicate, upstream._template, upstream._types,
                                  upstream._shapes, "take_while")
        check_predicate(self._fn)

    def _own_captures(self):
        return self._fn.captures

    def _iterate(self, run):
        stream = self._upstream._iterate(run)
        try:
            for element in stream:
                if not bool(self._fn(run, element)[0]):
                    return
                yield element
        finally:
            stream.close()


class Unique(_Unary):
    """Each element once, the first time it comes (scalar integers or strings)."""

    def __init__(self, upstream):
        if len(upstream._types) != 1 or not (upstream._types[0].is_integer or
                                             upstream._types[0] is dtypes.string):
            raise TypeError("unique: the elements must be single int32, int64 or string "
                            f"tensors, got {upstream.output_types!r}")
        super().__init__(upstream)

    def _iterate(self, run):
        seen = set()
        for element in self._upstream._iterate(run):
            value = np.asarray(element[0])
            if value.ndim:
                raise InvalidArgumentError(f"unique: the elements must be scalars, got "
                                           f"shape {list(value.shape)}")
            key = value.item()
            if key not in seen:
                seen.add(key)
                yield element


def _same_structure(datasets, what):
    first = datasets[0]
    for ds in datasets[1:]:
        if ds._types != first._types:
            raise TypeError(f"{what}: the data sets' element types differ: "
                            f"{first.output_types!r} vs {ds.output_types!r}")
    shapes = first._shapes
    for ds in datasets[1:]:
        shapes = [None if a is None or b is None or len(a) != len(b) else
                  TensorShape([x if x == y else None for x, y in zip(a, b)])
                  for a, b in zip(shapes, ds._shapes)]
    return first._template, first._types, shapes


class _Directed(Dataset):
    """The elements of ``datasets`` in an order ``_choices(run)`` gives; a data set
    that has ended is skipped (TF's default, ``stop_on_empty_dataset=False``)."""

    def __init__(self, datasets, inputs, what):
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError(f"{what}: expected a non-empty list of data sets")
        template, types, shapes = _same_structure(datasets, what)
        super().__init__(template, types, shapes, inputs=inputs)
        self._datasets = datasets

    def _iterate(self, run):
        streams = [d._iterate(run) for d in self._datasets]
        live = [True] * len(streams)
        try:
            for k in self._choices(run, live):
                if not 0 <= k < len(streams):
                    raise InvalidArgumentError(f"choose_from_datasets: selector index {k} "
                                               f"out of range [0, {len(streams)})")
                if not live[k]:
                    continue
                try:
                    yield next(streams[k])
                except StopIteration:
                    live[k] = False
        finally:
            for s in streams:
                s.close()


class ChooseFromDatasets(_Directed):
    """``choose_from_datasets``: the next element of ``datasets[i]`` for each ``i`` of
    ``choice_dataset`` (int64 scalars)."""

    def __init__(self, datasets, choice_dataset):
        if not isinstance(choice_dataset, Dataset) or choice_dataset._types != [dtypes.int64]:
            raise TypeError("choose_from_datasets: choice_dataset must be a data set of "
                            "int64 scalars")
        super().__init__(datasets, (*datasets, choice_dataset), "choose_from_datasets")
        self._choice = choice_dataset

    def _choices(self, run, live):
        for (k,) in self._choice._iterate(run):
            yield int(k)


class SampleFromDatasets(_Directed):
    """``sample_from_datasets``: each element from a data set drawn at random with
    ``weights`` (uniform by default), until every data set has ended."""

    def __init__(self, datasets, weights=None, seed=None):
        datasets = list(datasets)
        super().__init__(datasets, datasets, "sample_from_datasets")
        w = np.ones(len(datasets)) if weights is None else np.asarray(weights, np.float64)
        if w.shape != (len(datasets),) or (w < 0).any() or not w.sum() > 0:
            raise ValueError(f"sample_from_datasets: weights must be {len(datasets)} "
                             f"non-negative numbers, not all zero; got {weights!r}")
        self._weights = w
        graph = get_default_graph()
        self._position, self._graph_seed = len(graph.nodes), graph.seed
        self._op_seed = int(seed) if seed is not None else \
            (self._position if graph.seed is not None else None)

    def _choices(self, run, live):
        rng = run.rng(self, self._graph_seed, self._op_seed, self._position, True)
        while any(live):
            w = self._weights * np.asarray(live)
            if not w.sum() > 0:
                return
            yield int(rng.choice(len(w), p=w / w.sum()))
