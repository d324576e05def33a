"""Op specs of the trigonometric and hyperbolic functions, the no-NaN products, the
truncating divisions, cumulative_logsumexp, tf.bitwise and the array-manipulation ops
(gradflow/prim/math.py, prim/bitwise.py, prim/manip.py; issue 47), loaded by op_specs.py:
forward against NumPy, float64 finite differences and second-order checks on every
backend through test_ops.py."""

from __future__ import annotations

import numpy as np
from op_specs import all_unknown, ints, keep, nonzero, positive, spec, uniform

import gradflow as gf


def _unary(name, gen, ref, **kw):
    spec(name, name, getattr(gf, name), [gen], ref, **kw)


# -- trigonometric and hyperbolic functions: away from their poles and branch points ----
_unary("tan", uniform(3, 4, lo=-1.2, hi=1.2), np.tan)
_unary("asin", uniform(3, 4, lo=-0.9, hi=0.9), np.arcsin)
_unary("acos", uniform(3, 4, lo=-0.9, hi=0.9), np.arccos)
_unary("atan", uniform(3, 4, lo=-3.0, hi=3.0), np.arctan)
_unary("sinh", uniform(3, 4), np.sinh)
_unary("cosh", uniform(3, 4), np.cosh)
_unary("asinh", uniform(3, 4, lo=-3.0, hi=3.0), np.arcsinh)
_unary("acosh", positive(3, 4, lo=1.2, hi=4.0), np.arccosh)
_unary("atanh", uniform(3, 4, lo=-0.9, hi=0.9), np.arctanh)
spec("atan2", "atan2", gf.atan2, [nonzero(3, 4), nonzero(4)], np.arctan2)
spec("math_atan2_broadcast", "atan2", gf.math.atan2, [nonzero(3, 1), nonzero(1, 4)], np.arctan2)
spec("nextafter", "nextafter", gf.math.nextafter, [uniform(3, 4), uniform(4)], np.nextafter,
     tol={"float32": (0, 0), "float64": (0, 0)}, grad=())  # no gradient, as in TF1


# -- the no-NaN products: zeros in y, where the result (and the gradients) are 0 ------------
def _with_zeros(rng):
    y = rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
    y[rng.random((3, 4)) < 0.3] = 0.0
    return [rng.uniform(-2, 2, (3, 4)), y]


def _np_no_nan(op):
    def ref(x, y):
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, 0, op(x, safe)).astype(x.dtype)

    return ref


# x / y jumps at y = 0, so finite differences check only x there, and y where it has no 0
spec("div_no_nan", "div_no_nan", gf.div_no_nan, _with_zeros, _np_no_nan(np.divide), grad=(0,))
spec("div_no_nan_nonzero", "div_no_nan", gf.div_no_nan, [uniform(3, 4), nonzero(4, lo=0.5)],
     np.divide)
spec("divide_no_nan_broadcast", "div_no_nan", gf.math.divide_no_nan,
     [uniform(3, 4), lambda rng: np.array([0.0, 1.5, -0.7, 0.0])], _np_no_nan(np.divide),
     grad=(0,))
spec("multiply_no_nan", "mul_no_nan", gf.math.multiply_no_nan, _with_zeros,
     _np_no_nan(np.multiply))
spec("reciprocal_no_nan", "div_no_nan", gf.math.reciprocal_no_nan,
     [lambda rng: np.array([[0.0, 1.5, -0.7], [2.0, 0.0, -1.2]])],
     lambda x: np.where(x == 0, 0, 1 / np.where(x == 0, 1, x)).astype(x.dtype), grad=())
spec("reciprocal_no_nan_nonzero", "div_no_nan", gf.math.reciprocal_no_nan,
     [nonzero(3, 4, lo=0.5)], np.reciprocal)


# -- truncating division and remainder --------------------------------------------------------
def _truncating_ints(rng):
    return [rng.integers(-9, 9, (3, 4)).astype(np.int32),
            rng.choice([-3, -2, 2, 5], (4,)).astype(np.int32)]


