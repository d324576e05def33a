"""Fusion buffers: many tensors packed into a few flat arrays, one collective each.

A ``Layout`` places tensors, in their given order, into buckets: one bucket
holds tensors of one wire dtype whose bytes add up to at most the fusion
threshold (a tensor larger than that gets a bucket of its own; a threshold
of 0 gives every tensor its own bucket, that is no fusion). The layout is a
pure function of the tensors' names, shapes and dtypes and of the threshold,
so every rank that built the same graph computes the same one, and its
``digest`` is what ranks compare before their first collective.

``FusionBuffers`` owns one flat array per bucket, allocated once (a graph
node keeps them for the life of its plan), and packs tensors into them and
unpacks them again with Array API calls only.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

DEFAULT_THRESHOLD_MB = 64.0
ENV_THRESHOLD = "GRADFLOW_FUSION_THRESHOLD_MB"

_ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
             "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}


def threshold_bytes(fusion_threshold_mb=None) -> int:
    """The fusion threshold in bytes: ``fusion_threshold_mb`` if given, else the
    ``GRADFLOW_FUSION_THRESHOLD_MB`` environment variable, else 64 MB; 0 turns fusion off."""
    source = "fusion_threshold_mb"
    value = fusion_threshold_mb
    if value is None:
        value = os.environ.get(ENV_THRESHOLD)
        source = ENV_THRESHOLD
    if value is None or value == "":
        value, source = DEFAULT_THRESHOLD_MB, "the default"
    try:
        mb = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a number of megabytes (0 turns fusion off), "
                         f"got {value!r}") from None
    if not math.isfinite(mb) or mb < 0:
        raise ValueError(f"{source} must be a finite number of megabytes >= 0, got {value!r}")
    return int(mb * 1024 * 1024)


@dataclass(frozen=True)
class Entry:
    """One tensor of a layout: where its elements sit in which bucket."""

    name: str
    shape: tuple
    dtype: str  # the tensor's dtype name
    wire: str  # the dtype name it has in the bucket
    bucket: int
    offset: int
    size: int


class Layout:
    """Where each of a list of tensors goes in the fusion buffers.

    ``specs`` is ``[(name, shape, dtype name, wire dtype name), ...]`` in the
    order the tensors are given; ``threshold`` is in bytes. ``buckets`` is
    ``[(wire dtype name, element count), ...]`` in the order the collectives
    are issued: by the first tensor of each dtype, then by position.
    """

    def __init__(self, specs, threshold: int, header=()):
        self.threshold = int(threshold)
        self.header = tuple(header)
        open_bucket: dict = {}  # wire dtype -> [bucket index, bytes so far]
        buckets: list = []
        entries = []
        for name, shape, dtype, wire in specs:
            shape = tuple(int(d) for d in shape)
            size = math.prod(shape)
            nbytes = size * _itemsize(wire)
            current = open_bucket.get(wire)
            if current is None or (current[1] > 0 and current[1] + nbytes > self.threshold):
                current = open_bucket[wire] = [len(buckets), 0]
                buckets.append([wire, 0])
            index = current[0]
            entries.append(Entry(name, shape, dtype, wire, index, buckets[index][1], size))
            buckets[index][1] += size
            current[1] += nbytes
        self.entries = tuple(entries)
        self.buckets = tuple((wire, count) for wire, count in buckets)

    def describe(self) -> list:
        """What ranks must agree on, as a list of plain tuples (header, tensors, cuts)."""
        lines = [("collective",) + self.header + (f"threshold {self.threshold} bytes",)]
        lines += [("tensor", k, e.name, e.shape, e.dtype, e.wire)
                  for k, e in enumerate(self.entries)]
        lines += [("bucket", b, wire, count) for b, (wire, count) in enumerate(self.buckets)]
        return lines

    def digest(self) -> str:
        """A short hash of ``describe()``: equal on two ranks iff their layouts are."""
        return hashlib.sha256(repr(self.describe()).encode()).hexdigest()

    def __repr__(self) -> str:
        return f"<Layout: {len(self.entries)} tensors in {len(self.buckets)} buckets>"


def _itemsize(name) -> int:
    try:
        return _ITEMSIZE[name]
    except KeyError:
        raise TypeError(f"dtype {name!r} cannot travel through a collective") from None


def first_difference(mine, theirs) -> tuple | None:
    """``(index, mine_line, theirs_line)`` at the first line where two ``describe()``
    lists differ (a missing line is None), or None if they are the same."""
    for k in range(max(len(mine), len(theirs))):
        a = mine[k] if k < len(mine) else None
        b = theirs[k] if k < len(theirs) else None
        if a != b:
            return k, a, b
    return None


def describe_line(line) -> str:
    """One line of ``Layout.describe()`` in words."""
    if line is None:
        return "nothing (the list ends here)"
    kind = line[0]
    if kind == "tensor":
        _, k, name, shape, dtype, wire = line
        sent = "" if wire == dtype else f" sent as {wire}"
        return f"tensor {k} '{name}' of shape {shape} and dtype {dtype}{sent}"
    if kind == "bucket":
        _, b, wire, count = line
        return f"fusion bucket {b} of {count} {wire} elements"
    return ", ".join(str(part) for part in line)


class FusionBuffers:
    """The flat arrays of one layout on one backend, and packing into them.

    Arrays are allocated on first use, on the device of the first tensor
    packed, and kept: every later step reuses them. A ``scale`` given to both
    ``pack`` and ``unpack`` multiplies each tensor once: before the cast for
    tensors that travel in a narrower dtype (so that a sum over ranks stays in
    its range), after the collective for the others (one pass fewer). Integer
    tensors are never scaled.
    """

    def __init__(self, layout: Layout, xp, backend_copy):
        self.layout = layout
        self.xp = xp
        self._copy = backend_copy
        self.arrays = None

    def _allocate(self, like):
        from array_api_compat import device

        xp = self.xp
        where = device(like)
        return [xp.zeros((count,), dtype=getattr(xp, wire), device=where)
                for wire, count in self.layout.buckets]

    def pack(self, arrays, scale=None) -> None:
        """Copy ``arrays`` (one per entry, in order) into the buckets, converting to the
        wire dtype; ``scale`` (a float) multiplies those that are converted."""
        xp = self.xp
        if self.arrays is None:
            self.arrays = self._allocate(arrays[0])
        for entry, array in zip(self.layout.entries, arrays):
            flat = xp.reshape(array, (entry.size,))
            if entry.wire != entry.dtype:
                if scale is not None:
                    flat = flat * scale
                flat = xp.astype(flat, getattr(xp, entry.wire))
            self.arrays[entry.bucket][entry.offset:entry.offset + entry.size] = flat

    def unpack(self, scale=None) -> list:
        """New arrays, one per entry, read back from the buckets in their own shape and
        dtype; ``scale`` multiplies those that travelled in their own dtype."""
        xp = self.xp
        out = []
        for entry in self.layout.entries:
            view = self.arrays[entry.bucket][entry.offset:entry.offset + entry.size]
            view = xp.reshape(view, entry.shape)
            if entry.wire != entry.dtype:
                value = xp.astype(view, getattr(xp, entry.dtype))
            elif scale is not None and entry.dtype.startswith("float"):
                value = view * scale  # a new array: the scaling is the copy
            else:
                value = self._copy(view)
            out.append(value)
        return out
