"""Data sets run whole inside one ``Session.run``: ``get_single_element``,
``cardinality`` and ``TFRecordWriter.write`` (TF1's ``tf.data.experimental``).

Each is a ``dataset_evaluate`` graph op whose inputs are the tensors the data set
reads; every run of it starts the pipeline afresh (as TF's ops do) in a
``PipelineRun`` of its own and closes it before returning.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.data import structure
from gradflow.data.dataset import Dataset
from gradflow.data.host import PipelineRun
from gradflow.errors import InvalidArgumentError
from gradflow.graph import TensorShape, get_default_graph
from gradflow.ops.control_flow_ops import VARIANT
from gradflow.ops.state_ops import group
from gradflow.prim import dataset as dataset_ops  # noqa: F401 - registers dataset_evaluate
from gradflow.prim.registry import apply
from gradflow.tfrecord import TFRecordWriter as _FileWriter
from gradflow.tfrecord import compression


def _check(dataset, what):
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{what}: expected a gf.data.Dataset, got {dataset!r}")


def _on_host(dataset, body):
    """``evaluate`` for the op: ``body(pipeline_run)`` in a run made for this step."""

    def evaluate(run_state, inputs, values):
        to_numpy = run_state.backend.to_numpy
        host = {t: v if t.dtype is dtypes.string else to_numpy(v)
                for t, v in zip(inputs, values)}
        run = PipelineRun(run_state, host, {}, None)
        try:
            result = body(run)
        finally:
            run.close()
        asarray = run_state.backend.asarray
        if isinstance(result, tuple):
            return tuple(c if c.dtype.kind == "O" else asarray(c) for c in result)
        return result if result.dtype.kind == "O" else asarray(result)

    return evaluate


def _op(dataset, body, name, types, shapes):
    single = len(types) == 1
    node = apply("dataset_evaluate", dataset._captures(), name=name,
                 graph=get_default_graph(), evaluate=_on_host(dataset, body),
                 shape=shapes[0] if single else None, dtype=types[0] if single else VARIANT)
    if single or not types:
        return node
    return [apply("iterator_component", [node], name=f"{node.name}_{k}", index=k, shape=s,
                  dtype=t) for k, (t, s) in enumerate(zip(types, shapes))]


def get_single_element(dataset):
    """The one element of ``dataset`` as tensors (TF1): each run runs the data set from
    its start; an empty data set, or one of more elements, fails the run with
    ``InvalidArgumentError``.

    >>> x, y = gf.data.experimental.get_single_element(ds.batch(10 ** 9))
    """
    _check(dataset, "get_single_element")

    def body(run):
        stream = dataset._iterate(run)
        try:
            first = next(stream, None)
            if first is None:
                raise InvalidArgumentError("get_single_element: Dataset was empty.")
            if next(stream, None) is not None:
                raise InvalidArgumentError("get_single_element: Dataset had more than one "
                                           "element.")
        finally:
            stream.close()
        return first[0] if len(first) == 1 else first

    parts = _op(dataset, body, "DatasetToSingleElement", dataset._types, dataset._shapes)
    return structure.pack(dataset._template, [parts] if len(dataset._types) == 1 else parts)


def cardinality(dataset):
    """The number of elements of ``dataset``, an int64 scalar tensor (TF1):
    ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2) where it is endless or
    not known without running it. As in TF1, ``map`` (and ``filter``, ``unbatch``,
    generators, files) make it unknown; ``assert_cardinality`` makes it known."""
    _check(dataset, "cardinality")

    def body(run):
        return np.asarray(dataset._cardinality(run), np.int64)

    return _op(dataset, body, "DatasetCardinality", [dtypes.int64], [TensorShape(())])


class TFRecordWriter:
    """Writes a data set of string scalars to a TFRecord file (TF1
    ``tf.data.experimental.TFRecordWriter``): ``write(dataset)`` is the operation that
    does it, each time it runs.

    >>> op = gf.data.experimental.TFRecordWriter("out.tfrecord").write(records)
    >>> sess.run(op)
    """

    def __init__(self, filename, compression_type=None):
        self._filename = str(filename)
        self._compression = compression(compression_type)

    def write(self, dataset):
        """The operation that writes every element of ``dataset`` (string scalars)."""
        _check(dataset, "TFRecordWriter.write")
        if dataset._types != [dtypes.string] or (
                dataset._shapes[0] is not None and len(dataset._shapes[0]) != 0):
            raise TypeError("TFRecordWriter.write: the data set must have string scalar "
                            f"elements, got {dataset.output_types!r} "
                            f"{dataset.output_shapes!r}")
        filename, kind = self._filename, self._compression

        def body(run):
            with _FileWriter(filename, kind) as out:
                for (record,) in dataset._iterate(run):
                    out.write(record.item() if hasattr(record, "item") else record)
            return ()

        return group(_op(dataset, body, "WriteTFRecord/run", [], []), name="WriteTFRecord")
