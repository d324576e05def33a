"""Tensors made from shapes and shape facts: range, fill, eye, tile, pad, reverse,
size and rank (TF1 names and semantics).

``range_`` is exported as ``gf.range``; it keeps a trailing underscore here so
that this module can still use the builtin.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops import memory
from gradflow.ops.array_ops import expand_dims, reduce_sum, static_value, unbroadcast
from gradflow.ops.index_ops import shape as _shape
from gradflow.ops.index_ops import stack
from gradflow.ops.math_ops import cast, equal, floordiv, maximum
from gradflow.prim import rules
from gradflow.prim.registry import apply, constant, convert_to_tensor, register

# -- range -----------------------------------------------------------------------

# TF1 picks the widest dtype of the arguments in this order.
_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def _range_arg_dtype(value):
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (np.ndarray, np.generic)):
        return dtypes.as_dtype(value.dtype)
    return dtypes.float32 if isinstance(value, float) else dtypes.int32


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


def range_(start, limit=None, delta=1, dtype=None, name="range"):
    """``[start, start + delta, ...)`` up to ``limit`` (TF1 ``tf.range``).

    ``range(n)`` counts from 0. The dtype is the widest of the arguments' (Python
    ints give int32, floats float32) unless ``dtype`` is given. Python arguments
    give a constant; tensor arguments (``gf.shape(x)[0]``) an op whose length is
    known only when it runs.

    >>> gf.range(3, 18, 3)   # [3, 6, 9, 12, 15], int32
    """
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    inferred = max((_range_arg_dtype(a) for a in args), key=_RANGE_ORDER.index)
    out = dtypes.as_dtype(dtype) if dtype is not None else inferred
    values = [static_value(a) for a in args]
    if all(v is not None for v in values):
        if any(v.ndim != 0 for v in values):
            raise ValueError("range: start, limit and delta must be scalars")
        py = [v.item() for v in values]
        _check_range(*py)
        return constant(np.arange(*py, dtype=out.as_numpy_dtype), dtype=out, name=name)
    tensors = [cast(convert_to_tensor(a, dtype=None if isinstance(a, Tensor) else out), out)
               for a in args]
    return apply("range", tensors, name=name)


# -- fill and eye -------------------------------------------------------------------


def _int_vector(value, what):
    """``value`` (a 1-D int tensor, or a list mixing ints and scalar int tensors such as
    ``[gf.shape(x)[0], 10]``) as ``(1-D int tensor, static hint)``."""
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        dtype = next(v.dtype for v in value if isinstance(v, Tensor))
        parts = [convert_to_tensor(v, dtype=None if isinstance(v, Tensor) else dtype)
                 for v in value]
        kinds = {p.dtype for p in parts}
        if len(kinds) != 1 or not parts[0].dtype.is_integer:
            raise TypeError(f"{what} must hold integers of one dtype")
        hint = tuple(int(v) if not isinstance(v, Tensor) else None for v in value)
        return stack(parts), hint
    value = convert_to_tensor(value)
    if not value.dtype.is_integer:
        raise TypeError(f"{what} '{value.name}' must be an integer tensor, got "
                        f"{value.dtype.name}")
    return value, _shape_hint(value)


def _shape_hint(dims):
    """The static facts known about the shape a 1-D int tensor ``dims`` holds."""
    if dims.opdef.name == "shape":
        return dims.inputs[0].shape
    if dims.shape is not None and len(dims.shape) == 1 and dims.shape[0] is not None:
        return (None,) * dims.shape[0]
    return None


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
         grad=lambda n, g: [reduce_sum(g)] + [None] * (len(n.inputs) - 1),
         value_shape=lambda values, attrs: None if len(values) < 2 or values[1] is None
         else tuple(int(d) for d in values[1].reshape(-1)))


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` whose every element is the scalar ``value`` (TF1).

    ``dims`` is a list of ints or a 1-D int tensor (``gf.shape(x)``).
    """
    value = convert_to_tensor(value)
    static = static_value(dims)
    if static is not None:
        shape = tuple(int(d) for d in np.reshape(static, (-1,)))
        if any(d < 0 for d in shape):
            raise ValueError(f"fill: dims {shape} must not be negative")
        return apply("fill", [value], name=name or "Fill", shape=shape)
    dims, hint = _int_vector(dims, "fill: dims")
    return apply("fill", [value, dims], name=name or "Fill", shape=hint)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32, name=None):
    """The identity matrix ``[num_rows, num_columns]`` (TF1 ``tf.eye``), optionally
    repeated over ``batch_shape``; ``num_rows`` may be a scalar int tensor."""
    dtype = dtypes.as_dtype(dtype)
    rows = static_value(num_rows)
    cols = rows if num_columns is None else static_value(num_columns)
    if rows is not None and cols is not None:
        matrix = np.eye(int(rows), int(cols), dtype=dtype.as_numpy_dtype)
        if batch_shape is not None:
            batch = tuple(int(d) for d in batch_shape)
            matrix = np.broadcast_to(matrix, batch + matrix.shape)
        return constant(matrix, dtype=dtype, name=name or "eye")
    if batch_shape is not None:
        raise NotImplementedError("eye: batch_shape needs num_rows and num_columns known "
                                  "when the graph is built")
    r = range_(num_rows, dtype=dtypes.int32)
    c = r if num_columns is None else range_(num_columns, dtype=dtypes.int32)
    return cast(equal(expand_dims(r, 1), c), dtype, name=name or "eye")


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
    multiples = floordiv(_shape(big), maximum(_shape(x), 1))
    return [apply("tile", [g, multiples], reps=reps), None]


