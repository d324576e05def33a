"""More of TF1's top-level functions, each a composite of existing ops or a helper over
static shapes: ``identity_n``, ``shape_n``, ``parallel_stack``, ``where_v2``,
``broadcast_static_shape``, ``broadcast_dynamic_shape``, ``switch_case``,
``clip_by_average_norm``, ``histogram_fixed_width`` and ``histogram_fixed_width_bins``,
``unravel_index``, ``saturate_cast``, and the scopes
``op_scope``, ``variable_op_scope`` and ``colocate_with``.

Their gradients are those of the ops they are made of (none for the integer results).
"""

from __future__ import annotations

import contextlib

import numpy as np

from gradflow import dtypes
from gradflow.graph import Operation, TensorShape, name_scope
from gradflow.ops.array_ops import reduce_all, reduce_prod, reduce_sum, reshape
from gradflow.ops.control_flow_ops import case, control_dependencies
from gradflow.ops.debug_ops import Assert
from gradflow.ops.index_ops import concat, shape, stack
from gradflow.ops.math_ops import (
    cast,
    clip_by_value,
    equal,
    floor,
    floordiv,
    floormod,
    greater_equal,
    less,
    logical_and,
    logical_or,
    minimum,
    multiply,
    rsqrt,
    subtract,
    truediv,
    where,
)
from gradflow.ops.scatter_ops import bincount
from gradflow.ops.shape_ops import size
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import variable_scope


def identity_n(input, name=None):  # noqa: A002 - TF1 name
    """Each tensor of the list ``input``, passed through ``identity`` (TF1
    ``tf.identity_n``); a list of as many tensors."""
    return [identity(t) for t in input]


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002 - TF1 name
    """The run-time shape of each tensor of ``input`` (TF1 ``tf.shape_n``)."""
    return [shape(t, out_type=out_type) for t in input]


def parallel_stack(values, name="parallel_stack"):
    """``values`` (tensors of one shape and dtype) stacked along a new first axis (TF1
    ``tf.parallel_stack``, which needs each shape known when the graph is built)."""
    tensors = [convert_to_tensor(v) for v in values]
    if not tensors:
        raise ValueError("parallel_stack: values must not be empty")
    first = tensors[0]
    if first.shape is None or not TensorShape(first.shape).is_fully_defined():
        raise ValueError(f"parallel_stack: the shape of '{first.name}' must be fully "
                         f"defined, got {first.shape}")
    for t in tensors[1:]:
        if t.dtype is not first.dtype or t.shape is None or tuple(t.shape) != tuple(first.shape):
            raise ValueError(f"parallel_stack: '{t.name}' ({t.dtype.name}, {t.shape}) does "
                             f"not match '{first.name}' ({first.dtype.name}, {first.shape})")
    return stack(tensors, axis=0, name=name)


def where_v2(condition, x=None, y=None, name=None):
    """Pick from ``x`` where ``condition`` holds, else from ``y``, all three broadcast
    against each other (TF1 ``tf.where_v2``, TF2's ``tf.where``: a vector condition
    broadcasts along the last axis, unlike TF1's ``tf.where``). With ``condition``
    alone, the coordinates of its true elements, as ``tf.where``."""
    if x is None and y is None:
        return where(condition, name=name)
    if x is None or y is None:
        raise ValueError("where_v2: give both x and y, or neither")
    condition = convert_to_tensor(condition)
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, like=x)
    if x.dtype is not y.dtype:
        raise TypeError(f"where_v2: '{x.name}' is {x.dtype.name} but '{y.name}' is "
                        f"{y.dtype.name}")
    return apply("where", [condition, x, y], name=name)


def _broadcast_dim(a, b, shapes):
    if a is None or b is None:
        known = a if a is not None else b
        return known if known is not None and known > 1 else None
    if a == 1 or a == b:
        return b
    if b == 1:
        return a
    raise ValueError("Incompatible shapes for broadcasting. Two shapes are compatible if for "
                     "each dimension pair they are either equal or one of them is 1. "
                     f"Received: {shapes[0]} and {shapes[1]}.")


def broadcast_static_shape(shape_x, shape_y):
    """The static shape of a result broadcast from shapes ``shape_x`` and ``shape_y``
    (TF1 ``tf.broadcast_static_shape``); ``ValueError`` when they cannot broadcast. An
    unknown dimension against 1 (or unknown) stays unknown."""
    sx, sy = TensorShape(shape_x), TensorShape(shape_y)
    if sx.ndims is None or sy.ndims is None:
        return TensorShape(None)
    n = max(len(sx), len(sy))
    px = [1] * (n - len(sx)) + [None if d is None else int(d) for d in sx]
    py = [1] * (n - len(sy)) + [None if d is None else int(d) for d in sy]
    return TensorShape([_broadcast_dim(a, b, (sx, sy)) for a, b in zip(px, py)])


