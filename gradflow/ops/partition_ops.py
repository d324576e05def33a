"""TF1's ``tf.dynamic_partition`` and ``tf.dynamic_stitch``.

``dynamic_partition`` is one ``gather`` per partition, at the positions
``partition_positions`` finds (so its gradient is ``gather``'s scatter-add, which puts
each result's gradient back where its slices came from: the values TF1's
``dynamic_stitch``-based gradient gives). ``dynamic_stitch`` is one op, written
against the Array API without a scatter: the indices are sorted (stably), the last
of each run of equal indices kept, and each result row found with ``searchsorted``;
its gradient gathers at each piece's indices, as TF1's does. The primitives are in
``gradflow.prim.partition``.
"""

from __future__ import annotations

from gradflow.ops.array_ops import static_value
from gradflow.prim import partition as _partition  # noqa: F401 - registers the primitives
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["dynamic_partition", "dynamic_stitch"]


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
