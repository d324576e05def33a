"""Reductions, shape manipulation and ``matmul``: TF1's functions over the primitives of
``gradflow.prim.array`` (argument aliases such as ``reduction_indices=`` and
``keep_dims=``, Python-value conversion, composites)."""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.math_ops import cast, divide, exp, is_finite, log, not_equal, where, zeros_like
from gradflow.ops.state_ops import identity, stop_gradient
from gradflow.prim import rules
from gradflow.prim.array import (  # noqa: F401 - the builders, under their TF1-era homes
    _matmul_impl,
    _reversed_axes,
    _size_one_axes,
    _unbroadcast_impl,
    broadcast_like,
    int_vector,
    reshape_like,
    static_value,
    unbroadcast,
)
from gradflow.prim.registry import apply, convert_to_tensor

# -- reductions ------------------------------------------------------------------


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
    return total if name is None else identity(total, name=name)


def squeeze_axes(t, axis, like):
    """``t`` (reduced over ``axis`` of ``like`` with keepdims) without those axes."""
    if like.shape is None:  # every axis, or the axes as given, dropped at run time
        return reshape(t, ()) if axis is None else squeeze(t, axis)
    axes = rules.normalize_axis(axis, len(like.shape))
    return squeeze(t, axes) if axes else t



def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """The number of non-zero (or true) elements over ``axis``, as ``dtype``
    (default int64; TF1 ``tf.count_nonzero``)."""
    x = convert_to_tensor(input if input_tensor is None else input_tensor)
    nonzero = x if x.dtype.is_bool else not_equal(x, 0)
    counted = cast(nonzero, dtype)
    return _reduction("reduce_sum", counted, axis, keepdims, name, reduction_indices,
                      keep_dims)


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


# -- reshaping -------------------------------------------------------------------


def reshape(tensor, shape, name=None):
    """``tensor`` with a new static shape; one entry may be -1."""
    x = convert_to_tensor(tensor)
    static = static_value(shape)
    if static is not None:
        return apply("reshape", [x], name=name, shape=tuple(int(d) for d in static.reshape(-1)))
    dims, hint = int_vector(shape, "reshape: shape")
    if dims.opdef.name == "shape":  # gf.reshape(g, gf.shape(x)): x's static shape
        hint = dims.inputs[0].shape
    elif hint is not None and -1 in hint and None in hint and not _own_sizes(x, shape):
        # the -1 is known only from sizes of the run: the shape rule may take the hint's
        # unknown entry for x's unknown size only where it is that size (_own_sizes)
        hint = tuple(None if d == -1 else d for d in hint)
    return apply("reshape", [x, dims], name=name, shape=hint)


def _own_sizes(x, shape):
    """Whether every tensor entry of the list ``shape`` is ``gf.shape(x)[i]`` for an axis
    ``i`` of ``x`` whose size is unknown (``[gf.shape(x)[0], -1]``), so that the unknown
    entries of the new shape stand for unknown sizes of ``x`` itself."""
    if not isinstance(shape, (list, tuple)) or x.shape is None:
        return False
    for entry in shape:
        if not isinstance(entry, Tensor):
            continue
        key = entry.attrs.get("key") if entry.opdef.name == "getitem" else None
        source = entry.inputs[0] if entry.inputs else None
        if key is None or len(key) != 1 or not isinstance(key[0], int) \
                or source.opdef.name != "shape" or source.inputs[0] is not x \
                or not -len(x.shape) <= key[0] < len(x.shape) or x.shape[key[0]] is not None:
            return False
    return True


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


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product of the last two axes, batched over the others."""
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, like=a)
    return apply("matmul", [a, b], name=name, transpose_a=bool(transpose_a),
                 transpose_b=bool(transpose_b))
