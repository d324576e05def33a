"""Indexing (``x[...]``), joining and splitting, gather and one_hot."""

from __future__ import annotations

import functools
import math

import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Tensor, user_source_line
from gradflow.ops.array_ops import expand_dims, reshape_like, run_time_axes
from gradflow.ops.casting import loses_kind
from gradflow.ops.index_checks import as_take_index, check_ids, check_index_tuples
from gradflow.ops.math_ops import zeros_like
from gradflow.prim import rules
from gradflow.prim.registry import _python_default_dtype, apply, convert_to_tensor, register

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


def is_run_time_key(key) -> bool:
    """Whether ``key`` was kept as written because the rank was unknown at build time
    (it holds its ``...``); ``resolve_key`` makes it a normal key for a value's shape."""
    return Ellipsis in key


def resolve_key(key, shape):
    """The normalized, clamped key of ``key`` for a value of ``shape`` (see ``getitem``)."""
    if not is_run_time_key(key):
        return key
    shape = tuple(int(d) for d in shape)
    return _clamp_slices(normalize_key(_as_index(key), len(shape)), shape)


def _getitem_impl(xp, x, key):
    return x[_as_index(resolve_key(key, x.shape))]


def _getitem_lower(xp, key):
    if is_run_time_key(key):
        return functools.partial(_getitem_impl, xp, key=key)
    index = _as_index(key)
    return lambda x: x[index]


def _getitem_grad_impl(xp, g, x, key):
    index = tuple(k for k in _as_index(resolve_key(key, x.shape)) if k is not None)
    out = xp.zeros(x.shape, dtype=g.dtype, device=_device(g))
    out[index] = xp.reshape(g, out[index].shape)
    return out


# exact_grad: getitem_grad is shaped like x at run time, so the gradient code need not
# wrap it in an unbroadcast (which hid the slices of an RNN's [None, T, n] inputs from
# autodiff's joining of slice gradients into one stack)
register("getitem", _getitem_impl, _getitem_infer, lower=_getitem_lower, view=True,
         grad=lambda n, g: [apply("getitem_grad", [g, n.inputs[0]], key=n.attrs["key"])],
         exact_grad=True)
register("getitem_grad", _getitem_grad_impl, lambda s, d, key: (s[1], d[0]),
         grad=lambda n, g: [apply("getitem", [g], key=n.attrs["key"]), None],
         shape_only_inputs=(1,))


def _in_bounds(k, size):
    """The slice ``k`` of an axis of ``size`` with bounds inside the axis: the Array API
    leaves out-of-bounds bounds unspecified; Python and TF1 clamp them. A slice already
    inside stays as it is."""
    _, start, stop, step = k
    top = size if step is None or step > 0 else size - 1
    if all(b is None or -size <= b <= top for b in (start, stop)):
        return k
    start, stop, step = slice(start, stop, step).indices(size)
    count = len(range(start, stop, step))
    if count == 0:
        return ("slice", 0, 0, None)
    last = start + (count - 1) * step
    if step > 0:
        return ("slice", start, last + 1, step)
    return ("slice", start, last - 1 if last > 0 else None, step)


def _clamp_slices(key, shape):
    out, dim = [], 0
    for k in key:
        if k is None:
            out.append(k)
            continue
        size = shape[dim]
        dim += 1
        out.append(_in_bounds(k, size) if isinstance(k, tuple) and size is not None else k)
    return tuple(out)


def getitem_key(key, shape):
    """The ``key`` attribute of a ``getitem`` node over a value of static ``shape``:
    normalized and clamped where the rank is known, else kept as written with a ``...``
    (resolved for each value at run time)."""
    key = key if isinstance(key, tuple) else (key,)
    if shape is not None:
        return _clamp_slices(normalize_key(key, len(shape)), shape)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have one Ellipsis")
    plain = tuple(k for k in key if k is not Ellipsis)
    normalize_key(plain, sum(1 for k in plain if k is not None))  # checks the entries
    return tuple(_hashable(k) for k in (key if Ellipsis in key else key + (Ellipsis,)))


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
    from gradflow.ops.array_ops import static_value

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
    from gradflow.ops.math_ops import cast, maximum, minimum, where
    from gradflow.ops.shape_ops import range_

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
         grad=_concat_grad, lower=lambda xp, axis: lambda *xs: xp.concat(xs, axis=axis),
         exact_grad=True)


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
         lambda s, d, axis, index: (s[index + 1], d[0]), grad=_split_like_grad, view=True)


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
    from gradflow.ops.array_ops import static_value

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


