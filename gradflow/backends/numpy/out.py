"""NumPy lowerings that write into the plan's buffers (``out=``) where the ops' own
implementations do not: ``cast``, ``transposed_copy``, ``log_softmax``, ``one_hot``,
``where``, ``concat``, ``zeros_like``, ``ones_like``, ``reshape`` of a strided view,
``gather`` (``embedding_lookup``) and the sums, maxima and minima over axes.

Each keeps the scratch arrays it needs between calls (one set per input shape and
dtype, on the bound function, which belongs to one plan instance), so that a steady
training step allocates no array memory. Called without ``out`` they compute the
op's result as the op's own implementation does.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import KeptArrays
from gradflow.ops.index_ops import _gather_impl, _one_hot_impl
from gradflow.prim.index_checks import check_ids
from gradflow.prim.nn import _log_softmax_impl
from gradflow.prim.registry import REGISTRY


def _writes_out(fn, reads_whole=False, elementwise=False):
    """Mark ``fn`` as writing into ``out=``; ``reads_whole``: it reads more of an input
    than the element it writes; ``elementwise``: ``out`` may be one of its inputs."""
    fn.accepts_out = True
    fn.reads_whole_inputs = reads_whole
    fn.elementwise_out = elementwise
    return fn


def lower_log_softmax(xp, axis):
    kept = KeptArrays(np.empty)

    def log_softmax(x, out=None):
        if out is None:
            return _log_softmax_impl(np, x, axis)
        reduced = list(x.shape)
        reduced[axis] = 1
        top = kept.get_array("max", reduced, x.dtype)
        total = kept.get_array("sum", reduced, x.dtype)
        exps = kept.get_array("exp", x.shape, x.dtype)
        # the ufuncs' own reductions: np.max and np.sum call them after a few microseconds
        # of argument handling, which is most of the time for a classifier's small rows
        np.maximum.reduce(x, axis=axis, keepdims=True, out=top)
        np.subtract(x, top, out=out)  # reads x element by element: out may be x
        np.exp(out, out=exps)
        np.add.reduce(exps, axis=axis, keepdims=True, out=total)
        np.log(total, out=total)
        return np.subtract(out, total, out=out)

    return _writes_out(log_softmax)


def lower_one_hot(xp, depth, on_value, off_value, dtype):
    positions = np.arange(depth, dtype=np.int64)  # compared in int64: no wrap-around
    kept = KeptArrays(np.empty)

    def one_hot(indices, out=None):
        if out is None:
            return _one_hot_impl(np, indices, depth, on_value, off_value, dtype)
        if out.dtype == np.bool_ and on_value == 1 and off_value == 0:
            return np.equal(indices[..., None], positions, out=out)  # a loss's mask
        hot = kept.get_array("hot", out.shape, np.bool_)
        np.equal(indices[..., None], positions, out=hot)
        if on_value == 1 and off_value == 0:
            np.copyto(out, hot, casting="unsafe")
        else:
            out.fill(off_value)
            np.copyto(out, np.asarray(on_value, out.dtype), where=hot)
        return out

    return _writes_out(one_hot)


def lower_where(xp):
    kept = KeptArrays(np.empty)

    def where(condition, x, y, out=None):
        if out is None:
            return np.where(condition, x, y)
        if out is x:  # the plan computes it over its dying input x
            unmet = kept.get_array("unmet", condition.shape, np.bool_)
            np.copyto(out, y, where=np.logical_not(condition, out=unmet))
            return out
        if out is not y:
            np.copyto(out, y)
        np.copyto(out, x, where=condition)
        return out

    return _writes_out(where, elementwise=True)


def _lower_filled(value):
    def lower(xp):
        def filled(x, out=None):
            if out is None:
                return np.full(x.shape, value, x.dtype)
            out.fill(value)
            return out

        return _writes_out(filled, elementwise=True)

    return lower


def _lower_reshape(impl):
    """A reshape that, given ``out``, copies its input there in C order: the plan gives
    it a buffer only where its input may be a strided view (a transpose, a slice),
    whose reshape NumPy copies anyway (``copies_strided_views``)."""
    def lower(xp, **attrs):
        def reshape(x, *rest, out=None):
            if out is None:
                return impl(xp, x, *rest, **attrs)
            np.copyto(out.reshape(x.shape), x)
            return out

        reshape.copies_strided_views = True
        return _writes_out(reshape)

    return lower


def lower_concat(xp, axis):
    def concat(*parts, out=None):
        return np.concatenate(parts, axis=axis, out=out)

    return _writes_out(concat, reads_whole=True)


def lower_gather(xp, axis, validate=True):
    def gather(params, indices, out=None):
        if out is None:
            return _gather_impl(np, params, indices, axis, validate)
        if not validate:  # NumPy's own rule for the ids, as the unchecked gather has
            return np.take(params, indices, axis=axis, out=out)
        check_ids(np, indices, params.shape[axis])
        # "clip" once the ids are checked: take's default "raise" copies through a buffer
        return np.take(params, indices, axis=axis, out=out, mode="clip")

    return _writes_out(gather, reads_whole=True)


def lower_check_label_range(xp, depth, message):
    impl = REGISTRY["check_label_range"].impl

    def check_label_range(labels):
        # the ufuncs' reductions straight away: a few microseconds less than the
        # namespace's min and max, on a batch's labels where that is most of the time
        if labels.size and (np.minimum.reduce(labels, axis=None) < 0
                            or np.maximum.reduce(labels, axis=None) >= depth):
            impl(np, labels, depth, message)  # raises, with the offending label
        return labels

    return check_label_range


def _lower_reduction(reduce, impl):
    def lower(xp, axes, keepdims):
        def reduction(x, out=None):
            if out is None:
                return impl(xp, x, axes, keepdims)
            if not x.size:  # the op's own rule for an empty axis (max: TF1's -inf)
                out[...] = impl(xp, x, axes, keepdims)
                return out
            return reduce(x, axis=axes, keepdims=keepdims, out=out)

        return _writes_out(reduction, reads_whole=True)

    return lower


def _sum(x, axis, keepdims, out):  # np.sum's own reduction, without its argument handling
    return np.add.reduce(x, axis=axis, keepdims=keepdims, dtype=x.dtype, out=out)


def lower_cast(xp, dtype):
    """``cast`` into ``out=`` (the mixed-precision rewrite's casts, between a product and
    what reads it); a complex value, whose cast drops the imaginary part, goes through
    the op's own implementation."""
    impl = REGISTRY["cast"].impl

    def cast(x, out=None):
        if out is None or x.dtype.kind == "c":
            result = impl(xp, x, dtype=dtype)
            if out is None:
                return result
            x = result
        np.copyto(out, x, casting="unsafe")
        return out

    return _writes_out(cast)


