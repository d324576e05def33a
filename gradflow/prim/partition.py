"""The primitives of ``tf.dynamic_partition`` and ``tf.dynamic_stitch``
(``gradflow.ops.partition_ops`` builds them).

``partition_positions`` finds the positions of one partition's slices (each partition
is then a ``gather`` of them, whose gradient is ``gather``'s scatter-add). ``dynamic_stitch``
is one op, written against the Array API without a scatter: the indices are sorted
(stably), the last of each run of equal indices kept, and each result row found with
``searchsorted``; its gradient gathers at each piece's indices, as TF1's does.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.prim import call
from gradflow.prim.index_checks import IndexOutOfRange, _position, first_bad
from gradflow.prim.registry import register
from gradflow.prim.segment import SegmentError, as_rows, dims


def _partition_positions_impl(xp, partitions, data, index, num_partitions):
    """The row-major positions in ``partitions`` of the elements equal to ``index``,
    after TF1's checks of the partitions' values and of ``data``'s shape."""
    if tuple(data.shape[:partitions.ndim]) != tuple(partitions.shape):
        raise SegmentError(f"data.shape must start with partitions.shape, got data.shape = "
                           f"{dims(data.shape)}, partitions.shape = {dims(partitions.shape)}")
    flat = xp.reshape(partitions, (-1,))
    if flat.shape[0] and bool((xp.min(flat) < 0) | (xp.max(flat) >= num_partitions)):
        at = first_bad(xp, (flat < 0) | (flat >= num_partitions))
        raise IndexOutOfRange(f"partitions[{_position(at, tuple(partitions.shape))}] = "
                              f"{int(flat[at])} is not in [0, {num_partitions})")
    return xp.nonzero(flat == index)[0]


def _partition_positions_infer(shapes, in_dtypes, index, num_partitions):
    partitions, data = shapes
    if not in_dtypes[0].is_integer:
        raise TypeError(f"partitions must be integers, got {in_dtypes[0].name}")
    if data is not None and (len(partitions) > len(data) or any(
            a is not None and b is not None and a != b for a, b in zip(partitions, data))):
        raise ValueError(f"data.shape must start with partitions.shape, got data.shape = "
                         f"{tuple(data)}, partitions.shape = {tuple(partitions)}")
    return (None,), dtypes.int64  # how many fall in the partition: known only at run time


register("partition_positions", _partition_positions_impl, _partition_positions_infer,
         grad=None, shape_only_inputs=(1,))


def _stitch_pieces(xp, indices, data):
    """``(ids, rows, tail)``: every index (int64) and the matching rows of ``data``
    (``(count, width)``), after TF1's checks of the shapes and of negative indices."""
    ids, rows, tail = [], [], None
    for k, (i, d) in enumerate(zip(indices, data)):
        if tuple(d.shape[:i.ndim]) != tuple(i.shape):
            raise SegmentError(f"data[{k}].shape = {dims(d.shape)} does not start with "
                               f"indices[{k}].shape = {dims(i.shape)}")
        part, rest = as_rows(xp, d, i.ndim)
        if tail is not None and rest != tail:
            raise SegmentError(f"data[{k}].shape = {dims(d.shape)} does not match the "
                               f"others: the axes after the indices' must be {dims(tail)}")
        tail = rest
        flat = xp.astype(xp.reshape(i, (-1,)), xp.int64)
        if flat.shape[0] and bool(xp.min(flat) < 0):
            at = first_bad(xp, flat < 0)
            raise IndexOutOfRange(f"indices[{k}][{_position(at, tuple(i.shape))}] = "
                                  f"{int(flat[at])} is out of range")
        ids.append(flat)
        rows.append(part)
    return xp.concat(ids), xp.concat(rows, axis=0), tail


def _stitch_impl(xp, *arrays, count, rows):
    ids, values, tail = _stitch_pieces(xp, arrays[:count], arrays[count:])
    dev = _device(values)
    num = int(xp.max(ids)) + 1 if ids.shape[0] else 0
    if num == 0:
        return xp.zeros((0,) + tail, dtype=values.dtype, device=dev)
    # of repeated indices the last one wins: keep the last of each run of equal ids
    order = xp.argsort(ids, stable=True)
    grouped = xp.take(ids, order)
    last = xp.nonzero(xp.concat([grouped[1:] != grouped[:-1],
                                 xp.ones((1,), dtype=xp.bool, device=dev)]))[0]
    kept_ids, kept_from = xp.take(grouped, last), xp.take(order, last)
    targets = xp.arange(num, dtype=kept_ids.dtype, device=dev)
    at = xp.searchsorted(kept_ids, targets)
    at = xp.where(at < kept_ids.shape[0], at, xp.zeros_like(at))
    present = xp.take(kept_ids, at) == targets
    out = xp.take(values, xp.take(kept_from, at), axis=0)
    out = xp.where(present[:, None], out, xp.zeros((), dtype=values.dtype, device=dev))
    return xp.reshape(out, (num,) + tail)


def _stitch_infer(shapes, in_dtypes, count, rows):
    indices, data = shapes[:count], shapes[count:]
    for k, dt in enumerate(in_dtypes[:count]):
        if not dt.is_integer:
            raise TypeError(f"indices[{k}] must be integers, got {dt.name}")
    dtype = in_dtypes[count]
    for k, dt in enumerate(in_dtypes[count:]):
        if dt is not dtype:
            raise TypeError(f"data[{k}] is {dt.name}, data[0] {dtype.name}: they must match")
    tail = None
    for k, (i, d) in enumerate(zip(indices, data)):
        if len(i) > len(d) or any(a is not None and b is not None and a != b
                                  for a, b in zip(i, d)):
            raise ValueError(f"data[{k}].shape = {tuple(d)} does not start with "
                             f"indices[{k}].shape = {tuple(i)}")
        rest = tuple(d[len(i):])
        if tail is not None and (len(rest) != len(tail) or any(
                a is not None and b is not None and a != b for a, b in zip(rest, tail))):
            raise ValueError(f"data[{k}].shape = {tuple(d)} does not match the others")
        tail = rest if tail is None else tuple(a if a is not None else b
                                               for a, b in zip(tail, rest))
    return (rows,) + tail, dtype


def _stitch_grad(n, g):  # TF1: each piece gathers the gradient at its indices
    count = n.attrs["count"]
    indices = n.inputs[:count]
    return [None] * count + [call.gather(g, i, axis=0) for i in indices]


register("dynamic_stitch", _stitch_impl, _stitch_infer, grad=_stitch_grad)
