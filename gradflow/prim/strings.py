"""Host ops on ``string`` tensors (TF1's ``tf.strings`` family; ``gradflow.strings``
builds them). gradflow's strings are host values (NumPy object arrays of ``bytes``,
``dtypes.bytes_array``) on every backend, so these ops run on the host, as
``decode_csv`` does: each is a node of kind ``"call"`` whose numeric results are then
moved to the session's backend. None has a gradient (TF1's have none either).

Each op's shape and dtype are given by its builder (``declared``); an op of several
results (the parts of a ``SparseTensor``) gives a tuple that ``pick`` nodes read.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


def _host_op(name, compute):
    """Register ``name``, a host op whose value is ``compute(node, *host arrays)`` (an
    array, or a tuple of arrays for several results)."""

    def impl(run, node):
        to_host, device = run.backend.host_value, run.backend.device_value

        def run_(*values):
            out = compute(node, *(to_host(v) for v in values))
            if isinstance(out, tuple):
                return tuple(device(o) for o in out)
            return device(out)

        return run_

    register(name, impl, declared, grad=None, kind="call", takes_strings=True)


def _objects(value):
    return np.asarray(value, dtype=object)


def _map(array, fn, dtype=object):
    """``fn`` of each element of ``array``, as an array of its shape."""
    array = _objects(array)
    flat = [fn(v) for v in array.ravel()]
    if dtype is object:
        out = np.empty(array.shape, dtype=object)
        out.ravel()[:] = flat if flat else []
        return out
    return np.asarray(flat, dtype=dtype).reshape(array.shape)


def _text(value):
    return value.decode("utf-8", "surrogateescape")


def _utf8(text):
    return text.encode("utf-8", "surrogateescape")


def where(node):
    return f"{node.opdef.name} '{node.name}'"


# -- splitting into a SparseTensor ------------------------------------------------


def _tokens(value, mode, sep, skip_empty, maxsplit):
    if mode == "chars":  # each of sep's bytes is a delimiter; none: one token per byte
        if not sep:
            return [value[i:i + 1] for i in range(len(value))]
        parts = re.split(b"[" + re.escape(sep) + b"]", value) if value else []
    elif mode == "whitespace":
        parts = value.split(None, maxsplit)
    else:
        parts = value.split(sep, maxsplit) if value else []
    return [p for p in parts if p] if skip_empty else parts


def _split(node, source):
    attrs = node.attrs
    source = _objects(source)
    indices, values, longest = [], [], 0
    for position in np.ndindex(*source.shape):
        tokens = _tokens(source[position], attrs["mode"], attrs["sep"], attrs["skip_empty"],
                         attrs["maxsplit"])
        longest = max(longest, len(tokens))
        for k, token in enumerate(tokens):
            indices.append((*position, k))
            values.append(token)
    rank = source.ndim + 1
    index_array = np.asarray(indices, dtype=np.int64).reshape(len(indices), rank)
    shape = np.asarray((*source.shape, longest), dtype=np.int64)
    return index_array, dtypes.bytes_array(values).reshape(len(values)), shape


_host_op("string_split", _split)


# -- joining -----------------------------------------------------------------------


def _join(node, *inputs):
    sep = node.attrs["separator"]
    arrays = np.broadcast_arrays(*(_objects(a) for a in inputs))
    out = np.empty(arrays[0].shape, dtype=object)
    for position in np.ndindex(*out.shape):
        out[position] = sep.join(a[position] for a in arrays)
    return out


def _reduce_join(node, x):
    axes, keepdims, sep = node.attrs["axes"], node.attrs["keepdims"], node.attrs["separator"]
    x = _objects(x)
    kept = [a for a in range(x.ndim) if a not in axes]
    # the first axis named varies fastest along a joined string, as in TF
    moved = np.transpose(x, kept + list(reversed(axes)))
    rows = moved.reshape(tuple(x.shape[a] for a in kept) + (-1,))
    out = np.empty(rows.shape[:-1], dtype=object)
    for position in np.ndindex(*out.shape):
        out[position] = sep.join(rows[position])
    if keepdims:
        out = out.reshape(tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)))
    return out


_host_op("string_join", _join)
_host_op("reduce_join", _reduce_join)


# -- element by element -----------------------------------------------------------


def _char_count(value):
    return sum(1 for b in value if b & 0xC0 != 0x80)


def _length(node, x):
    count = len if node.attrs["unit"] == "BYTE" else _char_count
    return _map(x, count, np.int32)


_TRANSFORMS = {
    "strip": bytes.strip,  # ASCII white space at both ends
    "lower": bytes.lower,  # ASCII letters only
    "upper": bytes.upper,
    "lower_utf8": lambda v: _utf8(_text(v).lower()),
    "upper_utf8": lambda v: _utf8(_text(v).upper()),
}


def _transform(node, x):
    return _map(x, _TRANSFORMS[node.attrs["transform"]])


_host_op("string_length", _length)
_host_op("string_transform", _transform)


def _substr_one(value, pos, size, unit, index, node):
    chars = list(_text(value)) if unit == "UTF8_CHAR" else value
    n = len(chars)
    if not -n <= pos <= n:
        raise InvalidArgumentError(f"{where(node)}: pos {pos} is out of range for string "
                                   f"{value!r} of length {n} (at {index})")
    start = pos + n if pos < 0 else pos
    part = chars[start:start + max(size, 0)]
    return _utf8("".join(part)) if unit == "UTF8_CHAR" else part


def _substr(node, x, pos, size):
    x, pos, size = np.broadcast_arrays(_objects(x), np.asarray(pos), np.asarray(size))
    out = np.empty(x.shape, dtype=object)
    for index in np.ndindex(*x.shape):
        out[index] = _substr_one(x[index], int(pos[index]), int(size[index]),
                                 node.attrs["unit"], index, node)
    return out


_host_op("substr", _substr)


def rewrite_parts(rewrite, groups, what):
    """RE2's rewrite text (``\\1`` a group, ``\\0`` the whole match, ``\\\\`` a backslash)
    as a list of literal strings and group numbers; a ValueError for a bad one."""
    parts, k = [], 0
    while k < len(rewrite):
        char = rewrite[k]
        if char != "\\":
            parts.append(char)
            k += 1
            continue
        nxt = rewrite[k + 1:k + 2]
        if nxt == "\\":
            parts.append("\\")
        elif nxt.isdigit():
            if int(nxt) > groups:
                raise ValueError(f"{what}: rewrite {rewrite!r} names group \\{nxt}, the "
                                 f"pattern has {groups}")
            parts.append(int(nxt))
        else:
            raise ValueError(f"{what}: rewrite {rewrite!r} has a backslash not followed by a "
                             "digit or a backslash")
        k += 2
    return parts


def _regex_replace(node, x):
    pattern = re.compile(node.attrs["pattern"])
    parts, count = node.attrs["parts"], 0 if node.attrs["replace_global"] else 1

    def rewrite(match):
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)

    return _map(x, lambda v: _utf8(pattern.sub(rewrite, _text(v), count=count)))


def _regex_full_match(node, x):
    pattern = re.compile(node.attrs["pattern"])
    return _map(x, lambda v: pattern.fullmatch(_text(v)) is not None, np.bool_)


_host_op("regex_replace", _regex_replace)
_host_op("regex_full_match", _regex_full_match)


# -- numbers and text -------------------------------------------------------------

_INTEGER = re.compile(rb"\s*[+-]?[0-9]+\s*")
_FLOAT = re.compile(rb"\s*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)"
                    rb"\s*", re.IGNORECASE)


def _to_number(node, x):
    out_type = dtypes.as_dtype(node.attrs["out_type"])

    def parse(value):
        form = _INTEGER if out_type.is_integer else _FLOAT
        if form.fullmatch(value) is None:
            raise InvalidArgumentError(f"{where(node)}: StringToNumberOp could not correctly "
                                       f"convert string: {value!r} to {out_type.name}")
        number = int(value) if out_type.is_integer else float(value)
        if out_type.is_integer and not out_type.min <= number <= out_type.max:
            raise InvalidArgumentError(f"{where(node)}: {value!r} is out of the "
                                       f"{out_type.name} range")
        return number

    return _map(x, parse, out_type.as_numpy_dtype)


def number_format(dtype, precision, scientific, shortest, width, fill):
    """The printf format of ``as_string`` for values of ``dtype`` (TF's rules)."""
    flags = "0" if fill == "0" else ""
    size = "" if width < 0 else str(width)
    if dtype.is_floating:
        digits = "" if precision < 0 else f".{precision}"
        kind = "e" if scientific else "g" if shortest else "f"
        return f"%{flags}{size}{digits}{kind}"
    return f"%{flags}{size}d"


def _as_string(node, x):
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return _map(x, lambda v: b"true" if v else b"false")
    form = node.attrs["format"]
    cast = float if x.dtype.kind == "f" else int
    return _map(x, lambda v: (form % cast(v)).encode())


_host_op("string_to_number", _to_number)
_host_op("as_string", _as_string)


# -- hashing into buckets: FarmHash's Fingerprint64, as TF's *_hash_bucket_fast -----

_M = (1 << 64) - 1
_K0, _K1, _K2 = 0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f


def _f64(s, i):
    return struct.unpack_from("<Q", s, i)[0]


def _f32(s, i):
    return struct.unpack_from("<I", s, i)[0]


def _rot(v, r):
    return ((v >> r) | (v << (64 - r))) & _M


def _shift_mix(v):
    return v ^ (v >> 47)


def _mix16(u, v, mul):
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _short(s, n):
    """Up to 16 bytes."""
    if n >= 8:
        mul = _K2 + n * 2
        a = (_f64(s, 0) + _K2) & _M
        b = _f64(s, n - 8)
        return _mix16((_rot(b, 37) * mul + a) & _M, ((_rot(a, 25) + b) * mul) & _M, mul)
    if n >= 4:
        return _mix16((n + (_f32(s, 0) << 3)) & _M, _f32(s, n - 4), _K2 + n * 2)
    if n:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M) * _K2) & _M
    return _K2


