"""TensorFlow's TFRecord files: records, each framed as its length (8 bytes,
little-endian), the length's masked CRC-32C (4 bytes), the data, and the data's masked
CRC-32C (4 bytes); the whole file optionally GZIP- or ZLIB-compressed. TF1's
``tf.python_io.TFRecordWriter``, ``tf_record_iterator``, ``TFRecordOptions`` and
``TFRecordCompressionType``; ``TFRecordReader`` and ``tf.data.TFRecordDataset`` read
through ``records``.

Every length is checked against the file and every checksum verified: a damaged or cut
file is a ``DataLossError`` naming it and the record, never a wrong record.

>>> with gf.python_io.TFRecordWriter("train.tfrecords") as writer:
...     writer.write(example.SerializeToString())
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib

from gradflow import gfile, protowire
from gradflow.errors import (
    DataLossError,
    FailedPreconditionError,
    NotFoundError,
    PermissionDeniedError,
)

# the largest record read: a damaged or hostile length is refused before any memory is
# taken for it
LARGEST_RECORD = 1 << 31

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "tf_record_iterator"]


class TFRecordCompressionType:
    """TF1's compression kinds of a TFRecord file."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_KINDS = {None: "", "": "", 0: "", 1: "ZLIB", 2: "GZIP", "NONE": "", "ZLIB": "ZLIB",
          "GZIP": "GZIP"}


class TFRecordOptions:
    """How a TFRecord file is compressed: ``compression_type`` one of
    ``TFRecordCompressionType``'s, or ``""``, ``"ZLIB"``, ``"GZIP"``."""

    def __init__(self, compression_type=None):
        self.compression = compression(compression_type)

    @staticmethod
    def get_compression_type_string(options):
        """``""``, ``"ZLIB"`` or ``"GZIP"`` for ``options`` (TF1)."""
        return compression(options)


def compression(kind):
    """``""``, ``"ZLIB"`` or ``"GZIP"`` from any way TF1 names a compression."""
    if isinstance(kind, TFRecordOptions):
        return kind.compression
    key = kind.upper() if isinstance(kind, str) else kind
    if key not in _KINDS:
        raise ValueError(f"TFRecord compression must be '', 'ZLIB' or 'GZIP', got {kind!r}")
    return _KINDS[key]


def frame(data: bytes) -> bytes:
    """One record as a TFRecord file holds it."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", protowire.masked_crc32c(length)) + data
            + struct.pack("<I", protowire.masked_crc32c(data)))


class TFRecordWriter:
    """Writes records to a new TFRecord file at ``path`` (TF1
    ``tf.python_io.TFRecordWriter``); ``close()`` or the end of a ``with`` block
    finishes it."""

    def __init__(self, path, options=None):
        self.path, self._kind = str(path), compression(options)
        self._file = open(self.path, "wb")
        if self._kind == "GZIP":
            self._out = gzip.GzipFile(fileobj=self._file, mode="wb", mtime=0)
        elif self._kind == "ZLIB":
            self._zlib = zlib.compressobj()
            self._out = self._file
        else:
            self._out = self._file

    def write(self, record):
        """Append one record (bytes, or text as UTF-8)."""
        data = record.encode() if isinstance(record, str) else bytes(record)
        framed = frame(data)
        self._out.write(self._zlib.compress(framed) if self._kind == "ZLIB" else framed)

    def flush(self):
        """Push what was written to the file."""
        if self._kind != "ZLIB":
            self._out.flush()

    def close(self):
        """Finish the file."""
        if self._file.closed:
            return
        if self._kind == "ZLIB":
            self._file.write(self._zlib.flush())
        elif self._kind == "GZIP":
            self._out.close()
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_CHUNK = 1 << 16  # compressed bytes read at a time, and the most inflated at a time
_FEED = 1 << 10  # compressed bytes inflated by one call: where damage is noticed
_LARGE_READ = 1 << 20  # a record body longer than this is read in pieces of this


def open_input(path, kind="", who="TFRecord"):
    """``path`` opened to read its bytes, inflated a buffer at a time where ``kind`` is
    "ZLIB" or "GZIP". A path that cannot be read is the error TF1 gives, naming it and
    ``who``: ``NotFoundError`` (no such file), ``FailedPreconditionError`` (a folder),
    ``PermissionDeniedError``."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(f"{who}: no file {path!r}") from None
    except IsADirectoryError:
        raise FailedPreconditionError(f"{who}: {path!r} is a directory, not a file") \
            from None
    except PermissionError:
        raise PermissionDeniedError(f"{who}: {path!r} cannot be read (permission "
                                    "denied)") from None
    except OSError as err:  # the rest as gfile maps them (by errno, as TF does)
        raise gfile.os_error(f"{who}: open", repr(path), err) from None
    if not kind:
        return f
    return io.BufferedReader(_Inflating(f, kind, path), _CHUNK)


