"""The primitives of reductions, broadcasting, reshaping, transposes and ``matmul``,
and the tensor-level builders their gradient rules and TF1's functions share
(``static_value``, ``int_vector``, ``reshape_like``, ``unbroadcast``...).

TF1's functions over them live in ``gradflow.ops.array_ops``.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.prim import call, rules
from gradflow.prim.math import cast, divide
from gradflow.prim.registry import apply, convert_to_tensor, register

# -- builders shared by the gradient rules and TF1's functions --------------------


def static_value(value):
    """``value`` as a NumPy array when it is known while the graph is built (a Python
    value, a NumPy array or a constant tensor), else ``None``."""
    if isinstance(value, Tensor):
        return value.attrs["value"].array if value.opdef.kind == "constant" else None
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        parts = [static_value(v) for v in value]
        return None if any(p is None for p in parts) else np.asarray(parts)
    return np.asarray(value)


def int_vector(value, what):
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


def stack(tensors):
    """The tensors joined along a new first axis."""
    parts = [apply("expand_dims", [t], axes=(0,)) for t in tensors]
    return parts[0] if len(parts) == 1 else apply("concat", parts, axis=0)


def expand_dims(x, axis):
    """``x`` with a size-1 axis at ``axis`` (normalized where the rank is known)."""
    if x.shape is not None:
        axis = rules.normalize_axis(axis, len(x.shape) + 1)[0]
    return apply("expand_dims", [x], axes=(axis,))


def squeeze(x, axis):
    """``x`` without its size-1 axis (or axes) ``axis``."""
    if x.shape is None:
        axes = tuple((axis,) if isinstance(axis, int) else axis)
    else:
        axes = rules.normalize_axis(axis, rules.known_rank(x, "squeeze"))
    return apply("squeeze", [x], axes=axes)


def reduce(op_name, x, axes, keepdims=False):
    """A reduction ``op_name`` of ``x`` over ``axes`` (``None``: all; normalized where
    the rank is known)."""
    if x.shape is not None:
        axes = rules.normalize_axis(axes, len(x.shape))
    elif axes is not None:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return apply(op_name, [x], axes=axes, keepdims=keepdims)


def matmul(a, b, transpose_a=False, transpose_b=False):
    """The matrix product of two tensors of one dtype."""
    return apply("matmul", [a, b], transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def unbroadcast(g, x):
    """``g`` summed down to the (run-time) shape of ``x``."""
    return apply("unbroadcast", [g, x])


def broadcast_like(g, x):
    """``g`` broadcast up to the (run-time) shape of ``x``."""
    return apply("broadcast_like", [g, x])


def reshape_like(g, x):
    """``g`` reshaped to the (run-time) shape of ``x``."""
    return apply("reshape_like", [g, x])


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
    mask = cast(call.equal(x, _keep_axes(n, n)), x.dtype)
    share = divide(_keep_axes(n, g), reduce("reduce_sum", mask, n.attrs["axes"], True))
    return [call.multiply(mask, share)]


register("reduce_sum", _sum_impl, _reduce_infer, grad=_sum_grad, takes_complex=True)


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
    zero = call.equal(x, 0.0)
    safe = call.where(zero, call.ones_like(x), x)
    rest = reduce("reduce_prod", safe, axes, True)  # the product of the nonzero elements
    zeros = reduce("reduce_sum", cast(zero, x.dtype), axes, True)
    lone = call.logical_and(zero, call.equal(zeros, 1.0))
    others = call.where(call.equal(zeros, 0.0), divide(rest, safe),
                        call.where(lone, call.multiply(rest, call.ones_like(x)),
                                   call.zeros_like(x)))
    return [call.multiply(broadcast_like(_keep_axes(n, g), x), others)]


register("reduce_prod",
         lambda xp, x, axes, keepdims: xp.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype),
         _reduce_infer, grad=_prod_grad)


def _count_impl(xp, x, axes):
    axes = range(x.ndim) if axes is None else axes
    count = math.prod(x.shape[a] for a in axes)
    return xp.asarray(count, dtype=x.dtype, device=_device(x))


register("reduced_count", _count_impl, lambda s, d, axes: ((), d[0]), grad=None,
         shape_only_inputs=(0,))
register("reduce_any",
         lambda xp, x, axes, keepdims: xp.any(x, axis=axes, keepdims=keepdims),
         _reduce_infer, grad=None)
register("reduce_all",
         lambda xp, x, axes, keepdims: xp.all(x, axis=axes, keepdims=keepdims),
         _reduce_infer, grad=None)


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
         shape_only_inputs=(1,), shape_noop=True, takes_complex=True)
register("broadcast_like", _broadcast_like_impl,
         lambda s, d: (rules.broadcast_shapes(s[0], s[1]), d[0]),
         grad=lambda n, g: [unbroadcast(g, n.inputs[0]), None],
         shape_only_inputs=(1,), shape_noop=True, takes_complex=True)


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
         shape_noop=True, value_shape=_dims_value, takes_complex=True)
register("reshape_like", lambda xp, g, x: xp.reshape(g, x.shape),
         lambda s, d: (s[1], d[0]),
         grad=lambda n, g: [reshape_like(g, n.inputs[0]), None],
         shape_only_inputs=(1,), shape_noop=True, takes_complex=True)


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
         grad=lambda n, g: [reshape_like(g, n.inputs[0])], shape_noop=True, takes_complex=True)


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
         grad=lambda n, g: [reshape_like(g, n.inputs[0])], shape_noop=True, takes_complex=True)


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
         _transpose_infer, grad=_transpose_grad, view=True, takes_complex=True)


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
        return [call.multiply(g, b), call.multiply(g, a)]
    # A batched matrix leaves a batch of vector gradients: the walker sums it away.
    if len(b.shape) == 1:  # y = A b: dA = g b^T, db = A^T g
        return [call.multiply(expand_dims(g, -1), b),
                squeeze(matmul(expand_dims(g, -2), a), -2)]
    # y = a B: da = B g, dB = a g^T
    return [squeeze(matmul(b, expand_dims(g, -1)), -1),
            call.multiply(expand_dims(a, -1), expand_dims(g, -2))]


register("matmul", _matmul_impl, _matmul_infer, grad=_matmul_grad, lower=_matmul_lower)
