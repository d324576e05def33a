"""``tf.scatter_nd``, the functional ``tf.tensor_scatter_nd_update``/``_add``/``_sub``,
``tf.bincount``, and the variable updates ``tf.scatter_update``, ``scatter_add`` and
``scatter_sub``.

All of them put rows into a dense tensor with ``gather``'s gradient (the backends'
scatter-add), so each is differentiable in its ``updates`` (and the functional ones
in their ``tensor``). The variable updates are assignments built as ``assign_add``
is: ``assign(ref, new value)``, so they take effect when the run commits, as every
other assignment.
"""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.prim.registry import apply, convert_to_tensor, register

__all__ = ["bincount", "scatter_add", "scatter_nd", "scatter_sub", "scatter_update",
           "tensor_scatter_add", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_update", "tensor_scatter_sub", "tensor_scatter_update"]


def _last_occurrence_impl(xp, indices):
    """True where an index does not appear again later (the update that wins)."""
    flat = xp.reshape(indices, (-1,))
    if flat.shape[0] == 0:
        return xp.reshape(xp.astype(flat, xp.bool), indices.shape)
    order = xp.argsort(flat, stable=True)
    grouped = xp.take(flat, order)
    last = xp.concat([grouped[1:] != grouped[:-1],
                      xp.ones((1,), dtype=xp.bool, device=_device(flat))])
    return xp.reshape(xp.take(last, xp.argsort(order)), indices.shape)


def _last_occurrence_infer(shapes, in_dtypes):
    if not in_dtypes[0].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[0].name}")
    return shapes[0], dtypes.bool_


register("last_occurrence", _last_occurrence_impl, _last_occurrence_infer, grad=None)


def _rows(updates, indices, like):
    """``updates`` summed into zeros shaped like ``like`` at rows ``indices``."""
    return apply("gather_grad", [updates, indices, like], axis=0)


def _check(what, ref, indices, updates):
    from gradflow.variables import Variable

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
    from gradflow.ops.state_ops import assign

    indices, updates = _check("scatter_add", ref, indices, updates)
    return assign(ref, ref + _rows(updates, indices, ref), name=name or ref.name + "/ScatterAdd")


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """``ref[indices] -= updates`` for the variable ``ref`` (as ``scatter_add``).

    >>> step = gf.scatter_sub(embeddings, ids, lr * grads)
    """
    from gradflow.ops.state_ops import assign

    indices, updates = _check("scatter_sub", ref, indices, updates)
    return assign(ref, ref - _rows(updates, indices, ref), name=name or ref.name + "/ScatterSub")


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """``ref[indices] = updates`` for the variable ``ref`` (rows along its first axis),
    effective when the run commits; returns the new value. Of repeated indices the
    last update wins (TF1 leaves the order undefined).

    >>> reset = gf.scatter_update(memory, [0, 3], gf.zeros([2, 16]))
    """
    from gradflow.ops.array_ops import expand_dims
    from gradflow.ops.math_ops import cast, greater, ones_like, where
    from gradflow.ops.state_ops import assign

    indices, updates = _check("scatter_update", ref, indices, updates)
    keep = cast(apply("last_occurrence", [indices]), ref.dtype)
    for _ in range(len(ref.shape) - 1):  # one weight per row of updates
        keep = expand_dims(keep, -1)
    kept = updates * keep
    hit = greater(_rows(ones_like(updates) * keep, indices, ref), 0.0)
    return assign(ref, where(hit, _rows(kept, indices, ref), ref),
                  name=name or ref.name + "/ScatterUpdate")


