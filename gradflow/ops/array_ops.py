"""Reductions, shape manipulation, indexing and gather."""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.math_ops import (
    cast,
    divide,
    equal,
    logical_and,
    multiply,
    ones_like,
    where,
    zeros_like,
)
from gradflow.prim import rules
from gradflow.prim.registry import apply, convert_to_tensor, register

# -- reductions ------------------------------------------------------------------


def _reduce_infer(shapes, in_dtypes, axes, keepdims):
    return rules.reduced_shape(shapes[0], axes, keepdims), in_dtypes[0]


def _sum_impl(xp, x, axes, keepdims):
    return xp.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _keep_axes(node, g):
    """``g`` with the reduced axes of ``node`` put back as size-1 dims."""
    if node.attrs["keepdims"] or node.attrs["axes"] is None:
        return g
    return apply("expand_dims", [g], axes=node.attrs["axes"])


def _sum_grad(n, g):  # every input element receives the output's gradient
    return [broadcast_like(_keep_axes(n, g), n.inputs[0])]


def _max_grad(n, g):  # split the gradient evenly among the maxima
    x = n.inputs[0]
    mask = cast(equal(x, _keep_axes(n, n)), x.dtype)
    share = divide(_keep_axes(n, g), reduce_sum(mask, n.attrs["axes"], keepdims=True))
    return [multiply(mask, share)]


register("reduce_sum", _sum_impl, _reduce_infer, grad=_sum_grad)
def _extreme(name, sign):
    """``reduce_max`` (``sign`` 1) or ``reduce_min`` (-1). Over an empty axis TF1 gives
    -inf / +inf (an integer type's lowest / highest value), where the Array API's
    ``max`` and ``min`` raise."""
    def impl(xp, x, axes, keepdims):
        if math.prod(x.shape):
            return getattr(xp, name)(x, axis=axes, keepdims=keepdims)
        reduced = range(len(x.shape)) if axes is None else \
            [a % len(x.shape) for a in ((axes,) if isinstance(axes, int) else axes)]
        shape = [1 if i in reduced else d for i, d in enumerate(x.shape)
                 if keepdims or i not in reduced]
        if xp.isdtype(x.dtype, "real floating"):
            bound = -sign * math.inf
        else:
            info = xp.iinfo(x.dtype)
            bound = info.min if sign > 0 else info.max
        return xp.full(tuple(shape), bound, dtype=x.dtype, device=_device(x))

    return impl


register("reduce_max", _extreme("max", 1), _reduce_infer, grad=_max_grad)
register("reduce_min", _extreme("min", -1), _reduce_infer, grad=_max_grad)
def _prod_grad(n, g):
    """d prod / dx_i = the product of the other elements: ``prod / x_i`` without zeros;
    with one zero, the product of the rest at the zero and 0 elsewhere; with two, 0.
    (Differentiated again, this is exact where no element is 0.)"""
    x, axes = n.inputs[0], n.attrs["axes"]
    zero = equal(x, 0.0)
    safe = where(zero, ones_like(x), x)
    rest = reduce_prod(safe, axes, keepdims=True)  # the product of the nonzero elements
    zeros = reduce_sum(cast(zero, x.dtype), axes, keepdims=True)
    others = where(equal(zeros, 0.0), divide(rest, safe),
                   where(logical_and(zero, equal(zeros, 1.0)), rest * ones_like(x),
                         zeros_like(x)))
    return [multiply(broadcast_like(_keep_axes(n, g), x), others)]


register("reduce_prod",
         lambda xp, x, axes, keepdims: xp.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype),
         _reduce_infer, grad=_prod_grad)


def _count_impl(xp, x, axes):
    axes = range(x.ndim) if axes is None else axes
    count = math.prod(x.shape[a] for a in axes)
    return xp.asarray(count, dtype=x.dtype, device=_device(x))


register("reduced_count", _count_impl, lambda s, d, axes: ((), d[0]), grad=None,
         shape_only_inputs=(0,))


