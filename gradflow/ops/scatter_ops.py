"""``tf.scatter_nd``, the functional ``tf.tensor_scatter_nd_update``/``_add``/``_sub``,
``tf.bincount``, and the variable updates ``tf.scatter_update``, ``scatter_add`` and
``scatter_sub``.

All of them put rows into a dense tensor with ``gather``'s gradient (the backends'
scatter-add), so each is differentiable in its ``updates`` (and the functional ones
in their ``tensor``). The variable updates are assignments built as ``assign_add``
is: ``assign(ref, new value)`` over the value ``ref`` holds at commit, so they take
effect when the run commits, as every other assignment, and concurrent runs that
update other rows lose none of them. The primitives they add (``last_occurrence``,
``check_scatter_updates``, ``bincount_size``) are in ``gradflow.prim.scatter``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import expand_dims, reshape, reshape_like, static_value
from gradflow.ops.index_ops import boolean_mask, gather, stack
from gradflow.ops.math_ops import add, cast, greater, less, not_equal, ones_like, subtract, where
from gradflow.ops.shape_ops import fill
from gradflow.ops.state_ops import assign, at_commit, stop_gradient
from gradflow.prim import scatter as _scatter  # noqa: F401 - registers the primitives
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.prim.scatter import updates_problem
from gradflow.variables import Variable

__all__ = ["bincount", "scatter_add", "scatter_nd", "scatter_sub", "scatter_update",
           "tensor_scatter_add", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_update", "tensor_scatter_sub", "tensor_scatter_update"]


def _rows(updates, indices, like):
    """``updates`` summed into zeros shaped like ``like`` at rows ``indices``."""
    return apply("gather_grad", [updates, indices, like], axis=0)


def _check(what, ref, indices, updates):
    if not isinstance(ref, Variable):
        raise TypeError(f"{what}: '{getattr(ref, 'name', ref)}' is not a gf.Variable")
    indices = convert_to_tensor(indices)
    if not indices.dtype.is_integer:
        raise TypeError(f"{what}: indices '{indices.name}' must be int32 or int64, got "
                        f"{indices.dtype.name}")
    updates = convert_to_tensor(updates, like=ref)
    if ref.shape is not None and indices.shape is not None and updates.shape is not None:
        want = tuple(indices.shape) + tuple(ref.shape[1:])
        if len(want) != len(updates.shape) or any(
                a is not None and b is not None and a != b for a, b in zip(want, updates.shape)):
            raise ValueError(f"{what}: updates '{updates.name}' have shape "
                             f"{tuple(updates.shape)}, but indices of shape "
                             f"{tuple(indices.shape)} into variable '{ref.name}' of shape "
                             f"{tuple(ref.shape)} need {want}")
    return indices, updates


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] += updates`` for the variable ``ref`` (rows along its first axis;
    repeated indices add up), effective when the run commits; returns the new value.

    >>> step = gf.scatter_add(counts, labels, gf.ones_like(labels, gf.float32))
    """
    indices, updates = _check("scatter_add", ref, indices, updates)
    return assign(ref, at_commit(ref) + _rows(updates, indices, ref),
                  name=name or ref.name + "/ScatterAdd")


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] -= updates`` for the variable ``ref`` (as ``scatter_add``).

    >>> step = gf.scatter_sub(embeddings, ids, lr * grads)
    """
    indices, updates = _check("scatter_sub", ref, indices, updates)
    return assign(ref, at_commit(ref) - _rows(updates, indices, ref),
                  name=name or ref.name + "/ScatterSub")


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """``ref[indices] = updates`` for the variable ``ref`` (rows along its first axis),
    effective when the run commits; returns the new value. Of repeated indices the
    last update wins (TF1 leaves the order undefined).

    >>> reset = gf.scatter_update(memory, [0, 3], gf.zeros([2, 16]))
    """
    indices, updates = _check("scatter_update", ref, indices, updates)
    keep = cast(apply("last_occurrence", [indices]), ref.dtype)
    for _ in range(len(ref.shape) - 1):  # one weight per row of updates
        keep = expand_dims(keep, -1)
    kept = updates * keep
    hit = greater(_rows(ones_like(updates) * keep, indices, ref), 0.0)
    return assign(ref, where(hit, _rows(kept, indices, ref), at_commit(ref)),
                  name=name or ref.name + "/ScatterUpdate")


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at the index tuples of ``indices``
    (TF1 ``tf.scatter_nd``; repeated indices add up): the inverse of ``gather_nd``.

    >>> gf.scatter_nd([[1], [3]], [9.0, 10.0], [5])   # [0, 9, 0, 10, 0]
    """
    indices = convert_to_tensor(indices)
    updates = convert_to_tensor(updates)
    if indices.shape is None or indices.shape[-1] is None:
        raise ValueError(f"scatter_nd: the index length (last axis of '{indices.name}') "
                         "must be known")
    static = static_value(shape)
    zeros = fill(shape if static is None else [int(d) for d in static.reshape(-1)],
                 convert_to_tensor(0, dtype=updates.dtype))
    index = apply("linear_index", [indices, zeros], target="shape")
    count = indices.shape[-1]
    merged = zeros if count == 1 else apply("merge_axes", [zeros], start=0, count=count)
    out = _rows(updates, index, merged)
    return out if count == 1 else reshape_like(out, zeros)


