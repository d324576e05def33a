"""Shared shape and dtype rules used by the op families."""

from __future__ import annotations

from gradflow import dtypes


def broadcast_shapes(a, b):
    """The broadcast of two static shapes (``None`` = unknown), or ValueError."""
    if a is None or b is None:
        raise ValueError("an input has no value (it is an operation)")
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None or da == db:
            out.append(da)
        else:
            raise ValueError(f"shapes {tuple(a)} and {tuple(b)} do not broadcast "
                             f"(dimension {-i}: {da} vs {db})")
    return tuple(reversed(out))


def same_dtype(in_dtypes):
    """Array API promotion across all inputs."""
    out = in_dtypes[0]
    for dt in in_dtypes[1:]:
        out = dtypes.result_type(out, dt)
    return out


def require_floating(dtype, what="input"):
    if not dtype.is_floating:
        raise TypeError(f"the {what} must be floating point, got {dtype.name}")


def normalize_axis(axis, ndim, allow_none=True):
    """A tuple of non-negative axes, or all axes for ``None``."""
    if axis is None:
        if not allow_none:
            raise ValueError("axis must be given")
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for ax in axes:
        ax = int(ax)
        if not -ndim <= ax < max(ndim, 1):
            raise ValueError(f"axis {ax} is out of range for rank {ndim}")
        out.append(ax % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(out))


def reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
