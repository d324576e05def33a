"""TF1's readers, which turn a queue of file names into records:
``FixedLengthRecordReader`` (the CIFAR-10 binaries), ``TFRecordReader``,
``TextLineReader`` and ``WholeFileReader``; and ``decode_raw``, which turns a record's
bytes into numbers.

``reader.read(filename_queue)`` gives ``(key, value)``, two string scalars: the record
and ``b"<file name>:<record number>"`` (the file name alone for ``WholeFileReader``).
When its file is used up, a read takes the next name from the queue, waiting for one
as a dequeue does, so a closed, empty queue ends the input with ``OutOfRangeError``.
Like a queue's elements, a reader's place lives in each Session; threads of one
Session share it (``shuffle_batch(num_threads=4)``), one read at a time.

>>> queue = gf.train.string_input_producer(["data_batch_1.bin"])
>>> key, value = gf.FixedLengthRecordReader(record_bytes=3073).read(queue)
>>> record = gf.decode_raw(value, gf.uint8)
"""

from __future__ import annotations

import os
import threading

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError, NotFoundError, OutOfRangeError
from gradflow.graph import get_default_graph
from gradflow.ops.control_flow_ops import VARIANT, _pick
from gradflow.ops.dataset_ops import _declared
from gradflow.prim.registry import apply, convert_to_tensor, register

__all__ = ["FixedLengthRecordReader", "ReaderBase", "TFRecordReader", "TextLineReader",
           "WholeFileReader", "decode_raw"]


class ReaderBase:
    """A reader of records from the files a queue names (see the module doc)."""

    def __init__(self, name):
        self.graph = get_default_graph()
        self.name = self.graph.unique_name(name)

    def read(self, queue, name=None):
        """``(key, value)``: the next record, and where it came from."""
        return self._read(queue, None, name or f"{self.name}_ReaderRead")

    def read_up_to(self, queue, num_records, name=None):
        """``(keys, values)``: up to ``num_records`` records, fewer where the input ends
        (each a vector of strings)."""
        return self._read(queue, int(num_records), name or f"{self.name}_ReaderReadUpTo")

    def num_records_produced(self, name=None):
        """An int64 scalar: how many records this reader gave in the Session."""
        return apply("reader_count", [], name=name or f"{self.name}_NumRecordsProduced",
                     graph=self.graph, reader=self, shape=(), dtype=dtypes.int64)

    def reset(self, name=None):
        """An op that forgets the reader's file and count (the next read takes a new name
        from the queue)."""
        from gradflow.ops.state_ops import group

        name = name or f"{self.name}_ReaderReset"
        node = apply("reader_reset", [], name=name + "/run", graph=self.graph, reader=self,
                     shape=None, dtype=VARIANT)
        return group(node, name=name)

    def _read(self, queue, n, name):
        if len(queue.dtypes) != 1 or queue.dtypes[0] is not dtypes.string:
            raise TypeError(f"{type(self).__name__}.read: '{queue.name}' must be a queue of "
                            "strings (file names)")
        shape = () if n is None else (None,)
        node = apply("reader_read", [], name=name, graph=self.graph, reader=self, queue=queue,
                     n=n, shape=None, dtype=VARIANT)
        return tuple(_pick(node, k, shape, dtypes.string) for k in range(2))

    def state(self, session):
        """This reader's place in ``session``."""
        state = session.resources.get(self)
        if state is None:
            state = session.resources.setdefault(self, _ReaderState())
        return state

    # a file's records: ``_records(path) -> iterator of (key, value bytes)``, where the
    # iterator owns the open file (closed when exhausted or when the Session closes)
    def _records(self, path):
        raise NotImplementedError


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes each, after ``header_bytes`` and before
    ``footer_bytes``. A file whose records do not fill it exactly is an error naming
    it (TF1 drops the partial record silently)."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        if hop_bytes or encoding:
            raise NotImplementedError("FixedLengthRecordReader: hop_bytes and encoding are "
                                      "not supported")
        if int(record_bytes) <= 0:
            raise ValueError(f"FixedLengthRecordReader: record_bytes must be positive, got "
                             f"{record_bytes}")
        super().__init__(name or "FixedLengthRecordReader")
        self.record_bytes = int(record_bytes)
        self.header_bytes, self.footer_bytes = int(header_bytes or 0), int(footer_bytes or 0)

    def _records(self, path):
        return fixed_length_records(path, self.record_bytes, self.header_bytes,
                                    self.footer_bytes, self.name)


