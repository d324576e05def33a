"""Array-manipulation primitives: ``roll``, ``reverse_sequence``, the index vectors of
``repeat``, the counts of ``unique_with_counts``, ``searchsorted``, ``setdiff1d`` (one op
per result) and ``invert_permutation``.

Each is written once against the Array API; checks of values (a sequence length past
its axis, a permutation that is none) raise ``InvalidArgumentError`` with the same text
on every backend. TF1's functions over them, and the composites of reshapes and
transposes (``space_to_depth``, ``space_to_batch_nd``...), are in
``gradflow.ops.manip_ops``.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim import call, rules
from gradflow.prim.registry import apply, register
from gradflow.prim.sort import _unique_parts

# -- roll ------------------------------------------------------------------------------


def _roll_impl(xp, x, shift, axes):
    """``x`` rolled by the ints of ``shift`` along ``axes`` (repeated axes add up)."""
    shifts = [int(s) for s in xp.reshape(shift, (-1,))]
    total = {}
    for axis, s in zip(axes, shifts):
        total[axis] = total.get(axis, 0) + s
    if not total or x.ndim == 0:
        return x
    return xp.roll(x, shift=tuple(total.values()), axis=tuple(total))


def _roll_infer(shapes, in_dtypes, axes):
    if not in_dtypes[1].is_integer:
        raise TypeError(f"the shift must be integers, got {in_dtypes[1].name}")
    if shapes[1] is not None and len(shapes[1]) > 1:
        raise ValueError(f"the shift must be a scalar or 1-D, got shape {shapes[1]}")
    if shapes[1] is not None and shapes[1] and shapes[1][0] not in (None, len(axes)):
        raise ValueError(f"{shapes[1][0]} shifts for {len(axes)} axes")
    return shapes[0], in_dtypes[0]


register("roll", _roll_impl, _roll_infer,
         grad=lambda n, g: [apply("roll", [g, call.negative(n.inputs[1])], axes=n.attrs["axes"]),
                            None], takes_complex=True)


# -- reverse_sequence ---------------------------------------------------------------------


def _reverse_sequence_impl(xp, x, lengths, seq_axis, batch_axis):
    """Each batch row of ``x`` with its first ``lengths[b]`` steps along ``seq_axis``
    reversed: a ``take`` of the rows of ``x`` with both axes moved to the front."""
    batch, steps = x.shape[batch_axis], x.shape[seq_axis]
    lengths = xp.astype(lengths, xp.int64)
    if lengths.shape[0] != batch:
        raise InvalidArgumentError(f"reverse_sequence: {lengths.shape[0]} sequence lengths "
                                   f"for a batch of {batch}")
    if batch and bool(xp.any((lengths < 0) | (lengths > steps))):
        raise InvalidArgumentError(f"reverse_sequence: a sequence length lies outside "
                                   f"[0, {steps}], the size of the sequence axis")
    rest = [a for a in range(x.ndim) if a not in (batch_axis, seq_axis)]
    moved = xp.permute_dims(x, (batch_axis, seq_axis, *rest))
    t = xp.arange(steps, dtype=xp.int64, device=_device(x))[None, :]
    n = lengths[:, None]
    source = xp.where(t < n, n - 1 - t, t)  # [batch, steps]
    rows = xp.arange(batch, dtype=xp.int64, device=_device(x))[:, None] * steps + source
    flat = xp.reshape(moved, (batch * steps, *moved.shape[2:]))
    out = xp.reshape(xp.take(flat, xp.reshape(rows, (-1,)), axis=0), moved.shape)
    back = [0] * x.ndim
    for i, a in enumerate((batch_axis, seq_axis, *rest)):
        back[a] = i
    return xp.permute_dims(out, tuple(back))


def _reverse_sequence_infer(shapes, in_dtypes, seq_axis, batch_axis):
    if not in_dtypes[1].is_integer:
        raise TypeError(f"seq_lengths must be integers, got "
                        f"{in_dtypes[1].name}")
    if shapes[1] is not None and len(shapes[1]) != 1:
        raise ValueError(f"seq_lengths must be 1-D, got shape {shapes[1]}")
    return shapes[0], in_dtypes[0]


register("reverse_sequence", _reverse_sequence_impl, _reverse_sequence_infer,
         grad=lambda n, g: [apply("reverse_sequence", [g, n.inputs[1]], **n.attrs), None])


# -- repeat's indices, unique's counts -----------------------------------------------------


def _repeat_index_impl(xp, repeats, x, axis):
    """``[0]*r0 + [1]*r1 + ...``: for each output position along ``axis``, the input one."""
    size = x.shape[axis]
    repeats = xp.astype(xp.reshape(repeats, (-1,)), xp.int64)
    if repeats.shape[0] == 1:
        repeats = xp.broadcast_to(repeats, (size,))
    if repeats.shape[0] != size:
        raise InvalidArgumentError(f"repeat: {repeats.shape[0]} repeats for an axis of size "
                                   f"{size}")
    if size and bool(xp.any(repeats < 0)):
        raise InvalidArgumentError("repeat: a repeat count is negative")
    return xp.repeat(xp.arange(size, dtype=xp.int64, device=_device(x)), repeats)


def _repeat_index_infer(shapes, in_dtypes, axis):
    if not in_dtypes[0].is_integer:
        raise TypeError(f"repeats must be integers, got {in_dtypes[0].name}")
    return (None,), dtypes.int64


register("repeat_index", _repeat_index_impl, _repeat_index_infer, grad=None,
         shape_only_inputs=(1,))


def _unique_count_impl(xp, x, out_idx):
    """How many times each of ``unique(x)``'s values occurs, in the same order."""
    _, idx = _unique_parts(xp, x)
    size = idx.shape[0]
    if size == 0:
        return xp.zeros((0,), dtype=out_idx.resolve(xp), device=_device(x))
    ordered = xp.sort(idx)
    starts = xp.concat([xp.ones((1,), dtype=xp.bool, device=_device(x)),
                        ordered[1:] != ordered[:-1]])
    first = xp.astype(xp.nonzero(starts)[0], xp.int64)
    ends = xp.concat([first[1:], xp.asarray([size], dtype=xp.int64, device=_device(x))])
    return xp.astype(ends - first, out_idx.resolve(xp))


