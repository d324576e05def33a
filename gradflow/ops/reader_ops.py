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

The ops' primitives, and a reader's place in one Session (``ReaderState``), are in
``gradflow.prim.reader``.
"""

from __future__ import annotations

import os

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import get_default_graph
from gradflow.ops.state_ops import group
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.reader import ReaderState
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.tfrecord import compression, open_input, records

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
        return tuple(pick(node, k, shape, dtypes.string) for k in range(2))

    def state(self, session):
        """This reader's place in ``session``."""
        state = session.resources.get(self)
        if state is None:
            state = session.resources.setdefault(self, ReaderState())
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
        super().__init__(name or "TFRecordReader")
        self.compression = compression(options)

    def _records(self, path):
        for k, data in enumerate(records(path, self.compression)):
            yield f"{path}:{k}", data


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