register("tile", _tile_impl, _tile_infer,
         grad=lambda n, g: [apply("tile_grad", [g, n.inputs[0]])] + [None] * (len(n.inputs) - 1))
register("tile_grad", _tile_grad_impl, lambda s, d: (s[1], d[0]), grad=_tile_grad_grad)


def tile(input, multiples, name=None):  # noqa: A002
    """``input`` repeated ``multiples[i]`` times along each axis ``i`` (TF1 ``tf.tile``).

    ``multiples`` is a list of ints or a 1-D int tensor.
    """
    x = convert_to_tensor(input)
    static = static_value(multiples)
    if static is not None:
        reps = tuple(int(m) for m in np.reshape(static, (-1,)))
        if any(m < 0 for m in reps):
            raise ValueError(f"tile: multiples {reps} must not be negative")
        return apply("tile", [x], name=name or "Tile", reps=reps)
    multiples, hint = _int_vector(multiples, "tile: multiples")
    if hint is not None and multiples.opdef.name != "shape":
        reps = hint
    elif x.shape is not None:
        reps = (None,) * len(x.shape)
    else:
        reps = ()
    return apply("tile", [x, multiples], name=name or "Tile", reps=reps)


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


def broadcast_to(input, shape, name=None):  # noqa: A002
    """``input`` broadcast to ``shape`` (TF1 ``tf.broadcast_to``): axes are matched from
    the right, and each of ``input``'s must be 1 or the size asked. ``shape`` is a list
    of ints or a 1-D int tensor (``gf.shape(y)``); the gradient sums back over the
    axes that grew.

    >>> gf.broadcast_to([1.0, 2.0], [3, 2])   # [[1, 2], [1, 2], [1, 2]]
    """
    x = convert_to_tensor(input)
    if hasattr(shape, "is_fully_defined"):  # a TensorShape (x.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"broadcast_to: the static shape {shape} is not fully known; "
                             "give the run-time shape (gf.shape(y)) instead")
        shape = shape.as_list()
    static = static_value(shape)
    if static is not None:
        dims = tuple(int(d) for d in np.reshape(static, (-1,)))
        if np.ndim(static) != 1 or any(d < 0 for d in dims):
            raise ValueError(f"broadcast_to: the shape must be a list of sizes >= 0, got "
                             f"{np.asarray(static).tolist()}")
        return apply("broadcast_to", [x], name=name or "BroadcastTo", shape=dims)
    dims, hint = _int_vector(shape, "broadcast_to: shape")
    return apply("broadcast_to", [x, dims], name=name or "BroadcastTo", shape=hint)