def static_value(value):
    """``value`` as a NumPy array when it is known while the graph is built (a Python
    value, a NumPy array or a constant tensor), else ``None``."""
    import numpy as np

    if isinstance(value, Tensor):
        return value.attrs["value"].array if value.opdef.kind == "constant" else None
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        parts = [static_value(v) for v in value]
        return None if any(p is None for p in parts) else np.asarray(parts)
    return np.asarray(value)


def _axis_arg(op_name, axis, reduction_indices):
    """``axis``, or TF1's deprecated ``reduction_indices`` spelling of it."""
    if reduction_indices is None:
        return axis
    if axis is not None:
        raise ValueError(f"{op_name}: give axis= or reduction_indices=, not both")
    return reduction_indices


def _keepdims_arg(op_name, keepdims, keep_dims):
    """``keepdims``, or TF1's deprecated ``keep_dims`` spelling of it (default False)."""
    if keep_dims is None:
        return bool(keepdims)
    if keepdims is not None:
        raise ValueError(f"{op_name}: give keepdims= or keep_dims=, not both")
    return bool(keep_dims)


def _static_axis(axis):
    """An ``axis`` argument as Python ints: an int, a list, a NumPy array or a constant."""
    if axis is None or isinstance(axis, int):
        return axis
    if isinstance(axis, Tensor):
        if axis.opdef.kind != "constant":
            raise TypeError(f"the axis '{axis.name}' must be known when the graph is built: "
                            "use Python ints or a constant")
        axis = axis.attrs["value"].array
    if getattr(axis, "ndim", None) == 0:
        return int(axis)
    return tuple(int(a) for a in axis)


def _reduction(op_name, input_tensor, axis, keepdims, name, reduction_indices=None,
               keep_dims=None, *, bool_input=False):
    x = convert_to_tensor(input_tensor)
    axis = _static_axis(_axis_arg(op_name, axis, reduction_indices))
    keepdims = _keepdims_arg(op_name, keepdims, keep_dims)
    if bool_input and not x.dtype.is_bool:
        raise TypeError(f"{op_name}: the input '{x.name}' is {x.dtype.name}; it must be bool "
                        "(compare it or cast it first)")
    if not bool_input and x.dtype.is_bool:
        raise TypeError(f"{op_name}: the input '{x.name}' is bool; cast it first")
    if x.shape is None:  # unknown rank: axes are resolved at run time
        axes = None if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
        return apply(op_name, [x], name=name, axes=axes, keepdims=keepdims)
    axes = rules.normalize_axis(axis, len(x.shape))
    return apply(op_name, [x], name=name, axes=axes, keepdims=keepdims)






register("reduce_any",
         lambda xp, x, axes, keepdims: xp.any(x, axis=axes, keepdims=keepdims),
         _reduce_infer, grad=None)
register("reduce_all",
         lambda xp, x, axes, keepdims: xp.all(x, axis=axes, keepdims=keepdims),
         _reduce_infer, grad=None)





def _reducer(op_name, doc, bool_input=False):
    """The public function of one reduction op, with TF1's arguments: ``axis``,
    ``keepdims`` and the deprecated ``reduction_indices=`` and ``keep_dims=``."""
    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
        return _reduction(op_name, input_tensor, axis, keepdims, name, reduction_indices,
                          keep_dims, bool_input=bool_input)

    reduce.__name__ = reduce.__qualname__ = op_name
    reduce.__doc__ = doc + ("\n\n    TF1's deprecated ``reduction_indices=`` and "
                            "``keep_dims=`` are accepted.")
    return reduce


reduce_sum = _reducer("reduce_sum",
                      "Sum over ``axis`` (an int, a tuple, or ``None`` for all axes).")
reduce_max = _reducer("reduce_max", "Maximum over ``axis``.")
reduce_min = _reducer("reduce_min", "Minimum over ``axis``.")
reduce_prod = _reducer("reduce_prod", "Product over ``axis``.")
reduce_any = _reducer("reduce_any", "Logical or of a bool tensor over ``axis``.",
                      bool_input=True)
