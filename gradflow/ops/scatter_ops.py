"""``tf.scatter_nd`` and the variable updates ``tf.scatter_update``, ``scatter_add``
and ``scatter_sub``.

All of them put rows into a dense tensor with ``gather``'s gradient (the backends'
scatter-add), so each is differentiable in its ``updates``. The variable updates
are assignments built as ``assign_add`` is: ``assign(ref, new value)``, so they
take effect when the run commits, as every other assignment.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow.ops.registry import apply, convert_to_tensor, register

__all__ = ["scatter_add", "scatter_nd", "scatter_sub", "scatter_update"]


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
    from gradflow import dtypes

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
    index = apply("linear_index", [indices, zeros])
    count = indices.shape[-1]
    merged = zeros if count == 1 else apply("merge_axes", [zeros], start=0, count=count)
    out = _rows(updates, index, merged)
    return out if count == 1 else reshape_like(out, zeros)