def lower_transposed_copy(xp):
    """``transposed_copy`` (a matrix's transpose, row-major) into ``out=``."""
    def transposed_copy(w, out=None):
        if out is None:
            return np.ascontiguousarray(np.swapaxes(w, -1, -2))
        np.copyto(out, np.swapaxes(w, -1, -2))
        return out

    return _writes_out(transposed_copy, reads_whole=True)


LOWERINGS = {
    "cast": lower_cast,
    "transposed_copy": lower_transposed_copy,
    "reshape": _lower_reshape(REGISTRY["reshape"].impl),
    "reshape_like": _lower_reshape(REGISTRY["reshape_like"].impl),
    "zeros_like": _lower_filled(0),
    "ones_like": _lower_filled(1),
    "concat": lower_concat,
    "gather": lower_gather,
    "reduce_sum": _lower_reduction(_sum, REGISTRY["reduce_sum"].impl),
    "reduce_max": _lower_reduction(np.maximum.reduce, REGISTRY["reduce_max"].impl),
    "reduce_min": _lower_reduction(np.minimum.reduce, REGISTRY["reduce_min"].impl),
    "log_softmax": lower_log_softmax,
    "check_label_range": lower_check_label_range,
    "one_hot": lower_one_hot,
    "where": lower_where,
}
