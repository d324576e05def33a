"""The primitives of tensors made from shapes and shape facts: range, fill, tile, pad,
reverse, broadcast_to, size and rank.

TF1's functions over them live in ``gradflow.ops.shape_ops``.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes

# a leaf module of host memory checks, with no gradflow import (its home is ops/ today:
# it belongs below prim, see the report of issue 46)
from gradflow.prim import call, memory
from gradflow.prim.array import int_vector, reduce, static_value, unbroadcast
from gradflow.prim.registry import apply, register

# -- range -----------------------------------------------------------------------


def _check_range(start, limit, delta):
    if delta == 0:
        raise ValueError("range: delta must not be 0")
    if delta > 0 and start > limit:
        raise ValueError(f"range: start ({start}) must be <= limit ({limit}) when delta > 0")
    if delta < 0 and start < limit:
        raise ValueError(f"range: start ({start}) must be >= limit ({limit}) when delta < 0")


def _range_impl(xp, start, limit, delta):
    to_py = int if xp.isdtype(start.dtype, "integral") else float
    s, e, d = to_py(start), to_py(limit), to_py(delta)
    _check_range(s, e, d)
    return xp.arange(s, e, d, dtype=start.dtype, device=_device(start))


def _range_infer(shapes, in_dtypes):
    for what, s in zip(("start", "limit", "delta"), shapes):
        if len(s) != 0:
            raise ValueError(f"{what} must be a scalar, got shape {tuple(s)}")
    dtype = in_dtypes[0]
    if any(d is not dtype for d in in_dtypes) or dtype.is_bool:
        raise TypeError("start, limit and delta must have one numeric dtype")
    return (None,), dtype  # the length depends on the values


register("range", _range_impl, _range_infer, grad=None)  # TF1: not differentiable


# -- fill ---------------------------------------------------------------------------


def _fill_impl(xp, value, dims=None, *, shape):
    if dims is not None:
        shape = tuple(int(dims[i]) for i in range(dims.shape[0]))
    memory.check_fits("fill", shape, value.dtype, like=value)  # then copy the view
    return xp.asarray(xp.broadcast_to(value, shape), copy=True)


def _fill_infer(shapes, in_dtypes, shape):
    if len(shapes[0]) != 0:
        raise ValueError(f"the value must be a scalar, got shape {tuple(shapes[0])}")
    if len(shapes) > 1:
        if len(shapes[1]) != 1 or not in_dtypes[1].is_integer:
            raise ValueError("dims must be a 1-D integer tensor")
    return shape, in_dtypes[0]


register("fill", _fill_impl, _fill_infer,
         grad=lambda n, g: [reduce("reduce_sum", g, None)] + [None] * (len(n.inputs) - 1),
         value_shape=lambda values, attrs: None if len(values) < 2 or values[1] is None
         else tuple(int(d) for d in values[1].reshape(-1)))


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` (a list of ints, or a 1-D int tensor) whose every
    element is the scalar tensor ``value``."""
    static = static_value(dims)
    if static is not None:
        shape = tuple(int(d) for d in np.reshape(static, (-1,)))
        if any(d < 0 for d in shape):
            raise ValueError(f"fill: dims {shape} must not be negative")
        return apply("fill", [value], name=name or "Fill", shape=shape)
    dims, hint = int_vector(dims, "fill: dims")
    return apply("fill", [value, dims], name=name or "Fill", shape=hint)


# -- tile ---------------------------------------------------------------------------


def _tile_impl(xp, x, multiples=None, *, reps):
    if multiples is not None:
        reps = tuple(int(multiples[i]) for i in range(multiples.shape[0]))
    return xp.tile(x, reps)


def _tile_infer(shapes, in_dtypes, reps):
    x = shapes[0]
    if len(shapes) > 1 and (len(shapes[1]) != 1 or not in_dtypes[1].is_integer):
        raise ValueError("multiples must be a 1-D integer tensor")
    if len(reps) != len(x):
        raise ValueError(f"multiples has {len(reps)} entries for an input of rank {len(x)}")
    return tuple(None if d is None or r is None else d * r for d, r in zip(x, reps)), \
        in_dtypes[0]