reduce_all = _reducer("reduce_all", "Logical and of a bool tensor over ``axis``.",
                      bool_input=True)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                keep_dims=None):
    """Mean over ``axis``: a sum divided by the count of reduced elements."""
    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"reduce_mean: the input '{x.name}' is {x.dtype.name}; "
                        "cast it to a float dtype first")
    axis = _static_axis(_axis_arg("reduce_mean", axis, reduction_indices))
    keepdims = _keepdims_arg("reduce_mean", keepdims, keep_dims)
    total = reduce_sum(x, axis, keepdims)
    if x.shape is None:
        return divide(total, apply("reduced_count", [x], axes=total.attrs["axes"]), name=name)
    axes = rules.normalize_axis(axis, len(x.shape))
    sizes = [x.shape[a] for a in axes]
    if all(s is not None for s in sizes):
        return divide(total, float(math.prod(sizes)), name=name)
    return divide(total, apply("reduced_count", [x], axes=axes), name=name)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """``log(sum(exp(x)))`` over ``axis``, computed stably: the maximum is taken out
    first, so large inputs do not overflow (TF1 ``tf.reduce_logsumexp``)."""
    from gradflow.ops.math_ops import exp, is_finite, log, where, zeros_like
    from gradflow.ops.state_ops import stop_gradient

    x = convert_to_tensor(input_tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"reduce_logsumexp: the input '{x.name}' is {x.dtype.name}; "
                        "cast it to a float dtype first")
    axis = _static_axis(_axis_arg("reduce_logsumexp", axis, reduction_indices))
    keepdims = bool(_keepdims_arg("reduce_logsumexp", keepdims, keep_dims))
    # the shift changes no value and no gradient, so it need not be differentiated
    # (an all -inf slice is shifted by 0, so it gives -inf rather than NaN)
    top = reduce_max(x, axis, keepdims=True)
    shift = stop_gradient(where(is_finite(top), top, zeros_like(top)))
    total = log(reduce_sum(exp(x - shift), axis, keepdims=True)) + shift
    if not keepdims:
        total = squeeze_axes(total, axis, x)
    return total if name is None else _identity(total, name)


def squeeze_axes(t, axis, like):
    """``t`` (reduced over ``axis`` of ``like`` with keepdims) without those axes."""
    if like.shape is None:  # every axis, or the axes as given, dropped at run time
        return reshape(t, ()) if axis is None else squeeze(t, axis)
    axes = rules.normalize_axis(axis, len(like.shape))
    return squeeze(t, axes) if axes else t


def _identity(t, name):
    from gradflow.ops.state_ops import identity

    return identity(t, name=name)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero (or true) elements over ``axis``, as ``dtype``
    (default int64; TF1 ``tf.count_nonzero``)."""
    from gradflow.ops.math_ops import not_equal

    x = convert_to_tensor(input if input_tensor is None else input_tensor)
    nonzero = x if x.dtype.is_bool else not_equal(x, 0)
    counted = cast(nonzero, dtype)
    return _reduction("reduce_sum", counted, axis, keepdims, name, reduction_indices,
                      keep_dims)


def _arg_infer(shapes, in_dtypes, axis, keepdims=False):
    return rules.reduced_shape(shapes[0], (axis,), False), dtypes.int64


def _arg_impl(fn_name):
    skip = -math.inf if fn_name == "argmax" else math.inf

    def impl(xp, x, axis):
        if xp.isdtype(x.dtype, "real floating"):
            # TF1's kernels skip NaN (they compare with >, which NaN fails; a row of NaN
            # gives 0); the Array API leaves NaN's index open and NumPy picks the NaN
            x = xp.where(xp.isnan(x), xp.asarray(skip, dtype=x.dtype, device=_device(x)), x)
        out = getattr(xp, fn_name)(x, axis=axis)
        return out if out.dtype == xp.int64 else xp.astype(out, xp.int64)

    return impl


register("argmax", _arg_impl("argmax"), _arg_infer, grad=None)
register("argmin", _arg_impl("argmin"), _arg_infer, grad=None)


def _arg_reduction(op_name, input, axis, dimension, output_type, name):  # noqa: A002
    x = convert_to_tensor(input)
    if axis is not None and dimension is not None:
        raise ValueError(f"{op_name}: give axis= or dimension=, not both")
    axis = _static_axis(axis if axis is not None else dimension)
    axis = 0 if axis is None else axis
    if not isinstance(axis, int):
        if len(axis) != 1:
            raise ValueError(f"{op_name}: axis must be one int, got {axis}")
        axis = axis[0]
    if x.shape is not None:
        axis = rules.normalize_axis(axis, len(x.shape))[0]
    return cast(apply(op_name, [x], name=name, axis=axis), output_type)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the largest value along ``axis`` (TF1 default: axis 0), as int64.

    ``dimension=`` is TF1's deprecated name of ``axis``.
    """
    return _arg_reduction("argmax", input, axis, dimension, output_type, name)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    """Index of the smallest value along ``axis`` (default 0), as int64."""
    return _arg_reduction("argmin", input, axis, dimension, output_type, name)