# -- parts of an axis whose size is known only at run time ----------------------------


def _split_bounds(size, axis, num, sizes, index, squeeze, tensor):
    """``(start, stop)`` of part ``index`` of an axis of ``size``, or a clear error."""
    if squeeze:
        if size != num:
            raise ValueError(f"unstack: axis {axis} of '{tensor}' has size {size}, but "
                             f"num={num}")
        return index, index + 1
    if sizes is None:
        if size % num:
            raise InvalidArgumentError(f"split: axis {axis} of '{tensor}' has size {size}, "
                                       f"which does not divide into {num} equal parts")
        step = size // num
        return index * step, (index + 1) * step
    sizes = list(sizes)
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if known > size:
            raise InvalidArgumentError(f"split: the sizes {tuple(sizes)} add up to more than "
                                       f"axis {axis} of '{tensor}' (size {size})")
        sizes[sizes.index(-1)] = size - known
    elif known != size:
        raise InvalidArgumentError(f"split: the sizes {tuple(sizes)} add up to {known}, but "
                                   f"axis {axis} of '{tensor}' has size {size}")
    start = sum(sizes[:index])
    return start, start + sizes[index]


def _part_key(axis, start, stop, squeeze):
    return (slice(None),) * axis + ((start if squeeze else slice(start, stop)), ...)


def _split_part_impl(xp, x, axis, num, sizes, index, squeeze, tensor):
    start, stop = _split_bounds(x.shape[axis], axis, num, sizes, index, squeeze, tensor)
    return x[_part_key(axis, start, stop, squeeze)]


def _split_part_grad_impl(xp, g, x, axis, num, sizes, index, squeeze, tensor):
    start, stop = _split_bounds(x.shape[axis], axis, num, sizes, index, squeeze, tensor)
    out = xp.zeros(x.shape, dtype=g.dtype, device=_device(g))
    out[_part_key(axis, start, stop, squeeze)] = g
    return out


def _split_part_infer(shapes, in_dtypes, axis, num, sizes, index, squeeze, tensor):
    shape = list(shapes[0])
    size = shape[axis]
    if size is not None:  # the checks of the run, made early
        start, stop = _split_bounds(size, axis, num, sizes, index, squeeze, tensor)
        part = stop - start
    elif squeeze:
        part = 1
    elif sizes is not None and sizes[index] != -1:
        part = sizes[index]
    else:
        part = None
    if squeeze:
        del shape[axis]
    else:
        shape[axis] = part
    return tuple(shape), in_dtypes[0]


def _part_attrs(n):
    return {k: n.attrs[k] for k in ("axis", "num", "sizes", "index", "squeeze", "tensor")}


register("split_part", _split_part_impl, _split_part_infer,
         grad=lambda n, g: [apply("split_part_grad", [g, n.inputs[0]], **_part_attrs(n))])
register("split_part_grad", _split_part_grad_impl,
         lambda s, d, **attrs: (s[1], d[0]),
         grad=lambda n, g: [apply("split_part", [g], **_part_attrs(n)), None])


def _split_part(x, axis, num, sizes, index, squeeze, name):
    return apply("split_part", [x], name=name, axis=axis, num=num, sizes=sizes, index=index,
                 squeeze=squeeze, tensor=x.name)


# -- slice and strided_slice: static keys, built as x[key] ------------------------------


def _static_ints(value, what, op_name):
    from gradflow.ops.array_ops import static_value

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
    from gradflow.ops.array_ops import static_value

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


def _merged_shape(shape, start, count):
    merged = shape[start:start + count]
    size = None if None in merged else math.prod(merged)
    return tuple(shape[:start]) + (size,) + tuple(shape[start + count:])


def _merge_axes_impl(xp, x, start, count):
    return xp.reshape(x, _merged_shape(tuple(x.shape), start, count))


def _merge_axes_infer(shapes, in_dtypes, start, count):
    if start + count > len(shapes[0]):
        raise ValueError(f"cannot merge axes {start}..{start + count - 1} of a rank "
                         f"{len(shapes[0])} input")
    return _merged_shape(tuple(shapes[0]), start, count), in_dtypes[0]


register("merge_axes", _merge_axes_impl, _merge_axes_infer,
         grad=lambda n, g: [reshape_like(g, n.inputs[0])])


