"""Where a pipeline's elements come from: arrays and tensors, Python generators,
ranges, text files, and other data sets side by side or one after another."""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.data import structure
from gradflow.data.dataset import INFINITE, UNKNOWN, Dataset, stage
from gradflow.data.transforms import scalar_argument
from gradflow.errors import (
    DataLossError,
    GradflowError,
    InvalidArgumentError,
    OutOfRangeError,
    ResourceExhaustedError,
    UnimplementedError,
    UnknownError,
)
from gradflow.graph import Tensor, TensorShape
from gradflow.ops.reader_ops import fixed_length_records
from gradflow.prim.registry import convert_to_tensor
from gradflow.tfrecord import compression, open_input, records


def _components(value, what):
    """``(template, [tensor or host array])`` of a nested value given to a source."""
    leaves = []
    for leaf in structure.flatten(value):
        if hasattr(leaf, "_as_graph_tensor"):
            leaf = leaf._as_graph_tensor()
        if isinstance(leaf, Tensor):
            leaves.append(convert_to_tensor(leaf))
        elif isinstance(leaf, list) and any(isinstance(v, Tensor) for v in leaf):
            raise TypeError(f"{what}: a list of tensors is one value in TF1; give several "
                            "components as a tuple")
        else:
            leaves.append(structure.host_array(leaf, what=what))
    if not leaves:
        raise ValueError(f"{what}: no components given")
    return value, leaves


def _dtype(component):
    if isinstance(component, Tensor):
        return component.dtype
    return structure.dtype_of(component)


@stage
class TensorSlices(Dataset):
    """``Dataset.from_tensor_slices``: one element per row of the components."""

    def __init__(self, tensors):
        template, self._components = _components(tensors, "from_tensor_slices")
        shapes, lengths = [], set()
        for c in self._components:
            shape = structure.shape_of(c)
            if shape is not None and len(shape) == 0:
                raise ValueError(f"from_tensor_slices: {_label(c)} is a scalar; every "
                                 "component needs a first axis to slice")
            shapes.append(None if shape is None else TensorShape(shape[1:]))
            if shape is not None and shape[0] is not None:
                lengths.add(int(shape[0]))
        if len(lengths) > 1:
            raise ValueError(f"from_tensor_slices: the components have different first "
                             f"dimensions {sorted(lengths)}: "
                             + ", ".join(f"{_label(c)} {structure.shape_of(c)}"
                                         for c in self._components))
        super().__init__(template, [_dtype(c) for c in self._components], shapes)

    def _own_captures(self):
        return [c for c in self._components if isinstance(c, Tensor)]

    def _arrays(self, run):
        arrays = [run.value(c) for c in self._components]
        lengths = {len(a) for a in arrays}
        if len(lengths) > 1:
            raise InvalidArgumentError(
                "from_tensor_slices: the components fed have different first dimensions: "
                + ", ".join(f"{_label(c)} {np.shape(a)}"
                            for c, a in zip(self._components, arrays)))
        return arrays, lengths.pop()

    def _cardinality(self, run):
        return self._arrays(run)[1]

    def _iterate(self, run):
        arrays, count = self._arrays(run)
        for i in range(count):
            yield tuple(a[i, ...] for a in arrays)

    def _batches(self, run, size, drop_remainder):
        arrays, count = self._arrays(run)  # rows in order: slices, no copy
        stop = count - count % size if drop_remainder else count
        for start in range(0, stop, size):
            yield tuple(a[start:start + size] for a in arrays)


def _label(component):
    return f"'{component.name}'" if isinstance(component, Tensor) else "an array"


@stage
class Tensors(Dataset):
    """``Dataset.from_tensors``: a single element."""

    def __init__(self, tensors):
        template, self._components = _components(tensors, "from_tensors")
        super().__init__(template, [_dtype(c) for c in self._components],
                         [structure.shape_of(c) for c in self._components])

    def _own_captures(self):
        return [c for c in self._components if isinstance(c, Tensor)]

    def _cardinality(self, run):
        return 1

    def _iterate(self, run):
        yield tuple(run.value(c) for c in self._components)


