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

from gradflow import protowire
from gradflow.errors import DataLossError, NotFoundError

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


def _opened(path, kind):
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(f"TFRecord: no file {path!r}") from None
    if kind == "GZIP":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if kind == "ZLIB":
        with f:
            try:
                return io.BytesIO(zlib.decompress(f.read()))
            except zlib.error as err:
                raise DataLossError(f"TFRecord {path!r}: not ZLIB data ({err})") from None
    return f


def records(path, kind=""):
    """The records of the TFRecord file ``path``, in order, checked (see the module)."""
    with _opened(path, kind) as f:
        number = 0
        while True:
            try:
                head = f.read(12)
            except (OSError, EOFError, zlib.error) as err:
                raise DataLossError(f"TFRecord {path!r}: record {number} cannot be "
                                    f"decompressed ({err})") from None
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
                body = f.read(length + 4)
            except (OSError, EOFError, zlib.error) as err:
                raise DataLossError(f"{where} cannot be decompressed ({err})") from None
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