def _shape_vector(s, what):
    s = convert_to_tensor(s)
    if not s.dtype.is_integer or s.shape is None or len(s.shape) != 1 or s.shape[0] is None:
        raise ValueError(f"broadcast_dynamic_shape: {what} '{s.name}' must be an integer "
                         f"vector of known length, got {s.dtype.name} of shape {s.shape}")
    return s


def broadcast_dynamic_shape(shape_x, shape_y):
    """The shape (an integer vector) of a result broadcast from the shape vectors
    ``shape_x`` and ``shape_y``, computed at run time (TF1
    ``tf.broadcast_dynamic_shape``); shapes that cannot broadcast fail the run with
    ``InvalidArgumentError``. Their lengths must be known when the graph is built."""
    sx = _shape_vector(shape_x, "shape_x")
    sy = cast(_shape_vector(shape_y, "shape_y"), sx.dtype)
    n = max(int(sx.shape[0]), int(sy.shape[0]))
    padded = []
    for s in (sx, sy):
        extra = n - int(s.shape[0])
        padded.append(concat([convert_to_tensor(np.ones(extra, sx.dtype.as_numpy_dtype)), s],
                             0) if extra else s)
    a, b = padded
    one = convert_to_tensor(1, like=a)
    fits = reduce_all(logical_or(logical_or(equal(a, b), equal(a, one)), equal(b, one)))
    check = Assert(fits, ["Incompatible shapes:", sx, sy], name="broadcast_dynamic_shape")
    with control_dependencies([check]):
        return identity(where(equal(a, one), b, a))


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """The result of ``branch_fns[branch_index]()`` (TF1 ``tf.switch_case``); only that
    branch's ops run. ``branch_fns`` is a list of callables, a list of ``(int,
    callable)`` pairs, or a dict of them; an index with no branch runs ``default``
    (default: the last branch)."""
    index = convert_to_tensor(branch_index)
    if isinstance(index, Operation) or index.dtype is not dtypes.int32 or \
            (index.shape is not None and len(index.shape) != 0):
        raise TypeError(f"switch_case: branch_index '{index.name}' must be an int32 scalar")
    if isinstance(branch_fns, dict):
        pairs = sorted(branch_fns.items())
    else:
        pairs = [p if isinstance(p, (tuple, list)) else (i, p)
                 for i, p in enumerate(branch_fns)]
    if not pairs:
        raise ValueError("switch_case: branch_fns must not be empty")
    keys = [k for k, _ in pairs]
    if sorted(keys) != list(range(len(keys))) or not all(callable(f) for _, f in pairs):
        raise ValueError("switch_case: branch_fns must be callables keyed 0..n-1, got keys "
                         f"{keys}")
    pairs = sorted(pairs)
    default = default if default is not None else pairs[-1][1]
    with name_scope(name):
        return case([(equal(index, convert_to_tensor(k, like=index)), f) for k, f in pairs],
                    default=default, exclusive=False)


def clip_by_average_norm(t, clip_norm, name=None):
    """``t`` scaled down so that its L2 norm divided by its number of elements is at most
    ``clip_norm`` (TF1 ``tf.clip_by_average_norm``)."""
    t = convert_to_tensor(t)
    clip = convert_to_tensor(clip_norm, like=t)
    n = cast(size(t), t.dtype)
    inv_norm = rsqrt(reduce_sum(multiply(t, t)))
    scale = minimum(multiply(inv_norm, n), truediv(convert_to_tensor(1, like=t), clip))
    return identity(multiply(multiply(t, clip), scale), name=name or "clip_by_average_norm")


def _histogram_bins(values, value_range, nbins):
    values = convert_to_tensor(values)
    lo_hi = cast(convert_to_tensor(value_range), dtypes.float64)
    if not isinstance(nbins, (int, np.integer)) or isinstance(nbins, bool) or nbins < 1:
        raise ValueError(f"histogram_fixed_width: nbins must be a positive Python int, "
                         f"got {nbins!r}")
    v = cast(reshape(values, [-1]), dtypes.float64)
    lo, hi = lo_hi[0], lo_hi[1]
    step = truediv(subtract(hi, lo), convert_to_tensor(float(nbins), dtype=dtypes.float64))
    index = floor(truediv(subtract(v, lo), step))
    index = clip_by_value(index, 0.0, float(nbins - 1))
    return values, cast(index, dtypes.int32)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=dtypes.int32,
                               name=None):
    """The bin (``0 .. nbins - 1``) of each element of ``values`` in ``nbins`` equal bins
    over ``value_range = [lo, hi]``, values outside going to the first or last bin (TF1
    ``tf.histogram_fixed_width_bins``); ``values``'s shape."""
    values, index = _histogram_bins(values, value_range, nbins)
    return reshape(cast(index, dtypes.as_dtype(dtype)), shape(values), name=name)


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """How many elements of ``values`` fall in each of ``nbins`` equal bins over
    ``value_range = [lo, hi]``, values outside counting in the first or last bin (TF1
    ``tf.histogram_fixed_width``): a vector of ``nbins`` counts of ``dtype``."""
    _, index = _histogram_bins(values, value_range, nbins)
    counts = bincount(index, minlength=nbins, maxlength=nbins, dtype=dtypes.as_dtype(dtype))
    return reshape(counts, [nbins], name=name)