# -- pad ------------------------------------------------------------------------------

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


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


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """``tensor`` padded by ``paddings[i] = [before, after]`` elements on axis ``i``.

    ``mode`` is ``"CONSTANT"`` (filled with ``constant_values``), ``"REFLECT"``
    (mirrored without the border element) or ``"SYMMETRIC"`` (mirrored with it),
    any case, as in TF1. ``paddings`` must be known when the graph is built.
    """
    x = convert_to_tensor(tensor)
    mode = str(mode).upper()
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    static = static_value(paddings)
    if static is None:
        raise TypeError("pad: paddings must be known when the graph is built (a list of "
                        "[before, after] pairs or a constant)")
    static = np.asarray(static)
    if static.ndim != 2 or static.shape[1:] != (2,) or static.dtype.kind not in "iu":
        raise ValueError(f"pad: paddings must be integer [before, after] pairs, got "
                         f"{static.tolist()}")
    if (static < 0).any():
        raise ValueError(f"pad: paddings {static.tolist()} must not be negative")
    rows = tuple((int(b), int(a)) for b, a in static)
    value = static_value(constant_values)
    if value is None or value.ndim != 0:
        raise TypeError("pad: constant_values must be a scalar known when the graph is built")
    value = value.item()
    if x.dtype.is_bool:
        value = bool(value)
    elif x.dtype.is_integer:
        value = int(value)
    else:
        value = float(value)
    return apply("pad", [x], name=name or "Pad", paddings=rows, mode=mode,
                 constant_values=value)


# -- reverse ------------------------------------------------------------------------


register("reverse", lambda xp, x, axes: xp.flip(x, axis=axes),
         lambda s, d, axes: (s[0], d[0]),
         grad=lambda n, g: [apply("reverse", [g], axes=n.attrs["axes"])])


def reverse(tensor, axis, name=None):
    """``tensor`` with the order of its elements reversed along each of ``axis``.

    TF1 ``tf.reverse`` (= ``tf.reverse_v2``): ``axis`` is an int or a list of ints;
    a list of bools, one per axis (the pre-1.0 form), is accepted too.
    """
    x = convert_to_tensor(tensor)
    static = static_value(axis)
    if static is None:
        raise TypeError("reverse: axis must be known when the graph is built")
    static = np.reshape(static, (-1,))
    if static.dtype.kind == "b":
        axes = tuple(int(i) for i in np.flatnonzero(static))
    else:
        axes = tuple(int(a) for a in static)
    if x.shape is not None:
        axes = rules.normalize_axis(axes, len(x.shape)) if axes else ()
    elif any(a < 0 for a in axes):
        raise ValueError(f"reverse: a negative axis needs the rank of '{x.name}' to be known")
    if not axes:
        return x
    return apply("reverse", [x], name=name or "ReverseV2", axes=axes)


reverse_v2 = reverse


# -- size and rank --------------------------------------------------------------------


def _size_impl(xp, x, out_type):
    return xp.asarray(math.prod(x.shape), dtype=out_type.resolve(xp), device=_device(x))


def _rank_impl(xp, x):
    return xp.asarray(x.ndim, dtype=xp.int32, device=_device(x))


register("size", _size_impl, lambda s, d, out_type: ((), out_type), grad=None,
         shape_only_inputs=(0,))
register("rank", _rank_impl, lambda s, d: ((), dtypes.int32), grad=None, shape_only_inputs=(0,))


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The number of elements of ``input`` at run time, as a scalar (TF1 ``tf.size``)."""
    return apply("size", [convert_to_tensor(input)], name=name or "Size",
                 out_type=dtypes.as_dtype(out_type))


def rank(input, name=None):  # noqa: A002
    """The number of axes of ``input``, as an int32 scalar (TF1 ``tf.rank``)."""
    return apply("rank", [convert_to_tensor(input)], name=name or "Rank")



# -- linspace, meshgrid, sequence_mask ------------------------------------------------


def linspace(start, stop, num, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop``, both included (TF1
    ``tf.linspace``/``tf.lin_space``); the dtype is ``start``'s (Python floats give
    float32). ``num`` must be known when the graph is built.
    """
    n = static_value(num)
    if n is None or n.ndim != 0 or int(n) < 1:
        raise ValueError(f"linspace: num must be a positive int known when the graph is "
                         f"built, got {num!r}")
    n = int(n)
    begin, end = static_value(start), static_value(stop)
    if begin is not None and end is not None and not isinstance(start, Tensor):
        dtype = dtypes.float32 if isinstance(start, (int, float)) else \
            dtypes.as_dtype(np.asarray(start).dtype)
        return constant(np.linspace(float(begin), float(end), n), dtype=dtype,
                        name=name or "linspace")
    start = convert_to_tensor(start)
    stop = convert_to_tensor(stop, like=start)
    if not start.dtype.is_floating:
        raise TypeError(f"linspace: start '{start.name}' must be float32 or float64, got "
                        f"{start.dtype.name}")
    if n == 1:
        return expand_dims(start, 0, name=name)
    steps = constant(np.arange(n) / (n - 1), dtype=start.dtype)
    return start + (stop - start) * steps if name is None else \
        _named(start + (stop - start) * steps, name)