def _tile_grad_impl(xp, g, x):
    """Sum the tiles of ``g`` into one of ``x``'s shape."""
    reps = [gd // xd if xd else 1 for gd, xd in zip(g.shape, x.shape)]
    split = tuple(d for pair in zip(reps, x.shape) for d in pair)
    axes = tuple(range(0, 2 * len(reps), 2))
    return xp.reshape(xp.sum(xp.reshape(g, split), axis=axes, dtype=g.dtype), x.shape)


def _tile_grad_grad(n, g):  # the adjoint of summing the tiles: tile again
    big, x = n.inputs
    if big.shape is not None and x.shape is not None:
        reps = tuple(None if b is None or d is None else (b // d if d else 1)
                     for b, d in zip(big.shape, x.shape))
        if None not in reps:
            return [apply("tile", [g], reps=reps), None]
    else:
        reps = (None,) * len(big.shape if big.shape is not None else x.shape or ())
    multiples = call.floor_divide(call.shape(big, out_type=dtypes.int32),
                                  call.maximum(call.shape(x, out_type=dtypes.int32), 1))
    return [apply("tile", [g, multiples], reps=reps), None]


register("tile", _tile_impl, _tile_infer,
         grad=lambda n, g: [apply("tile_grad", [g, n.inputs[0]])] + [None] * (len(n.inputs) - 1))
register("tile_grad", _tile_grad_impl, lambda s, d: (s[1], d[0]), grad=_tile_grad_grad)


# -- broadcast_to -----------------------------------------------------------------------


def _broadcast_problem(x_shape, shape):
    """Why ``x_shape`` does not broadcast to ``shape`` (``None`` dims fit anything), or
    None: TF1 broadcasts from the right, and only size-1 axes (or missing ones) grow."""
    if len(x_shape) > len(shape):
        return f"the input has rank {len(x_shape)}, more than the {len(shape)} of the shape"
    for i in range(1, len(x_shape) + 1):
        d, want = x_shape[-i], shape[-i]
        if d is not None and d != 1 and want is not None and d != want:
            return f"axis {len(x_shape) - i} of the input has size {d}, the shape asks {want}"
    return None


def _broadcast_to_impl(xp, x, dims=None, *, shape):
    if dims is not None:
        shape = tuple(int(dims[i]) for i in range(dims.shape[0]))
        if any(d < 0 for d in shape):
            raise ValueError(f"broadcast_to: the shape {list(shape)} has a negative size")
    problem = _broadcast_problem(tuple(x.shape), shape)
    if problem is not None:
        raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {list(x.shape)} "
                         f"to shape {list(shape)}: {problem}")
    # a copy: the broadcast is a read-only view, which a fetch must not hand out
    return xp.asarray(xp.broadcast_to(x, shape), copy=True)


def _broadcast_to_infer(shapes, in_dtypes, shape):
    if len(shapes) > 1 and (len(shapes[1]) != 1 or not in_dtypes[1].is_integer):
        raise ValueError("the shape must be a 1-D integer tensor")
    if shape is None or shapes[0] is None:
        return shape, in_dtypes[0]
    problem = _broadcast_problem(tuple(shapes[0]), shape)
    if problem is not None:
        raise ValueError(f"cannot broadcast {tuple(shapes[0])} to {shape}: {problem}")
    out = list(shape)  # an axis of the input larger than 1 fixes the result's
    for i in range(1, len(shapes[0]) + 1):
        if shapes[0][-i] not in (None, 1):
            out[-i] = shapes[0][-i]
    return tuple(out), in_dtypes[0]


register("broadcast_to", _broadcast_to_impl, _broadcast_to_infer,  # sum back what grew
         grad=lambda n, g: [unbroadcast(g, n.inputs[0])] + [None] * (len(n.inputs) - 1))


# -- pad ------------------------------------------------------------------------------


def _axis_key(axis, part):
    return (slice(None),) * axis + (part, ...)


def _pad_impl(xp, x, paddings, mode, constant_values):
    if mode == "CONSTANT":
        shape = tuple(d + b + a for d, (b, a) in zip(x.shape, paddings))
        out = xp.full(shape, constant_values, dtype=x.dtype, device=_device(x))
        out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, paddings))] = x
        return out
    edge = 1 if mode == "REFLECT" else 0  # REFLECT leaves out the border element
    for axis, (b, a) in enumerate(paddings):
        if not b and not a:
            continue
        size = x.shape[axis]
        if max(b, a) > size - edge:
            raise ValueError(f"pad: {mode} padding ({b}, {a}) is too large for axis {axis} "
                             f"of size {size}")
        parts = []
        if b:
            parts.append(xp.flip(x[_axis_key(axis, slice(edge, edge + b))], axis=axis))
        parts.append(x)
        if a:
            parts.append(xp.flip(x[_axis_key(axis, slice(size - edge - a, size - edge))],
                                 axis=axis))
        x = xp.concat(parts, axis=axis)
    return x


