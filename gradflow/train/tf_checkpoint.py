"""Reading TensorFlow's own checkpoints, so that ``Saver.restore`` takes the files a
TF1 program wrote: the V2 "tensor bundle", ``<prefix>.index`` (a LevelDB-style table:
each tensor's name, dtype, shape and place in the data) and
``<prefix>.data-<shard>-of-<shards>`` (the tensors' bytes), and the text ``checkpoint``
index beside them. Read only: gradflow writes its own format.

Nothing in the files is run or trusted: every length and offset is checked against the
file before it is used, the index's blocks and each tensor's bytes against their
CRC-32C checksums, and a file that fails gets a ``TFCheckpointError`` that says what is
wrong. Only the data files named after the prefix are opened.

Example::

    from gradflow.train import tf_checkpoint
    arrays, described = tf_checkpoint.load("model/dnn.ckpt-100", ["Variable"])
"""

from __future__ import annotations

import ast
import math
import os

import numpy as np

from gradflow import protowire

_MAGIC = 0xDB4775248B80FB57  # the table footer's last 8 bytes
_FOOTER = 48
_BLOCK_TRAILER = 5  # compression kind, masked CRC-32C
_LARGEST_INDEX = 1 << 30  # bytes: a larger .index is refused before it is read
# TensorFlow's DataType numbers (types.proto) for the dtypes a variable can have here
_DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
           8: "complex64", 9: "int64", 10: "bool", 17: "uint16", 18: "complex128",
           19: "float16", 22: "uint32", 23: "uint64"}
_DTYPE_NAMES = {7: "string", 14: "bfloat16", 20: "resource", 21: "variant"}


class TFCheckpointError(ValueError):
    """A TensorFlow checkpoint that cannot be read: ``str`` says why, ``short`` briefly."""

    def __init__(self, message, short="is damaged"):
        super().__init__(message)
        self.short = short


def is_tf_checkpoint(prefix):
    """Whether ``prefix`` names a TensorFlow V2 checkpoint (its ``.index`` file exists)."""
    return os.path.isfile(prefix + ".index")


def load(prefix, names):
    """``(arrays, described)`` of the checkpoint at ``prefix``: ``arrays`` the tensors of
    ``names`` it holds (read fully and checked), ``described`` every tensor's
    ``(dtype name, shape)`` in the order of the index. Raises ``TFCheckpointError``."""
    entries, shards, big_endian = _read_index(prefix + ".index")
    described = {name: (_dtype_name(entry["dtype"]), tuple(entry["shape"]))
                 for name, entry in entries.items()}
    arrays = {}
    for name in names:
        if name in entries:
            arrays[name] = _read_tensor(prefix, name, entries[name], shards, big_endian)
    return arrays, described


def read_index_text(raw):
    """The fields of TensorFlow's text ``checkpoint`` index (a text protobuf):
    ``{"model_checkpoint_path": str or None, "all_model_checkpoint_paths": [str],
    "all_model_checkpoint_timestamps": [float], "last_preserved_timestamp": float}``.
    Raises ``TFCheckpointError`` on a line it cannot read."""
    fields = {"model_checkpoint_path": None, "all_model_checkpoint_paths": [],
              "all_model_checkpoint_timestamps": [], "last_preserved_timestamp": 0.0}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TFCheckpointError(f"it is not UTF-8 text ({err})") from None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in fields:
            raise TFCheckpointError(f"line {number} ({line[:60]!r}) is not a field of a "
                                    "TensorFlow checkpoint index")
        if key.endswith("paths") or key == "model_checkpoint_path":
            if not (len(value) >= 2 and value[0] == value[-1] == '"'):
                raise TFCheckpointError(f"line {number}: {key} is not a quoted string")
            try:  # a C-escaped string: the escapes Python's bytes literals share
                parsed = ast.literal_eval("b" + value).decode("utf-8")
            except (ValueError, SyntaxError, UnicodeDecodeError):
                raise TFCheckpointError(f"line {number}: {key} is not a valid string") \
                    from None
        else:
            try:
                parsed = float(value)
            except ValueError:
                raise TFCheckpointError(f"line {number}: {key} is not a number") from None
        if key.startswith("all_"):
            fields[key].append(parsed)
        else:
            fields[key] = parsed
    return fields


# -- the index: a table of (name, BundleEntryProto) ---------------------------------


