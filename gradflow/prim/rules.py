"""Shared shape and dtype rules used by the op families."""

from __future__ import annotations


def broadcast_shapes(a, b):
    """The broadcast of two static shapes (``None`` = unknown), or ValueError.

    An unknown rank gives an unknown shape, as TF1's shape inference does: the
    broadcast may add axes, so not even the known operand's shape is kept.
    """
    if a is None or b is None:
        return None
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


class DTypeMismatch(TypeError):
    """Inputs that must share a dtype do not: raised by ``same_dtype``.

    ``positions`` are the indices (among the node's inputs) that must agree, and
    ``first``/``other`` the first two that do not; ``registry.apply`` names them
    (or converts a weakly typed placeholder among them).
    """

    def __init__(self, positions, first, other, in_dtypes):
        self.positions, self.first, self.other = tuple(positions), first, other
        a, b = in_dtypes[first], in_dtypes[other]
        hint = "cast one with gf.cast" if a.kind == b.kind else \
            "use gf.cast first (the Array API does not promote across kinds)"
        super().__init__(f"inputs {first} and {other} are {a.name} and {b.name}; tensors do "
                         f"not promote (TF1 semantics): {hint}")


def same_dtype(in_dtypes, offset=0):
    """The one dtype all of ``in_dtypes`` share, or DTypeMismatch (tensors never promote).

    ``offset`` is the index of ``in_dtypes[0]`` among the node's inputs (for the error).
    """
    out = in_dtypes[0]
    for k, dt in enumerate(in_dtypes[1:], 1):
        if dt is not out:
            positions = range(offset, offset + len(in_dtypes))
            raise DTypeMismatch(positions, offset, offset + k,
                                {offset + i: d for i, d in enumerate(in_dtypes)})
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
    if shape is None:  # unknown rank: a reduction over all axes is still a scalar
        return () if axes is None and not keepdims else None
    if axes is None:
        axes = range(len(shape))
    else:  # a reduction built on an unknown rank keeps its axes as given: -1 is the last
        axes = set(normalize_axis(axes, len(shape)))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def known_rank(x, op_name, why="") -> int:
    """The rank of tensor ``x``, or a ``ValueError`` naming ``op_name``, ``x`` and the
    user's line where the rank is unknown (a placeholder made without ``shape=``).

    >>> rank = known_rank(x, "expand_dims")
    """
    if x.shape is not None:
        return len(x.shape)
    from gradflow.graph import user_source_line

    raise ValueError(f"{op_name}: the rank of '{x.name}' (created at {x.source}) is unknown"
                     f"{why}; give the placeholder it comes from a shape (shape=[None, ...] "
                     f"keeps the sizes open); at {user_source_line()}")
