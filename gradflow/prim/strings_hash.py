"""More host ops on strings (``gradflow.strings`` builds them): TF's legacy 64-bit hash
(``string_to_hash_bucket``), SipHash-2-4 keyed buckets (``string_to_hash_bucket_strong``),
``fingerprint`` and ``unsorted_segment_join``. Like the other string ops they are of kind
``"call"`` and have no gradient.
"""

from __future__ import annotations

import struct

import numpy as np

from gradflow.errors import InvalidArgumentError
from gradflow.prim.strings import _host_op, _map, _objects, fingerprint64

_M = (1 << 64) - 1


def hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TensorFlow's ``Hash64`` (``tensorflow/core/lib/hash``, MurmurHash64A with TF's
    seed), the hash ``string_to_hash_bucket`` takes the buckets of."""
    mul, shift = 0xC6A4A7935BD1E995, 47
    n = len(data)
    h = (seed ^ (n * mul)) & _M
    whole = n - n % 8
    for i in range(0, whole, 8):
        k = (struct.unpack_from("<Q", data, i)[0] * mul) & _M
        k = ((k ^ (k >> shift)) * mul) & _M
        h = ((h ^ k) * mul) & _M
    rest = data[whole:]
    if rest:
        for i in range(len(rest) - 1, -1, -1):
            h ^= rest[i] << (8 * i)
        h = (h * mul) & _M
    h = ((h ^ (h >> shift)) * mul) & _M
    return h ^ (h >> shift)


def _rotl(v, r):
    return ((v << r) | (v >> (64 - r))) & _M


def _sip_round(v0, v1, v2, v3):
    v0 = (v0 + v1) & _M
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _M
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _M
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _M
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key0: int, key1: int, data: bytes) -> int:
    """SipHash-2-4 of ``data`` under the 128-bit key ``(key0, key1)``."""
    v = [key0 ^ 0x736F6D6570736575, key1 ^ 0x646F72616E646F6D,
         key0 ^ 0x6C7967656E657261, key1 ^ 0x7465646279746573]
    n = len(data)
    tail = data[n - n % 8:] + bytes(7 - n % 8) + bytes([n & 0xFF])
    words = [struct.unpack_from("<Q", data, i)[0] for i in range(0, n - n % 8, 8)]
    for m in words + [struct.unpack("<Q", tail)[0]]:
        v[3] ^= m
        v = list(_sip_round(*_sip_round(*v)))
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        v = list(_sip_round(*v))
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def _hash_bucket(node, x):
    buckets = node.attrs["num_buckets"]
    return _map(x, lambda v: hash64(v) % buckets, np.int64)


def _strong_bucket(node, x):
    buckets = node.attrs["num_buckets"]
    k0, k1 = node.attrs["key"]
    return _map(x, lambda v: siphash24(k0, k1, v) % buckets, np.int64)


_host_op("string_to_hash_bucket", _hash_bucket)
_host_op("string_to_hash_bucket_strong", _strong_bucket)


def _le_bytes(value):
    return np.frombuffer(struct.pack("<Q", value), np.uint8)


def _fingerprint(node, x):
    """Each row of ``x`` (its first axis) as the 8 little-endian bytes of FarmHash's
    Fingerprint64: of the row's bytes for numbers; of the concatenated fingerprints of the
    row's strings for strings (of the one string itself, when a row is one string)."""
    if x.ndim < 1:
        raise InvalidArgumentError(f"fingerprint '{node.name}': data must have rank 1 or "
                                   "more")
    rows = x.reshape(x.shape[0], -1)
    out = np.zeros((x.shape[0], 8), np.uint8)
    for i, row in enumerate(rows):
        if x.dtype == object:
            prints = [struct.pack("<Q", fingerprint64(bytes(s))) for s in row]
            value = fingerprint64(b"".join(prints)) if x.ndim > 1 else \
                fingerprint64(bytes(row[0]))
        else:
            value = fingerprint64(np.ascontiguousarray(row).astype(row.dtype.newbyteorder("<"))
                                  .tobytes())
        out[i] = _le_bytes(value)
    return out


_host_op("fingerprint", _fingerprint)


def _segment_join(node, x, ids, count):
    x, ids = _objects(x), np.asarray(ids)
    count = int(count)
    if ids.shape != x.shape[:ids.ndim]:
        raise InvalidArgumentError(f"unsorted_segment_join '{node.name}': segment_ids of "
                                   f"shape {ids.shape} must be a prefix of the inputs' "
                                   f"{x.shape}")
    if count < 0:
        raise InvalidArgumentError(f"unsorted_segment_join '{node.name}': num_segments must "
                                   f"be non-negative, got {count}")
    rest = x.shape[ids.ndim:]
    parts = [[[] for _ in range(int(np.prod(rest, dtype=np.int64)))] for _ in range(count)]
    flat = x.reshape((-1,) + rest).reshape(ids.size, -1)
    for row, segment in zip(flat, ids.ravel()):
        if not 0 <= segment < count:
            raise InvalidArgumentError(f"unsorted_segment_join '{node.name}': segment id "
                                       f"{segment} is not in [0, {count})")
        for j, value in enumerate(row):
            parts[segment][j].append(bytes(value))
    sep = node.attrs["separator"]
    out = np.empty((count,) + rest, dtype=object)
    out.reshape(count, -1)[:] = [[sep.join(p) for p in seg] for seg in parts] if count else []
    return out


_host_op("unsorted_segment_join", _segment_join)