def arg_max(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF1's deprecated ``tf.arg_max(input, dimension)``: ``argmax`` along ``dimension``."""
    return _arg_reduction("argmax", input, None, dimension, output_type, name)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF1's deprecated ``tf.arg_min(input, dimension)``: ``argmin`` along ``dimension``."""
    return _arg_reduction("argmin", input, None, dimension, output_type, name)


# -- broadcasting helpers the gradient walker uses ---------------------------------


def _unbroadcast_impl(xp, g, x):
    if g.shape == x.shape:
        return g
    lead = g.ndim - x.ndim
    axes = tuple(range(lead)) + tuple(
        i + lead for i, d in enumerate(x.shape) if d == 1 and g.shape[i + lead] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True, dtype=g.dtype)
    return xp.reshape(g, x.shape)


def _broadcast_like_impl(xp, g, x):
    return g if g.shape == x.shape else xp.broadcast_to(g, x.shape)


register("unbroadcast", _unbroadcast_impl, lambda s, d: (s[1], d[0]),
         grad=lambda n, g: [broadcast_like(g, n.inputs[0]), None],
         shape_only_inputs=(1,), shape_noop=True)
register("broadcast_like", _broadcast_like_impl,
         lambda s, d: (rules.broadcast_shapes(s[0], s[1]), d[0]),
         grad=lambda n, g: [unbroadcast(g, n.inputs[0]), None],
         shape_only_inputs=(1,), shape_noop=True)


def unbroadcast(g, x):
    """``g`` summed down to the (run-time) shape of ``x``."""
    return apply("unbroadcast", [g, x])


def broadcast_like(g, x):
    """``g`` broadcast up to the (run-time) shape of ``x``."""
    return apply("broadcast_like", [g, x])


# -- reshaping -------------------------------------------------------------------


def _reshape_impl(xp, x, dims=None, *, shape):
    if dims is not None:  # a 1-D int tensor such as gf.stack([gf.shape(x)[0], -1])
        shape = tuple(int(dims[i]) for i in range(dims.shape[0]))
    return xp.reshape(x, shape)


def _reshape_infer(shapes, in_dtypes, shape):
    src = shapes[0]
    if len(shapes) > 1:  # the shape is known only when the graph runs; ``shape`` is a hint
        if len(shapes[1]) != 1 or not in_dtypes[1].is_integer:
            raise ValueError("the new shape must be a 1-D integer tensor")
        if shape is None:
            return ((None,) * shapes[1][0] if shapes[1][0] is not None else None), \
                in_dtypes[0]
        if src is not None and shape.count(-1) == 1 and shape.count(None) == 1 \
                and src.count(None) == 1:  # [gf.shape(x)[0], -1]: as TF1, take the
            known_src = math.prod(d for d in src if d is not None)  # unknown dims equal
            known = math.prod(d for d in shape if d is not None and d != -1)
            if known and known_src % known == 0:
                return tuple(known_src // known if d == -1 else d for d in shape), in_dtypes[0]
        return tuple(None if d is None or d < 0 else d for d in shape), in_dtypes[0]
    if shape.count(-1) > 1:
        raise ValueError(f"at most one -1 in the new shape {shape}")
    if src is None:  # unknown rank: the new shape is still known, as in TF1
        return tuple(None if d == -1 else d for d in shape), in_dtypes[0]
    known_src = None if None in src else math.prod(src)
    if -1 not in shape and known_src is not None and known_src != math.prod(shape):
        raise ValueError(f"cannot reshape {tuple(src)} ({known_src} elements) to {shape}")
    if -1 in shape:
        rest = math.prod(d for d in shape if d != -1)
        if known_src is not None:
            if rest == 0 or known_src % rest:
                raise ValueError(f"cannot reshape {tuple(src)} to {shape}")
            return tuple(known_src // rest if d == -1 else d for d in shape), in_dtypes[0]
        return tuple(None if d == -1 else d for d in shape), in_dtypes[0]
    return shape, in_dtypes[0]


def _dims_value(values, attrs):
    """The new shape of ``reshape`` from the value of its shape input (a -1 left as
    None), or None where that value is not known."""
    if len(values) < 2 or values[1] is None:
        return None
    return tuple(None if int(d) == -1 else int(d) for d in values[1].reshape(-1))


register("reshape", _reshape_impl, _reshape_infer,
         grad=lambda n, g: [reshape_like(g, n.inputs[0])] + [None] * (len(n.inputs) - 1),
         shape_noop=True, value_shape=_dims_value)
register("reshape_like", lambda xp, g, x: xp.reshape(g, x.shape),
         lambda s, d: (s[1], d[0]),
         grad=lambda n, g: [reshape_like(g, n.inputs[0]), None],
         shape_only_inputs=(1,), shape_noop=True)


def reshape(tensor, shape, name=None):
    """``tensor`` with a new static shape; one entry may be -1."""
    x = convert_to_tensor(tensor)
    static = static_value(shape)
    if static is not None:
        return apply("reshape", [x], name=name, shape=tuple(int(d) for d in static.reshape(-1)))
    from gradflow.ops.shape_ops import _int_vector  # shape_ops builds on this module

    dims, hint = _int_vector(shape, "reshape: shape")
    if dims.opdef.name == "shape":  # gf.reshape(g, gf.shape(x)): x's static shape
        hint = dims.inputs[0].shape
    return apply("reshape", [x, dims], name=name, shape=hint)


def reshape_like(g, x):
    """``g`` reshaped to the (run-time) shape of ``x``."""
    return apply("reshape_like", [g, x])


def _expanded(shape, axes):
    """``shape`` with size-1 dims at ``axes``, negative ones counted from the end of the
    result (TF1): axes are normalized at run time when the rank was unknown at build."""
    shape = list(shape)
    for ax in rules.normalize_axis(axes, len(shape) + len(axes)):
        shape.insert(ax, 1)
    return tuple(shape)


def _expand_impl(xp, x, axes):
    return xp.reshape(x, _expanded(x.shape, axes))


def _expand_infer(shapes, in_dtypes, axes):
    return _expanded(shapes[0], axes), in_dtypes[0]


register("expand_dims", _expand_impl, _expand_infer,
         grad=lambda n, g: [reshape_like(g, n.inputs[0])], shape_noop=True)


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    """Insert a size-1 dimension at ``axis`` (an int, or a list of one int as TF1 takes
    it; ``dim=`` is TF1's deprecated name)."""
    x = convert_to_tensor(input)
    if (axis is None) == (dim is None):
        raise ValueError("expand_dims: give axis= (or TF1's dim=), exactly one of them")
    axis = _static_axis(dim if axis is None else axis)
    if isinstance(axis, tuple):
        if len(axis) != 1:
            raise ValueError(f"expand_dims: axis must be one int, got {list(axis)}")
        axis = axis[0]
    if x.shape is not None:
        axis = rules.normalize_axis(axis, len(x.shape) + 1)[0]
    return apply("expand_dims", [x], name=name, axes=(axis,))


def _size_one_axes(shape):
    return tuple(i for i, d in enumerate(shape) if d == 1)


def _squeeze_infer(shapes, in_dtypes, axes):
    if axes is None:  # every size-1 axis of the run's value: known once all sizes are
        if shapes[0] is None or None in shapes[0]:
            return None, in_dtypes[0]
        axes = _size_one_axes(shapes[0])
    # negative axes stay so while the rank is unknown: here the rank is known
    axes = tuple(ax % len(shapes[0]) if -len(shapes[0]) <= ax < 0 else ax for ax in axes)
    for ax in axes:
        if shapes[0][ax] not in (1, None):
            raise ValueError(f"cannot squeeze axis {ax} of size {shapes[0][ax]}")
    return tuple(d for i, d in enumerate(shapes[0]) if i not in axes), in_dtypes[0]


def _squeeze_impl(xp, x, axes):
    axes = _size_one_axes(x.shape) if axes is None else axes
    return xp.squeeze(x, axis=axes) if axes else x


register("squeeze", _squeeze_impl, _squeeze_infer,
         grad=lambda n, g: [reshape_like(g, n.inputs[0])], shape_noop=True)


def run_time_axes(x, axis, what):
    """``axis`` (an int or ints) for an op over ``x`` of unknown rank: non-negative axes
    mean the same at any rank, so they pass to the run; a negative one needs the rank."""
    axes = (axis,) if isinstance(axis, int) else tuple(int(a) for a in axis)
    if any(a < 0 for a in axes):
        raise ValueError(f"{what}: the negative axis {axis} needs the rank of '{x.name}', "
                         "which is unknown (a placeholder without a shape); give a "
                         "non-negative axis or a shape")
    return axes


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Remove size-1 dimensions (TF1 ``tf.squeeze``): those of ``axis``, or with
    ``axis=None`` every one of the value's size-1 dimensions, found at run time where
    some sizes (or the rank) are unknown while the graph is built.

    >>> gf.squeeze(x)      # [1, 3, 1, 2] -> [3, 2]
    >>> gf.squeeze(x, 2)   # [1, 3, 1, 2] -> [1, 3, 2]
    """
    x = convert_to_tensor(input)
    if x.shape is None:  # negative axes too: the run's squeeze counts them from the end
        axes = None if axis is None else tuple((axis,) if isinstance(axis, int) else axis)
    elif axis is None:  # the size-1 axes, found at run time where some sizes are unknown
        axes = None if None in x.shape else _size_one_axes(x.shape)
    else:
        axes = rules.normalize_axis(axis, rules.known_rank(x, "squeeze"))
    return apply("squeeze", [x], name=name, axes=axes)


def _transpose_infer(shapes, in_dtypes, perm):
    perm = _reversed_axes(len(shapes[0])) if perm is None else perm
    if sorted(perm) != list(range(len(shapes[0]))):
        raise ValueError(f"perm {perm} is not a permutation of the {len(shapes[0])} axes")
    return tuple(shapes[0][p] for p in perm), in_dtypes[0]


def _reversed_axes(rank):
    return tuple(reversed(range(rank)))


def _transpose_grad(n, g):  # undo the permutation (a reversal, perm None, undoes itself)
    perm = n.attrs["perm"]
    if perm is None:
        return [apply("transpose", [g], perm=None)]
    inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
    return [apply("transpose", [g], perm=inverse)]


register("transpose",
         lambda xp, x, perm: xp.permute_dims(x, _reversed_axes(x.ndim) if perm is None else perm),
         _transpose_infer, grad=_transpose_grad, view=True)


def transpose(a, perm=None, name=None):
    """Permute the axes of ``a`` by ``perm`` (TF1 ``tf.transpose``); ``perm=None``
    reverses them, also where the rank is known only at run time.

    >>> gf.transpose(x)            # [2, 3, 4] -> [4, 3, 2]
    >>> gf.transpose(x, [0, 2, 1]) # [2, 3, 4] -> [2, 4, 3]
    """
    x = convert_to_tensor(a)
    if perm is not None:
        perm = tuple(int(p) for p in perm)
    elif x.shape is not None:
        perm = _reversed_axes(len(x.shape))  # else reversed at run time, whatever the rank
    return apply("transpose", [x], name=name, perm=perm)


# -- matmul ----------------------------------------------------------------------


def _matmul_infer(shapes, in_dtypes, transpose_a, transpose_b):
    a, b = shapes
    if len(a) == 0 or len(b) == 0:
        raise ValueError("matmul needs inputs of rank 1 or more")
    if len(a) == 1 or len(b) == 1:
        if transpose_a or transpose_b:
            raise ValueError("transpose_a/transpose_b need inputs of rank 2 or more")
        ka, kb = a[-1], (b[-2] if len(b) > 1 else b[0])
        if ka is not None and kb is not None and ka != kb:
            raise ValueError(f"inner dimensions differ: {ka} vs {kb}")
        if len(b) == 1:
            shape = tuple(a[:-1])
        else:
            shape = tuple(b[:-2]) + (b[-1],)
        return shape, rules.same_dtype(in_dtypes)
    m, ka = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if transpose_b else (b[-2], b[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(f"inner dimensions differ: {ka} vs {kb}")
    batch = rules.broadcast_shapes(a[:-2], b[:-2])
    dtype = rules.same_dtype(in_dtypes)
    if dtype.is_bool:
        raise TypeError("matmul of bool tensors")
    return batch + (m, n), dtype


def _matmul_impl(xp, a, b, transpose_a, transpose_b):
    if transpose_a:
        a = xp.matrix_transpose(a)
    if transpose_b:
        b = xp.matrix_transpose(b)
    return xp.matmul(a, b)


def _matmul_lower(xp, transpose_a, transpose_b):
    if not transpose_a and not transpose_b:
        return xp.matmul
    return lambda a, b: _matmul_impl(xp, a, b, transpose_a, transpose_b)


def _matmul_grad(n, g):  # C = A B: dA = g B^T, dB = A^T g (with the transposes undone)
    a, b = n.inputs
    if a.shape is not None and b.shape is not None and min(len(a.shape), len(b.shape)) == 1:
        return _matmul_vector_grad(a, b, g)
    ta, tb = n.attrs["transpose_a"], n.attrs["transpose_b"]
    ga = matmul(b, g, transpose_a=tb, transpose_b=True) if ta else \
        matmul(g, b, transpose_b=not tb)
    gb = matmul(g, a, transpose_a=True, transpose_b=ta) if tb else \
        matmul(a, g, transpose_a=not ta)
    return [ga, gb]


def _matmul_vector_grad(a, b, g):  # the 1-D cases, as outer products
    if len(a.shape) == 1 and len(b.shape) == 1:
        return [g * b, g * a]
    # A batched matrix leaves a batch of vector gradients: the walker sums it away.
    if len(b.shape) == 1:  # y = A b: dA = g b^T, db = A^T g
        return [expand_dims(g, -1) * b, squeeze(matmul(expand_dims(g, -2), a), -2)]
    # y = a B: da = B g, dB = a g^T
    return [squeeze(matmul(b, expand_dims(g, -1)), -1), expand_dims(a, -1) * expand_dims(g, -2)]


register("matmul", _matmul_impl, _matmul_infer, grad=_matmul_grad, lower=_matmul_lower)


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product of the last two axes, batched over the others."""
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, like=a)
    return apply("matmul", [a, b], name=name, transpose_a=bool(transpose_a),
                 transpose_b=bool(transpose_b))
