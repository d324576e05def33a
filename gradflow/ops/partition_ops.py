"""TF1's ``tf.dynamic_partition`` and ``tf.dynamic_stitch``.

``dynamic_partition`` is one ``gather`` per partition, at the positions
``partition_positions`` finds (so its gradient is ``gather``'s scatter-add, which puts
each result's gradient back where its slices came from: the values TF1's
``dynamic_stitch``-based gradient gives). ``dynamic_stitch`` is one op, written
against the Array API without a scatter: the indices are sorted (stably), the last
of each run of equal indices kept, and each result row found with ``searchsorted``;
its gradient gathers at each piece's indices, as TF1's does.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.ops.array_ops import static_value
from gradflow.ops.index_checks import IndexOutOfRange, _position, first_bad
from gradflow.ops.segment_ops import SegmentError, as_rows, dims
from gradflow.prim.registry import apply, convert_to_tensor, register

__all__ = ["dynamic_partition", "dynamic_stitch"]


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


def dynamic_partition(data, partitions, num_partitions, name=None):
    """``num_partitions`` tensors: the slices of ``data`` whose ``partitions`` entry is
    0, 1, ... (TF1 ``tf.dynamic_partition``), in their order. ``partitions`` has the
    shape of the leading axes of ``data``; each result has shape ``[n] +
    data.shape[partitions.ndim:]``, ``n`` known only at run time. An entry outside
    ``[0, num_partitions)`` fails the run with ``InvalidArgumentError``. The gradient
    puts each result's gradient back where its slices came from.

    >>> evens, odds = gf.dynamic_partition([10., 11., 12.], [0, 1, 0], 2)   # [10, 12], [11]
    """
    data = convert_to_tensor(data)
    partitions = convert_to_tensor(partitions)
    if not partitions.dtype.is_integer:
        raise TypeError(f"dynamic_partition: partitions '{partitions.name}' must be int32, "
                        f"got {partitions.dtype.name}")
    if partitions.shape is None:
        raise ValueError(f"dynamic_partition: the rank of partitions '{partitions.name}' "
                         "must be known when the graph is built")
    num = int(num_partitions)
    if num < 1:
        raise ValueError(f"dynamic_partition: num_partitions must be at least 1, got {num}")
    lead = len(partitions.shape)
    rows = data if lead == 1 else apply("merge_axes", [data], start=0, count=lead)
    name = name or "DynamicPartition"
    return [apply("gather", [rows, apply("partition_positions", [partitions, data], index=k,
                                         num_partitions=num)],
                  name=name, axis=0, validate=False) for k in range(num)]


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
    return [None] * count + [apply("gather", [g, i], axis=0) for i in indices]


register("dynamic_stitch", _stitch_impl, _stitch_infer, grad=_stitch_grad)


def dynamic_stitch(indices, data, name=None):
    """One tensor from the pieces of ``data`` placed at ``indices`` (TF1
    ``tf.dynamic_stitch``): ``merged[indices[m][i], ...] = data[m][i, ...]``, with
    ``max(indices) + 1`` rows; of repeated indices the last one wins. The inverse of
    ``dynamic_partition`` with the partitioned positions as ``indices``.

    >>> gf.dynamic_stitch([[0, 2], [1]], [[10., 12.], [11.]])   # [10, 11, 12]
    """
    indices = [convert_to_tensor(i) for i in indices]
    data = [convert_to_tensor(d) for d in data]
    if not indices or len(indices) != len(data):
        raise ValueError(f"dynamic_stitch: {len(indices)} index tensors for {len(data)} "
                         "data tensors; give one of each per piece, at least one")
    values = [static_value(i) for i in indices]
    rows = None
    if all(v is not None for v in values):
        flat = [int(x) for v in values for x in v.reshape(-1)]
        rows = max(flat) + 1 if flat and min(flat) >= 0 else None if flat else 0
    return apply("dynamic_stitch", indices + data, name=name or "DynamicStitch",
                 count=len(indices), rows=rows)
