"""Indexing (``x[...]``), joining and splitting, gather and one_hot: TF1's functions over
the primitives of ``gradflow.prim.index``."""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, user_source_line
from gradflow.ops.array_ops import expand_dims, run_time_axes
from gradflow.ops.math_ops import cast, maximum, minimum, where
from gradflow.ops.shape_ops import range_
from gradflow.prim import rules
from gradflow.prim.array import static_value
from gradflow.prim.casting import loses_kind
from gradflow.prim.index import (  # noqa: F401 - the key logic and kernels, under their old home
    _gather_impl,
    _one_hot_impl,
    as_index,
    bind_gather_grad,
    gather_grad_impl,
    getitem_key,
    is_run_time_key,
    normalize_key,
    resolve_key,
    row_major_positions,
    scatter_add_rows_reference,
)
from gradflow.prim.registry import _python_default_dtype, apply, convert_to_tensor

_as_index = as_index  # its name before issue 46

# -- x[key] ----------------------------------------------------------------------


def getitem(x, key, name=None):
    """``x[key]`` with ints, slices, ``None`` and ``...``; slice bounds past the end of an
    axis are clamped, as in Python and TF1. Bounds and indices known when the graph is
    built make one view; scalar integer tensors among them (``x[:, i * n:(i + 1) * n]``
    with ``i`` fed or dequeued) are gathers along their axes (``_dynamic_getitem``)."""
    x = convert_to_tensor(x)
    key = _folded(key)
    if _has_tensor(key):
        return _dynamic_getitem(x, key)
    return apply("getitem", [x], name=name or "strided_slice", key=getitem_key(key, x.shape))


def _folded(key):
    """``key`` with constant tensors and NumPy integers as Python ints."""
    def fold(v):
        if isinstance(v, Tensor):
            static = static_value(v)
            return int(static) if static is not None and static.ndim == 0 \
                and static.dtype.kind in "iu" else v
        return int(v) if isinstance(v, np.integer) else v

    items = key if isinstance(key, tuple) else (key,)
    folded = tuple(slice(fold(k.start), fold(k.stop), fold(k.step)) if isinstance(k, slice)
                   else fold(k) for k in items)
    return folded if isinstance(key, tuple) else folded[0]


def _has_tensor(key):
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(v, Tensor) for k in items
               for v in ((k.start, k.stop, k.step) if isinstance(k, slice) else (k,)))


def _dynamic_getitem(x, key):
    """``x[key]`` where bounds or indices are scalar integer tensors: each such slice a
    gather of ``range(begin, end, step)`` along its axis (negative bounds count from the
    end and are clamped, as in TF1), each such index a gather that drops its axis.
    Gradients flow as through any gather."""
    if x.shape is None:
        raise ValueError(f"'{x.name}'[{key!r}]: slicing with tensor bounds needs a known rank")
    items = list(key if isinstance(key, tuple) else (key,))
    used = sum(1 for k in items if k is not None and k is not Ellipsis)
    if used > len(x.shape):
        raise IndexError(f"too many indices ({used}) for rank {len(x.shape)}")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(x.shape) - used)

    def bound(value, dim, clamp):
        value = cast(convert_to_tensor(value), dtypes.int32)
        value = where(value < 0, value + dim, value)
        return minimum(maximum(value, 0), dim) if clamp else value

    out, axis = x, 0
    for k in items:
        if k is None:
            out = expand_dims(out, axis)
        elif isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if not isinstance(step, int) or step <= 0:
                raise ValueError(f"'{x.name}'[{key!r}]: with tensor bounds, a slice's step must "
                                 f"be a positive int, got {step!r}")
            if k.start is not None or k.stop is not None or step != 1:
                dim = shape(out)[axis]
                begin = 0 if k.start is None else bound(k.start, dim, True)
                end = dim if k.stop is None else bound(k.stop, dim, True)
                out = gather(out, range_(begin, maximum(begin, end), step), axis=axis)
        else:
            out = gather(out, bound(k, shape(out)[axis], False), axis=axis)
            continue  # the axis is gone
        axis += 1
    return out