def fixed_length_records(path, record_bytes, header_bytes, footer_bytes, who):
    """``(key, record)`` for each record of the file ``path`` (see
    ``FixedLengthRecordReader``); ``who`` names the reader in errors."""
    from gradflow.tfrecord import open_input

    with open_input(path, "", who) as f:  # a folder or no file: the error TF1 gives
        body = os.fstat(f.fileno()).st_size - header_bytes - footer_bytes
        if body < 0 or body % record_bytes:
            raise InvalidArgumentError(
                f"{who}: {path!r} has {max(body, 0)} bytes between its header and footer, "
                f"not a whole number of {record_bytes}-byte records")
        f.seek(header_bytes)
        for k in range(body // record_bytes):
            yield f"{path}:{k}", f.read(record_bytes)


class TextLineReader(ReaderBase):
    """The lines of text files, without their line ends, after ``skip_header_lines``;
    keys number the lines from 1."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(name or "TextLineReader")
        self.skip = int(skip_header_lines or 0)

    def _records(self, path):
        with open(path, "rb") as f:
            for k, line in enumerate(f, start=1):
                if k > self.skip:
                    yield f"{path}:{k}", line.rstrip(b"\n").rstrip(b"\r")


class WholeFileReader(ReaderBase):
    """Each file whole: the key is its name."""

    def __init__(self, name=None):
        super().__init__(name or "WholeFileReader")

    def _records(self, path):
        with open(path, "rb") as f:
            data = f.read()
        yield path, data


class TFRecordReader(ReaderBase):
    """The records of TFRecord files (``gradflow.tfrecord``); keys number them from 0.
    ``options``: a ``TFRecordOptions`` or compression name for compressed files."""

    def __init__(self, name=None, options=None):
        from gradflow.tfrecord import compression

        super().__init__(name or "TFRecordReader")
        self.compression = compression(options)

    def _records(self, path):
        from gradflow.tfrecord import records

        for k, data in enumerate(records(path, self.compression)):
            yield f"{path}:{k}", data


class _ReaderState:
    def __init__(self):
        self.lock = threading.Lock()
        self.current = None  # the open file's records
        self.produced = 0

    def next_record(self, reader, queue, session, node):
        """The next ``(key, value)``; OutOfRangeError where the queue has no more names."""
        while True:
            if self.current is None:
                (path,) = queue.state(session).take(None, False, node)[0]
                path = path.decode("utf-8", "surrogateescape") if isinstance(path, bytes) \
                    else str(path)
                if not os.path.isfile(path):
                    raise NotFoundError(f"{reader.name}: no file {path!r}")
                self.current = reader._records(path)
            found = next(self.current, None)
            if found is not None:
                self.produced += 1
                return found
            self.current = None

    def close(self):
        """Close the open file (the Session closing, or ``reset``)."""
        current, self.current = self.current, None
        if current is not None:
            try:
                current.close()
            except ValueError:  # a thread is reading from it: the file closes when freed
                pass


def _read_impl(session, node):
    reader, queue, n = node.attrs["reader"], node.attrs["queue"], node.attrs["n"]

    def run():
        state = reader.state(session)
        with state.lock:
            if n is None:
                key, value = state.next_record(reader, queue, session, node)
                return dtypes.bytes_array(key), dtypes.bytes_array(value)
            found = []
            try:
                while len(found) < n:
                    found.append(state.next_record(reader, queue, session, node))
            except OutOfRangeError:
                if not found:
                    raise
        keys, values = zip(*found)
        return dtypes.bytes_array(list(keys)), dtypes.bytes_array(list(values))

    return run


def _count_impl(session, node):
    reader = node.attrs["reader"]
    return lambda: np.int64(reader.state(session).produced)


def _reset_impl(session, node):
    reader = node.attrs["reader"]

    def run():
        state = reader.state(session)
        with state.lock:
            state.close()
            state.produced = 0
        return ()

    return run


def _decode_raw_impl(session, node):
    dtype, little = node.attrs["out_type"], node.attrs["little_endian"]
    stored = np.dtype(dtype.as_numpy_dtype).newbyteorder("<" if little else ">")
    to_host, asarray = session.backend.host_value, session.backend.asarray

    def run(data):
        strings = np.asarray(to_host(data), dtype=object)
        lengths = sorted({len(s) for s in strings.ravel()})
        if len(lengths) > 1 or (lengths and lengths[0] % stored.itemsize):
            raise InvalidArgumentError(
                f"decode_raw '{node.name}': the strings must have one length, a multiple of "
                f"{stored.itemsize} bytes ({dtype.name}); got lengths {lengths[:5]}")
        rows = [np.frombuffer(s, dtype=stored) for s in strings.ravel()]
        width = len(rows[0]) if rows else 0
        out = np.array(rows, dtype=stored).reshape(strings.shape + (width,))
        return asarray(out.astype(stored.newbyteorder("=")))

    return run


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """The numbers of ``out_type`` that strings' bytes hold (TF1 ``tf.decode_raw``): a
    string tensor of shape ``s`` gives ``s + [n]``. Every string must have one length,
    a multiple of the type's size."""
    data = convert_to_tensor(input_bytes if input_bytes is not None else bytes,
                             dtype=dtypes.string)
    out_type = dtypes.as_dtype(out_type)
    if data.dtype is not dtypes.string:
        raise TypeError(f"decode_raw: '{data.name}' must be a string tensor, got "
                        f"{data.dtype.name}")
    if out_type.is_bool or out_type is dtypes.string:
        raise TypeError(f"decode_raw: out_type must be a number type, got {out_type.name}")
    shape = None if data.shape is None else tuple(data.shape) + (None,)
    return apply("decode_raw", [data], name=name or "DecodeRaw", out_type=out_type,
                 little_endian=bool(little_endian), shape=shape, dtype=out_type)


register("reader_read", _read_impl, _declared, grad=None, kind="call")
register("reader_count", _count_impl, _declared, grad=None, kind="call")
register("reader_reset", _reset_impl, _declared, grad=None, kind="call")
register("decode_raw", _decode_raw_impl, _declared, grad=None, kind="call", takes_strings=True)