def _read_index(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > _LARGEST_INDEX:
                raise TFCheckpointError(f"its index {path} is {size} bytes, more than any "
                                        f"checkpoint's index this reader takes "
                                        f"({_LARGEST_INDEX})", "is too large")
            data = f.read()
    except OSError as err:
        raise TFCheckpointError(f"its index {path} cannot be read ({type(err).__name__}: "
                                f"{err})", "cannot be read") from None
    if len(data) < _FOOTER or int.from_bytes(data[-8:], "little") != _MAGIC:
        raise TFCheckpointError(f"its index {path} is not a TensorFlow checkpoint index, or "
                                f"is cut short ({len(data)} bytes, no table footer)")
    footer = data[-_FOOTER:]
    _, pos = _handle(footer, 0)  # the metaindex block: nothing in it is needed
    index_block, _ = _handle(footer, pos)
    header, entries = None, {}
    try:
        for _, handle in _block_entries(_block(data, *index_block)):
            for key, value in _block_entries(_block(data, *_handle(handle, 0)[0])):
                if key == b"":
                    header = _header(value)
                else:
                    entries[key.decode("utf-8", "replace")] = _entry(value)
    except TFCheckpointError as err:
        raise TFCheckpointError(f"its index {path} is damaged: {err}") from None
    if header is None:
        raise TFCheckpointError(f"its index {path} has no bundle header")
    return entries, header["num_shards"], header["endianness"] == 1


def _handle(buf, pos):
    """A block's ``(offset, size)`` at ``pos`` of ``buf``, and the position after it."""
    offset, pos = _varint(buf, pos)
    size, pos = _varint(buf, pos)
    return (offset, size), pos


def _block(data, offset, size):
    end = offset + size
    if end + _BLOCK_TRAILER > len(data) - _FOOTER:
        raise TFCheckpointError(f"a block ({size} bytes at {offset}) runs past the table")
    raw, kind = data[offset:end], data[end]
    stored = int.from_bytes(data[end + 1:end + _BLOCK_TRAILER], "little")
    if protowire.masked_crc32c(data[offset:end + 1]) != stored:
        raise TFCheckpointError(f"the block at byte {offset} fails its checksum")
    if kind != 0:  # TensorFlow writes a bundle's index uncompressed
        raise TFCheckpointError(f"the block at byte {offset} is compressed (kind {kind}), "
                                "which TensorFlow's checkpoints are not")
    return raw


def _block_entries(block):
    """The ``(key, value)`` pairs of a table block (keys stored as shared prefix + rest)."""
    if len(block) < 4:
        raise TFCheckpointError("a block is shorter than its restart count")
    limit = len(block) - 4 - 4 * int.from_bytes(block[-4:], "little")
    if limit < 0:
        raise TFCheckpointError("a block's restart array is larger than the block")
    pos, key = 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos)
        rest, pos = _varint(block, pos)
        size, pos = _varint(block, pos)
        if shared > len(key) or pos + rest + size > limit:
            raise TFCheckpointError("a block's entry runs past the block")
        key = key[:shared] + block[pos:pos + rest]
        pos += rest
        yield key, block[pos:pos + size]
        pos += size


def _header(value):
    header = {"num_shards": 1, "endianness": 0}
    for number, _, field in _fields(value):
        if number == 1:
            header["num_shards"] = field
        elif number == 2:
            header["endianness"] = field
    if not 1 <= header["num_shards"] <= 100000:
        raise TFCheckpointError(f"the header gives {header['num_shards']} data files")
    return header


def _entry(value):
    entry = {"dtype": 0, "shape": [], "shard": 0, "offset": 0, "size": 0, "crc": None,
             "sliced": False}
    for number, _, field in _fields(value):
        if number == 1:
            entry["dtype"] = field
        elif number == 2:
            entry["shape"] = [protowire.signed(size) for n, _, dim in _fields(field) if n == 2
                              for m, _, size in _fields(dim) if m == 1]
        elif number in (3, 4, 5):
            entry[{3: "shard", 4: "offset", 5: "size"}[number]] = protowire.signed(field)
        elif number == 6:
            entry["crc"] = field
        elif number == 7:
            entry["sliced"] = True
    return entry


# -- a tensor's bytes ----------------------------------------------------------------


def _read_tensor(prefix, name, entry, shards, big_endian):
    dtype = _DTYPES.get(entry["dtype"])
    if dtype is None:
        raise TFCheckpointError(f"tensor '{name}' has dtype {_dtype_name(entry['dtype'])}, "
                                "which gradflow variables cannot hold",
                                "holds a tensor of another dtype")
    if entry["sliced"]:
        raise TFCheckpointError(f"tensor '{name}' is saved in slices (a partitioned "
                                "variable), which this reader does not join",
                                "holds a partitioned variable")
    shape = tuple(entry["shape"])
    if any(d < 0 for d in shape) or not 0 <= entry["shard"] < shards:
        raise TFCheckpointError(f"tensor '{name}' has shape {shape} in data file "
                                f"{entry['shard']} of {shards}")
    item = np.dtype(dtype).newbyteorder(">" if big_endian else "<")
    count = math.prod(shape)
    if entry["size"] != count * item.itemsize or entry["offset"] < 0:
        raise TFCheckpointError(f"tensor '{name}' of shape {shape} and dtype {dtype} should "
                                f"take {count * item.itemsize} bytes; the index gives "
                                f"{entry['size']} at offset {entry['offset']}")
    path = f"{prefix}.data-{entry['shard']:05d}-of-{shards:05d}"
    try:
        with open(path, "rb") as f:
            available = os.fstat(f.fileno()).st_size - entry["offset"]
            f.seek(entry["offset"])
            raw = f.read(max(0, min(entry["size"], available)))
    except OSError as err:
        raise TFCheckpointError(f"its data file {path} cannot be read ({type(err).__name__}: "
                                f"{err})", "has no data file") from None
    if len(raw) != entry["size"]:
        raise TFCheckpointError(f"its data file {path} ends before tensor '{name}' (bytes "
                                f"{entry['offset']}-{entry['offset'] + entry['size']}), as "
                                "when a copy is cut short", "is cut short")
    if entry["crc"] is not None and protowire.masked_crc32c(raw) != entry["crc"]:
        raise TFCheckpointError(f"tensor '{name}' in {path} fails its checksum: the data "
                                "file is damaged")
    return np.frombuffer(raw, item).astype(dtype).reshape(shape)


def _dtype_name(number):
    return _DTYPES.get(number) or _DTYPE_NAMES.get(number) or f"DataType {number}"


# -- wire formats --------------------------------------------------------------------


def _varint(buf, pos):
    return protowire.read_varint(buf, pos, TFCheckpointError)


def _fields(buf):
    return protowire.fields(buf, TFCheckpointError)