def _unique_count_infer(shapes, in_dtypes, out_idx):
    if len(shapes[0]) != 1:
        raise ValueError(f"unique_with_counts needs a 1-D tensor, got shape {tuple(shapes[0])}")
    return (None,), out_idx


register("unique_count", _unique_count_impl, _unique_count_infer, grad=None)


# -- searchsorted, setdiff1d, invert_permutation -------------------------------------------


def _searchsorted_impl(xp, sorted_sequence, values, side, out_type):
    """The insertion points of ``values`` in ``sorted_sequence``, row by row of their
    leading axes (the Array API's ``searchsorted`` takes one sorted row)."""
    kind = out_type.resolve(xp)
    if sorted_sequence.ndim == 1:
        return xp.astype(xp.searchsorted(sorted_sequence, values, side=side), kind)
    lead = sorted_sequence.shape[:-1]
    if tuple(values.shape[:-1]) != tuple(lead):
        raise InvalidArgumentError(f"searchsorted: the leading shapes differ: {tuple(lead)} "
                                   f"and {tuple(values.shape[:-1])}")
    rows = xp.reshape(sorted_sequence, (-1, sorted_sequence.shape[-1]))
    queries = xp.reshape(values, (-1, values.shape[-1]))
    out = [xp.searchsorted(rows[i, ...], queries[i, ...], side=side)
           for i in range(rows.shape[0])]
    if not out:
        return xp.zeros(values.shape, dtype=kind, device=_device(values))
    return xp.reshape(xp.astype(xp.stack(out), kind), values.shape)


def _searchsorted_infer(shapes, in_dtypes, side, out_type):
    rules.same_dtype(in_dtypes)
    if in_dtypes[0].is_bool:
        raise TypeError("the inputs must be numeric, got bool")
    if len(shapes[0]) == 0 or len(shapes[1]) == 0:
        raise ValueError("sorted_sequence and values need rank 1 or more")
    if len(shapes[0]) != len(shapes[1]):
        raise ValueError(f"sorted_sequence has rank {len(shapes[0])}, values "
                         f"{len(shapes[1])}; they must match")
    for a, b in zip(shapes[0][:-1], shapes[1][:-1]):
        if a is not None and b is not None and a != b:
            raise ValueError(f"the leading shapes of sorted_sequence {tuple(shapes[0])} and "
                             f"values {tuple(shapes[1])} differ")
    return shapes[1], out_type


register("searchsorted", _searchsorted_impl, _searchsorted_infer, grad=None)


def _setdiff_positions(xp, x, y):
    """The positions of the elements of 1-D ``x`` that are not in ``y``, in order."""
    if y.shape[0] == 0:
        return xp.arange(x.shape[0], dtype=xp.int64, device=_device(x))
    ys = xp.sort(y)
    at = xp.clip(xp.searchsorted(ys, x), 0, ys.shape[0] - 1)
    return xp.astype(xp.nonzero(xp.take(ys, at) != x)[0], xp.int64)


def _setdiff_infer(shapes, in_dtypes, index_dtype=None):
    dtype = rules.same_dtype(in_dtypes)
    for s in shapes:
        if len(s) != 1:
            raise ValueError(f"setdiff1d needs 1-D tensors, got shape {tuple(s)}")
    return (None,), dtype if index_dtype is None else index_dtype


register("setdiff1d", lambda xp, x, y: xp.take(x, _setdiff_positions(xp, x, y)),
         _setdiff_infer, grad=None)
register("setdiff1d_index",
         lambda xp, x, y, index_dtype: xp.astype(_setdiff_positions(xp, x, y),
                                                 index_dtype.resolve(xp)),
         _setdiff_infer, grad=None)


def _invert_permutation_impl(xp, x):
    n = x.shape[0]
    order = xp.argsort(x, stable=True)
    expected = xp.arange(n, dtype=x.dtype, device=_device(x))
    if n and not bool(xp.all(xp.take(x, order) == expected)):
        raise InvalidArgumentError(f"invert_permutation: the input is not a permutation of "
                                   f"0..{n - 1}")
    return xp.astype(order, x.dtype)


def _invert_permutation_infer(shapes, in_dtypes):
    if in_dtypes[0] not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"invert_permutation takes int32 or int64, got {in_dtypes[0].name}")
    if len(shapes[0]) != 1:
        raise ValueError(f"invert_permutation needs a 1-D tensor, got shape {tuple(shapes[0])}")
    return shapes[0], in_dtypes[0]


register("invert_permutation", _invert_permutation_impl, _invert_permutation_infer, grad=None)
