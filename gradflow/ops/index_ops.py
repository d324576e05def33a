"""Indexing (``x[...]``), joining and splitting, gather and one_hot."""

from __future__ import annotations

import functools
import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops import rules
from gradflow.ops.array_ops import expand_dims
from gradflow.ops.math_ops import zeros_like
from gradflow.ops.registry import apply, convert_to_tensor, register

# -- x[key] ----------------------------------------------------------------------


def normalize_key(key, ndim):
    """A tuple of ints, slices and ``None`` with the Ellipsis expanded."""
    key = key if isinstance(key, tuple) else (key,)
    for k in key:
        if isinstance(k, Tensor) or not (k is None or k is Ellipsis or isinstance(k, (int, slice))):
            raise TypeError(f"index {k!r} is not supported: use ints, slices, None or ...; "
                            "for tensor indices use gf.gather")
        if isinstance(k, slice) and not all(
                v is None or isinstance(v, int) for v in (k.start, k.stop, k.step)):
            raise TypeError(f"slice {k!r} must have int or None bounds")
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have one Ellipsis")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices ({used}) for rank {ndim}")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - used) + key[i + 1:]
    else:
        key = key + (slice(None),) * (ndim - used)
    return tuple(_hashable(k) for k in key)


def _hashable(k):
    return ("slice", k.start, k.stop, k.step) if isinstance(k, slice) else k


def _as_index(key):
    return tuple(slice(*k[1:]) if isinstance(k, tuple) else k for k in key)


def _getitem_infer(shapes, in_dtypes, key):
    out, dim = [], 0
    for k in _as_index(key):
        if k is None:
            out.append(1)
            continue
        size = shapes[0][dim]
        dim += 1
        if isinstance(k, int):
            if size is not None and not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for a dimension of size {size}")
        elif size is None:
            out.append(None)
        else:
            out.append(len(range(*k.indices(size))))
    return tuple(out), in_dtypes[0]


def _getitem_impl(xp, x, key):
    return x[_as_index(key)]


def _getitem_lower(xp, key):
    index = _as_index(key)
    return lambda x: x[index]


def _getitem_grad_impl(xp, g, x, key):
    index = tuple(k for k in _as_index(key) if k is not None)
    out = xp.zeros(x.shape, dtype=g.dtype, device=_device(g))
    out[index] = xp.reshape(g, out[index].shape)
    return out


register("getitem", _getitem_impl, _getitem_infer, lower=_getitem_lower,
         grad=lambda n, g: [apply("getitem_grad", [g, n.inputs[0]], key=n.attrs["key"])])
register("getitem_grad", _getitem_grad_impl, lambda s, d, key: (s[1], d[0]),
         grad=lambda n, g: [apply("getitem", [g], key=n.attrs["key"]), None])


def getitem(x, key, name=None):
    """``x[key]`` with static ints, slices, ``None`` and ``...``."""
    x = convert_to_tensor(x)
    return apply("getitem", [x], name=name or "strided_slice",
                 key=normalize_key(key, len(x.shape)))


# -- concat and its gradient -----------------------------------------------------


def _concat_infer(shapes, in_dtypes, axis):
    rank = len(shapes[0])
    total = 0
    for s in shapes:
        if len(s) != rank:
            raise ValueError("all inputs must have the same rank")
        for i, (d, d0) in enumerate(zip(s, shapes[0])):
            if i != axis and d is not None and d0 is not None and d != d0:
                raise ValueError(f"dimension {i} differs ({d0} vs {d}); only axis {axis} may")
        total = None if total is None or s[axis] is None else total + s[axis]
    out = list(shapes[0])
    out[axis] = total
    for s in shapes[1:]:
        out = [e if d is None and i != axis else d for i, (d, e) in enumerate(zip(out, s))]
    return tuple(out), rules.same_dtype(in_dtypes)


def _concat_grad(n, g):
    xs = list(n.inputs)
    return [apply("split_like", [g] + xs, axis=n.attrs["axis"], index=i) for i in range(len(xs))]


register("concat", lambda xp, *xs, axis: xp.concat(xs, axis=axis), _concat_infer,
         grad=_concat_grad, lower=lambda xp, axis: lambda *xs: xp.concat(xs, axis=axis))


def _split_like_impl(xp, g, *xs, axis, index):
    start = sum(x.shape[axis] for x in xs[:index])
    # the trailing ... : the Array API does not let a key name fewer axes than the array has
    key = (slice(None),) * axis + (slice(start, start + xs[index].shape[axis]), ...)
    return g[key]


def _split_like_grad(n, g):  # put dg back in its place, zeros elsewhere
    xs = n.inputs[1:]
    i = n.attrs["index"]
    parts = [g if j == i else zeros_like(x) for j, x in enumerate(xs)]
    return [apply("concat", parts, axis=n.attrs["axis"])] + [None] * len(xs)


register("split_like", _split_like_impl,
         lambda s, d, axis, index: (s[index + 1], d[0]), grad=_split_like_grad)


def concat(values, axis, name=None):
    """Join tensors along an existing ``axis``."""
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("concat needs at least one tensor")
    if len(values) == 1:
        return values[0]
    axis = rules.normalize_axis(axis, len(values[0].shape), allow_none=False)[0]
    return apply("concat", values, name=name, axis=axis)


def stack(values, axis=0, name=None):
    """Join tensors along a new ``axis``."""
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("stack needs at least one tensor")
    axis = rules.normalize_axis(axis, len(values[0].shape) + 1, allow_none=False)[0]
    return concat([expand_dims(v, axis) for v in values], axis, name=name)