spec("truncatediv_int", ("floor_divide", "check_divisor"), gf.truncatediv, _truncating_ints,
     lambda x, y: (np.trunc(x / y)).astype(np.int32), dtypes=("int32",))
spec("truncatemod_int", ("floor_mod", "check_divisor"), gf.truncatemod, _truncating_ints,
     lambda x, y: np.fmod(x, y).astype(np.int32), dtypes=("int32",))
spec("truncatemod_float", "floor_mod", gf.truncatemod,
     [lambda rng: rng.uniform(-3, 3, (3, 4)), lambda rng: np.array([0.7, -1.3, 1.9, -0.45])],
     np.fmod, grad=(0,))


# -- cumulative_logsumexp: wide ranges, where exp would overflow or underflow ----------------
def _np_clse(x, axis, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    x = np.moveaxis(x, axis, 0)
    out = np.empty_like(x)
    running = np.full(x.shape[1:], -np.inf)
    for i in range(x.shape[0]):
        if exclusive:
            out[i] = running
        running = np.logaddexp(running, x[i])
        if not exclusive:
            out[i] = running
    out = np.moveaxis(out, 0, axis)
    return np.flip(out, axis) if reverse else out


spec("cumulative_logsumexp", "cumulative_logsumexp", gf.math.cumulative_logsumexp,
     [uniform(5, 3, lo=-3.0, hi=3.0)], lambda x: _np_clse(x, 0))
spec("cumulative_logsumexp_reverse", "cumulative_logsumexp",
     lambda x: gf.math.cumulative_logsumexp(x, axis=-1, reverse=True), [uniform(2, 6)],
     lambda x: _np_clse(x, 1, reverse=True),
     needs_rank="a negative axis is resolved against the rank when the graph is built (cumsum too)")
spec("cumulative_logsumexp_exclusive", "cumulative_logsumexp",
     lambda x: gf.math.cumulative_logsumexp(x, axis=1, exclusive=True)[:, 1:],
     [uniform(2, 5, 2)], lambda x: _np_clse(x, 1, exclusive=True)[:, 1:])
spec("cumulative_logsumexp_wide", "cumulative_logsumexp",
     lambda x: gf.math.cumulative_logsumexp(x * 300.0, axis=0, exclusive=True, reverse=True),
     [uniform(6, 2)], lambda x: _np_clse(x * 300.0, 0, exclusive=True, reverse=True),
     grad=())


# -- tf.bitwise ----------------------------------------------------------------------------------
def _np_shift(op):
    def ref(x, y):
        return op(x, np.clip(y, 0, 8 * x.dtype.itemsize - 1)).astype(x.dtype)

    return ref


for _name, _np_fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor)):
    spec(_name, _name, getattr(gf.bitwise, _name),
         [ints(3, 4, lo=-50, hi=50), ints(4, lo=-50, hi=50)], _np_fn, dtypes=("int32",))
spec("bitwise_uint8", "bitwise_and", gf.bitwise.bitwise_and,
     [ints(3, 4, hi=255, dtype=np.uint8), ints(4, hi=255, dtype=np.uint8)], np.bitwise_and,
     dtypes=("uint8",))
spec("invert", "invert", gf.bitwise.invert, [ints(3, 4, lo=-50, hi=50, dtype=np.int64)],
     np.invert, dtypes=("int64",))
spec("left_shift", "left_shift", gf.bitwise.left_shift,
     [ints(3, 4, lo=-50, hi=50), ints(3, 4, lo=-3, hi=40)], _np_shift(np.left_shift),
     dtypes=("int32",))
spec("right_shift", "right_shift", gf.bitwise.right_shift,
     [ints(3, 4, lo=-5000, hi=5000), ints(3, 4, lo=-3, hi=40)], _np_shift(np.right_shift),
     dtypes=("int32",))


