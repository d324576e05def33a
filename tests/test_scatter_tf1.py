"""``tensor_scatter_nd_update``/``_add``/``_sub``, ``broadcast_to``, ``cumprod`` and
``bincount`` against TensorFlow 2.21's ``compat.v1`` (graph mode, CPU): each expected
value is what TF gave, except where a comment says that gradflow differs, and why.
(The op-spec table checks the same ops' gradients by finite differences.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def _run(fetches, feed=None, backend="numpy"):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


# -- tensor_scatter_nd_* ------------------------------------------------------------------


def _scatter_example():
    tensor = gf.constant(np.arange(8.0).reshape(4, 2))
    indices = gf.constant([[1], [3], [1]])  # row 1 twice
    updates = gf.constant([[10.0, 11.0], [20.0, 21.0], [30.0, 31.0]], gf.float64)
    weights = gf.constant(np.arange(1.0, 9.0).reshape(4, 2))
    outs = {"update": gf.tensor_scatter_nd_update(tensor, indices, updates),
            "add": gf.tensor_scatter_nd_add(tensor, indices, updates),
            "sub": gf.tensor_scatter_nd_sub(tensor, indices, updates)}
    grads = {k: gf.gradients(gf.reduce_sum(o * weights), [tensor, updates])
             for k, o in outs.items()}
    return outs, grads


def test_tensor_scatter_values_and_gradients(backend):
    outs, grads = _scatter_example()
    assert [tuple(o.shape) for o in outs.values()] == [(4, 2)] * 3
    assert outs["update"].op.name == "TensorScatterUpdate" and outs["add"].dtype is gf.float64
    values, got = _run([outs, grads], backend=backend)
    np.testing.assert_array_equal(values["update"], [[0, 1], [30, 31], [4, 5], [20, 21]])
    np.testing.assert_array_equal(values["add"], [[0, 1], [42, 45], [4, 5], [26, 28]])
    np.testing.assert_array_equal(values["sub"], [[0, 1], [-38, -39], [4, 5], [-14, -14]])
    weights = np.arange(1.0, 9.0).reshape(4, 2)
    gathered = weights[[1, 3, 1]]
    np.testing.assert_array_equal(got["update"][0], [[1, 2], [0, 0], [5, 6], [0, 0]])
    # TF gives the overwritten first update of row 1 the gathered gradient too ([3, 4]);
    # its value does not reach the result, so its derivative is 0
    np.testing.assert_array_equal(got["update"][1], [[0, 0], [7, 8], [3, 4]])
    for how, sign in (("add", 1), ("sub", -1)):
        np.testing.assert_array_equal(got[how][0], weights)
        np.testing.assert_array_equal(got[how][1], sign * gathered)


def test_repeated_indices_the_last_update_wins(backend):
    # TF's CPU kernel writes the updates in order: the same result on every run
    small = gf.tensor_scatter_nd_update(gf.zeros([3]), [[0], [2], [0], [0]], [1.0, 2.0, 3.0, 4.0])
    ids = np.random.default_rng(0).integers(0, 5, (100000, 1))
    big = gf.tensor_scatter_nd_update(gf.zeros([5], gf.float64), ids,
                                      np.arange(100000, dtype=np.float64))
    got_small, got_big = _run([small, big], backend=backend)
    np.testing.assert_array_equal(got_small, [4, 0, 2])
    np.testing.assert_array_equal(got_big, [99999, 99991, 99987, 99996, 99988])
    t, u = gf.constant([0.0, 0.0, 0.0]), gf.constant([1.0, 2.0, 3.0])
    out = gf.tensor_scatter_nd_update(t, [[1], [1], [2]], u)
    value, gt, gu = _run([out] + gf.gradients(gf.reduce_sum(out * [1.0, 2.0, 3.0]), [t, u]),
                         backend=backend)
    np.testing.assert_array_equal(value, [0, 2, 3])
    np.testing.assert_array_equal(gt, [1, 0, 0])
    np.testing.assert_array_equal(gu, [0, 2, 3])  # TF: [2, 2, 3] (see above)


def test_index_tuples_replace_slices_of_a_3d_tensor(backend):
    t3 = gf.constant(np.arange(24.0).reshape(2, 3, 4))
    out = gf.tensor_scatter_update(t3, [[0, 1], [1, 2]], np.array([[-1.0] * 4, [-2.0] * 4]))
    np.testing.assert_array_equal(_run(out, backend=backend), [
        [[0, 1, 2, 3], [-1, -1, -1, -1], [8, 9, 10, 11]],
        [[12, 13, 14, 15], [16, 17, 18, 19], [-2, -2, -2, -2]]])


def test_integer_bool_and_empty_scatters(backend):
    outs = [gf.tensor_scatter_add(gf.constant([1, 2, 3]), [[0]], [5]),
            gf.tensor_scatter_nd_update(gf.constant([True, False]), [[1]], [True]),
            gf.tensor_scatter_nd_update(gf.constant([1.0, 2.0]), gf.zeros([0, 1], gf.int32),
                                        gf.zeros([0])),
            gf.tensor_scatter_nd_update(gf.constant([1.0, 2.0]), gf.constant([[1]], gf.int64),
                                        [5.0])]
    got = _run(outs, backend=backend)
    for value, want, dtype in zip(got, [[6, 2, 3], [True, True], [1, 2], [1, 5]],
                                  [np.int32, np.bool_, np.float32, np.float32]):
        assert value.dtype == dtype
        np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("make,message", [
    (lambda: gf.tensor_scatter_nd_update(gf.constant([1.0, 2.0, 3.0]), [[0], [5]], [1.0, 2.0]),
     r"indices\[1\] = \[5\] does not index into shape \[3\]"),
    (lambda: gf.tensor_scatter_nd_add(gf.constant([1.0, 2.0, 3.0]), [[-1]], [1.0]),
     r"indices\[0\] = \[-1\] does not index into shape \[3\]"),
    (lambda: gf.tensor_scatter_nd_sub(gf.zeros([2, 3]), [[0, 1], [1, 3]], [1.0, 2.0]),
     r"indices\[1\] = \[1, 3\] does not index into shape \[2,3\]"),
    (lambda: gf.scatter_nd([[0], [5]], [1.0, 2.0], [3]),  # TF's ScatterNd says the same
     r"indices\[1\] = \[5\] does not index into shape \[3\]"),
])
def test_an_index_out_of_range_fails_the_run(backend, make, message):
    with pytest.raises(InvalidArgumentError, match=message):
        _run(make(), backend=backend)


def test_a_fed_index_out_of_range_fails_the_run(backend):
    ids = gf.placeholder(gf.int32, [None, 1])
    out = gf.tensor_scatter_nd_update(gf.constant([1.0, 2.0, 3.0]), ids, [1.0, 2.0])
    with pytest.raises(InvalidArgumentError,
                       match=r"indices\[1\] = \[3\] does not index into shape \[3\]"):
        _run(out, {ids: [[0], [3]]}, backend=backend)


def test_updates_of_the_wrong_shape(backend):
    # TF: a ValueError when the graph is built ("Dimensions [1,2) of input[shape=[4,3]] =
    # [3] must match dimensions [1,2) of updates[shape=[2,2]] = [2]"), and an
    # InvalidArgumentError when it runs ("Outer dimensions of indices and update must match")
    with pytest.raises(ValueError, match=r"updates 'u' have shape \[2, 2\], but indices of "
                                         r"shape \[2, 1\] into a tensor of shape \[4, 3\] need "
                                         r"updates of shape \[2, 3\]"):
        gf.tensor_scatter_nd_update(gf.zeros([4, 3]), [[0], [1]], gf.zeros([2, 2], name="u"))
    fed = gf.placeholder(gf.float32, None, name="fed")
    out = gf.tensor_scatter_nd_update(gf.zeros([4, 3]), [[0], [1]], fed)
    with pytest.raises(InvalidArgumentError, match=r"updates 'fed' have shape \[3, 2\]"):
        _run(out, {fed: np.zeros((3, 2))}, backend=backend)
    # sizes that agree in another shape would scatter the wrong elements: refused too
    with pytest.raises(InvalidArgumentError, match=r"updates 'fed' have shape \[3, 2\]"):
        _run(gf.tensor_scatter_nd_add(gf.zeros([2, 3]), [[0], [1]], fed),
             {fed: np.zeros((3, 2))}, backend=backend)
    # TF builds these and fails when they run; gradflow knows before
    with pytest.raises(ValueError, match="index tuples of length 2 .* for a tensor of rank 1"):
        gf.tensor_scatter_nd_update(gf.zeros([4]), [[0, 1]], [1.0])
    with pytest.raises(ValueError, match="index tuples of length 0"):
        gf.tensor_scatter_nd_add(gf.zeros([2]), gf.zeros([2, 0], gf.int32), gf.zeros([2, 2]))


def test_tensor_scatter_static_shapes():
    t, i = gf.placeholder(gf.float32, [None, 3]), gf.placeholder(gf.int32, [None, 1])
    u = gf.placeholder(gf.float32, [None, 3])
    assert tuple(gf.tensor_scatter_nd_update(t, i, u).shape) == (None, 3)  # TF: (None, 3)
    assert gf.tensor_scatter_nd_add(gf.placeholder(gf.float32), i, u).shape is None  # <unknown>


# -- broadcast_to -----------------------------------------------------------------------


def test_broadcast_to_values_and_gradient(backend):
    x = gf.constant([[1.0], [2.0], [3.0]])
    b = gf.broadcast_to(x, [2, 3, 4])
    assert tuple(b.shape) == (2, 3, 4) and b.op.name == "BroadcastTo"
    w = gf.constant(np.arange(24.0).reshape(2, 3, 4), gf.float32)
    (g,) = gf.gradients(gf.reduce_sum(b * w), [x])
    (g_empty,) = gf.gradients(gf.reduce_sum(gf.broadcast_to(x, [0, 3, 2])), [x])
    outs = [b, g, gf.broadcast_to(gf.constant([1.0]), [0, 1]), g_empty,
            gf.broadcast_to(gf.constant([1, 2]), [2, 2]), gf.broadcast_to(5.0, [2]),
            gf.broadcast_to(gf.constant([1.0]), gf.constant([2, 1], gf.int64))]
    got = _run(outs, backend=backend)
    np.testing.assert_array_equal(got[0], np.broadcast_to([[1.0], [2.0], [3.0]], (2, 3, 4)))
    np.testing.assert_array_equal(got[1], [[60], [92], [124]])
    assert got[2].shape == (0, 1)
    np.testing.assert_array_equal(got[3], [[0], [0], [0]])
    assert got[4].dtype == np.int32
    np.testing.assert_array_equal(got[4], [[1, 2], [1, 2]])
    np.testing.assert_array_equal(got[5], [5, 5])
    np.testing.assert_array_equal(got[6], [[1], [1]])
    got[0][0, 0, 0] = 9.0  # a value of its own, not a read-only broadcast view


def test_broadcast_to_static_shapes():
    sh = gf.placeholder(gf.int32, [None])
    px = gf.placeholder(gf.float32, [None, 3])
    n = gf.shape(px)[0]
    assert gf.broadcast_to(gf.zeros([3]), sh).shape is None  # TF: <unknown>
    assert tuple(gf.broadcast_to(px, gf.shape(gf.zeros([2, 5, 3]))).shape) == (2, 5, 3)
    assert tuple(gf.broadcast_to(gf.zeros([3]), gf.stack([n, 3])).shape) == (None, 3)
    # an axis of the input larger than 1 fixes the result's (TF: (None, 3) as well)
    assert tuple(gf.broadcast_to(gf.zeros([1, 3]), gf.stack([n, n])).shape) == (None, 3)


def test_broadcast_to_errors(backend):
    # TF: "Dimensions must be equal, but are 3 and 2" and "Shape must be at most rank 1
    # but is rank 2" when built; "Incompatible shapes: [3] vs. [2,2]", "Rank of input (2)
    # must be no greater than rank of output shape (1)" and "Dimension -1 must be >= 0"
    # when run
    with pytest.raises(ValueError, match="axis 0 of the input has size 3, the shape asks 2"):
        gf.broadcast_to(gf.zeros([3]), [2, 2])
    with pytest.raises(ValueError, match="the input has rank 2, more than the 1 of the shape"):
        gf.broadcast_to(gf.zeros([2, 3]), [3])
    with pytest.raises(ValueError, match="sizes >= 0"):  # TF builds it, fails when run
        gf.broadcast_to(gf.zeros([1]), [-1])
    sh = gf.placeholder(gf.int32, [None])
    for x, dims, message in ((gf.zeros([3]), [2, 2], r"cannot broadcast a tensor of shape "
                              r"\[3\] to shape \[2, 2\]"),
                             (gf.zeros([2, 3]), [3], "the input has rank 2, more than"),
                             (gf.zeros([1]), [-1], r"the shape \[-1\] has a negative size")):
        with pytest.raises(InvalidArgumentError, match=message):
            _run(gf.broadcast_to(x, sh), {sh: dims}, backend=backend)


# -- cumprod -------------------------------------------------------------------------------

WEIGHTS = np.array([1.0, -2.0, 3.0, 0.5, 1.5])
VARIANTS = list(itertools.product((False, True), (False, True)))  # (exclusive, reverse)
# TF's values and gradients of sum(cumprod(x) * WEIGHTS), per (exclusive, reverse)
TF_NO_ZEROS = {
    (False, False): ([2, 6, 3, 12, -12], [-6.5, -5, -6, -3, 18]),
    (False, True): ([-12, -6, -2, -4, -1], [-6, 0, -12, -2, 9.5]),
    (True, False): ([1, 2, 6, 3, 12], [16.75, 12.5, 39, 4.5, 0]),
    (True, True): ([-6, -2, -4, -1, 1], [0, -2, -4, -3.5, 14.5]),
}
TF_VALUES_WITH_ZEROS = {
    (2.0, 0.0, 3.0, 0.0, 5.0): [[2, 0, 0, 0, 0], [0, 0, 0, 0, 5], [1, 2, 0, 0, 0],
                                [0, 0, 0, 5, 1]],
    (0.0, 2.0, 3.0, 4.0, 5.0): [[0, 0, 0, 0, 0], [0, 120, 60, 20, 5], [1, 0, 0, 0, 0],
                                [120, 60, 20, 5, 1]],
    (1.0, 2.0, 3.0, 4.0, 0.0): [[1, 2, 6, 24, 0], [0, 0, 0, 0, 0], [1, 1, 2, 6, 24],
                                [0, 0, 0, 0, 1]],
}


def _members(n, exclusive, reverse):
    """For each output i, the positions whose product it is."""
    order = list(range(n))[::-1] if reverse else list(range(n))
    return {order[i]: order[:i] if exclusive else order[:i + 1] for i in range(n)}


def np_cumprod_grad(x, w, exclusive, reverse):
    """d sum(cumprod(x) * w) / dx by its definition: no division, exact at zeros."""
    members = _members(len(x), exclusive, reverse)
    return np.array([sum(w[i] * np.prod([x[j] for j in s if j != k])
                         for i, s in members.items() if k in s) for k in range(len(x))])


def np_cumprod_hvp(x, w, v, exclusive, reverse):
    """d sum(grad * v) / dx of the gradient above, by its definition."""
    members = _members(len(x), exclusive, reverse)
    return np.array([sum(v[k] * w[i] * np.prod([x[j] for j in s if j not in (k, m)])
                         for i, s in members.items() for k in s if m in s and k != m)
                     for m in range(len(x))])


def _cumprod_graph():
    x = gf.placeholder(gf.float64, [None])
    return x, {(ex, rv): (y, gf.gradients(gf.reduce_sum(y * WEIGHTS), [x])[0])
               for ex, rv in VARIANTS for y in [gf.cumprod(x, exclusive=ex, reverse=rv)]}


def test_cumprod_values_and_gradients_as_tf_without_zeros(backend):
    x, fetches = _cumprod_graph()
    got = _run(fetches, {x: [2.0, 3.0, 0.5, 4.0, -1.0]}, backend)
    for key, (value, grad) in TF_NO_ZEROS.items():
        np.testing.assert_allclose(got[key][0], value, rtol=1e-12)
        np.testing.assert_allclose(got[key][1], grad, rtol=1e-12, atol=1e-12)


def test_cumprod_gradient_is_exact_at_zeros(backend):
    # TF's gradient divides by x (div_no_nan), which gives 0 at every zero, where the
    # derivative need not be: for x = [2, 0, 3, 0, 5] TF gives [1, 0, 0, 0, 0] for
    # [1, 14, 0, 0, 0], and for [1, 2, 3, 4, 0] [27, 13, 10, 3, 0] for [27, 13, 10, 3, 36]
    x, fetches = _cumprod_graph()
    for values, tf_values in TF_VALUES_WITH_ZEROS.items():
        got = _run(fetches, {x: list(values)}, backend)
        for key, tf_value in zip(VARIANTS, tf_values):
            np.testing.assert_array_equal(got[key][0], tf_value)
            np.testing.assert_allclose(got[key][1], np_cumprod_grad(np.array(values), WEIGHTS,
                                                                    *key), rtol=1e-12)
    got = _run(fetches[(False, False)][1], {x: [2.0, 0.0, 3.0, 0.0, 5.0]}, backend)
    np.testing.assert_array_equal(got, [1, 14, 0, 0, 0])


@pytest.mark.parametrize("values", [[2.0, 3.0, 0.5, 4.0, -1.0], [2.0, 0.0, 3.0, 0.5, 4.0],
                                    [0.0, 2.0, 0.0, 3.0, 0.0], [1.5, -2.0, 3.0, 0.5, 0.0]])
def test_cumprod_second_order(backend, values):
    # TF, for the first input: [6.5, 4.75, 20.5, 8.75, -16.5] (the same); for the second
    # [0, 0, 0, 0, 0], where the derivative is [16.75, 78.375, 12.5, 39, 4.5]
    x = gf.placeholder(gf.float64, [None])
    v = np.array([0.5, 1.0, -1.0, 2.0, 1.0])
    for ex, rv in VARIANTS:
        (g,) = gf.gradients(gf.reduce_sum(gf.cumprod(x, exclusive=ex, reverse=rv) * WEIGHTS),
                            [x])
        (h,) = gf.gradients(gf.reduce_sum(g * v), [x])
        got_g, got_h = _run([g, h], {x: values}, backend)
        np.testing.assert_allclose(got_g, np_cumprod_grad(np.array(values), WEIGHTS, ex, rv),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_h, np_cumprod_hvp(np.array(values), WEIGHTS, v, ex, rv),
                                   rtol=1e-12, atol=1e-12)


def test_cumprod_axes_dtypes_and_errors(backend):
    m = gf.constant(np.arange(1.0, 7.0).reshape(2, 3))
    outs = [gf.cumprod(m, axis=1), gf.math.cumprod(m, axis=-1, exclusive=True),
            gf.cumprod(gf.constant([1, 2, 3])), gf.cumprod(gf.zeros([0, 2]), exclusive=True)]
    got = _run(outs, backend=backend)
    np.testing.assert_array_equal(got[0], [[1, 2, 6], [4, 20, 120]])
    np.testing.assert_array_equal(got[1], [[1, 1, 2], [1, 4, 20]])
    assert got[2].dtype == np.int32
    np.testing.assert_array_equal(got[2], [1, 2, 6])
    assert got[3].shape == (0, 2)
    with pytest.raises(TypeError, match="bool"):  # TF: a TypeError too
        gf.cumprod(gf.constant([True]))
    with pytest.raises(ValueError, match="scalar"):  # TF builds it; gradflow refuses
        gf.cumprod(gf.constant(2.0))


# -- bincount -------------------------------------------------------------------------------


def test_bincount_as_tf(backend):
    a = gf.constant([1, 1, 3, 5, 0])
    w = gf.constant([0.5, 1.0, 2.0, 3.0, 4.0])
    counts = gf.bincount(a)
    assert tuple(counts.shape) == (6,) and counts.dtype is gf.int32  # TF: (6,) too
    assert tuple(gf.bincount(a, minlength=4, maxlength=4).shape) == (4,)
    assert gf.bincount(a, weights=w).dtype is gf.float32
    outs = [counts, gf.math.bincount(a, minlength=8), gf.bincount(a, maxlength=3),
            gf.bincount(a, minlength=2, maxlength=2), gf.bincount(a, weights=w),
            gf.bincount(a, dtype=gf.float64), gf.bincount(gf.zeros([0], gf.int32)),
            gf.bincount(gf.zeros([0], gf.int32), minlength=3),
            gf.bincount(gf.constant([[1, 2], [2, 2]])), gf.bincount(gf.constant([1, 2], gf.int64)),
            gf.bincount(gf.constant([1.0, 2.7])), gf.bincount(a, minlength=gf.constant(7)),
            gf.bincount(a, weights=gf.constant([1, 2, 3, 4, 5]))]
    want = [[1, 2, 0, 1, 0, 1], [1, 2, 0, 1, 0, 1, 0, 0], [1, 2, 0], [1, 2],
            [4, 1.5, 0, 2, 0, 3], [1, 2, 0, 1, 0, 1], [], [0, 0, 0], [0, 1, 3], [0, 1, 1],
            [0, 1, 1], [1, 2, 0, 1, 0, 1, 0], [5, 3, 0, 3, 0, 4]]
    dtypes = [np.int32] * 4 + [np.float32, np.float64] + [np.int32] * 7
    for value, expected, dtype in zip(_run(outs, backend=backend), want, dtypes):
        assert value.dtype == dtype
        np.testing.assert_array_equal(value, expected)
    # TF raises LookupError (no gradient defined); gradflow's gradient is None, as argmax's
    assert gf.gradients(gf.reduce_sum(gf.bincount(a, weights=w)), [w]) == [None]


def test_bincount_errors(backend):
    with pytest.raises(InvalidArgumentError, match="Input arr must be non-negative!"):
        _run(gf.bincount(gf.constant([1, -1])), backend=backend)
    with pytest.raises(InvalidArgumentError, match="2147483648 bins do not fit"):
        # TF: a ValueError when built, "size (-2147483648) must be non-negative"
        _run(gf.bincount(gf.constant([2 ** 31 - 1])), backend=backend)
    # TF: "`weights` must be the same shape as `arr` or a length-0 `Tensor`" when run
    with pytest.raises(ValueError, match=r"weights 'w' of shape \(2,\) for arr"):
        gf.bincount(gf.constant([1, 2, 3]), weights=gf.constant([1.0, 2.0], name="w"))
    fed = gf.placeholder(gf.float32, None)
    with pytest.raises(InvalidArgumentError, match=r"weights of shape \[2\] for arr of shape "
                                                   r"\[3\]"):
        _run(gf.bincount(gf.constant([1, 2, 3]), weights=fed), {fed: [1.0, 2.0]}, backend)