# -- tensor_scatter_nd_*: functional scatters into a tensor --------------------------


def _static_settles(indices, tensor, updates) -> bool:
    shapes = (indices.shape, tensor.shape, updates.shape)
    return all(s is not None and None not in tuple(s) for s in shapes)


def _scatter_inputs(what, tensor, indices, updates):
    """``(tensor, indices, updates)`` as checked tensors: int indices whose index length
    is known, updates of the tensor's dtype and of the shape the scatter needs (checked
    at run time where the static shapes leave it open)."""
    tensor = convert_to_tensor(tensor)
    indices = convert_to_tensor(indices)
    if not indices.dtype.is_integer:
        raise TypeError(f"{what}: indices '{indices.name}' must be int32 or int64, got "
                        f"{indices.dtype.name}")
    updates = convert_to_tensor(updates, like=tensor)
    if indices.shape is None or len(indices.shape) == 0 or indices.shape[-1] is None:
        raise ValueError(f"{what}: the index length (last axis of indices '{indices.name}', "
                         f"shape {indices.shape}) must be known when the graph is built")
    if indices.shape[-1] == 0:  # TF refuses them when it runs
        raise ValueError(f"{what}: indices '{indices.name}' of shape {tuple(indices.shape)} "
                         "hold index tuples of length 0, which name no element")
    label = f"updates '{updates.name}'"
    if tensor.shape is not None and updates.shape is not None:
        problem = updates_problem(tuple(indices.shape), tuple(tensor.shape),
                                   tuple(updates.shape), label)
        if problem is not None:
            raise ValueError(f"{what}: {problem}")
    if not _static_settles(indices, tensor, updates):
        updates = apply("check_scatter_updates", [updates, indices, tensor], what=what,
                        label=label)
    return tensor, indices, updates


def _scattered(updates, indices, tensor):
    """``scatter_nd(indices, updates, shape(tensor))``: zeros shaped like ``tensor`` (at
    run time) with ``updates`` added at the index tuples of ``indices``."""
    index = apply("linear_index", [indices, tensor], target="shape")  # checks the tuples
    depth = indices.shape[-1]
    merged = tensor if depth == 1 else apply("merge_axes", [tensor], start=0, count=depth)
    out = _rows(updates, index, merged)
    return out if depth == 1 else reshape_like(out, tensor)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """``tensor`` with ``updates`` added at the index tuples in the last axis of
    ``indices`` (TF1 ``tf.tensor_scatter_nd_add``, TF 1.13's ``tf.tensor_scatter_add``):
    a new tensor, no variable. ``updates`` has shape ``indices.shape[:-1] +
    tensor.shape[indices.shape[-1]:]``; repeated indices add up. An index tuple outside
    ``tensor`` fails the run with ``InvalidArgumentError``.

    >>> gf.tensor_scatter_nd_add([1.0, 2.0, 3.0], [[0], [2]], [10.0, 20.0])   # [11, 2, 23]
    """
    tensor, indices, updates = _scatter_inputs("tensor_scatter_nd_add", tensor, indices,
                                               updates)
    # d/dtensor = g; d/dupdates = gather_nd(g, indices) (gather_grad's own gradient)
    return add(tensor, _scattered(updates, indices, tensor), name=name or "TensorScatterAdd")


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """``tensor`` with ``updates`` subtracted at the index tuples of ``indices`` (TF1
    ``tf.tensor_scatter_nd_sub``, TF 1.13's ``tf.tensor_scatter_sub``); as
    ``tensor_scatter_nd_add`` otherwise.

    >>> gf.tensor_scatter_nd_sub([1.0, 2.0, 3.0], [[1]], [5.0])   # [1, -3, 3]
    """
    tensor, indices, updates = _scatter_inputs("tensor_scatter_nd_sub", tensor, indices,
                                               updates)
    return subtract(tensor, _scattered(updates, indices, tensor),
                    name=name or "TensorScatterSub")


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """``tensor`` with the slices at the index tuples of ``indices`` replaced by
    ``updates`` (TF1 ``tf.tensor_scatter_nd_update``, TF 1.13's
    ``tf.tensor_scatter_update``): a new tensor, no variable. ``updates`` has shape
    ``indices.shape[:-1] + tensor.shape[indices.shape[-1]:]``. Of repeated index tuples
    the last update wins, as on TF's CPU. An index tuple outside ``tensor`` fails the
    run with ``InvalidArgumentError``.

    The gradient is TF's where the tuples differ: zero at the replaced elements for
    ``tensor``, ``gather_nd(grad, indices)`` for ``updates``; an update that a later one
    overwrites gets a zero gradient (TF gives it ``gather_nd(grad)`` as well, which is
    not the derivative of the value it computes).

    >>> gf.tensor_scatter_nd_update([1.0, 2.0, 3.0], [[0], [2]], [7.0, 9.0])   # [7, 2, 9]
    """
    tensor, indices, updates = _scatter_inputs("tensor_scatter_nd_update", tensor, indices,
                                               updates)
    if tensor.dtype.is_bool:  # the scatter adds: replace bools as int32 0s and 1s
        out = _replaced(cast(tensor, dtypes.int32), indices, cast(updates, dtypes.int32))
        return cast(out, dtypes.bool_, name=name or "TensorScatterUpdate")
    return _replaced(tensor, indices, updates, name=name or "TensorScatterUpdate")


