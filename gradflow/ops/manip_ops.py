"""TF1's array-manipulation functions: ``roll``, ``reverse_sequence``, ``repeat``,
``unique_with_counts``, ``searchsorted``, ``setdiff1d``, ``invert_permutation`` (over the
primitives of ``gradflow.prim.manip``) and the block moves ``space_to_depth``,
``depth_to_space``, ``space_to_batch_nd``, ``batch_to_space_nd`` (and TF1's 4-D
``space_to_batch``/``batch_to_space``), composites of ``pad``, ``reshape``,
``transpose`` and slices, so their gradients are those ops' own.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import reshape, transpose
from gradflow.ops.index_ops import gather, shape
from gradflow.ops.shape_ops import pad
from gradflow.ops.sort_ops import unique
from gradflow.ops.state_ops import identity
from gradflow.prim import manip as _manip  # noqa: F401 - registers the primitives applied here
from gradflow.prim import rules
from gradflow.prim.array import static_value
from gradflow.prim.registry import apply, convert_to_tensor

UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])
UniqueWithCounts.__doc__ = ("The result of ``unique_with_counts``: the values ``y``, each "
                            "element's ``idx`` in it, and each value's ``count``.")
ListDiff = collections.namedtuple("ListDiff", ["out", "idx"])
ListDiff.__doc__ = ("The result of ``setdiff1d``: the values ``out`` of ``x`` not in ``y``, "
                    "and their positions ``idx`` in ``x``.")


def _int_list(value, what):
    """``value`` (a Python int or list, or a constant) as a list of ints; a tensor whose
    value is known only when the graph runs is refused, naming it."""
    static = static_value(value)
    if static is None:
        raise TypeError(f"{what} must be known when the graph is built (Python ints or a "
                        f"constant), got '{value.name}'")
    return [int(v) for v in np.asarray(static).reshape(-1)]


def roll(input, shift, axis, name=None):  # noqa: A002 - TF1 name
    """``input`` with its elements moved ``shift`` places along ``axis``, those past the
    end coming back at the front (TF1 ``tf.roll``, ``tf.manip.roll``): ``shift`` and
    ``axis`` are ints or lists of one length, a repeated axis moved by the sum of its
    shifts; ``shift`` may be a tensor, ``axis`` must be known when the graph is built.

    >>> gf.roll([0, 1, 2, 3, 4], shift=2, axis=0)   # [3, 4, 0, 1, 2]
    """
    x = convert_to_tensor(input)
    axes = _int_list(axis, "roll: axis")
    if x.shape is not None:
        axes = [rules.normalize_axis(a, len(x.shape))[0] for a in axes]
    elif any(a < 0 for a in axes):
        raise ValueError(f"roll: a negative axis needs the rank of '{x.name}'")
    shift = convert_to_tensor(shift, dtype=None if hasattr(shift, "dtype") else dtypes.int32)
    return apply("roll", [x, shift], name=name or "Roll", axes=tuple(axes))


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """For each batch row ``b`` (along ``batch_axis``, default 0), its first
    ``seq_lengths[b]`` steps along ``seq_axis`` reversed and the rest kept (TF1
    ``tf.reverse_sequence``; ``seq_dim``/``batch_dim`` are its deprecated names): what a
    bidirectional RNN's backward direction reads. A length past the axis is an
    ``InvalidArgumentError`` when run, as in TF1.

    >>> gf.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], seq_axis=1)   # [[2, 1, 3], [6, 5, 4]]
    """
    seq_axis = _one_of(seq_axis, seq_dim, "seq_axis", "seq_dim")
    batch_axis = _one_of(batch_axis, batch_dim, "batch_axis", "batch_dim")
    if seq_axis is None:
        raise ValueError("reverse_sequence: seq_axis is required")
    batch_axis = 0 if batch_axis is None else batch_axis
    x = convert_to_tensor(input)
    rank = rules.known_rank(x, "reverse_sequence")
    seq_axis, batch_axis = (rules.normalize_axis(int(a), rank)[0] for a in (seq_axis, batch_axis))
    if seq_axis == batch_axis:
        raise ValueError(f"reverse_sequence: seq_axis and batch_axis are both {seq_axis}")
    lengths = convert_to_tensor(seq_lengths, dtype=None if hasattr(seq_lengths, "dtype")
                                else dtypes.int64)
    return apply("reverse_sequence", [x, lengths], name=name or "ReverseSequence",
                 seq_axis=seq_axis, batch_axis=batch_axis)


def _one_of(value, old, what, old_what):
    if old is None:
        return value
    if value is not None:
        raise ValueError(f"give {what}= or {old_what}=, not both")
    return old


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF1 name
    """Each element of ``input`` repeated along ``axis`` (TF 1.15 ``tf.repeat``):
    ``repeats`` is one count for all or one per element of that axis; with ``axis=None``
    the flattened ``input`` is repeated. Differentiable (a ``gather``).

    >>> gf.repeat([[1, 2], [3, 4]], repeats=[2, 3], axis=0)   # rows 1, 1, 2, 2, 2
    """
    x = convert_to_tensor(input)
    if axis is None:
        x, axis = reshape(x, [-1]), 0
    if x.shape is not None:
        axis = rules.normalize_axis(int(axis), len(x.shape))[0]
    elif axis < 0:
        raise ValueError(f"repeat: a negative axis needs the rank of '{x.name}'")
    counts = convert_to_tensor(repeats, dtype=None if hasattr(repeats, "dtype") else dtypes.int64)
    if counts.shape is not None and len(counts.shape) > 1:
        raise ValueError(f"repeat: repeats must be a scalar or 1-D, got shape {counts.shape}")
    index = apply("repeat_index", [counts, x], axis=int(axis))
    return gather(x, index, axis=axis, name=name or "Repeat")


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """The distinct values of the 1-D ``x`` in order of first appearance, each
    element's position among them, and how often each occurs (TF1
    ``tf.unique_with_counts``): ``UniqueWithCounts(y, idx, count)``.

    >>> y, idx, count = gf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])   # count [2 1 3 1 2]
    """
    x = convert_to_tensor(x)
    y, idx = unique(x, out_idx=out_idx, name=name)
    count = apply("unique_count", [x], name=(name or "Unique") + "_count",
                  out_idx=dtypes.as_dtype(out_idx))
    return UniqueWithCounts(y, idx, count)


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """Where each of ``values`` would go in ``sorted_sequence`` to keep it sorted (TF1
    ``tf.searchsorted``): the first such place (``side="left"``) or the last
    (``"right"``); both tensors are searched row by row of their innermost axis, their
    leading axes alike. No gradient.

    >>> gf.searchsorted([0.0, 1.0, 2.0], [1.0, 1.5], side="right")   # [2, 2]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"searchsorted: out_type must be int32 or int64, got {out_type.name}")
    seq = convert_to_tensor(sorted_sequence)
    values = convert_to_tensor(values, like=seq)
    return apply("searchsorted", [seq, values], name=name or "SearchSorted", side=side,
                 out_type=out_type)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """The elements of the 1-D ``x`` not in ``y``, in their order in ``x`` (repeats
    kept), and their positions in ``x`` (TF1 ``tf.setdiff1d``): ``ListDiff(out, idx)``.

    >>> out, idx = gf.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])   # [2, 4, 6], [1, 3, 5]
    """
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, like=x)
    index_dtype = dtypes.as_dtype(index_dtype)
    if index_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"setdiff1d: index_dtype must be int32 or int64, got {index_dtype.name}")
    name = name or "ListDiff"
    return ListDiff(apply("setdiff1d", [x, y], name=name),
                    apply("setdiff1d_index", [x, y], name=name + "_idx",
                          index_dtype=index_dtype))


