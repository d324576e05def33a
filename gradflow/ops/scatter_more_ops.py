"""The rest of TF1's scatters: the variable updates ``tf.scatter_mul``, ``scatter_div``,
``scatter_max``, ``scatter_min``, ``scatter_nd_update``/``_add``/``_sub`` and
``batch_scatter_update``; the functional ``tf.tensor_scatter_nd_max``/``_min``; and
``tf.batch_gather``.

They are composites of the segment reductions and the ``tensor_scatter_nd_*`` ops of
``scatter_ops``; the variable updates are assignments over the value the variable holds
when the run commits, as ``scatter_add`` is, so they take effect with the run's other
assignments. Repeated indices combine: the products (``scatter_mul``/``_div``), the
largest or smallest update (``scatter_max``/``_min``) of each row.
"""

from __future__ import annotations

from gradflow.ops.array_ops import reshape
from gradflow.ops.index_ops import gather_nd, stack
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import (
    divide,
    greater,
    maximum,
    minimum,
    multiply,
    ones_like,
    truncatediv,
    where,
)
from gradflow.ops.scatter_ops import (
    _check,
    _scatter_inputs,
    tensor_scatter_nd_add,
    tensor_scatter_nd_sub,
    tensor_scatter_nd_update,
)
from gradflow.ops.segment_ops import (
    unsorted_segment_max,
    unsorted_segment_min,
    unsorted_segment_prod,
    unsorted_segment_sum,
)
from gradflow.ops.shape_ops import broadcast_to, range_
from gradflow.ops.state_ops import assign, at_commit
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import Variable

__all__ = ["batch_gather", "batch_scatter_update", "scatter_div", "scatter_max",
           "scatter_min", "scatter_mul", "scatter_nd_add", "scatter_nd_sub",
           "scatter_nd_update", "tensor_scatter_nd_max", "tensor_scatter_nd_min"]


def _row_updates(what, ref, indices, updates, reduce):
    """The updates of each row of ``ref`` combined by ``reduce`` (a segment reduction),
    and where the row had none, its neutral value."""
    indices, updates = _check(what, ref, indices, updates)
    rank = len(indices.shape) if indices.shape is not None else None
    flat_ids = reshape(indices, [-1])
    rows = updates if rank == 1 else reshape(updates, [-1] + list(ref.shape[1:]))
    return reduce(rows, flat_ids, shape_of(ref)[0])


def scatter_mul(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] *= updates`` for the variable ``ref`` (rows along its first axis;
    repeated indices multiply), effective when the run commits; returns the new value.

    >>> step = gf.scatter_mul(scale, [0, 2], [2.0, 0.5])
    """
    factor = _row_updates("scatter_mul", ref, indices, updates, unsorted_segment_prod)
    return assign(ref, multiply(at_commit(ref), factor), name=name or ref.name + "/ScatterMul")


def scatter_div(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] /= updates`` for the variable ``ref`` (repeated indices divide in
    turn; integers divide truncating, as TF1's), effective when the run commits.

    >>> step = gf.scatter_div(totals, [1], [4.0])
    """
    factor = _row_updates("scatter_div", ref, indices, updates, unsorted_segment_prod)
    value = at_commit(ref)
    new = truncatediv(value, factor) if ref.dtype.is_integer else divide(value, factor)
    return assign(ref, new, name=name or ref.name + "/ScatterDiv")


def scatter_max(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] = max(ref[indices], updates)`` for the variable ``ref`` (repeated
    indices: the largest update), effective when the run commits.

    >>> step = gf.scatter_max(best, ids, scores)
    """
    largest = _row_updates("scatter_max", ref, indices, updates, unsorted_segment_max)
    return assign(ref, maximum(at_commit(ref), largest), name=name or ref.name + "/ScatterMax")


def scatter_min(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] = min(ref[indices], updates)`` for the variable ``ref`` (repeated
    indices: the smallest update), effective when the run commits.

    >>> step = gf.scatter_min(lowest, ids, costs)
    """
    smallest = _row_updates("scatter_min", ref, indices, updates, unsorted_segment_min)
    return assign(ref, minimum(at_commit(ref), smallest), name=name or ref.name + "/ScatterMin")


def _nd_update(what, op, ref, indices, updates, name):
    if not isinstance(ref, Variable):
        raise TypeError(f"{what}: '{getattr(ref, 'name', ref)}' is not a gf.Variable")
    return assign(ref, op(at_commit(ref), indices, updates), name=name)


def scatter_nd_update(ref, indices, updates, use_locking=True, name=None):
    """The slices of the variable ``ref`` at the index tuples of ``indices`` set to
    ``updates`` (TF1 ``tf.scatter_nd_update``; of repeated tuples the last wins),
    effective when the run commits; returns the new value.

    >>> step = gf.scatter_nd_update(grid, [[0, 1], [2, 2]], [5.0, 6.0])
    """
    return _nd_update("scatter_nd_update", tensor_scatter_nd_update, ref, indices, updates,
                      name or ref.name + "/ScatterNdUpdate")


