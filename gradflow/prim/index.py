"""The primitives of indexing (``x[key]``), joining and splitting, gather and its
scatter-add gradient, one_hot and shape, with the key logic they share.

TF1's functions over them live in ``gradflow.ops.index_ops``.
"""

from __future__ import annotations

import functools
import math

import array_api_compat.numpy as host_xp
import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Tensor
from gradflow.prim import call, rules
from gradflow.prim.array import reshape_like

# a leaf module of id checks, with no gradflow import (its home is ops/ today: it
# belongs below prim, see the report of issue 46)
from gradflow.prim.index_checks import (
    as_take_index,
    check_ids,
    row_major_positions,
)
from gradflow.prim.registry import apply, register

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


def as_index(key):
    """A ``getitem`` node's ``key`` attribute as a Python index (slices rebuilt)."""
    return tuple(slice(*k[1:]) if isinstance(k, tuple) else k for k in key)


def _getitem_infer(shapes, in_dtypes, key):
    out, dim = [], 0
    for k in as_index(key):
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
    return _clamp_slices(normalize_key(as_index(key), len(shape)), shape)


def _getitem_impl(xp, x, key):
    return x[as_index(resolve_key(key, x.shape))]


def _getitem_lower(xp, key):
    if is_run_time_key(key):
        return functools.partial(_getitem_impl, xp, key=key)
    index = as_index(key)
    return lambda x: x[index]


def _getitem_grad_impl(xp, g, x, key):
    index = tuple(k for k in as_index(resolve_key(key, x.shape)) if k is not None)
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
         exact_grad=True, takes_complex=True)


def _split_like_impl(xp, g, *xs, axis, index):
    start = sum(x.shape[axis] for x in xs[:index])
    # the trailing ... : the Array API does not let a key name fewer axes than the array has
    key = (slice(None),) * axis + (slice(start, start + xs[index].shape[axis]), ...)
    return g[key]


def _split_like_grad(n, g):  # put dg back in its place, zeros elsewhere
    xs = n.inputs[1:]
    i = n.attrs["index"]
    parts = [g if j == i else call.zeros_like(x) for j, x in enumerate(xs)]
    return [apply("concat", parts, axis=n.attrs["axis"])] + [None] * len(xs)


register("split_like", _split_like_impl,
         lambda s, d, axis, index: (s[index + 1], d[0]), grad=_split_like_grad, view=True,
         takes_complex=True)


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


# -- merged axes and index tuples: gather_nd, boolean_mask, the scatters ---------------


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


def _gather_strings_impl(run_state, node):
    """``gather`` of a ``string`` tensor: on the host, where strings are held."""
    axis, host = node.attrs["axis"], run_state.backend.host_value

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


def _shape_impl(xp, x, out_type):
    return xp.asarray(x.shape, dtype=out_type.resolve(xp), device=_device(x))


register("shape", _shape_impl, lambda s, d, out_type: ((len(s[0]),), out_type), grad=None,
         shape_only_inputs=(0,))
