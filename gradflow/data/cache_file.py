"""The file of ``Dataset.cache(filename)``: the elements of one complete pass, as arrays
only (a NumPy ``.npz`` archive), so that reading a cache file never runs code.

Each component ``j`` of the elements is three arrays however their shapes vary:
``c{j}_ranks`` (one rank per element), ``c{j}_dims`` (their dimensions, one after the
other) and ``c{j}_data`` (their values, flattened and joined). A ``string`` component
keeps its values as ``c{j}_data``, the byte length of each string, and ``c{j}_bytes``,
the bytes joined. ``format`` is ``[1, elements, components]``.

A file that is not such an archive, is damaged, or does not match the dataset (other
dtypes, shapes its static shapes refuse) is a ``DataLossError`` naming it; nothing in
it is trusted before it is checked (``gradflow.safe_npz``).
"""

from __future__ import annotations

import math
import os

import numpy as np

from gradflow import dtypes
from gradflow.data import structure
from gradflow.errors import DataLossError
from gradflow.safe_npz import read_npz

_VERSION = 1
_MOST_RANK = 32


def write(path, elements, types):
    """Write ``elements`` (flat lists of host arrays, one per component of ``types``)
    to ``path``, atomically (a partial file, renamed into place)."""
    arrays = {"format": np.array([_VERSION, len(elements), len(types)], np.int64)}
    for j, dtype in enumerate(types):
        values = [np.asarray(e[j]) for e in elements]
        arrays[f"c{j}_ranks"] = np.array([v.ndim for v in values], np.int64)
        arrays[f"c{j}_dims"] = np.array([d for v in values for d in v.shape], np.int64)
        if dtype is dtypes.string:
            flat = [bytes(b) for v in values for b in v.ravel()]
            arrays[f"c{j}_data"] = np.array([len(b) for b in flat], np.int64)
            arrays[f"c{j}_bytes"] = np.frombuffer(b"".join(flat), np.uint8)
        else:
            parts = [v.ravel().astype(dtype.as_numpy_dtype, copy=False) for v in values]
            arrays[f"c{j}_data"] = (np.concatenate(parts) if parts else
                                    np.zeros(0, dtype.as_numpy_dtype))
    partial = os.fspath(path) + ".partial"
    with open(partial, "wb") as f:
        np.savez(f, **arrays)
    os.replace(partial, path)


def read(path, types, shapes):
    """The elements (flat lists of host arrays) that ``path`` holds for a dataset of
    component ``types`` and static ``shapes``; DataLossError if it cannot hold them."""
    source = f"the dataset cache file {os.fspath(path)!r}"
    arrays = read_npz(path, source, DataLossError)

    def fail(why):
        raise DataLossError(f"{source} {why}; delete it and the next complete pass "
                            "writes it again")

    head = arrays.get("format")
    if head is None or head.dtype != np.int64 or head.shape != (3,) or head[0] != _VERSION:
        fail("is not a gradflow dataset cache (or one of another version)")
    count, components = int(head[1]), int(head[2])
    if components != len(types) or count < 0:
        fail(f"holds elements of {components} components, and the dataset's have "
             f"{len(types)}")
    columns = [_column(arrays, j, count, dtype, shape, fail)
               for j, (dtype, shape) in enumerate(zip(types, shapes))]
    return [[column[i] for column in columns] for i in range(count)]


def _array(arrays, key, dtype, length, fail):
    a = arrays.get(key)
    if a is None or a.dtype != dtype or a.ndim != 1 or (length is not None and
                                                         a.shape[0] != length):
        fail(f"is damaged: its array {key!r} is missing or has the wrong type or size")
    return a


def _column(arrays, j, count, dtype, static, fail):
    """The ``count`` values of component ``j``, checked against ``dtype`` and ``static``."""
    ranks = _array(arrays, f"c{j}_ranks", np.int64, count, fail)
    if count and (ranks.min() < 0 or ranks.max() > _MOST_RANK):
        fail(f"is damaged: component {j} has a rank outside [0, {_MOST_RANK}]")
    dims = _array(arrays, f"c{j}_dims", np.int64, int(ranks.sum()), fail)
    if dims.size and dims.min() < 0:
        fail(f"is damaged: component {j} has a negative dimension")
    ends = np.cumsum(ranks)
    shapes = [tuple(int(d) for d in dims[end - r:end]) for r, end in zip(ranks, ends)]
    for shape in shapes:
        if not structure.fits(shape, static):
            fail(f"holds a component {j} of shape {shape}, which the dataset's static "
                 f"shape {structure.format_shape(static)} refuses")
    sizes = [math.prod(s) for s in shapes]
    if dtype is dtypes.string:
        return _strings(arrays, j, shapes, sizes, fail)
    data = _array(arrays, f"c{j}_data", np.dtype(dtype.as_numpy_dtype), sum(sizes), fail)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [data[a:a + n].reshape(s) for a, n, s in zip(starts, sizes, shapes)]


def _strings(arrays, j, shapes, sizes, fail):
    lengths = _array(arrays, f"c{j}_data", np.int64, sum(sizes), fail)
    if lengths.size and lengths.min() < 0:
        fail(f"is damaged: component {j} has a string of negative length")
    raw = _array(arrays, f"c{j}_bytes", np.uint8, int(lengths.sum()), fail).tobytes()
    cuts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    flat = [raw[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    out, at = [], 0
    for shape, n in zip(shapes, sizes):
        values = np.empty(n, dtype=object)
        values[:] = flat[at:at + n]
        out.append(values.reshape(shape))
        at += n
    return out