def _medium(s, n):
    """17 to 64 bytes."""
    mul = _K2 + n * 2
    a = (_f64(s, 0) * (_K1 if n <= 32 else _K2)) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * _K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    first = (a + _rot((b + _K2) & _M, 18) + c) & _M
    if n <= 32:
        return _mix16(y, first, mul)
    z = _mix16(y, first, mul)
    e = (_f64(s, 16) * mul) & _M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & _M
    h = ((z + _f64(s, n - 24)) * mul) & _M
    return _mix16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
                  (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s, i, a, b):
    w, x, y, z = (_f64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def _round(s, i, state, mul, last):
    """One 64-byte round of the long hash over ``s[i:i + 64]``."""
    x, y, z, v0, v1, w0, w1 = state
    x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M if last else w1
    y = (y + (v0 * 9 if last else v0) + _f64(s, i + 40)) & _M
    z = (_rot((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(s, i, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
    return z, y, x, v0, v1, w0, w1  # x and z trade places


def fingerprint64(s: bytes) -> int:
    """FarmHash's ``Fingerprint64`` of ``s`` (farmhashna's 64-bit hash), the hash TF's
    ``string_to_hash_bucket_fast`` takes the buckets of."""
    n = len(s)
    if n <= 16:
        return _short(s, n)
    if n <= 64:
        return _medium(s, n)
    y = (81 * _K1 + 113) & _M
    z = (_shift_mix((y * _K2 + 113) & _M) * _K2) & _M
    state = ((81 * _K2 + _f64(s, 0)) & _M, y, z, 0, 0, 0, 0)
    end = ((n - 1) // 64) * 64
    for i in range(0, end, 64):
        state = _round(s, i, state, _K1, False)
    x, y, z, v0, v1, w0, w1 = state
    mul = _K1 + ((z & 0xff) << 1)
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x, y, z, v0, v1, w0, w1 = _round(s, n - 64, (x, y, z, v0, v1, w0, w1), mul, True)
    return _mix16((_mix16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _M,
                  (_mix16(v1, w1, mul) + x) & _M, mul)


def _hash_bucket(node, x):
    buckets = node.attrs["num_buckets"]
    return _map(x, lambda v: fingerprint64(v) % buckets, np.int64)


_host_op("string_to_hash_bucket_fast", _hash_bucket)