def invert_permutation(x, name=None):
    """The inverse of the permutation ``x`` of ``0..n-1``: ``y[x[i]] = i`` (TF1
    ``tf.invert_permutation``); anything but a permutation is an ``InvalidArgumentError``
    when run.

    >>> gf.invert_permutation([3, 4, 0, 2, 1])   # [2, 4, 3, 0, 1]
    """
    x = convert_to_tensor(x)
    return apply("invert_permutation", [x], name=name or "InvertPermutation")


# -- block moves: composites of reshape and transpose --------------------------------------


def _dims(x, what):
    """The sizes of ``x``: Python ints where known, scalar tensors where not."""
    rank = rules.known_rank(x, what)
    run = None
    dims = []
    for i in range(rank):
        if x.shape[i] is not None:
            dims.append(int(x.shape[i]))
        else:
            run = shape(x) if run is None else run
            dims.append(run[i])
    return dims


def _divisible(size, block, x, axis, what):
    if isinstance(size, int) and size % block:
        raise ValueError(f"{what}: axis {axis} of '{x.name}' has size {size}, not a multiple "
                         f"of the block size {block}")


def _block_size(block_size, what):
    block = int(block_size)
    if block < 2:
        raise ValueError(f"{what}: block_size must be at least 2, got {block}")
    return block