def scatter_nd(indices, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at the index tuples of ``indices``
    (TF1 ``tf.scatter_nd``; repeated indices add up): the inverse of ``gather_nd``.

    >>> gf.scatter_nd([[1], [3]], [9.0, 10.0], [5])   # [0, 9, 0, 10, 0]
    """
    from gradflow.ops.array_ops import reshape_like, static_value
    from gradflow.ops.shape_ops import fill

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


def _updates_shape(indices_shape, tensor_shape):
    """The shape ``updates`` must have: ``indices.shape[:-1] + tensor.shape[depth:]``."""
    depth = indices_shape[-1]
    return tuple(indices_shape[:-1]) + tuple(tensor_shape[depth:])


def _updates_problem(indices_shape, tensor_shape, updates_shape, label="updates"):
    """What is wrong with the three shapes (``None`` dims match anything), or None;
    ``label`` names the updates."""
    depth = indices_shape[-1]
    if depth is not None and depth > len(tensor_shape):
        return (f"index tuples of length {depth} (the last axis of indices, shape "
                f"{list(indices_shape)}) for a tensor of rank {len(tensor_shape)}")
    if depth is None:
        return None
    want = _updates_shape(indices_shape, tensor_shape)
    if len(want) != len(updates_shape) or any(
            a is not None and b is not None and a != b for a, b in zip(want, updates_shape)):
        return (f"{label} have shape {list(updates_shape)}, but indices of shape "
                f"{list(indices_shape)} into a tensor of shape {list(tensor_shape)} need "
                f"updates of shape {list(want)} (indices.shape[:-1] + "
                f"tensor.shape[indices.shape[-1]:])")
    return None


def _check_updates_impl(xp, updates, indices, tensor, what, label):
    problem = _updates_problem(tuple(indices.shape), tuple(tensor.shape), tuple(updates.shape),
                               label)
    if problem is not None:
        raise ValueError(f"{what}: {problem}")
    return updates


# A run-time check where the static shapes cannot settle it: a wrong updates shape
# would otherwise reach the scatter's reshape, which fails with a different message on
# each backend, or succeeds on the wrong elements when only the sizes agree.
register("check_scatter_updates", _check_updates_impl,
         lambda s, d, what, label: (s[0], d[0]), grad=lambda n, g: [g, None, None],
         check=True)


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
        problem = _updates_problem(tuple(indices.shape), tuple(tensor.shape),
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
    from gradflow.ops.array_ops import reshape_like

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
    from gradflow.ops.math_ops import add

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
    from gradflow.ops.math_ops import subtract

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
    from gradflow.ops.math_ops import cast

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
    from gradflow.ops.array_ops import reshape
    from gradflow.ops.index_ops import gather
    from gradflow.ops.math_ops import not_equal, ones_like, where

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


def _bincount_size_impl(xp, arr, *rest, weighted, bounds):
    """The number of bins (TF1: ``max(arr) + 1``, 0 for an empty ``arr``, raised to
    ``minlength`` and cut to ``maxlength``), after checking ``arr`` and ``weights``."""
    if weighted:
        weights, rest = rest[0], rest[1:]
        if tuple(weights.shape) != tuple(arr.shape):
            raise ValueError(f"bincount: weights of shape {list(weights.shape)} for arr of "
                             f"shape {list(arr.shape)}; they must have the same shape")
    size = 0
    if math.prod(arr.shape):
        if bool(xp.min(arr) < 0):
            raise ValueError("bincount: arr must be non-negative (TF1: \"Input arr must be "
                             "non-negative!\")")
        size = int(xp.max(arr)) + 1
    for bound, value in zip(bounds, rest):
        size = max(size, int(value)) if bound == "min" else min(size, int(value))
    if size > xp.iinfo(arr.dtype).max:  # max(arr) + 1 overflows arr's dtype
        raise ValueError(f"bincount: {size} bins do not fit in arr's dtype")
    return xp.asarray(size, dtype=arr.dtype, device=_device(arr))


def _bincount_size_infer(shapes, in_dtypes, weighted, bounds):
    for s in shapes[1 + weighted:]:
        if len(s) != 0:
            raise ValueError(f"minlength and maxlength must be scalars, got shape {tuple(s)}")
    return (), in_dtypes[0]


register("bincount_size", _bincount_size_impl, _bincount_size_infer, grad=None)


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
    from gradflow.ops.array_ops import reshape
    from gradflow.ops.index_ops import boolean_mask, stack
    from gradflow.ops.math_ops import cast, less, ones_like
    from gradflow.ops.shape_ops import fill

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
    from gradflow.ops.math_ops import cast
    from gradflow.ops.state_ops import stop_gradient

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
    from gradflow.ops.array_ops import static_value

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