def unstack(value, num=None, axis=0, name=None):
    """A list of the slices of ``value`` along ``axis``."""
    x = convert_to_tensor(value)
    axis = rules.normalize_axis(axis, len(x.shape), allow_none=False)[0]
    num = x.shape[axis] if num is None else num
    if num is None:
        raise ValueError(f"unstack: the size of axis {axis} of '{x.name}' is unknown; pass num=")
    return [getitem(x, (slice(None),) * axis + (i,)) for i in range(num)]


def split(value, num_or_size_splits, axis=0, name=None):
    """Split ``value`` along ``axis`` into equal parts or parts of the given sizes."""
    x = convert_to_tensor(value)
    axis = rules.normalize_axis(axis, len(x.shape), allow_none=False)[0]
    size = x.shape[axis]
    if isinstance(num_or_size_splits, int):
        if size is None or size % num_or_size_splits:
            raise ValueError(f"split: axis {axis} of '{x.name}' (size {size}) does not divide "
                             f"into {num_or_size_splits} equal parts")
        sizes = [size // num_or_size_splits] * num_or_size_splits
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if size is not None and sum(sizes) != size:
            raise ValueError(f"split: sizes {sizes} do not add up to {size}")
    out, start = [], 0
    for s in sizes:
        out.append(getitem(x, (slice(None),) * axis + (slice(start, start + s),)))
        start += s
    return out


# -- gather, its gradient (a scatter-add), one_hot ---------------------------------


def _gather_infer(shapes, in_dtypes, axis):
    if not in_dtypes[1].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[1].name}")
    p = shapes[0]
    return tuple(p[:axis]) + tuple(shapes[1]) + tuple(p[axis + 1:]), in_dtypes[0]


def _gather_impl(xp, params, indices, axis):
    flat = xp.reshape(indices, (-1,))
    out = xp.take(params, flat, axis=axis)
    return xp.reshape(out, params.shape[:axis] + indices.shape + params.shape[axis + 1:])


def scatter_add_rows_reference(xp, rows, indices, num_rows):
    """Deterministic Array-API scatter-add: a one-hot matrix product."""
    positions = xp.arange(num_rows, dtype=indices.dtype, device=_device(indices))
    one_hot = xp.astype(positions[:, None] == indices[None, :], rows.dtype)
    return one_hot @ rows


def gather_grad_impl(xp, g, indices, params, axis, scatter=scatter_add_rows_reference):
    """Sum ``g`` into a zero array shaped like ``params`` at ``indices`` on ``axis``."""
    shape = params.shape
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    count = math.prod(indices.shape)
    rows = xp.reshape(g, (pre, count, post))
    rows = xp.reshape(xp.permute_dims(rows, (1, 0, 2)), (count, pre * post))
    out = scatter(xp, rows, xp.reshape(indices, (-1,)), shape[axis])
    out = xp.permute_dims(xp.reshape(out, (shape[axis], pre, post)), (1, 0, 2))
    return xp.reshape(out, shape)


def bind_gather_grad(scatter):
    """A backend's ``gather_grad`` lowering, built on its own scatter kernel."""
    return lambda xp, axis: functools.partial(gather_grad_impl, xp, axis=axis, scatter=scatter)


register("gather", _gather_impl, _gather_infer,
         grad=lambda n, g: [apply("gather_grad", [g, n.inputs[1], n.inputs[0]],
                                  axis=n.attrs["axis"]), None])
register("gather_grad", gather_grad_impl, lambda s, d, axis: (s[2], d[0]),
         grad=lambda n, g: [gather(g, n.inputs[1], axis=n.attrs["axis"]), None, None])


def gather(params, indices, axis=0, name=None):
    """Slices of ``params`` along ``axis`` at integer ``indices`` (TF1 ``tf.gather``)."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    axis = rules.normalize_axis(axis, len(params.shape), allow_none=False)[0]
    return apply("gather", [params, indices], name=name, axis=axis)


def _one_hot_impl(xp, indices, depth, on_value, off_value, dtype):
    positions = xp.arange(depth, dtype=indices.dtype, device=_device(indices))
    hot = indices[..., None] == positions
    if on_value == 1 and off_value == 0:
        return xp.astype(hot, dtype.resolve(xp))
    on = xp.asarray(on_value, dtype=dtype.resolve(xp), device=_device(indices))
    return xp.where(hot, on, xp.asarray(off_value, dtype=on.dtype, device=_device(indices)))


def _one_hot_infer(shapes, in_dtypes, depth, on_value, off_value, dtype):
    if not in_dtypes[0].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[0].name}")
    return tuple(shapes[0]) + (depth,), dtype


register("one_hot", _one_hot_impl, _one_hot_infer, grad=None)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length ``depth`` on a new last axis (default float32)."""
    if axis not in (None, -1):
        raise ValueError("one_hot: only axis=-1 is supported")
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    return apply("one_hot", [convert_to_tensor(indices)], name=name, depth=int(depth),
                 on_value=on, off_value=off, dtype=dtype)


def _shape_impl(xp, x, out_type):
    return xp.asarray(x.shape, dtype=out_type.resolve(xp), device=_device(x))


register("shape", _shape_impl, lambda s, d, out_type: ((len(s[0]),), out_type), grad=None)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The run-time shape of ``input`` as a 1-D integer tensor."""
    return apply("shape", [convert_to_tensor(input)], name=name, out_type=out_type)