def _replaced(tensor, indices, updates, name=None):
    """``tensor`` with the slices at ``indices`` replaced by ``updates``, the last of
    repeated index tuples winning: only the winning rows are scattered, and ``where``
    picks them (d/dtensor = g where no row lands, d/dupdates = g gathered at the
    winners, 0 for the overwritten rows)."""
    index = apply("linear_index", [indices, tensor], target="shape")
    depth, lead = indices.shape[-1], len(indices.shape) - 1
    merged = tensor if depth == 1 else apply("merge_axes", [tensor], start=0, count=depth)
    rows = updates if lead == 1 else apply("merge_axes", [updates], start=0, count=lead)
    ids = index if lead == 1 else apply("merge_axes", [index], start=0, count=lead)
    winners = reshape(where(apply("last_occurrence", [ids])), [-1])
    # the winners' positions come from ``where``: they need no range check
    kept = gather(rows, winners, validate_indices=False)
    kept_ids = gather(ids, winners, validate_indices=False)
    hit = not_equal(_rows(ones_like(kept), kept_ids, merged), 0)
    if depth == 1:
        return where(hit, _rows(kept, kept_ids, merged), merged, name=name)
    return apply("reshape_like", [where(hit, _rows(kept, kept_ids, merged), merged), tensor],
                 name=name)


tensor_scatter_add = tensor_scatter_nd_add  # TF 1.13's names
tensor_scatter_sub = tensor_scatter_nd_sub
tensor_scatter_update = tensor_scatter_nd_update


# -- bincount ------------------------------------------------------------------------


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32):
    """How many times each value ``0, 1, ...`` occurs in the non-negative integers
    ``arr`` (TF1 ``tf.bincount``, ``tf.math.bincount``): a vector of ``max(arr) + 1``
    counts (none for an empty ``arr``), at least ``minlength`` long and at most
    ``maxlength`` (larger values are not counted). With ``weights`` (``arr``'s shape),
    the sums of the weights at each value, in their dtype; else counts in ``dtype``
    (default int32). A negative value fails the run with ``InvalidArgumentError``.
    No gradient.

    >>> gf.bincount([1, 1, 3], minlength=5)   # [0, 2, 0, 1, 0]
    """
    arr, weights = _bincount_inputs(arr, weights)
    bounds = [(kind, cast(convert_to_tensor(v, like=arr), arr.dtype)) for kind, v in
              (("min", minlength), ("max", maxlength)) if v is not None]
    size = apply("bincount_size", [arr] + ([weights] if weights is not None else []) +
                 [v for _, v in bounds], weighted=weights is not None,
                 bounds=tuple(kind for kind, _ in bounds))
    flat = reshape(arr, [-1])
    counted = less(flat, size)  # values past maxlength are not counted
    ids = boolean_mask(flat, counted)
    values = ones_like(ids, dtype=dtype) if weights is None else \
        boolean_mask(reshape(weights, [-1]), counted)
    known = _static_bins(arr, minlength, maxlength)
    zero = convert_to_tensor(0, dtype=values.dtype)
    bins = fill(stack([size]) if known is None else [known], zero)
    return _rows(values, ids, bins)


def _bincount_inputs(arr, weights):
    """``arr`` as integers (TF1 casts others to int32), and ``weights`` of its shape where
    both are known, with no gradient (TF1 has none)."""
    arr = convert_to_tensor(arr)
    if not arr.dtype.is_integer:
        arr = cast(arr, dtypes.int32)
    if weights is None:
        return arr, None
    weights = convert_to_tensor(weights)
    if weights.shape is not None and arr.shape is not None and \
            not _same_known(weights.shape, arr.shape):
        raise ValueError(f"bincount: weights '{weights.name}' of shape {tuple(weights.shape)} "
                         f"for arr '{arr.name}' of shape {tuple(arr.shape)}; they must have "
                         "the same shape")
    return arr, stop_gradient(weights)


def _static_bins(arr, minlength, maxlength):
    """The number of bins where it is known when the graph is built (``minlength ==
    maxlength``, or a constant ``arr`` and bounds: TF1's shape then knows it too)."""
    low = None if minlength is None else static_value(minlength)
    high = None if maxlength is None else static_value(maxlength)
    if low is not None and high is not None and int(low) == int(high):
        return int(low)
    values = static_value(arr)
    if values is None or (minlength is not None and low is None) or \
            (maxlength is not None and high is None) or \
            (values.size and not 0 <= values.min() <= values.max() < arr.dtype.max):
        return None  # (a negative value, or one past the dtype's range, fails the run)
    size = int(values.max()) + 1 if values.size else 0
    size = size if low is None else max(size, int(low))
    return size if high is None else min(size, int(high))


def _same_known(a, b) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))
