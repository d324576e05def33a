"""Writing TensorFlow's V2 checkpoint layout, the one ``tf_checkpoint`` reads: the
tensors' bytes in ``<prefix>.data-00000-of-00001`` and, in ``<prefix>.index``, a table
(LevelDB's layout, as TensorFlow's own table writer makes it) mapping each tensor's name
to its ``BundleEntryProto`` (dtype, shape, place in the data file, masked CRC-32C of its
bytes) after a ``BundleHeaderProto`` under the empty key. TensorFlow's Saver and
``tf.train.load_checkpoint`` read the files, and a fixed set of tensors gives the bytes
TensorFlow 2.21's ``compat.v1`` Saver writes (``tests/test_tf_checkpoint_writer.py``).

Tensors are stored by name in byte order, contiguous and little-endian, as TensorFlow's
Saver stores them. The two files are written to temporaries beside them, flushed to disk,
then renamed into place, data file first: a checkpoint exists once its index does, and a
failed save leaves the files it would have replaced as they were.

Example::

    from gradflow.train import tf_checkpoint_writer
    tf_checkpoint_writer.write("ckpt/model-10", {"dense/kernel": kernel, "step": step})
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from gradflow import protowire
from gradflow.atomic_files import _remove_stale_temporaries
from gradflow.train import checksums

DATA_SUFFIX = ".data-00000-of-00001"  # the one data file of an unsharded checkpoint
INDEX_SUFFIX = ".index"
MAGIC = 0xDB4775248B80FB57  # the last 8 bytes of a table
_BLOCK_SIZE = 262144  # bytes: TensorFlow's table options close a block past this
_RESTART_INTERVAL = 16  # keys between full (unshared) keys in a data block (1 in the index)
_HANDLE_SPACE = 40  # the footer's room for two block handles, then the magic
# TensorFlow's DataType numbers (types.proto) by NumPy dtype
DATA_TYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
              "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18,
              "float16": 19, "bfloat16": 14, "uint32": 22, "uint64": 23}
_TENSOR_BUNDLE_VERSION = 1  # VersionDef.producer of TensorFlow's bundles


def write(prefix, arrays):
    """Write ``arrays`` (name -> NumPy array) as the checkpoint ``prefix``: its data file
    and then its index, each atomically. Raises ``ValueError`` for a name or dtype
    TensorFlow's layout cannot hold, before any file is touched."""
    index, data = bundle(arrays)
    replace_together([(prefix + DATA_SUFFIX, data), (prefix + INDEX_SUFFIX, index)])


def bundle(arrays):
    """``(index bytes, data bytes)`` of the checkpoint of ``arrays``."""
    names = sorted(arrays, key=_key)
    data, entries, offset = bytearray(), [], 0
    for name in names:
        raw, dtype = _tensor_bytes(name, arrays[name])
        data += raw
        entries.append((_key(name), _entry(dtype, arrays[name].shape, offset, raw)))
        offset += len(raw)
    header = _varint_field(1, 1) + _message_field(3, _varint_field(1, _TENSOR_BUNDLE_VERSION))
    return table([(b"", header)] + entries), bytes(data)


def _key(name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"a checkpoint's tensor needs a non-empty name, got {name!r}")
    return name.encode("utf-8")


def _tensor_bytes(name, value):
    value = np.asarray(value)
    dtype = DATA_TYPES.get(value.dtype.name)
    if dtype is None:
        raise ValueError(f"tensor {name!r} has dtype {value.dtype}, which a checkpoint in "
                         "TensorFlow's layout does not hold here (numbers and bool only)")
    if dtype == 14:  # bfloat16: its bits, which NumPy byte-orders as uint16
        value = value.view(np.uint16)
    little = value.dtype.newbyteorder("<")
    return np.ascontiguousarray(value, little).tobytes(), dtype


def _entry(dtype, shape, offset, raw):
    """A ``BundleEntryProto``'s bytes, fields in number order, zeros left out (proto3)."""
    dims = b"".join(_message_field(2, _varint_field(1, int(d))) for d in shape)
    out = _varint_field(1, dtype) + _message_field(2, dims)
    out += _varint_field(4, offset) + _varint_field(5, len(raw))
    crc = checksums.masked_crc32c(raw)
    if crc:
        out += bytes([6 << 3 | 5]) + crc.to_bytes(4, "little")
    return out


def _varint_field(number, value):
    return protowire.write_varint(number << 3) + protowire.write_varint(value) if value else b""


def _message_field(number, payload):
    out = bytearray()
    protowire.write_bytes_field(out, number, payload)
    return bytes(out)