def _linear_index_impl(xp, indices, params, target="param shape"):
    """Row-major positions in ``params``'s leading axes of the index tuples of ``indices``,
    after checking that each tuple points into them (TF1's message: gather_nd's names the
    ``"param shape"``, the scatters' the ``"shape"``)."""
    count = indices.shape[-1]
    return row_major_positions(xp, indices, tuple(params.shape[:count]), target)


def row_major_positions(xp, indices, bounds, target="param shape"):
    """The row-major positions in an array whose leading axes are ``bounds`` of the index
    tuples in the last axis of ``indices`` (int64), after checking that each points into
    it (``check_index_tuples``)."""
    idx = xp.astype(indices, xp.int64)
    check_index_tuples(xp, idx, bounds, target)
    out = xp.zeros(idx.shape[:-1], dtype=xp.int64, device=_device(idx))
    stride = 1
    for k in reversed(range(len(bounds))):
        out = out + idx[..., k] * stride
        stride *= bounds[k]
    return out


def _linear_index_infer(shapes, in_dtypes, target="param shape"):
    indices, params = shapes
    if not in_dtypes[0].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[0].name}")
    if len(indices) == 0 or indices[-1] is None:
        raise ValueError("the last axis of indices (the index length) must be known")
    if indices[-1] > len(params):
        raise ValueError(f"index tuples of length {indices[-1]} for params of rank "
                         f"{len(params)}")
    return tuple(indices[:-1]), dtypes.int64


register("linear_index", _linear_index_impl, _linear_index_infer, grad=None)


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


def _mask_indices_impl(xp, mask, tensor, axis):
    expected = tuple(tensor.shape[axis:axis + mask.ndim])
    if tuple(mask.shape) != expected:
        raise ValueError(f"boolean_mask: the mask has shape {tuple(mask.shape)}, but axes "
                         f"{axis}..{axis + mask.ndim - 1} of the tensor have shape {expected}")
    return xp.nonzero(xp.reshape(mask, (-1,)))[0]


def _mask_indices_infer(shapes, in_dtypes, axis):
    if not in_dtypes[0].is_bool:
        raise TypeError(f"the mask must be bool, got {in_dtypes[0].name}")
    return (None,), dtypes.int64  # how many are true is known only at run time


register("mask_indices", _mask_indices_impl, _mask_indices_infer, grad=None)


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


def _gather_infer(shapes, in_dtypes, axis, validate=True):
    if not in_dtypes[1].is_integer:
        raise TypeError(f"indices must be integers, got {in_dtypes[1].name}")
    p = shapes[0]
    return tuple(p[:axis]) + tuple(shapes[1]) + tuple(p[axis + 1:]), in_dtypes[0]


def _gather_impl(xp, params, indices, axis, validate=True):
    if validate:
        check_ids(xp, indices, params.shape[axis])
    flat = as_take_index(xp, xp.reshape(indices, (-1,)))
    out = xp.take(params, flat, axis=axis)
    return xp.reshape(out, params.shape[:axis] + indices.shape + params.shape[axis + 1:])


def _gather_strings_impl(session, node):
    """``gather`` of a ``string`` tensor: on the host, where strings are held."""
    import array_api_compat.numpy as host_xp

    axis, host = node.attrs["axis"], session.backend.host_value

    def run(params, indices):
        ids = np.asarray(host(indices))
        check_ids(host_xp, ids, params.shape[axis])  # the session names the op
        return dtypes.bytes_array(np.take(params, ids, axis=axis))  # 0-d stays an array

    return run


register("gather_strings", _gather_strings_impl, _gather_infer, grad=None, kind="call",
         takes_strings=True)


# the fewest output rows a block of the one-hot scatter covers (see below)
_SCATTER_BLOCK_ROWS = 256


def scatter_add_rows_reference(xp, rows, indices, num_rows):
    """Deterministic Array-API scatter-add: a one-hot matrix product, or where a row is
    not finite (the product would spread its NaN to every row: 0 * nan), a masked sum.
    The one-hot matrix is made for a block of output rows at a time, of about a quarter
    of the output's size (at least ``_SCATTER_BLOCK_ROWS`` rows): a few values scattered into
    many rows (``bincount`` of ids up to 2**22) no longer make a (rows x values) matrix
    several times the output."""
    count, width = rows.shape[0], math.prod(rows.shape[1:])
    step = max(_SCATTER_BLOCK_ROWS, (num_rows * max(width, 1)) // max(4 * count, 1))
    if step >= num_rows:
        return _scatter_block(xp, rows, indices, 0, num_rows)
    out = xp.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype,
                   device=_device(rows))
    for lo in range(0, num_rows, step):
        hi = min(lo + step, num_rows)
        out[lo:hi, ...] = _scatter_block(xp, rows, indices, lo, hi)
    return out