# -- concat, stack, unstack, split --------------------------------------------------


def concat(values, axis, name=None):
    """Join tensors along an existing ``axis``. As in TF1, ``values`` that is not a list
    or tuple (one tensor, one array) is a list of that one value."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("concat needs at least one tensor")
    if len(values) == 1:
        return values[0]
    known = next((v for v in values if v.shape is not None), None)
    axis = run_time_axes(values[0], axis, "concat")[0] if known is None else \
        rules.normalize_axis(axis, len(known.shape), allow_none=False)[0]
    return apply("concat", values, name=name, axis=axis)


def stack(values, axis=0, name=None):
    """Join tensors along a new ``axis``."""
    values = [convert_to_tensor(v) for v in values]
    if not values:
        raise ValueError("stack needs at least one tensor")
    known = next((v for v in values if v.shape is not None), None)
    axis = run_time_axes(values[0], axis, "stack")[0] if known is None else \
        rules.normalize_axis(axis, len(known.shape) + 1, allow_none=False)[0]
    return concat([expand_dims(v, axis) for v in values], axis, name=name)


def unstack(value, num=None, axis=0, name=None):
    """A list of the slices of ``value`` along ``axis``.

    When the size of ``axis`` is unknown while the graph is built, ``num`` gives it;
    the run then checks that the axis has exactly ``num`` elements (TF1).
    """
    x = convert_to_tensor(value)
    axis = rules.normalize_axis(axis, rules.known_rank(x, "unstack"), allow_none=False)[0]
    size = x.shape[axis]
    if num is not None and size is not None and int(num) != size:
        raise ValueError(f"unstack: num={num}, but axis {axis} of '{x.name}' has size {size}")
    if size is not None:
        return [getitem(x, (slice(None),) * axis + (i,)) for i in range(size)]
    if num is None:
        raise ValueError(f"unstack: the size of axis {axis} of '{x.name}' is unknown; pass num=")
    return [_split_part(x, axis, int(num), None, i, True, name or "unstack")
            for i in range(int(num))]


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """Split ``value`` along ``axis`` into equal parts or parts of the given sizes.

    ``num_or_size_splits`` is a number of equal parts or a list of sizes, one of
    which may be -1 (the rest). Where the size of ``axis`` is unknown while the
    graph is built, the parts have unknown size there and the run checks that the
    axis divides (TF1).
    """
    if isinstance(axis, Tensor) and not isinstance(value, Tensor):
        raise TypeError("split: the arguments are split(value, num_or_size_splits, axis) "
                        "since TF 1.0; the pre-1.0 order split(axis, num, value) is not "
                        "accepted")
    x = convert_to_tensor(value)
    axis = rules.normalize_axis(axis, rules.known_rank(x, "split"), allow_none=False)[0]
    size = x.shape[axis]
    static = static_value(num_or_size_splits)
    if static is None:
        raise TypeError("split: num_or_size_splits must be known when the graph is built "
                        "(an int or a list of ints)")
    if static.ndim == 0:
        count = int(static)
        if count <= 0:
            raise ValueError(f"split: the number of parts must be positive, got {count}")
        if size is None:
            return [_split_part(x, axis, count, None, i, False, name or "split")
                    for i in range(count)]
        if size % count:
            raise ValueError(f"split: axis {axis} of '{x.name}' (size {size}) does not divide "
                             f"into {count} equal parts")
        sizes = [size // count] * count
    else:
        sizes = [int(s) for s in static.reshape(-1)]
        if num is not None and int(num) != len(sizes):
            raise ValueError(f"split: num={num} but {len(sizes)} sizes {sizes}")
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ValueError(f"split: sizes {sizes} may hold one -1 and no other negative size")
        if size is None:
            return [_split_part(x, axis, len(sizes), tuple(sizes), i, False, name or "split")
                    for i in range(len(sizes))]
        if -1 in sizes:
            rest = size - (sum(sizes) + 1)
            if rest < 0:
                raise ValueError(f"split: sizes {sizes} add up to more than axis {axis} of "
                                 f"'{x.name}' (size {size})")
            sizes[sizes.index(-1)] = rest
        if sum(sizes) != size:
            raise ValueError(f"split: sizes {sizes} do not add up to {size}, the size of axis "
                             f"{axis} of '{x.name}'")
    out, start = [], 0
    for s in sizes:
        out.append(getitem(x, (slice(None),) * axis + (slice(start, start + s),)))
        start += s
    return out



def _split_part(x, axis, num, sizes, index, squeeze, name):
    return apply("split_part", [x], name=name, axis=axis, num=num, sizes=sizes, index=index,
                 squeeze=squeeze, tensor=x.name)


# -- slice and strided_slice: static keys, built as x[key] ------------------------------


def _static_ints(value, what, op_name):
    static = static_value(value)
    if static is None:
        raise TypeError(f"{op_name}: {what} must be known when the graph is built (Python "
                        "ints or a constant)")
    if static.dtype.kind not in "iu" and static.size:
        raise TypeError(f"{op_name}: {what} must be integers, got {static.tolist()}")
    return [int(v) for v in static.reshape(-1)]


def slice_(input_, begin, size, name=None):
    """The block of ``input_`` that starts at ``begin`` and has ``size`` elements per axis
    (TF1 ``tf.slice``); a size of -1 takes the rest of that axis.

    ``begin`` and ``size`` must be known when the graph is built. Exported as
    ``gf.slice``.
    """
    x = convert_to_tensor(input_)
    begin = _static_ints(begin, "begin", "slice")
    size = _static_ints(size, "size", "slice")
    rank = len(x.shape) if x.shape is not None else len(begin)
    if len(begin) != rank or len(size) != rank:
        raise ValueError(f"slice: begin {begin} and size {size} need one entry per axis of "
                         f"'{x.name}' (rank {rank})")
    key = []
    for axis, (b, s) in enumerate(zip(begin, size)):
        dim = x.shape[axis] if x.shape is not None else None
        if b < 0 or s < -1:
            raise ValueError(f"slice: begin {begin} must not be negative and size {size} "
                             "not below -1")
        stop = dim if s == -1 else b + s
        if dim is not None and (b > dim or stop > dim):
            raise ValueError(f"slice: begin {begin} with size {size} goes past axis {axis} "
                             f"of '{x.name}' (size {dim})")
        key.append(slice(b, None) if s == -1 else slice(b, b + s))
    block = getitem(x, tuple(key), name=name or "Slice")
    dims = x.shape if x.shape is not None else (None,) * rank
    declared = [s if d is None and s != -1 else None for d, s in zip(dims, size)]
    if not any(declared):
        return block
    # sizes the graph cannot check: the block has them, or the run fails (as TF1's does)
    # instead of giving a shorter block
    message = (f"slice: begin {begin} and size {size} go past the end of '{x.name}': the "
               f"block has shape {{actual}} at run time; slice created at "
               f"{user_source_line()}")
    return apply("ensure_shape", [block], name=f"{block.name}/checked", shape=tuple(declared),
                 message=message)


def _bounds(value, what):
    """``strided_slice``'s ``begin`` or ``end`` as a list of ints and scalar tensors (one
    per entry): known values as ints, the entries of a 1-D tensor as its elements."""
    static = static_value(value)
    if static is not None:
        return _static_ints(value, what, "strided_slice")
    if isinstance(value, Tensor):
        if value.shape is None or len(value.shape) != 1 or value.shape[0] is None:
            raise ValueError(f"strided_slice: {what} '{value.name}' needs a known length")
        return [value[i] for i in range(value.shape[0])]
    return [_folded(v) for v in value]


def _bit(mask, i):
    return bool((int(mask) >> i) & 1)


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0,
                  ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """``input_[begin:end:strides]`` with TF1's masks (TF1 ``tf.strided_slice``).

    Bit ``i`` of ``begin_mask``/``end_mask`` ignores ``begin[i]``/``end[i]`` (the
    slice runs from the start/to the end), of ``ellipsis_mask`` makes entry ``i``
    an ``...``, of ``new_axis_mask`` a new size-1 axis, and of ``shrink_axis_mask``
    the single index ``begin[i]`` (the axis is removed). It builds the same node
    as ``x[...]``.
    """
    x = convert_to_tensor(input_)
    begin, end = _bounds(begin, "begin"), _bounds(end, "end")
    strides = [1] * len(begin) if strides is None else \
        _static_ints(strides, "strides", "strided_slice")
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"strided_slice: begin {begin}, end {end} and strides {strides} "
                         "must have the same length")
    key = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if _bit(ellipsis_mask, i):
            key.append(Ellipsis)
        elif _bit(new_axis_mask, i):
            key.append(None)
        elif _bit(shrink_axis_mask, i):
            key.append(b)
        else:
            if s == 0:
                raise ValueError(f"strided_slice: strides {strides} must not hold 0")
            key.append(slice(None if _bit(begin_mask, i) else b,
                             None if _bit(end_mask, i) else e, s))
    return getitem(x, tuple(key), name=name or "strided_slice")


# -- gather_nd and boolean_mask: a gather along merged axes ------------------------------


def gather_nd(params, indices, name=None, batch_dims=0):
    """Slices of ``params`` at the index tuples in the last axis of ``indices``
    (TF1 ``tf.gather_nd``): the result has shape
    ``indices.shape[:-1] + params.shape[indices.shape[-1]:]``.

    >>> gf.gather_nd(x, [[0, 1], [2, 0]])   # [x[0, 1], x[2, 0]]
    """
    if batch_dims:
        raise NotImplementedError("gather_nd: batch_dims is not supported")
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    rules.known_rank(params, "gather_nd")
    rules.known_rank(indices, "gather_nd")
    index = apply("linear_index", [indices, params])
    count = indices.shape[-1]
    merged = params if count == 1 else apply("merge_axes", [params], start=0, count=count)
    # linear_index checked the tuples
    return apply("gather", [merged, index], name=name or "GatherNd", axis=0, validate=False)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The elements (or slices) of ``tensor`` where the bool ``mask`` is true
    (TF1 ``tf.boolean_mask``).

    ``mask`` covers axes ``axis .. axis + mask.ndim - 1`` of ``tensor``; they become
    one axis whose size depends on the mask's values, so it is unknown (``None``)
    while the graph is built.
    """
    tensor = convert_to_tensor(tensor)
    mask = convert_to_tensor(mask)
    if not mask.dtype.is_bool:
        raise TypeError(f"boolean_mask: the mask '{mask.name}' must be bool, got "
                        f"{mask.dtype.name}")
    rules.known_rank(tensor, "boolean_mask")
    rules.known_rank(mask, "boolean_mask")
    k = len(mask.shape)
    if k == 0:
        raise ValueError(f"boolean_mask: the mask '{mask.name}' must not be a scalar")
    axis = rules.normalize_axis(0 if axis is None else axis, len(tensor.shape),
                                allow_none=False)[0]
    covered = tensor.shape[axis:axis + k]
    if len(covered) != k or any(a is not None and b is not None and a != b
                                for a, b in zip(covered, mask.shape)):
        raise ValueError(f"boolean_mask: the mask '{mask.name}' of shape {tuple(mask.shape)} "
                         f"does not fit axes {axis}..{axis + k - 1} of '{tensor.name}' "
                         f"(shape {tuple(tensor.shape)})")
    merged = tensor if k == 1 else apply("merge_axes", [tensor], start=axis, count=k)
    index = apply("mask_indices", [mask, tensor], axis=axis)
    return apply("gather", [merged, index], name=name, axis=axis, validate=False)


