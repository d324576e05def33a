"""The primitives of TF1's readers (``gradflow.ops.reader_ops``): a read of the next
record(s), the count of records read, a reset, and ``decode_raw``; and a reader's place
in one Session (``ReaderState``), which threads of that Session share, one read at a
time.

They are ops of kind ``"call"``: the reader and the queue of file names are attributes;
a read takes the next name from the queue when its file is used up.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError, NotFoundError, OutOfRangeError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


class ReaderState:
    """A reader's open file and count of records in one Session."""

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


def _read_impl(run_state, node):
    reader, queue, n = node.attrs["reader"], node.attrs["queue"], node.attrs["n"]

    def run():
        state = reader.state(run_state)
        with state.lock:
            if n is None:
                key, value = state.next_record(reader, queue, run_state, node)
                return dtypes.bytes_array(key), dtypes.bytes_array(value)
            found = []
            try:
                while len(found) < n:
                    found.append(state.next_record(reader, queue, run_state, node))
            except OutOfRangeError:
                if not found:
                    raise
        keys, values = zip(*found)
        return dtypes.bytes_array(list(keys)), dtypes.bytes_array(list(values))

    return run


def _count_impl(run_state, node):
    reader = node.attrs["reader"]
    return lambda: np.int64(reader.state(run_state).produced)


def _reset_impl(run_state, node):
    reader = node.attrs["reader"]

    def run():
        state = reader.state(run_state)
        with state.lock:
            state.close()
            state.produced = 0
        return ()

    return run


def _decode_raw_impl(run_state, node):
    dtype, little = node.attrs["out_type"], node.attrs["little_endian"]
    stored = np.dtype(dtype.as_numpy_dtype).newbyteorder("<" if little else ">")
    to_host, asarray = run_state.backend.host_value, run_state.backend.asarray

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


register("reader_read", _read_impl, declared, grad=None, kind="call")
register("reader_count", _count_impl, declared, grad=None, kind="call")
register("reader_reset", _reset_impl, declared, grad=None, kind="call")
register("decode_raw", _decode_raw_impl, declared, grad=None, kind="call", takes_strings=True)
