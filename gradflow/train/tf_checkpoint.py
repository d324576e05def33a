"""Reading TensorFlow's own checkpoints, so that ``Saver.restore`` takes the files a
TF1 program wrote: the V2 "tensor bundle", ``<prefix>.index`` (a LevelDB-style table:
each tensor's name, dtype, shape and place in the data) and
``<prefix>.data-<shard>-of-<shards>`` (the tensors' bytes), and the text ``checkpoint``
index beside them (which ``write_index_text`` also writes). The bundle itself is written
by ``tf_checkpoint_writer``.

Nothing in the files is run or trusted: every length and offset is checked against the
file before it is used, the index's blocks and each tensor's bytes against their
CRC-32C checksums, each field of the index's protobufs against the wire type its
``.proto`` gives it, and a file that fails gets a ``TFCheckpointError`` (a gradflow
error) that says what is wrong. The text index's strings are read by a bounded parser
of C escapes, never by Python's. Only the data files named after the prefix are
opened.

Example::

    from gradflow.train import tf_checkpoint
    arrays, described = tf_checkpoint.load("model/dnn.ckpt-100", ["Variable"])
"""

from __future__ import annotations

import math
import os

import ml_dtypes
import numpy as np

from gradflow import protowire
from gradflow.errors import GradflowError
from gradflow.train import checksums

_MAGIC = 0xDB4775248B80FB57  # the table footer's last 8 bytes
_FOOTER = 48
_BLOCK_TRAILER = 5  # compression kind, masked CRC-32C
_LARGEST_INDEX = 1 << 30  # bytes: a larger .index is refused before it is read
# TensorFlow's DataType numbers (types.proto) for the dtypes a variable can have here
_DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
           8: "complex64", 9: "int64", 10: "bool", 17: "uint16", 18: "complex128",
           19: "float16", 14: "bfloat16", 22: "uint32", 23: "uint64"}
_DTYPE_NAMES = {7: "string", 20: "resource", 21: "variant"}


class TFCheckpointError(GradflowError, ValueError):
    """A TensorFlow checkpoint that cannot be read: ``str`` says why, ``short`` briefly;
    ``damaged`` whether its bytes are damaged (TF's ``DATA_LOSS``), else it is well formed
    but holds what gradflow cannot read (``INVALID_ARGUMENT``)."""

    def __init__(self, message, short="is damaged", damaged=True):
        super().__init__(message)
        self.short = short
        self.damaged = damaged
        self.error_code = 15 if damaged else 3


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
            try:
                parsed = _unquote(value)
            except ValueError as err:
                raise TFCheckpointError(f"line {number}: {key} is not {err}") from None
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