lin_space = linspace


def _named(t, name):
    from gradflow.ops.state_ops import identity

    return identity(t, name=name)


def meshgrid(*args, indexing="xy", name=None):
    """Coordinate arrays from 1-D ``args`` (TF1 ``tf.meshgrid``): with ``indexing="xy"``
    (the default) the first two outputs' axes are swapped, as in NumPy."""
    from gradflow.ops.math_ops import zeros_like

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [convert_to_tensor(a) for a in args]
    if not xs:
        return []
    for x in xs:
        if x.shape is not None and len(x.shape) != 1:
            raise ValueError(f"meshgrid: '{x.name}' must be 1-D, got shape {tuple(x.shape)}")
    k = len(xs)
    order = list(range(k))
    if indexing == "xy" and k > 1:
        order[0], order[1] = 1, 0
    shaped = []
    for i, x in enumerate(xs):
        dims = [1] * k
        dims[order.index(i)] = -1
        shaped.append(_reshape(x, tuple(dims)))
    # every output has the full shape: the sum of all the (broadcast) zeros gives it
    zero = zeros_like(shaped[0])
    for s in shaped[1:]:
        zero = zero + cast(zeros_like(s), zero.dtype)
    return [s + cast(zero, s.dtype) for s in shaped]


def _reshape(x, dims):
    from gradflow.ops.array_ops import reshape

    return reshape(x, dims)


def checked_sequence_length(what, sequence_length, inputs, batch_axis=0):
    """``sequence_length`` as an int32 vector of one length per batch entry of ``inputs``
    (whose batch is axis ``batch_axis``), checked where the shapes are known: for
    ``dynamic_rnn`` and its kin, and the CTC ops."""
    seq = convert_to_tensor(sequence_length)
    if not seq.dtype.is_integer:
        raise TypeError(f"{what}: sequence_length '{seq.name}' must be integer, got "
                        f"{seq.dtype.name}")
    if seq.shape is not None and len(seq.shape) != 1:
        raise ValueError(f"{what}: sequence_length '{seq.name}' must be a vector of length "
                         f"batch_size, got shape {tuple(seq.shape)}")
    batch = None if inputs.shape is None or len(inputs.shape) <= batch_axis \
        else inputs.shape[batch_axis]
    if seq.shape is not None and seq.shape[0] is not None and batch is not None \
            and seq.shape[0] != batch:
        raise ValueError(f"{what}: sequence_length '{seq.name}' has {seq.shape[0]} entries, "
                         f"inputs '{inputs.name}' have batch {batch}")
    return cast(seq, dtypes.int32)


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool_, name=None):
    """``mask[..., j] = j < lengths[...]`` (TF1 ``tf.sequence_mask``); ``maxlen``
    defaults to the largest length. The result has ``lengths``' shape plus one axis."""
    from gradflow.ops.array_ops import reduce_max
    from gradflow.ops.math_ops import less

    lengths = convert_to_tensor(lengths)
    if not lengths.dtype.is_integer:
        raise TypeError(f"sequence_mask: lengths '{lengths.name}' must be integers, got "
                        f"{lengths.dtype.name}")
    if maxlen is None:
        maxlen = reduce_max(lengths)
    positions = range_(0, maxlen, 1, dtype=lengths.dtype)
    if isinstance(maxlen, Tensor):
        positions = cast(positions, lengths.dtype)
    mask = less(positions, expand_dims(lengths, -1))
    dtype = dtypes.as_dtype(dtype)
    return mask if dtype.is_bool and name is None else cast(mask, dtype, name=name)