def unravel_index(indices, dims, name=None):
    """The coordinates in an array of shape ``dims`` of the flat (row-major) ``indices``
    (TF1 ``tf.unravel_index``): ``[len(dims)]`` for a scalar index, ``[len(dims), n]``
    for a vector of ``n``. An index outside the array fails the run with
    ``InvalidArgumentError``. ``dims`` must have a length known when the graph is built."""
    idx = convert_to_tensor(indices)
    dims = cast(convert_to_tensor(dims), idx.dtype)
    if not idx.dtype.is_integer or dims.shape is None or len(dims.shape) != 1 or \
            dims.shape[0] is None:
        raise ValueError(f"unravel_index: '{idx.name}' must be integer and dims a vector of "
                         "known length")
    n = int(dims.shape[0])
    total = reduce_prod(dims)
    zero = convert_to_tensor(0, like=idx)
    inside = reduce_all(logical_and(greater_equal(idx, zero), less(idx, total)))
    check = Assert(inside, ["unravel_index: an index is out of bounds of dims", idx, dims])
    coords = []
    with control_dependencies([check]):
        for i in range(n):
            stride = reduce_prod(dims[i + 1:]) if i + 1 < n else convert_to_tensor(1, like=idx)
            coords.append(floormod(floordiv(idx, stride), dims[i]))
        return stack(coords, axis=0, name=name)


def saturate_cast(value, dtype, name=None):
    """``value`` cast to ``dtype`` after clamping it to the range ``dtype`` can hold
    (TF1 ``tf.saturate_cast``): no overflow, as TF's limits chosen so that the clamped
    value itself casts without overflowing."""
    value = convert_to_tensor(value)
    dtype = dtypes.as_dtype(dtype)
    if value.dtype.is_bool or dtype.is_bool:
        return cast(value, dtype, name=name)
    np_in = value.dtype.as_numpy_dtype
    promoted = np.promote_types(np_in, dtype.as_numpy_dtype)
    lo = np_in(np.maximum(value.dtype.min, dtype.min))
    if np.array([lo, dtype.min], dtype=promoted)[0] < np.array([lo, dtype.min],
                                                               dtype=promoted)[1]:
        lo = np.nextafter(lo, np_in(0), dtype=np_in)
    hi = np_in(np.minimum(float(value.dtype.max), float(dtype.max)))
    if np.array([hi, dtype.max], dtype=promoted)[0] > np.array([hi, dtype.max],
                                                               dtype=promoted)[1]:
        hi = np.nextafter(hi, np_in(0), dtype=np_in)
    clamped = clip_by_value(value, convert_to_tensor(lo, dtype=value.dtype),
                            convert_to_tensor(hi, dtype=value.dtype))
    return cast(clamped, dtype, name=name)


def op_scope(values, name, default_name=None):
    """TF 0.x's ``tf.op_scope``: ``name_scope(name, default_name, values)``."""
    return name_scope(name, default_name, values)


def variable_op_scope(values, name_or_scope, default_name=None, initializer=None,
                      regularizer=None, caching_device=None, partitioner=None,
                      custom_getter=None, reuse=None, dtype=None, use_resource=None,
                      constraint=None):
    """TF 0.x's ``tf.variable_op_scope``: ``variable_scope(name_or_scope, default_name,
    values, ...)``."""
    return variable_scope(name_or_scope, default_name=default_name, values=values,
                          initializer=initializer, regularizer=regularizer,
                          caching_device=caching_device, partitioner=partitioner,
                          custom_getter=custom_getter, reuse=reuse, dtype=dtype,
                          use_resource=use_resource, constraint=constraint)


@contextlib.contextmanager
def colocate_with(op, ignore_existing=False):
    """TF1 ``tf.colocate_with``: ops built inside go on ``op``'s device. A gradflow
    graph runs whole on its Session's backend, so every op is colocated already: the
    block changes nothing."""
    yield


__all__ = ["broadcast_dynamic_shape", "broadcast_static_shape", "clip_by_average_norm",
           "colocate_with", "histogram_fixed_width",
           "histogram_fixed_width_bins", "identity_n", "op_scope", "parallel_stack",
           "saturate_cast", "shape_n", "switch_case", "unravel_index", "variable_op_scope",
           "where_v2"]