@stage
class Generator(Dataset):
    """``Dataset.from_generator``: what ``generator(*args)`` yields, converted and
    checked against ``output_types``/``output_shapes``."""

    def __init__(self, generator, output_types, output_shapes=None, args=None):
        if not callable(generator):
            raise TypeError(f"from_generator: generator must be callable, got {generator!r}")
        types = [dtypes.as_dtype(t) for t in structure.flatten(output_types)]
        if output_shapes is None:
            shapes = [None] * len(types)
        else:
            shapes = structure.shapes_up_to(output_types, output_shapes)
            if len(shapes) != len(types):
                raise ValueError("from_generator: output_shapes does not have the structure "
                                 f"of output_types: {output_shapes!r} vs {output_types!r}")
        self._generator = generator
        self._label = getattr(generator, "__name__", repr(generator))
        self._args = [] if args is None else [
            a if isinstance(a, Tensor) else structure.host_array(a, what="from_generator")
            for a in (args if isinstance(args, (list, tuple)) else [args])]
        super().__init__(output_types, types, shapes)

    def _own_captures(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _iterate(self, run):
        try:
            items = iter(self._generator(*[run.value(a) for a in self._args]))
        except Exception as err:
            _reraise(self._label, err, "starting")
        try:
            while True:
                try:
                    item = next(items)
                except StopIteration:
                    return
                except Exception as err:
                    _reraise(self._label, err, "running")
                yield self._element(item)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def _element(self, item):
        try:
            leaves = _flatten_up_to(self._template, item)
        except ValueError:
            raise InvalidArgumentError(
                f"from_generator: {self._label} yielded {item!r}, which does not have the "
                f"structure of output_types {self.output_types!r}") from None
        out = []
        for k, (value, dtype, shape) in enumerate(zip(leaves, self._types, self._shapes)):
            try:
                array = structure.host_array(value, dtype)
            except (TypeError, ValueError) as err:
                raise InvalidArgumentError(
                    f"from_generator: component {k} yielded by {self._label} cannot be "
                    f"converted to {dtype.name}: {err}") from None
            if not structure.fits(array.shape, shape):
                raise InvalidArgumentError(
                    f"from_generator: component {k} yielded by {self._label} has shape "
                    f"{list(array.shape)}, which is not compatible with the declared "
                    f"output_shapes {structure.format_shape(shape)}")
            out.append(array)
        return tuple(out)


def _reraise(label, err, when):
    """Raise ``_raised_by``'s error for ``err``, with ``err`` as its cause."""
    wrapped = _raised_by(label, err, when)
    if wrapped is err:
        raise err
    raise wrapped from err


def _raised_by(label, err, when):
    """The gradflow error a run reports for ``err``, raised by a generator's code: as
    TF1's ``py_func`` maps Python's exceptions (ValueError and TypeError: invalid
    argument; MemoryError: resource exhausted; NotImplementedError: unimplemented;
    others: unknown). gradflow's own errors pass as they are, but for OutOfRangeError,
    which would end the data set silently."""
    if isinstance(err, GradflowError) and not isinstance(err, OutOfRangeError):
        return err
    if isinstance(err, (ValueError, TypeError)):
        kind = InvalidArgumentError
    elif isinstance(err, MemoryError):
        kind = ResourceExhaustedError
    elif isinstance(err, NotImplementedError):
        kind = UnimplementedError
    else:
        kind = UnknownError
    return kind(f"from_generator: {label} raised {type(err).__name__} while {when}: {err}")


def _flatten_up_to(template, value):
    """The components of ``value`` (a generator's item) following ``template``; lists
    are sequences here, as in TF1's ``nest``."""
    if isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            raise ValueError
        return [leaf for key in sorted(template) for leaf in _flatten_up_to(template[key],
                                                                             value[key])]
    if isinstance(template, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(template):
            raise ValueError
        return [leaf for t, v in zip(template, value) for leaf in _flatten_up_to(t, v)]
    return [value]


@stage
class Range(Dataset):
    """``Dataset.range``: integers as Python's ``range`` gives them."""

    def __init__(self, args, output_type=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"Dataset.range takes 1 to 3 arguments, got {len(args)}")
        # Python ints, or scalar integer tensors (flat_map's arguments) read at the start
        self._args = [scalar_argument(a, "Dataset.range") for a in args]
        super().__init__(None, [dtypes.as_dtype(output_type or dtypes.int64)], [TensorShape(())])

    def _own_captures(self):
        return [a for a in self._args if isinstance(a, Tensor)]

    def _range(self, run):
        return range(*[run.scalar(a) for a in self._args])

    def _cardinality(self, run):
        return len(self._range(run))

    def _iterate(self, run):
        np_type = self._types[0].as_numpy_dtype
        for i in self._range(run):
            yield (np.asarray(i, dtype=np_type),)

    def _batches(self, run, size, drop_remainder):
        # one batch at a time: a range of 10**12 costs what its batch costs
        np_type = self._types[0].as_numpy_dtype
        whole = self._range(run)
        count = len(whole)
        stop = count - count % size if drop_remainder else count
        for first in range(0, stop, size):
            part = whole[first:first + size]
            yield (np.arange(part.start, part.stop, part.step, dtype=np_type),)


@stage
class Zip(Dataset):
    """``Dataset.zip``: elements of several data sets side by side, to the shortest."""

    def __init__(self, datasets):
        parts = structure.flatten(datasets)
        if not parts or not all(isinstance(d, Dataset) for d in parts):
            raise TypeError(f"Dataset.zip takes a tuple (or dict) of data sets, got {datasets!r}")
        template = structure.pack(datasets, [d._template for d in parts])
        super().__init__(template, [t for d in parts for t in d._types],
                         [s for d in parts for s in d._shapes], inputs=parts)

    def _cardinality(self, run):
        counts = [d._cardinality(run) for d in self._inputs]
        if UNKNOWN in counts:
            return UNKNOWN
        finite = [n for n in counts if n != INFINITE]
        return min(finite) if finite else INFINITE

    def _iterate(self, run):
        streams = [d._iterate(run) for d in self._inputs]
        try:
            for elements in zip(*streams):
                yield tuple(c for e in elements for c in e)
        finally:
            for s in streams:
                s.close()


@stage
class Concatenate(Dataset):
    """``Dataset.concatenate``: one data set's elements, then another's."""

    def __init__(self, first, second):
        if first._types != second._types or \
                structure.flatten(first.output_types) != structure.flatten(second.output_types):
            raise TypeError(f"Dataset.concatenate: the element types differ: "
                            f"{first.output_types!r} vs {second.output_types!r}")
        shapes = [structure.most_specific_shape(a, b)
                  for a, b in zip(first._shapes, second._shapes)]
        super().__init__(first._template, first._types, shapes, inputs=(first, second))

    def _cardinality(self, run):
        counts = [d._cardinality(run) for d in self._inputs]
        if INFINITE in counts:
            return INFINITE
        return UNKNOWN if UNKNOWN in counts else sum(counts)

    def _iterate(self, run):
        for ds in self._inputs:
            yield from ds._iterate(run)


def _path(name):
    return name.decode() if isinstance(name, bytes) else str(name)


class _FileRecords(Dataset):
    """A data set of ``string`` scalars read from files in turn: each subclass gives a
    file's records (``_records(path)``, bytes)."""

    def __init__(self, filenames):
        if hasattr(filenames, "_as_graph_tensor"):
            filenames = filenames._as_graph_tensor()
        if isinstance(filenames, Tensor):  # a placeholder, say: read when initialized
            if filenames.dtype is not dtypes.string or (
                    filenames.shape is not None and len(filenames.shape) > 1):
                raise TypeError(f"{type(self).__name__}: filenames '{filenames.name}' must "
                                "be a string scalar or vector")
            self._files = filenames
        else:
            if isinstance(filenames, (str, bytes)):
                filenames = [filenames]
            self._files = [_path(f) for f in filenames]
        super().__init__(None, [dtypes.string], [TensorShape(())])

    def _own_captures(self):
        return [self._files] if isinstance(self._files, Tensor) else []

    def _iterate(self, run):
        files = self._files
        if isinstance(files, Tensor):
            files = [_path(f) for f in np.asarray(run.value(files)).reshape(-1)]
        for path in files:
            for record in self._records(path):
                yield (dtypes.bytes_array(record),)  # a 0-d object array: bytes kept whole


class TextLineDataset(_FileRecords):
    """The lines of text files, without their line endings, as ``string`` scalars
    (TF1 ``tf.data.TextLineDataset``; ``compression_type`` "", "GZIP" or "ZLIB").

    >>> lines = gf.data.TextLineDataset(["train.csv"]).skip(1)
    >>> rows = lines.map(lambda line: gf.py_func(parse_row, [line], [gf.float32, gf.int64]))
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        kind = (compression_type or "").upper()
        if kind not in ("", "GZIP", "ZLIB"):
            raise ValueError(f"TextLineDataset: compression_type must be '', 'GZIP' or "
                             f"'ZLIB', got {compression_type!r}")
        self._compression = kind
        super().__init__(filenames)

    def _records(self, path):
        number = 1
        with open_input(path, self._compression, "TextLineDataset") as f:
            try:
                for line in f:  # a buffer at a time, compressed or not
                    yield line.rstrip(b"\n").rstrip(b"\r")
                    number += 1
            except DataLossError as err:  # raised by the reading, not at the yield
                raise DataLossError(f"TextLineDataset {path!r}: line {number} cannot be "
                                    f"read ({err})") from None


class FixedLengthRecordDataset(_FileRecords):
    """The records of ``record_bytes`` bytes each in binary files, after
    ``header_bytes`` and before ``footer_bytes``, as ``string`` scalars (TF1
    ``tf.data.FixedLengthRecordDataset``). A file its records do not fill exactly is
    an error naming it.

    >>> records = gf.data.FixedLengthRecordDataset(["data_batch_1.bin"], 3073)
    >>> pixels = records.map(lambda r: gf.decode_raw(r, gf.uint8))
    """

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None):
        if compression_type:
            raise NotImplementedError("FixedLengthRecordDataset: compression_type is not "
                                      "supported")
        if int(record_bytes) <= 0:
            raise ValueError(f"FixedLengthRecordDataset: record_bytes must be positive, got "
                             f"{record_bytes}")
        self._sizes = (int(record_bytes), int(header_bytes or 0), int(footer_bytes or 0))
        super().__init__(filenames)

    def _records(self, path):
        for _, record in fixed_length_records(path, *self._sizes, "FixedLengthRecordDataset"):
            yield record


class TFRecordDataset(_FileRecords):
    """The records of TFRecord files (``gradflow.tfrecord``), as ``string`` scalars (TF1
    ``tf.data.TFRecordDataset``; ``compression_type`` "", "GZIP" or "ZLIB").

    >>> records = gf.data.TFRecordDataset(["train.tfrecords"])
    >>> parsed = records.map(lambda r: gf.parse_single_example(r, features))
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        self._compression = compression(compression_type)
        super().__init__(filenames)

    def _records(self, path):
        return records(path, self._compression)
