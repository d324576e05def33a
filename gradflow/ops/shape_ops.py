"""Tensors made from shapes and shape facts: range, fill, eye, tile, pad, reverse,
size and rank (TF1 names and semantics), over the primitives of ``gradflow.prim.shape``.

``range_`` is exported as ``gf.range``; it keeps a trailing underscore here so
that this module can still use the builtin.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import expand_dims, reduce_max, reshape
from gradflow.ops.math_ops import cast, equal, less, zeros_like
from gradflow.ops.state_ops import identity
from gradflow.prim import rules
from gradflow.prim import shape as _prim
from gradflow.prim.array import int_vector as _int_vector  # noqa: F401 - its TF1-era name
from gradflow.prim.array import static_value
from gradflow.prim.registry import apply, constant, convert_to_tensor
from gradflow.prim.shape import _check_range

# -- range -----------------------------------------------------------------------

# TF1 picks the widest dtype of the arguments in this order.
_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64)


def _range_arg_dtype(value):
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (np.ndarray, np.generic)):
        return dtypes.as_dtype(value.dtype)
    return dtypes.float32 if isinstance(value, float) else dtypes.int32



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


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` whose every element is the scalar ``value`` (TF1).

    ``dims`` is a list of ints or a 1-D int tensor (``gf.shape(x)``).
    """
    return _prim.fill(dims, convert_to_tensor(value), name=name)


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
    out = start + (stop - start) * steps
    return out if name is None else identity(out, name=name)


lin_space = linspace

def meshgrid(*args, indexing="xy", name=None):
    """Coordinate arrays from 1-D ``args`` (TF1 ``tf.meshgrid``): with ``indexing="xy"``
    (the default) the first two outputs' axes are swapped, as in NumPy."""
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
        shaped.append(reshape(x, tuple(dims)))
    # every output has the full shape: the sum of all the (broadcast) zeros gives it
    zero = zeros_like(shaped[0])
    for s in shaped[1:]:
        zero = zero + cast(zeros_like(s), zero.dtype)
    return [s + cast(zero, s.dtype) for s in shaped]

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