def _scatter_block(xp, rows, indices, lo, hi):
    """Rows ``lo:hi`` of the scatter-add (``scatter_add_rows_reference``)."""
    positions = xp.arange(lo, hi, dtype=indices.dtype, device=_device(indices))
    hits = positions[:, None] == indices[None, :]
    if bool(xp.all(xp.isfinite(rows))):
        return xp.astype(hits, rows.dtype) @ rows
    zero = xp.zeros((), dtype=rows.dtype, device=_device(rows))
    return xp.sum(xp.where(hits[:, :, None], rows[None, :, :], zero), axis=1)


def gather_grad_impl(xp, g, indices, params, axis, validate=True,
                     scatter=scatter_add_rows_reference):
    """Sum ``g`` into a zero array shaped like ``params`` at ``indices`` on ``axis``."""
    shape = params.shape
    if validate:  # a gradient-only run may not run the forward gather and its check
        check_ids(xp, indices, shape[axis])
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    count = math.prod(indices.shape)
    rows = xp.reshape(g, (pre, count, post))
    rows = xp.reshape(xp.permute_dims(rows, (1, 0, 2)), (count, pre * post))
    out = scatter(xp, rows, as_take_index(xp, xp.reshape(indices, (-1,))), shape[axis])
    out = xp.permute_dims(xp.reshape(out, (shape[axis], pre, post)), (1, 0, 2))
    return xp.reshape(out, shape)


def bind_gather_grad(scatter):
    """A backend's ``gather_grad`` lowering, built on its own scatter kernel."""
    return lambda xp, axis, validate=True: functools.partial(
        gather_grad_impl, xp, axis=axis, validate=validate, scatter=scatter)


def _gather_attrs(n):
    return {"axis": n.attrs["axis"], "validate": n.attrs.get("validate", True)}


def _id_check_against(params_at):
    """``id_check`` of a gather (``params_at`` 0) or its gradient (2): the ids are input
    1, checked against the size of the gathered axis."""
    def id_check(n):
        if not n.attrs.get("validate", True):
            return None
        shape = n.inputs[params_at].shape
        size = None if shape is None else shape[n.attrs["axis"]]
        return 1, None if size is None else int(size)  # CuPy's ufuncs refuse Dimension

    return id_check


register("gather", _gather_impl, _gather_infer,
         grad=lambda n, g: [apply("gather_grad", [g, n.inputs[1], n.inputs[0]],
                                  **_gather_attrs(n)), None],
         id_check=_id_check_against(0))
register("gather_grad", gather_grad_impl, lambda s, d, axis, validate=True: (s[2], d[0]),
         grad=lambda n, g: [apply("gather", [g, n.inputs[1]], **_gather_attrs(n)), None, None],
         shape_only_inputs=(2,), id_check=_id_check_against(2))


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


def _one_hot_impl(xp, indices, depth, on_value, off_value, dtype):
    # compared in int64: an arange of ``depth`` in a narrow index dtype would wrap
    # (uint8 positions 256.. read as 0..) and mark two positions hot
    indices = as_take_index(xp, indices)
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
    """One-hot vectors of length ``depth`` on a new last axis (default float32), TF1
    ``tf.one_hot``.

    As in TF1, an index outside ``[0, depth)`` (negative, or ``depth`` and above) gives
    a row of ``off_value`` everywhere: that is the op's documented meaning, not an
    error. ``depth`` must be a non-negative int known when the graph is built.

    >>> gf.one_hot([0, 2, -1], 3)   # [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    """
    from gradflow.ops.array_ops import static_value

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


def _shape_impl(xp, x, out_type):
    return xp.asarray(x.shape, dtype=out_type.resolve(xp), device=_device(x))


register("shape", _shape_impl, lambda s, d, out_type: ((len(s[0]),), out_type), grad=None,
         shape_only_inputs=(0,))


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The run-time shape of ``input`` as a 1-D integer tensor."""
    return apply("shape", [convert_to_tensor(input)], name=name, out_type=out_type)