# -- array manipulation ----------------------------------------------------------------------
spec("roll", "roll", lambda x: gf.roll(x, [1, -2], [0, 1]), [uniform(3, 4)],
     lambda x: np.roll(x, (1, -2), (0, 1)))
spec("roll_repeated_axis", "roll", lambda x, s: gf.manip.roll(x, s, [1, 1]),
     [uniform(2, 5), lambda rng: np.array([2, 4], np.int32)],
     lambda x, s: np.roll(x, 6, 1))


def _np_reverse_sequence(x, lengths, seq_axis, batch_axis):
    out = np.array(x)
    for b, n in enumerate(lengths):
        index = [slice(None)] * x.ndim
        index[batch_axis], index[seq_axis] = b, slice(0, n)
        out[tuple(index)] = np.flip(x[tuple(index)], seq_axis - (seq_axis > batch_axis))
    return out


spec("reverse_sequence", "reverse_sequence",
     lambda x, n: gf.reverse_sequence(x, n, seq_axis=1), [uniform(3, 4, 2),
                                                          lambda rng: np.array([2, 4, 0])],
     lambda x, n: _np_reverse_sequence(x, n, 1, 0), dynamic=keep(0, 0))
spec("reverse_sequence_batch_last", "reverse_sequence",
     lambda x, n: gf.reverse_sequence(x, n, seq_dim=0, batch_dim=1),
     [uniform(4, 3), lambda rng: np.array([3, 1, 4], np.int32)],
     lambda x, n: _np_reverse_sequence(x, n, 0, 1), dynamic=keep(0, 0))
spec("repeat", ("repeat_index", "gather"), lambda x: gf.repeat(x, [2, 0, 3], axis=0),
     [uniform(3, 2)], lambda x: np.repeat(x, [2, 0, 3], axis=0), value_shaped=True,
     dynamic=keep(0, 0))
spec("repeat_flat_scalar", ("repeat_index", "gather"), lambda x: gf.repeat(x, 2),
     [uniform(2, 3)], lambda x: np.repeat(x, 2), value_shaped=True, dynamic=None)
spec("unique_with_counts", ("unique", "unique_index", "unique_count"),
     lambda x: list(gf.unique_with_counts(x)), [ints(9, hi=4)],
     lambda x: _np_unique_counts(x), dtypes=("int32",), value_shaped=True)


def _np_unique_counts(x):
    y, first, idx, count = np.unique(x, return_index=True, return_inverse=True,
                                     return_counts=True)
    order = np.argsort(first, kind="stable")
    rank = np.argsort(order)
    return [y[order], rank[idx].astype(np.int32), count[order].astype(np.int32)]


def _np_searchsorted(s, v, side):
    rows = [np.searchsorted(a, b, side=side) for a, b in zip(s.reshape(-1, s.shape[-1]),
                                                              v.reshape(-1, v.shape[-1]))]
    return np.array(rows, np.int32).reshape(v.shape)


spec("searchsorted", "searchsorted", lambda s, v: gf.searchsorted(s, v),
     [lambda rng: np.sort(rng.integers(-3, 3, (2, 5)).astype(np.float64), -1),
      lambda rng: rng.integers(-4, 4, (2, 3)).astype(np.float64)],
     lambda s, v: _np_searchsorted(s, v, "left"))
spec("searchsorted_right_1d", "searchsorted",
     lambda s, v: gf.searchsorted(s, v, side="right", out_type=gf.int64),
     [lambda rng: np.arange(-2, 4).astype(np.int32), ints(5, lo=-3, hi=5)],
     lambda s, v: np.searchsorted(s, v, side="right"), dtypes=("int32",))
spec("setdiff1d", ("setdiff1d", "setdiff1d_index"), lambda x, y: list(gf.setdiff1d(x, y)),
     [ints(8, hi=6), ints(3, hi=6)],
     lambda x, y: [x[~np.isin(x, y)], np.nonzero(~np.isin(x, y))[0].astype(np.int32)],
     dtypes=("int32",), value_shaped=True)