def write_index_text(fields):
    """The text ``checkpoint`` index TensorFlow's ``get_checkpoint_state`` reads, of the
    ``fields`` that ``read_index_text`` returns (paths as given, strings C-escaped)."""
    lines = []
    if fields.get("model_checkpoint_path") is not None:
        lines.append(f"model_checkpoint_path: {_quote(fields['model_checkpoint_path'])}")
    lines += [f"all_model_checkpoint_paths: {_quote(p)}"
              for p in fields.get("all_model_checkpoint_paths", [])]
    lines += [f"all_model_checkpoint_timestamps: {float(t)!r}"
              for t in fields.get("all_model_checkpoint_timestamps", [])]
    if fields.get("last_preserved_timestamp"):
        lines.append(f"last_preserved_timestamp: {float(fields['last_preserved_timestamp'])!r}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _quote(text):
    """``text`` as a text-format string literal: printable ASCII as is, quotes and
    backslashes escaped, every other byte of its UTF-8 as an octal escape."""
    out = []
    for byte in text.encode("utf-8", "surrogatepass"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


_ESCAPES = {"n": 10, "t": 9, "r": 13, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8, "f": 12,
            "v": 11, "?": 63}


def _unquote(value):
    """The text of a text-format string literal (``"..."`` with C escapes), read in one
    bounded pass. Raises ``ValueError`` saying what it is not."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        raise ValueError("a quoted string")
    out, body, k = bytearray(), value[1:-1], 0
    while k < len(body):
        char, k = body[k], k + 1
        if char == '"':
            raise ValueError("a valid string (a bare quote inside it)")
        if char != "\\":
            out += char.encode("utf-8", "surrogatepass")
            continue
        escape, k = body[k:k + 1], k + 1
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            continue
        digits, base = _escape_digits(body, k, escape)
        if not digits:
            raise ValueError(f"a valid string (the escape \\{escape})")
        if int(digits, base) > 255:
            raise ValueError("a valid string (an octal escape above 255)")
        out.append(int(digits, base))
        k += len(digits) - (1 if base == 8 else 0)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("a valid string (not UTF-8)") from None


def _escape_digits(body, k, escape):
    """The digits of the escape ``\\<escape>...`` (``body[k:]`` follows ``escape``) and
    their base: up to three octal digits, or ``x`` and up to two hex ones."""
    if escape and escape in "01234567":
        end = k
        while end < len(body) and end < k + 2 and body[end] in "01234567":
            end += 1
        return escape + body[k:end], 8
    if escape == "x":
        end = k
        while end < len(body) and end < k + 2 and body[end] in "0123456789abcdefABCDEF":
            end += 1
        return body[k:end], 16
    return "", 8


# -- the index: a table of (name, BundleEntryProto) ---------------------------------


def _read_index(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > _LARGEST_INDEX:
                raise TFCheckpointError(f"its index {path} is {size} bytes, more than any "
                                        f"checkpoint's index this reader takes "
                                        f"({_LARGEST_INDEX})", "is too large", damaged=False)
            data = f.read()
    except OSError as err:
        raise TFCheckpointError(f"its index {path} cannot be read ({type(err).__name__}: "
                                f"{err})", "cannot be read", damaged=False) from None
    if len(data) < _FOOTER or int.from_bytes(data[-8:], "little") != _MAGIC:
        raise TFCheckpointError(f"its index {path} is not a TensorFlow checkpoint index, or "
                                f"is cut short ({len(data)} bytes, no table footer)")
    footer = data[-_FOOTER:]
    header, entries = None, {}
    try:
        _, pos = _handle(footer, 0)  # the metaindex block: nothing in it is needed
        index_block, _ = _handle(footer, pos)
        for _, handle in _block_entries(_block(data, *index_block)):
            for key, value in _block_entries(_block(data, *_handle(handle, 0)[0])):
                if key == b"":
                    header = _header(value)
                else:
                    name = key.decode("utf-8", "replace")
                    entries[name] = _entry(value, name)
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


_VARINT, _FIXED32, _BYTES = 0, 5, 2
_WIRE_NAMES = {0: "a number (varint)", 1: "64 fixed bits", 2: "bytes (a message)",
               5: "32 fixed bits"}
_HEADER_FIELDS = {1: ("num_shards", _VARINT), 2: ("endianness", _VARINT),
                  3: ("version", _BYTES)}
_ENTRY_FIELDS = {1: ("dtype", _VARINT), 2: ("shape", _BYTES), 3: ("shard_id", _VARINT),
                 4: ("offset", _VARINT), 5: ("size", _VARINT), 6: ("crc32c", _FIXED32),
                 7: ("slices", _BYTES)}
_SHAPE_FIELDS = {2: ("dim", _BYTES), 3: ("unknown_rank", _VARINT)}
_DIM_FIELDS = {1: ("size", _VARINT), 2: ("name", _BYTES)}


def _typed(value, known, where):
    """``(field number, value)`` of the fields of a message, each known field checked to
    have the wire type its ``.proto`` gives it (a protobuf parser refuses another)."""
    for number, kind, field in _fields(value):
        if number in known and known[number][1] != kind:
            name, want = known[number]
            raise TFCheckpointError(f"{where}: its field '{name}' is {_WIRE_NAMES[kind]}, "
                                    f"where {_WIRE_NAMES[want]} belongs")
        yield number, field


def _header(value):
    header = {"num_shards": 1, "endianness": 0}
    for number, field in _typed(value, _HEADER_FIELDS, "the bundle header"):
        if number == 1:
            header["num_shards"] = field
        elif number == 2:
            header["endianness"] = field
    if not 1 <= header["num_shards"] <= 100000:
        raise TFCheckpointError(f"the header gives {header['num_shards']} data files")
    return header


def _entry(value, name):
    where = f"the entry of tensor {name!r}"
    entry = {"dtype": 0, "shape": [], "shard": 0, "offset": 0, "size": 0, "crc": None,
             "sliced": False}
    for number, field in _typed(value, _ENTRY_FIELDS, where):
        if number == 1:
            entry["dtype"] = field
        elif number == 2:
            entry["shape"] = _shape(field, where)
        elif number in (3, 4, 5):
            entry[{3: "shard", 4: "offset", 5: "size"}[number]] = protowire.signed(field)
        elif number == 6:
            entry["crc"] = field
        elif number == 7:
            entry["sliced"] = True
    return entry


def _shape(value, where):
    shape = []
    for number, dim in _typed(value, _SHAPE_FIELDS, f"{where} (shape)"):
        if number == 3 and dim:
            raise TFCheckpointError(f"{where}: its shape is of unknown rank")
        if number == 2:
            sizes = [protowire.signed(v) for m, v in _typed(dim, _DIM_FIELDS, f"{where} (dim)")
                     if m == 1]
            size = sizes[-1] if sizes else 0
            if size < 0:
                raise TFCheckpointError(f"{where}: its shape has the size {size}")
            shape.append(size)
    return shape


# -- a tensor's bytes ----------------------------------------------------------------


def _read_tensor(prefix, name, entry, shards, big_endian):
    dtype = _DTYPES.get(entry["dtype"])
    if dtype is None:
        raise TFCheckpointError(f"tensor '{name}' has dtype {_dtype_name(entry['dtype'])}, "
                                "which gradflow variables cannot hold",
                                "holds a tensor of another dtype", damaged=False)
    if entry["sliced"]:
        raise TFCheckpointError(f"tensor '{name}' is saved in slices (a partitioned "
                                "variable), which this reader does not join",
                                "holds a partitioned variable", damaged=False)
    shape = tuple(entry["shape"])
    if any(d < 0 for d in shape) or not 0 <= entry["shard"] < shards:
        raise TFCheckpointError(f"tensor '{name}' has shape {shape} in data file "
                                f"{entry['shard']} of {shards}")
    storage = "uint16" if dtype == "bfloat16" else dtype  # bfloat16's bits, as uint16
    item = np.dtype(storage).newbyteorder(">" if big_endian else "<")
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
    if entry["crc"] is not None and checksums.masked_crc32c(raw) != entry["crc"]:
        raise TFCheckpointError(f"tensor '{name}' in {path} fails its checksum: the data "
                                "file is damaged")
    array = np.frombuffer(raw, item).astype(storage)
    return (array.view(ml_dtypes.bfloat16) if dtype == "bfloat16" else array).reshape(shape)


def _dtype_name(number):
    return _DTYPES.get(number) or _DTYPE_NAMES.get(number) or f"DataType {number}"


# -- wire formats --------------------------------------------------------------------


def _varint(buf, pos):
    return protowire.read_varint(buf, pos, TFCheckpointError)


def _fields(buf):
    return protowire.fields(buf, TFCheckpointError)
