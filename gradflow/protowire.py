"""The protobuf wire format and the checksums of TensorFlow's files, by hand (no
protobuf dependency): what TensorFlow's checkpoints (``train.tf_checkpoint``), TFRecord
files (``gradflow.tfrecord``), ``tf.train.Example`` (``gradflow.example``) and
``ConfigProto`` (``gradflow.config``) are made of.

Readers check every length against the buffer and raise ``error`` (a caller's
exception class) for anything that runs past it, so a hostile file is refused, never
read beyond.
"""

from __future__ import annotations

MASK_DELTA = 0xA282EAD8  # TensorFlow's masked CRC-32C: rotated right by 15, plus this


def write_varint(n: int) -> bytes:
    """``n`` (0 <= n < 2**64) as a base-128 varint."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def write_bytes_field(out: bytearray, number: int, payload: bytes) -> None:
    """Append field ``number`` holding ``payload`` (wire type 2) to ``out``."""
    out += write_varint(number << 3 | 2)
    out += write_varint(len(payload))
    out += payload


def read_varint(buf, pos, error=ValueError):
    """``(value, next position)`` of the varint at ``pos``."""
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise error("a number runs past the end of its record")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise error("a number is longer than 10 bytes")


def signed(value):
    """A varint's 64 bits read as a two's-complement int64."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(buf, error=ValueError):
    """``(field number, wire type, value)`` of each field of a protobuf message: an int
    for numbers (fixed-width ones as their little-endian bits), bytes for
    length-delimited fields."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos, error)
        kind = key & 7
        if kind == 0:
            value, pos = read_varint(buf, pos, error)
        elif kind in (1, 5):
            width = 8 if kind == 1 else 4
            if pos + width > len(buf):
                raise error("a fixed-width field runs past its record")
            value, pos = int.from_bytes(buf[pos:pos + width], "little"), pos + width
        elif kind == 2:
            size, pos = read_varint(buf, pos, error)
            if pos + size > len(buf):
                raise error("a field runs past its record")
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise error(f"a field has wire type {kind}")
        yield key >> 3, kind, value


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c_python(data):
    """CRC-32C (Castagnoli) of ``data``, one byte at a time."""
    crc = 0xFFFFFFFF
    for byte in bytes(data):
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    from crc32c import crc32c
except ImportError:  # the crc32c package is optional: the same sums, slower
    crc32c = crc32c_python


def masked_crc32c(data):
    """TensorFlow's masked CRC-32C of ``data`` (as its checkpoints and TFRecords store)."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF
