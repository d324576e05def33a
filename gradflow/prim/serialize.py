"""Tensors as TensorFlow's ``TensorProto`` bytes, on the host: ``serialize_tensor`` /
``parse_tensor``, and the ``SparseTensor`` forms made of them (``serialize_sparse``,
``serialize_many_sparse``, ``deserialize_many_sparse``); ``gradflow.ops.io_ops`` builds
them. None has a gradient (TensorFlow's have none).

``TensorProto`` is written as TensorFlow writes it: ``dtype`` (field 1), ``tensor_shape``
(field 2, one ``dim {size}`` per axis), then the values as little-endian
``tensor_content`` (field 4), or one ``string_val`` (field 8) per string. Reading also
takes the typed value fields (``float_val``, ``int_val``, ...) other writers use, a single
value standing for a whole tensor as in TensorFlow.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from gradflow import dtypes, protowire
from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

# TensorFlow's DataType numbers (types.proto) of the dtypes gradflow has
DATATYPES = {dtypes.float32: 1, dtypes.float64: 2, dtypes.int32: 3, dtypes.uint8: 4,
             dtypes.int16: 5, dtypes.int8: 6, dtypes.string: 7, dtypes.int64: 9,
             dtypes.bool_: 10, dtypes.uint16: 17, dtypes.float16: 19, dtypes.uint32: 22,
             dtypes.uint64: 23, dtypes.bfloat16: 14}
_BY_NUMBER = {number: dtype for dtype, number in DATATYPES.items()}
# the typed value fields: field number -> (wire format of a packed element, dtypes)
_VALUE_FIELDS = {5: ("f", (dtypes.float32,)), 6: ("d", (dtypes.float64,)),
                 7: ("varint", (dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
                                dtypes.uint16)),
                 10: ("varint", (dtypes.int64,)), 11: ("varint", (dtypes.bool_,)),
                 13: ("varint", (dtypes.float16, dtypes.bfloat16)),
                 16: ("varint", (dtypes.uint32,)), 17: ("varint", (dtypes.uint64,))}


def _varint_field(out, number, value):
    out += protowire.write_varint(number << 3)
    out += protowire.write_varint(value)


def _header(dtype, shape) -> bytearray:
    out = bytearray()
    _varint_field(out, 1, DATATYPES[dtype])
    dims = bytearray()
    for size in shape:
        dim = bytearray()
        if size:
            _varint_field(dim, 1, int(size))
        protowire.write_bytes_field(dims, 2, bytes(dim))
    protowire.write_bytes_field(out, 2, bytes(dims))
    return out


# the typed value field of each dtype, for values not written as tensor_content
_TYPED = {dtypes.float32: (5, "f"), dtypes.float64: (6, "d"), dtypes.int32: (7, None),
          dtypes.int16: (7, None), dtypes.int8: (7, None), dtypes.uint8: (7, None),
          dtypes.uint16: (7, None), dtypes.int64: (10, None), dtypes.bool_: (11, None),
          dtypes.float16: (13, None), dtypes.uint32: (16, None), dtypes.uint64: (17, None),
          dtypes.bfloat16: (13, None)}


def typed_proto(values, dtype, shape) -> bytes:
    """``TensorProto`` bytes of ``shape`` holding the host array ``values`` (flat, as many
    as the shape's or fewer: the last fills the rest) in the typed value field of
    ``dtype`` (``float_val``, ``int_val``...; ``string_val`` for strings), packed, as
    TensorFlow's ``make_tensor_proto`` writes small and broadcast values."""
    out = _header(dtype, shape)
    flat = np.asarray(values).ravel()
    if dtype is dtypes.string:
        for value in flat:
            protowire.write_bytes_field(out, 8, bytes(value))
        return bytes(out)
    number, form = _TYPED[dtype]
    if dtype.is_half:  # half_val holds the 16 bits of float16 and bfloat16 values
        flat = flat.astype(dtype.as_numpy_dtype).view(np.uint16)
    if form is not None:
        packed = struct.pack(f"<{len(flat)}{form}", *flat.tolist())
    else:
        packed = b"".join(protowire.write_varint(int(v) & (2**64 - 1)) for v in flat.tolist())
    if len(flat):
        protowire.write_bytes_field(out, number, packed)
    return bytes(out)


def tensor_proto(array, dtype) -> bytes:
    """The ``TensorProto`` bytes of the host array ``array`` of gradflow dtype ``dtype``."""
    out = _header(dtype, array.shape)
    if dtype is dtypes.string:
        for value in np.asarray(array, dtype=object).ravel():
            protowire.write_bytes_field(out, 8, bytes(value))
    elif array.size:
        little = np.ascontiguousarray(array, dtype=np.dtype(dtype.as_numpy_dtype).newbyteorder("<"))
        protowire.write_bytes_field(out, 4, little.tobytes())
    return bytes(out)


def _shape_of(data, error):
    shape = []
    for number, kind, dim in protowire.fields(data, error):
        if number == 2 and kind == 2:
            size = next((protowire.signed(v) for n, k, v in protowire.fields(dim, error)
                         if n == 1 and k == 0), 0)
            if size < 0:
                raise error("a dimension of unknown size")
            shape.append(size)
    return tuple(shape)


def _packed(value, kind, form, error):
    """The elements of one typed value field (packed, or one unpacked element)."""
    if kind == 2 and form == "varint":
        pos, out = 0, []
        while pos < len(value):
            item, pos = protowire.read_varint(value, pos, error)
            out.append(item)
        return out
    if kind == 2:
        width = struct.calcsize("<" + form)
        if len(value) % width:
            raise error("a packed field is cut short")
        return list(struct.unpack(f"<{len(value) // width}{form}", value))
    if form == "varint":
        return [value]
    return list(struct.unpack("<" + form, value.to_bytes(struct.calcsize(form), "little")))


def _parsed(data, error):
    """``(dtype, shape, content bytes or None, typed values)`` of ``TensorProto`` bytes."""
    dtype, shape, content, values = None, (), None, []
    for number, kind, value in protowire.fields(data, error):
        if number == 1 and kind == 0:
            if value not in _BY_NUMBER:
                raise error(f"TensorFlow DataType {value} is not one gradflow has")
            dtype = _BY_NUMBER[value]
        elif number == 2 and kind == 2:
            shape = _shape_of(value, error)
        elif number == 4 and kind == 2:
            content = bytes(value)
        elif number == 8 and kind == 2:
            values.append(bytes(value))
        elif number in _VALUE_FIELDS:
            values += _packed(value, kind, _VALUE_FIELDS[number][0], error)
    if dtype is None:
        raise error("it names no dtype")
    return dtype, shape, content, values


def _typed_array(dtype, values):
    if dtype.is_half:
        return np.asarray(values, np.uint16).view(dtype.as_numpy_dtype)
    if dtype.is_integer and dtype.min < 0:  # varints of negative numbers: 64-bit two's complement
        values = [protowire.signed(v) for v in values]
    return np.asarray(values, dtype=dtype.as_numpy_dtype)


def parse_proto(data, error=InvalidArgumentError):
    """``(dtype, host array)`` of ``TensorProto`` bytes; ``error`` for bytes that are not one."""
    dtype, shape, content, values = _parsed(data, error)
    count = math.prod(shape)
    if dtype is dtypes.string:
        flat = dtypes.bytes_array(values)
    elif content is not None:
        item = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        if len(content) != count * item.itemsize:
            raise error(f"its tensor_content holds {len(content)} bytes, its shape "
                        f"{list(shape)} of {dtype.name} needs {count * item.itemsize}")
        flat = np.frombuffer(content, item).astype(dtype.as_numpy_dtype)
    else:
        flat = _typed_array(dtype, values)
    if 0 < len(flat) < count:  # the last value fills the rest, as in TensorFlow
        flat = np.concatenate([flat, np.repeat(flat[-1:], count - len(flat))])
    if len(flat) != count:
        raise error(f"it holds {len(flat)} values, its shape {list(shape)} needs {count}")
    return dtype, flat.reshape(shape)


def _host_op(name, compute):
    """Register ``name``, a host op whose value is ``compute(node, *host arrays)`` (an
    array, or a tuple of arrays)."""

    def impl(run_state, node):
        to_host, device = run_state.backend.host_value, run_state.backend.device_value

        def run(*values):
            out = compute(node, *(to_host(v) for v in values))
            return tuple(device(o) for o in out) if isinstance(out, tuple) else device(out)

        return run

    register(name, impl, declared, grad=None, kind="call", takes_strings=True)


def _objects(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _serialize(node, x):
    return _objects([tensor_proto(np.asarray(x), node.attrs["in_dtype"])]).reshape(())


def _parse(node, x):
    where = f"parse_tensor '{node.name}'"
    try:
        dtype, array = parse_proto(bytes(np.asarray(x, dtype=object).reshape(())[()]))
    except InvalidArgumentError as err:
        raise InvalidArgumentError(f"{where}: not a TensorProto ({err})") from None
    if dtype is not node.attrs["out_dtype"]:
        raise InvalidArgumentError(f"{where}: the tensor is {dtype.name}, out_type is "
                                   f"{node.attrs['out_dtype'].name}")
    return array


def _serialize_sparse(node, indices, values, shape):
    """The three ``TensorProto`` strings of one ``SparseTensor`` (indices, values, shape);
    with ``many``, those of each of its rows along the first axis, a ``[rows, 3]`` array."""
    dtype = node.attrs["in_dtype"]
    indices = np.asarray(indices, np.int64).reshape(-1, len(shape))
    values = np.asarray(values, dtype=object if dtype is dtypes.string else None)
    shape = np.asarray(shape, np.int64)
    if not node.attrs["many"]:
        parts = [tensor_proto(indices, dtypes.int64), tensor_proto(values, dtype),
                 tensor_proto(shape, dtypes.int64)]
        return _objects(parts)
    if len(shape) < 2:
        raise InvalidArgumentError(f"serialize_many_sparse '{node.name}': the SparseTensor "
                                   f"must have rank 2 or more, got {len(shape)}")
    rows = []
    for row in range(int(shape[0])):
        mine = indices[:, 0] == row
        rows.append([tensor_proto(indices[mine][:, 1:], dtypes.int64),
                     tensor_proto(values[mine], dtype), tensor_proto(shape[1:], dtypes.int64)])
    out = np.empty((len(rows), 3), dtype=object)
    for r, row in enumerate(rows):
        out[r, :] = row
    return out


def _part(text, want, where):
    try:
        dtype, array = parse_proto(bytes(text))
    except InvalidArgumentError as err:
        raise InvalidArgumentError(f"{where}: not a TensorProto ({err})") from None
    if dtype is not want:
        raise InvalidArgumentError(f"{where}: holds {dtype.name}, {want.name} was asked for")
    return array


def _deserialize_many(node, serialized):
    """One ``SparseTensor`` of the rows ``serialized`` (``[rows, 3]`` strings) stacked:
    its dense shape is the largest of theirs, with the rows as the first axis."""
    dtype, where = node.attrs["out_dtype"], f"deserialize_many_sparse '{node.name}'"
    rows = np.asarray(serialized, dtype=object)
    if rows.ndim != 2 or rows.shape[1] != 3:
        raise InvalidArgumentError(f"{where}: the input must be of shape [rows, 3], got "
                                   f"{list(rows.shape)}")
    all_indices, all_values, shapes = [], [], []
    for r in range(rows.shape[0]):
        shape = _part(rows[r, 2], dtypes.int64, f"{where}, row {r} shape")
        indices = _part(rows[r, 0], dtypes.int64, f"{where}, row {r} indices")
        values = _part(rows[r, 1], dtype, f"{where}, row {r} values")
        if shapes and len(shape) != len(shapes[0]):
            raise InvalidArgumentError(f"{where}: row {r} has rank {len(shape)}, row 0 "
                                       f"{len(shapes[0])}")
        indices = indices.reshape(-1, len(shape))
        if len(indices) != len(values):
            raise InvalidArgumentError(f"{where}: row {r} has {len(indices)} indices and "
                                       f"{len(values)} values")
        shapes.append(shape)
        all_indices.append(np.concatenate([np.full((len(indices), 1), r, np.int64),
                                           indices], axis=1))
        all_values.append(values)
    rank = (len(shapes[0]) if shapes else 0) + 1
    dense = np.asarray([rows.shape[0], *np.max(shapes, axis=0)] if shapes else [0] * rank,
                       np.int64)
    indices = np.concatenate(all_indices) if all_indices else np.zeros((0, rank), np.int64)
    values = np.concatenate(all_values) if all_values else \
        np.zeros((0,), object if dtype is dtypes.string else dtype.as_numpy_dtype)
    if dtype is dtypes.string:
        values = dtypes.bytes_array(list(values))
    return indices, values, dense


_host_op("serialize_tensor", _serialize)
_host_op("parse_tensor", _parse)
_host_op("serialize_sparse", _serialize_sparse)
_host_op("deserialize_many_sparse", _deserialize_many)