class _Inflating(io.RawIOBase):
    """The inflated bytes of a ZLIB or GZIP file, a buffer at a time
    (``zlib.decompressobj`` with a bounded ``max_length``): however much a stream
    inflates, reading it costs one buffer. The compressed bytes are fed ``_FEED`` at a
    time, so that what precedes a damaged place is read before it fails (a
    ``DataLossError``, as is a cut stream). Streams that follow one another (GZIP
    members) are read in turn."""

    def __init__(self, file, kind, path):
        self._file, self._kind, self._path = file, kind, path
        self._wbits = 16 + zlib.MAX_WBITS if kind == "GZIP" else zlib.MAX_WBITS
        self._inflater = zlib.decompressobj(self._wbits)
        self._pending, self._offset = b"", 0  # compressed bytes read; how many inflated
        self._fed = False  # whether the current stream has begun
        self._ended = False  # whether the file has no more bytes
        self._error = None  # damage found after the bytes that precede it

    def readable(self):
        return True

    def close(self):
        if not self.closed:
            self._file.close()
        super().close()

    def readinto(self, buffer):
        if self._error is not None:  # met while filling the previous buffer
            raise self._error
        size, filled = len(buffer), 0
        while filled < size:
            try:
                data = self._piece(size - filled)
            except DataLossError as err:
                if not filled:
                    raise
                self._error = err  # what precedes the damage is read first
                break
            if data is None:
                break
            buffer[filled:filled + len(data)] = data
            filled += len(data)
        return filled

    def _piece(self, room):
        """The bytes of the next piece of the file inflated (maybe none), or None at
        the end of the file."""
        if self._inflater.eof and not self._next_stream():
            return None
        drained = self._offset == len(self._pending)
        if drained and not self._ended:
            self._pending, self._offset = self._file.read(_CHUNK), 0
            self._ended = drained = not self._pending
        data = self._inflate(room)
        if not data and drained and self._ended and not self._inflater.eof:
            if not self._fed:  # an empty file
                return None
            raise DataLossError(f"{self._path!r}: the {self._kind} stream is cut short")
        return data

    def _inflate(self, size):
        piece = memoryview(self._pending)[self._offset:self._offset + _FEED]
        try:
            data = self._inflater.decompress(piece, size)
        except zlib.error as err:
            raise DataLossError(f"{self._path!r} is not valid {self._kind} data "
                                f"({err})") from None
        inflater = self._inflater
        rest = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        self._offset += len(piece) - len(rest)
        self._fed = self._fed or len(piece) > 0
        return data

    def _next_stream(self):
        """After the end of a stream: start the next if the file has more (zeros that
        pad a GZIP file are skipped); False at the end of the file."""
        rest = self._pending[self._offset:]
        while True:
            if self._kind == "GZIP":
                rest = rest.lstrip(b"\0")
            if rest:
                break
            rest = b"" if self._ended else self._file.read(_CHUNK)
            if not rest:
                self._pending, self._offset, self._ended = b"", 0, True
                return False
        self._inflater = zlib.decompressobj(self._wbits)
        self._pending, self._offset, self._fed = rest, 0, False
        return True


def _read_large(f, n):
    """``n`` bytes of ``f`` (fewer at its end), read in pieces: a length claimed by a
    damaged file costs no more memory than the file holds."""
    parts = bytearray()
    while len(parts) < n:
        part = f.read(min(n - len(parts), _LARGE_READ))
        if not part:
            break
        parts += part
    return bytes(parts)


def records(path, kind=""):
    """The records of the TFRecord file ``path``, in order, checked (see the module)."""
    with open_input(path, kind) as f:
        number = 0
        while True:
            try:
                head = f.read(12)
            except (OSError, EOFError) as err:
                raise DataLossError(f"TFRecord {path!r}: record {number} cannot be read "
                                    f"({err})") from None
            if not head:
                return
            where = f"TFRecord {path!r}: record {number}"
            if len(head) < 12:
                raise DataLossError(f"{where} is cut short in its header")
            length, length_crc = struct.unpack("<QI", head)
            if protowire.masked_crc32c(head[:8]) != length_crc:
                raise DataLossError(f"{where}: its length fails its checksum")
            if length > LARGEST_RECORD:
                raise DataLossError(f"{where} claims {length} bytes, over the limit of "
                                    f"{LARGEST_RECORD} (gradflow.tfrecord.LARGEST_RECORD)")
            try:
                body = f.read(length + 4) if length < _LARGE_READ else \
                    _read_large(f, length + 4)
            except (OSError, EOFError) as err:
                raise DataLossError(f"{where} cannot be read ({err})") from None
            if len(body) < length + 4:
                raise DataLossError(f"{where} is cut short ({len(body)} of {length + 4} "
                                    "bytes)")
            data = body[:length]
            if protowire.masked_crc32c(data) != struct.unpack("<I", body[length:])[0]:
                raise DataLossError(f"{where}: its data fails its checksum")
            yield data
            number += 1


def tf_record_iterator(path, options=None):
    """The records of a TFRecord file, as bytes (TF1 ``tf.python_io.tf_record_iterator``)."""
    return records(str(path), compression(options))