# -- gather, its gradient (a scatter-add), one_hot ---------------------------------


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """Slices of ``params`` along ``axis`` (default 0) at integer ``indices`` (TF1
    ``tf.gather``, same argument order).

    An id outside ``[0, params.shape[axis])`` fails the run with
    ``InvalidArgumentError`` naming the op, the id, its position and this line
    (``indices[3] = 10 is not in [0, 10)``), on every backend, in the forward
    gather and in its gradient, as TF1 on the CPU does. ``validate_indices=False``
    (TF1: deprecated, ignored) skips that check, one min and one max of the ids per
    run: the caller vouches for the ids, and an id out of range then gives what the
    backend gives (NumPy reads ``-1`` as the last row; torch raises).

    >>> rows = gf.gather(table, ids)             # table[ids]
    >>> cols = gf.gather(x, [2, 0], axis=1)      # x[:, [2, 0]]
    """
    if batch_dims:
        raise NotImplementedError("gather: batch_dims is not supported")
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    axis = 0 if axis is None else axis
    axis = run_time_axes(params, axis, "gather")[0] if params.shape is None else \
        rules.normalize_axis(axis, len(params.shape), allow_none=False)[0]
    validate = validate_indices is None or bool(validate_indices)
    if params.dtype is dtypes.string:
        return apply("gather_strings", [params, indices], name=name or "Gather", axis=axis)
    return apply("gather", [params, indices], name=name, axis=axis, validate=validate)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors of length ``depth`` on a new last axis (default float32), TF1
    ``tf.one_hot``.

    As in TF1, an index outside ``[0, depth)`` (negative, or ``depth`` and above) gives
    a row of ``off_value`` everywhere: that is the op's documented meaning, not an
    error. ``depth`` must be a non-negative int known when the graph is built.

    >>> gf.one_hot([0, 2, -1], 3)   # [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    """
    if axis not in (None, -1):
        raise ValueError("one_hot: only axis=-1 is supported")
    static = static_value(depth)
    if static is None or static.ndim != 0 or static.dtype.kind not in "iu":
        what = f"'{depth.name}'" if isinstance(depth, Tensor) else repr(depth)
        raise TypeError(f"one_hot: depth must be an int known when the graph is built, got "
                        f"{what}")
    if int(static) < 0:
        raise ValueError(f"one_hot: depth must not be negative, got {int(static)}")
    given = [(what, v) for what, v in (("on_value", on_value), ("off_value", off_value))
             if v is not None]
    values = {}
    for what, v in given:  # TF1: the values' dtype is the result's, unless dtype says
        known = static_value(v)
        if known is None or known.ndim != 0:
            raise NotImplementedError(f"one_hot: {what} must be a scalar known when the "
                                      "graph is built")
        # the dtype ``constant(v)`` would have; a given dtype takes a Python number by
        # the rule feeds follow (no float to int), a tensor only of that dtype
        kind = v.dtype if isinstance(v, Tensor) else dtypes.as_dtype(v.dtype) \
            if isinstance(v, (np.ndarray, np.generic)) else _python_default_dtype(v)
        fits = dtype is None or (kind is dtypes.as_dtype(dtype) if isinstance(v, Tensor) else
                                 not loses_kind(v, known, dtypes.as_dtype(dtype).as_numpy_dtype))
        if not fits:
            raise TypeError(f"one_hot: {what} {known.item()!r} is {kind.name}, but dtype is "
                            f"{dtypes.as_dtype(dtype).name}")
        dtype = kind if dtype is None else dtype
        values[what] = known.item()
    dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    on = values.get("on_value", 1)
    off = values.get("off_value", 0)
    return apply("one_hot", [convert_to_tensor(indices)], name=name, depth=int(static),
                 on_value=on, off_value=off, dtype=dtype)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The run-time shape of ``input`` as a 1-D integer tensor."""
    return apply("shape", [convert_to_tensor(input)], name=name, out_type=out_type)