# -- the table: sorted (key, value) pairs in blocks, an index block, a footer -------------


def table(pairs):
    """The bytes of a table of ``pairs`` (sorted, distinct keys), as TensorFlow's
    ``table::TableBuilder`` writes it without compression."""
    out, index, block, last = bytearray(), _Block(1), _Block(), None
    pending = None  # the handle of the last data block, until the next key is known
    for key, value in pairs:
        if pending is not None:
            index.add(_separator(last, key), pending)
            pending = None
        block.add(key, value)
        last = key
        if block.size_estimate() >= _BLOCK_SIZE:
            pending, block = _write_block(out, block), _Block()
    if not block.empty():
        pending = _write_block(out, block)
    meta_handle = _write_block(out, _Block())
    if pending is not None:
        index.add(_successor(last), pending)
    index_handle = _write_block(out, index)
    handles = meta_handle + index_handle
    out += handles + bytes(_HANDLE_SPACE - len(handles)) + MAGIC.to_bytes(8, "little")
    return bytes(out)


class _Block:
    """A block being built: entries whose keys share a prefix with the one before, a full
    key every ``interval`` entries, and the offsets of those full keys."""

    def __init__(self, interval=_RESTART_INTERVAL):
        self.buffer, self.restarts, self.count, self.last = bytearray(), [0], 0, b""
        self.interval = interval

    def add(self, key, value):
        shared = 0
        if self.count == self.interval:
            self.restarts.append(len(self.buffer))
            self.count = 0
        else:
            limit = min(len(key), len(self.last))
            while shared < limit and key[shared] == self.last[shared]:
                shared += 1
        for number in (shared, len(key) - shared, len(value)):
            self.buffer += protowire.write_varint(number)
        self.buffer += key[shared:] + value
        self.last, self.count = key, self.count + 1

    def empty(self):
        return not self.buffer

    def size_estimate(self):
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self):
        return bytes(self.buffer) + b"".join(r.to_bytes(4, "little") for r in self.restarts) \
            + len(self.restarts).to_bytes(4, "little")


def _write_block(out, block):
    """Append ``block`` and its trailer (kind 0: uncompressed; masked CRC-32C of the block
    and the kind) to ``out``; return its handle's bytes (offset, size)."""
    raw = block.finish() + b"\0"
    handle = protowire.write_varint(len(out)) + protowire.write_varint(len(raw) - 1)
    out += raw + protowire.masked_crc32c(raw).to_bytes(4, "little")
    return handle


def _separator(start, limit):
    """A short key >= ``start`` and < ``limit`` (LevelDB's bytewise comparator's)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)):
        byte = start[common]
        if byte < 0xFF and byte + 1 < limit[common]:
            return start[:common] + bytes([byte + 1])
    return start


def _successor(key):
    """A short key >= ``key``: its first byte that can grow, grown, and nothing after."""
    for k, byte in enumerate(key):
        if byte != 0xFF:
            return key[:k] + bytes([byte + 1])
    return key


# -- files that replace their old versions together ---------------------------------------


def replace_together(files):
    """Write each ``(path, bytes)`` of ``files`` to a temporary beside it and flush it to
    disk; only then rename them over their paths, in order. When a rename fails, the
    files already renamed get their old contents back, so the set stays as it was."""
    temporaries = []
    try:
        for path, data in files:
            temporaries.append(_written_temporary(path, data))
        _rename_all([(tmp, path) for tmp, (path, _) in zip(temporaries, files)])
    finally:
        for tmp in temporaries:
            _unlink(tmp)


def _written_temporary(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    _remove_stale_temporaries(folder)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.{os.getpid()}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _rename_all(moves):
    """Rename each ``(temporary, path)``; on a failure, put back what was replaced."""
    backups = []  # (backup of the old file or None, path), of the renames done
    try:
        for tmp, path in moves:
            backups.append((_backup(path), path))
            os.replace(tmp, path)
    except BaseException:
        for backup, path in reversed(backups):
            try:
                if backup is None:
                    _unlink(path)
                else:
                    os.replace(backup, path)
            except OSError:
                pass
        raise
    finally:
        for backup, _ in backups:
            if backup is not None:
                _unlink(backup)


def _backup(path):
    """A hard link to the file at ``path`` under a temporary's name, or ``None`` when there
    is no file there (or the file system cannot link: then nothing can be put back)."""
    if not os.path.isfile(path):
        return None
    name = tempfile.mktemp(dir=os.path.dirname(os.path.abspath(path)),
                           prefix=f".{os.path.basename(path)}.{os.getpid()}.", suffix=".tmp")
    try:
        os.link(path, name)
    except OSError:
        return None
    return name


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