def _channels_last(x, data_format, what):
    """``x`` as NHWC, and the function that takes a NHWC result back to ``data_format``."""
    if data_format == "NHWC":
        return x, lambda t, name: identity(t, name=name)
    if data_format == "NCHW":
        return (transpose(x, [0, 2, 3, 1]),
                lambda t, name: transpose(t, [0, 3, 1, 2], name=name))
    raise ValueError(f"{what}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")


def space_to_depth(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """Each ``block_size`` x ``block_size`` block of the spatial axes of the 4-D
    ``input`` moved into the channels (TF1 ``tf.space_to_depth``, ``tf.nn``'s too): NHWC
    ``[b, h, w, c]`` gives ``[b, h / s, w / s, s * s * c]``, the channels of a block in
    row-major order of its pixels, as TF's.

    >>> gf.space_to_depth(gf.zeros([1, 4, 4, 3]), 2)   # shape [1, 2, 2, 12]
    """
    what = "space_to_depth"
    block = _block_size(block_size, what)
    x, back = _channels_last(convert_to_tensor(input), data_format, what)
    if rules.known_rank(x, what) != 4:
        raise ValueError(f"{what}: the input '{x.name}' must be 4-D, got rank {len(x.shape)}")
    n, h, w, c = _dims(x, what)
    _divisible(h, block, x, 1, what)
    _divisible(w, block, x, 2, what)
    blocks = reshape(x, [n, h // block, block, w // block, block, c])
    moved = transpose(blocks, [0, 1, 3, 2, 4, 5])
    out = reshape(moved, [n, h // block, w // block, block * block * c])
    return back(out, name or "SpaceToDepth")


def depth_to_space(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
    """The inverse of ``space_to_depth`` (TF1 ``tf.depth_to_space``): NHWC
    ``[b, h, w, s * s * c]`` gives ``[b, h * s, w * s, c]``.

    >>> gf.depth_to_space(gf.zeros([1, 2, 2, 12]), 2)   # shape [1, 4, 4, 3]
    """
    what = "depth_to_space"
    block = _block_size(block_size, what)
    x, back = _channels_last(convert_to_tensor(input), data_format, what)
    if rules.known_rank(x, what) != 4:
        raise ValueError(f"{what}: the input '{x.name}' must be 4-D, got rank {len(x.shape)}")
    n, h, w, c = _dims(x, what)
    _divisible(c, block * block, x, 3, what)
    blocks = reshape(x, [n, h, w, block, block, c // (block * block)])
    moved = transpose(blocks, [0, 1, 3, 2, 4, 5])
    out = reshape(moved, [n, h * block, w * block, c // (block * block)])
    return back(out, name or "DepthToSpace")


def _block_args(x, block_shape, pairs, what, pairs_name):
    block = _int_list(block_shape, f"{what}: block_shape")
    flat = _int_list(pairs, f"{what}: {pairs_name}")
    if not block or len(flat) != 2 * len(block):
        raise ValueError(f"{what}: {pairs_name} must be [{len(block)}, 2], one pair per "
                         f"block axis, got {len(flat)} values")
    if any(b < 1 for b in block) or any(p < 0 for p in flat):
        raise ValueError(f"{what}: block sizes must be positive and {pairs_name} "
                         "non-negative")
    rank = rules.known_rank(x, what)
    if rank < 1 + len(block):
        raise ValueError(f"{what}: '{x.name}' has rank {rank}; it needs a batch axis and "
                         f"{len(block)} spatial axes")
    return block, [flat[2 * i:2 * i + 2] for i in range(len(block))]


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    """The spatial axes 1..M of ``input`` zero-padded by ``paddings`` and cut into
    ``block_shape`` blocks whose offsets go to the batch axis (TF1
    ``tf.space_to_batch_nd``): ``[b, s1, .., sM, rest]`` gives
    ``[b * prod(block), (s1 + pads) / b1, .., rest]``, batch offset-major as TF's.
    ``block_shape`` and ``paddings`` must be known when the graph is built.
    """
    what = "space_to_batch_nd"
    x = convert_to_tensor(input)
    block, pads = _block_args(x, block_shape, paddings, what, "paddings")
    m = len(block)
    rank = len(x.shape)
    x = pad(x, [[0, 0]] + pads + [[0, 0]] * (rank - 1 - m))
    dims = _dims(x, what)
    split = [dims[0]]
    for i, b in enumerate(block):
        _divisible(dims[1 + i], b, x, 1 + i, what)
        split += [dims[1 + i] // b, b]
    split += dims[1 + m:]
    blocks = reshape(x, split)
    offsets = [2 + 2 * i for i in range(m)]
    perm = offsets + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    moved = transpose(blocks, perm)
    out_dims = [dims[0] * math.prod(block)] + [dims[1 + i] // b for i, b in enumerate(block)]
    return reshape(moved, out_dims + dims[1 + m:], name=name or "SpaceToBatchND")


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of ``space_to_batch_nd`` (TF1 ``tf.batch_to_space_nd``): the batch
    axis's blocks put back into the spatial axes 1..M, then ``crops`` cut off.
    ``block_shape`` and ``crops`` must be known when the graph is built.
    """
    what = "batch_to_space_nd"
    x = convert_to_tensor(input)
    block, cuts = _block_args(x, block_shape, crops, what, "crops")
    m = len(block)
    dims = _dims(x, what)
    prod = math.prod(block)
    _divisible(dims[0], prod, x, 0, what)
    batch = dims[0] // prod
    blocks = reshape(x, block + [batch] + dims[1:])
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, m + len(dims)))
    moved = transpose(blocks, perm)
    full = [batch] + [dims[1 + i] * b for i, b in enumerate(block)] + dims[1 + m:]
    out = reshape(moved, full)
    if not any(a or b for a, b in cuts):
        return identity(out, name=name or "BatchToSpaceND")
    key = (slice(None),) + tuple(slice(a, full[1 + i] - b) for i, (a, b) in enumerate(cuts))
    return identity(out[key], name=name or "BatchToSpaceND")


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """TF1's ``tf.space_to_batch`` (``tf.nn.space_to_batch``): ``space_to_batch_nd`` of
    a 4-D NHWC ``input`` with the square block ``block_size`` (``block_shape`` is TF's
    other name for it)."""
    block = _one_of(block_size, block_shape, "block_size", "block_shape")
    if block is None:
        raise ValueError("space_to_batch: block_size is required")
    return space_to_batch_nd(input, [int(block)] * 2, paddings, name=name or "SpaceToBatch")


def batch_to_space(input, crops, block_size, name=None, block_shape=None):  # noqa: A002
    """TF1's ``tf.batch_to_space``: ``batch_to_space_nd`` of a 4-D NHWC ``input`` with
    the square block ``block_size``."""
    block = _one_of(block_size, block_shape, "block_size", "block_shape")
    return batch_to_space_nd(input, [int(block)] * 2, crops, name=name or "BatchToSpace")