def _zeros_along(xp, like, axis, count):
    shape = like.shape[:axis] + (count,) + like.shape[axis + 1:]
    return xp.zeros(shape, dtype=like.dtype, device=_device(like))


def _pad_grad_impl(xp, g, paddings, mode):
    """The adjoint of ``pad``: the center of ``g`` plus, for the mirrored modes, the
    padding folded back onto the elements it copied."""
    if mode == "CONSTANT":
        return g[tuple(slice(b, d - a) for d, (b, a) in zip(g.shape, paddings))]
    edge = 1 if mode == "REFLECT" else 0
    for axis, (b, a) in enumerate(paddings):
        if not b and not a:
            continue
        size = g.shape[axis] - b - a
        out = g[_axis_key(axis, slice(b, b + size))]
        if b:  # padding position k < b copied element b + edge - 1 - k (counted from 0)
            left = xp.flip(g[_axis_key(axis, slice(0, b))], axis=axis)
            out = out + xp.concat([_zeros_along(xp, left, axis, edge), left,
                                   _zeros_along(xp, left, axis, size - edge - b)], axis=axis)
        if a:
            right = xp.flip(g[_axis_key(axis, slice(b + size, b + size + a))], axis=axis)
            out = out + xp.concat([_zeros_along(xp, right, axis, size - edge - a), right,
                                   _zeros_along(xp, right, axis, edge)], axis=axis)
        g = out
    return g


def _pad_infer(shapes, in_dtypes, paddings, mode, constant_values):
    x = shapes[0]
    if len(paddings) != len(x):
        raise ValueError(f"paddings has {len(paddings)} rows for an input of rank {len(x)}")
    if mode != "CONSTANT":
        edge = 1 if mode == "REFLECT" else 0
        for axis, (d, (b, a)) in enumerate(zip(x, paddings)):
            if d is not None and max(b, a) > d - edge:
                raise ValueError(f"{mode} padding ({b}, {a}) is too large for axis {axis} "
                                 f"of size {d}")
    return tuple(None if d is None else d + b + a for d, (b, a) in zip(x, paddings)), \
        in_dtypes[0]


def _pad_grad_infer(shapes, in_dtypes, paddings, mode):
    return tuple(None if d is None else d - b - a
                 for d, (b, a) in zip(shapes[0], paddings)), in_dtypes[0]


register("pad", _pad_impl, _pad_infer,
         grad=lambda n, g: [apply("pad_grad", [g], paddings=n.attrs["paddings"],
                                  mode=n.attrs["mode"])])
register("pad_grad", _pad_grad_impl, _pad_grad_infer,
         grad=lambda n, g: [apply("pad", [g], paddings=n.attrs["paddings"],
                                  mode=n.attrs["mode"], constant_values=0)])


# -- reverse ------------------------------------------------------------------------


register("reverse", lambda xp, x, axes: xp.flip(x, axis=axes),
         lambda s, d, axes: (s[0], d[0]),
         grad=lambda n, g: [apply("reverse", [g], axes=n.attrs["axes"])])


# -- size and rank --------------------------------------------------------------------


def _size_impl(xp, x, out_type):
    return xp.asarray(math.prod(x.shape), dtype=out_type.resolve(xp), device=_device(x))


def _rank_impl(xp, x):
    return xp.asarray(x.ndim, dtype=xp.int32, device=_device(x))


register("size", _size_impl, lambda s, d, out_type: ((), out_type), grad=None,
         shape_only_inputs=(0,))
register("rank", _rank_impl, lambda s, d: ((), dtypes.int32), grad=None, shape_only_inputs=(0,))