spec("invert_permutation", "invert_permutation", gf.invert_permutation,
     [lambda rng: rng.permutation(6).astype(np.int32)],
     lambda x: np.argsort(x).astype(np.int32), dtypes=("int32",))


# -- block moves: composites (reshape, transpose, pad, slices) -------------------------------
def _np_space_to_depth(x, b):
    n, h, w, c = x.shape
    return (x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
            .reshape(n, h // b, w // b, b * b * c))


def _np_depth_to_space(x, b):
    n, h, w, c = x.shape
    return (x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
            .reshape(n, h * b, w * b, c // (b * b)))


spec("space_to_depth", ("reshape", "transpose"), lambda x: gf.space_to_depth(x, 2),
     [uniform(2, 4, 2, 3)], lambda x: _np_space_to_depth(x, 2), dynamic=keep(0, 1, 2, 3))
spec("space_to_depth_nchw", ("reshape", "transpose"),
     lambda x: gf.nn.space_to_depth(x, 2, data_format="NCHW"), [uniform(1, 2, 4, 4)],
     lambda x: _np_space_to_depth(x.transpose(0, 2, 3, 1), 2).transpose(0, 3, 1, 2),
     dynamic=None)
spec("depth_to_space", ("reshape", "transpose"), lambda x: gf.depth_to_space(x, 2),
     [uniform(2, 2, 1, 8)], lambda x: _np_depth_to_space(x, 2), dynamic=all_unknown,
     needs_rank="the block move reshapes the 4 axes it names when the graph is built")


def _np_space_to_batch(x, block, pads):
    x = np.pad(x, [(0, 0)] + pads + [(0, 0)] * (x.ndim - 1 - len(block)))
    n, m = x.shape[0], len(block)
    split = [n]
    for i, b in enumerate(block):
        split += [x.shape[1 + i] // b, b]
    y = x.reshape(split + list(x.shape[1 + m:]))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    perm += list(range(1 + 2 * m, y.ndim))
    return y.transpose(perm).reshape([n * int(np.prod(block))]
                                     + [x.shape[1 + i] // b for i, b in enumerate(block)]
                                     + list(x.shape[1 + m:]))


spec("space_to_batch_nd", ("pad", "reshape", "transpose"),
     lambda x: gf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]]), [uniform(2, 2, 2, 3)],
     lambda x: _np_space_to_batch(x, [2, 2], [[1, 1], [0, 2]]), dynamic=keep(0, 1, 2, 3))
spec("space_to_batch_1d", ("pad", "reshape", "transpose"),
     lambda x: gf.manip.space_to_batch_nd(x, [3], [[1, 2]]), [uniform(2, 6)],
     lambda x: _np_space_to_batch(x, [3], [[1, 2]]), dynamic=None)
spec("batch_to_space_nd", ("reshape", "transpose"),
     lambda x: gf.batch_to_space_nd(x, [2, 2], [[1, 1], [0, 2]]), [uniform(8, 2, 2, 1)],
     lambda x: _np_batch_to_space(x, [2, 2], [[1, 1], [0, 2]]), dynamic=keep(0, 1, 2, 3))


def _np_batch_to_space(x, block, crops):
    """The inverse of _np_space_to_batch, from a scatter of positions."""
    m = len(block)
    batch = x.shape[0] // int(np.prod(block))
    full = [batch] + [x.shape[1 + i] * b for i, b in enumerate(block)] + list(x.shape[1 + m:])
    positions = np.arange(int(np.prod(full))).reshape(full).astype(np.float64)
    moved = _np_space_to_batch(positions, block, [[0, 0]] * m).astype(np.int64)
    out = np.zeros(int(np.prod(full)), x.dtype)
    out[moved.reshape(-1)] = x.reshape(-1)
    out = out.reshape(full)
    key = (slice(None),) + tuple(slice(a, full[1 + i] - b) for i, (a, b) in enumerate(crops))
    return out[key]
