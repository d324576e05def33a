"""``tf.train.Example``, the record TF1 programs write to TFRecord files: a map from
names to features, each a list of bytes, floats (float32) or ints (int64). The classes
build, serialize and parse it in TensorFlow's wire format (protobuf, by hand:
``gradflow.protowire``), with its Python API:

>>> example = gf.train.Example(features=gf.train.Features(feature={
...     "label": gf.train.Feature(int64_list=gf.train.Int64List(value=[7])),
...     "image": gf.train.Feature(bytes_list=gf.train.BytesList(value=[pixels])),
... }))
>>> data = example.SerializeToString()
>>> gf.train.Example.FromString(data).features.feature["label"].int64_list.value
[7]

It sits below the ops (``gf.io.parse_example`` reads it) and is re-exported by
``gradflow.train``.
"""

from __future__ import annotations

import collections
import struct

from gradflow import protowire
from gradflow.errors import DataLossError

__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List"]


class _Message:
    """The Python protobuf API these messages share."""

    def SerializeToString(self) -> bytes:  # noqa: N802 - TF1 name
        """The message in protobuf's wire format."""
        out = bytearray()
        self._write(out)
        return bytes(out)

    @classmethod
    def FromString(cls, data):  # noqa: N802 - TF1 name
        """The message that ``data`` (wire format) holds; ``DataLossError`` if it is not
        one."""
        message = cls()
        message.ParseFromString(data)
        return message

    def ParseFromString(self, data):  # noqa: N802 - TF1 name
        """Replace this message's contents with those ``data`` holds."""
        self.__init__()
        self._read(bytes(data))
        return len(data)

    def __eq__(self, other):
        return type(other) is type(self) and other.SerializeToString() == \
            self.SerializeToString()

    __hash__ = None


class BytesList(_Message):
    """A list of byte strings (text is stored as UTF-8)."""

    def __init__(self, value=()):
        self.value = [v.encode() if isinstance(v, str) else bytes(v) for v in value]

    def _write(self, out):
        for v in self.value:
            protowire.write_bytes_field(out, 1, v)

    def _read(self, data):
        self.value = [bytes(v) for n, kind, v in _fields(data) if n == 1 and kind == 2]

    def __repr__(self):
        return f"BytesList(value={self.value!r})"


class FloatList(_Message):
    """A list of float32 numbers."""

    def __init__(self, value=()):
        self.value = [struct.unpack("<f", struct.pack("<f", float(v)))[0] for v in value]

    def _write(self, out):
        if self.value:
            protowire.write_bytes_field(out, 1, struct.pack(f"<{len(self.value)}f",
                                                            *self.value))

    def _read(self, data):
        self.value = _numbers(data, _packed_floats, 5,
                              lambda v: struct.unpack("<f", v.to_bytes(4, "little"))[0])

    def __repr__(self):
        return f"FloatList(value={self.value!r})"


class Int64List(_Message):
    """A list of int64 numbers."""

    def __init__(self, value=()):
        self.value = [int(v) for v in value]
        for v in self.value:
            if not -2**63 <= v < 2**63:
                raise ValueError(f"Int64List: {v} is out of the int64 range")

    def _write(self, out):
        if self.value:
            packed = b"".join(protowire.write_varint(v & 0xFFFFFFFFFFFFFFFF)
                              for v in self.value)
            protowire.write_bytes_field(out, 1, packed)

    def _read(self, data):
        self.value = _numbers(data, _packed_ints, 0, protowire.signed)

    def __repr__(self):
        return f"Int64List(value={self.value!r})"


_KINDS = {"bytes_list": (1, BytesList), "float_list": (2, FloatList),
          "int64_list": (3, Int64List)}


class Feature(_Message):
    """One of ``bytes_list``, ``float_list`` or ``int64_list``."""

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        given = {k: v for k, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                   ("int64_list", int64_list)) if v is not None}
        if len(given) > 1:
            raise ValueError(f"Feature: one of bytes_list, float_list, int64_list, got "
                             f"{sorted(given)}")
        self._kind, self._list = next(iter(given.items()), (None, None))

    def WhichOneof(self, name):  # noqa: N802 - TF1 name
        """Which list this feature holds (``"bytes_list"``...), or None."""
        return self._kind

    def __getattr__(self, name):
        if name not in _KINDS or name.startswith("_"):
            raise AttributeError(name)
        if self._kind is None:  # as protobuf: a list of an unset feature can be filled
            self._kind, self._list = name, _KINDS[name][1]()
        return self._list if self._kind == name else _KINDS[name][1]()

    def _write(self, out):
        if self._kind is not None:
            protowire.write_bytes_field(out, _KINDS[self._kind][0],
                                        self._list.SerializeToString())

    def _read(self, data):
        numbers = {n: (name, cls) for name, (n, cls) in _KINDS.items()}
        for n, kind, v in _fields(data):
            if n in numbers and kind == 2:
                self._kind, self._list = numbers[n][0], numbers[n][1].FromString(v)

    def __repr__(self):
        return f"Feature({self._kind}={self._list!r})"


class Features(_Message):
    """A map from names to ``Feature`` (``feature``)."""

    def __init__(self, feature=None):
        # as a protobuf map of messages: a name not there yet is added when looked up
        self.feature = collections.defaultdict(Feature, feature or {})

    def _write(self, out):
        for name, feature in self.feature.items():
            entry = bytearray()
            protowire.write_bytes_field(entry, 1, name.encode())
            protowire.write_bytes_field(entry, 2, feature.SerializeToString())
            protowire.write_bytes_field(out, 1, bytes(entry))

    def _read(self, data):
        for n, kind, entry in _fields(data):
            if n != 1 or kind != 2:
                continue
            name, feature = "", Feature()
            for m, kind_, v in _fields(entry):
                if m == 1 and kind_ == 2:
                    name = bytes(v).decode("utf-8", "replace")
                elif m == 2 and kind_ == 2:
                    feature = Feature.FromString(v)
            self.feature[name] = feature

    def __repr__(self):
        return f"Features(feature={self.feature!r})"


class Example(_Message):
    """A record of named features (``features``)."""

    def __init__(self, features=None):
        self.features = features if features is not None else Features()

    def _write(self, out):
        protowire.write_bytes_field(out, 1, self.features.SerializeToString())

    def _read(self, data):
        for n, kind, v in _fields(data):
            if n == 1 and kind == 2:
                self.features = Features.FromString(v)

    def __repr__(self):
        return f"Example(features={self.features!r})"


def _fields(data):
    return protowire.fields(data, DataLossError)


def _numbers(data, packed, plain_kind, plain):
    """The numbers of a list message's field 1, packed (``packed(bytes)`` gives a list)
    or one per field (wire type ``plain_kind``, ``plain(value)`` gives the number)."""
    values = []
    for n, kind, v in _fields(data):
        if n == 1 and kind == 2:
            values += packed(v)
        elif n == 1 and kind == plain_kind:
            values.append(plain(v))
    return values


def _packed_floats(v):
    if len(v) % 4:
        raise DataLossError("a packed float list is not a whole number of floats")
    return list(struct.unpack(f"<{len(v) // 4}f", v))


def _packed_ints(v):
    values, pos = [], 0
    while pos < len(v):
        number, pos = protowire.read_varint(v, pos, DataLossError)
        values.append(protowire.signed(number))
    return values