def scatter_nd_add(ref, indices, updates, use_locking=False, name=None):
    """``updates`` added to the variable ``ref`` at the index tuples of ``indices`` (TF1
    ``tf.scatter_nd_add``; repeated tuples add up), effective when the run commits.

    >>> step = gf.scatter_nd_add(grid, [[0, 1]], [1.0])
    """
    return _nd_update("scatter_nd_add", tensor_scatter_nd_add, ref, indices, updates,
                      name or ref.name + "/ScatterNdAdd")


def scatter_nd_sub(ref, indices, updates, use_locking=False, name=None):
    """``updates`` subtracted from the variable ``ref`` at the index tuples of
    ``indices`` (TF1 ``tf.scatter_nd_sub``), effective when the run commits.

    >>> step = gf.scatter_nd_sub(grid, [[0, 1]], [1.0])
    """
    return _nd_update("scatter_nd_sub", tensor_scatter_nd_sub, ref, indices, updates,
                      name or ref.name + "/ScatterNdSub")


def _extreme_nd(what, reduce, pick, tensor, indices, updates, name):
    """``tensor`` with each slice at an index tuple of ``indices`` replaced by the
    ``pick`` (max or min) of it and the ``updates`` there (combined by ``reduce``)."""
    tensor, indices, updates = _scatter_inputs(what, tensor, indices, updates)
    index = apply("linear_index", [indices, tensor], target="shape")  # checks the tuples
    depth, lead = indices.shape[-1], len(indices.shape) - 1
    merged = tensor if depth == 1 else apply("merge_axes", [tensor], start=0, count=depth)
    rows = updates if lead == 1 else apply("merge_axes", [updates], start=0, count=lead)
    ids = index if lead == 1 else reshape(index, [-1])
    count = shape_of(merged)[0]
    combined = reduce(rows, ids, count)
    hit = greater(unsorted_segment_sum(ones_like(rows, dtype=tensor.dtype), ids, count), 0)
    if depth == 1:
        return where(hit, pick(merged, combined), merged, name=name)
    return apply("reshape_like", [where(hit, pick(merged, combined), merged), tensor],
                 name=name)


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """``tensor`` with each slice at an index tuple of ``indices`` made the maximum of it
    and its updates (TF1 ``tf.tensor_scatter_nd_max``): a new tensor, no variable.

    >>> gf.tensor_scatter_nd_max([1.0, 5.0, 3.0], [[0], [1]], [4.0, 2.0])   # [4, 5, 3]
    """
    return _extreme_nd("tensor_scatter_nd_max", unsorted_segment_max, maximum, tensor,
                       indices, updates, name or "TensorScatterMax")


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """``tensor`` with each slice at an index tuple of ``indices`` made the minimum of it
    and its updates (TF1 ``tf.tensor_scatter_nd_min``): a new tensor, no variable.

    >>> gf.tensor_scatter_nd_min([1.0, 5.0, 3.0], [[0], [1]], [4.0, 2.0])   # [1, 2, 3]
    """
    return _extreme_nd("tensor_scatter_nd_min", unsorted_segment_min, minimum, tensor,
                       indices, updates, name or "TensorScatterMin")


def _batch_tuples(what, indices):
    """The index tuples ``[b0, ..., i]`` of the batched ``indices`` (rank known)."""
    indices = convert_to_tensor(indices)
    if not indices.dtype.is_integer:
        raise TypeError(f"{what}: indices '{indices.name}' must be integers, got "
                        f"{indices.dtype.name}")
    if indices.shape is None or len(indices.shape) == 0:
        raise ValueError(f"{what}: indices '{indices.name}' must have a known rank of 1 or "
                         "more")
    rank = len(indices.shape)
    dims = shape_of(indices, out_type=indices.dtype)
    coords = []
    for axis in range(rank - 1):
        line = range_(dims[axis], dtype=indices.dtype)
        line = reshape(line, [-1 if a == axis else 1 for a in range(rank)])
        coords.append(broadcast_to(line, dims))
    return stack(coords + [indices], axis=-1)


def batch_gather(params, indices, name=None):
    """``params[b..., indices[b..., j], ...]`` for each batch position ``b...``: a
    gather along the axis after the leading batch axes of ``indices`` (TF1
    ``tf.batch_gather``; ``indices``' rank must be known). Differentiable in ``params``.

    >>> gf.batch_gather(scores, top_ids)   # scores [B, N], top_ids [B, K] -> [B, K]
    """
    return gather_nd(params, _batch_tuples("batch_gather", indices), name=name)


def batch_scatter_update(ref, indices, updates, use_locking=True, name=None):
    """``ref[b..., indices[b..., j]] = updates[b..., j]`` for the variable ``ref`` (TF1
    ``tf.batch_scatter_update``), effective when the run commits.

    >>> step = gf.batch_scatter_update(memory, [[0], [2]], [[1.0], [2.0]])
    """
    tuples = _batch_tuples("batch_scatter_update", indices)
    return scatter_nd_update(ref, tuples, updates, name=name)

