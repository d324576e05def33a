"""TF1 array ops and deprecated argument names, checked against TF1's documented values.

The op table (``op_specs.py``) checks forward, shapes and gradients of every op on
every backend; these tests pin down TF1 behaviour: exact values from TF1's own
docstrings, dtypes, static shapes, deprecated spellings and error messages.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as tf
from gradflow.errors import InvalidArgumentError


def run(backend, fetches, feed_dict=None):
    with tf.Session(backend=backend) as sess:
        return sess.run(fetches, feed_dict=feed_dict)


T3 = np.array([[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]], [[5, 5, 5], [6, 6, 6]]],
              np.int32)

# -- range, fill, eye --------------------------------------------------------------------


def test_range_values_and_dtypes(backend):
    cases = [tf.range(5), tf.range(3, 18, 3), tf.range(10, 0, -3), tf.range(0.0, 1.0, 0.25),
             tf.range(3, dtype=tf.float64), tf.range(1, 2.5, 0.5), tf.range(np.int64(4))]
    want = [np.arange(5, dtype=np.int32), np.array([3, 6, 9, 12, 15], np.int32),
            np.array([10, 7, 4, 1], np.int32), np.array([0, 0.25, 0.5, 0.75], np.float32),
            np.arange(3, dtype=np.float64), np.array([1, 1.5, 2], np.float32),
            np.arange(4, dtype=np.int64)]
    for t, w, got in zip(cases, want, run(backend, cases)):
        assert t.shape == w.shape
        assert got.dtype == w.dtype, t
        np.testing.assert_array_equal(got, w)


def test_range_of_a_tensor_limit(backend):
    x = tf.placeholder(tf.float32, (None, 2))
    r = tf.range(tf.shape(x)[0])
    assert r.shape == (None,) and r.dtype is tf.int32
    got = run(backend, r, {x: np.zeros((4, 2))})
    np.testing.assert_array_equal(got, np.arange(4, dtype=np.int32))
    start = tf.placeholder(tf.int32, ())
    rf = tf.range(start, 3.0)  # a float limit makes the range float32, as in TF1
    assert rf.dtype is tf.float32
    np.testing.assert_array_equal(run(backend, rf, {start: 1}), np.array([1.0, 2.0], np.float32))


def test_range_errors():
    with pytest.raises(ValueError, match="delta must not be 0"):
        tf.range(0, 5, 0)
    with pytest.raises(ValueError, match="start .5. must be <= limit .2."):
        tf.range(5, 2)


def test_range_run_time_error_names_the_values(backend):
    n = tf.placeholder(tf.int32, ())
    r = tf.range(n, 2)
    with pytest.raises(InvalidArgumentError, match=r"range.*start \(5\) must be <= limit \(2\)"):
        run(backend, r, {n: 5})


def test_fill(backend):
    x = tf.placeholder(tf.float32, (None, 3))
    a = tf.fill([2, 3], 9)
    b = tf.fill(tf.shape(x), 0.5)
    assert a.dtype is tf.int32 and a.shape == (2, 3)
    assert b.dtype is tf.float32 and b.shape == (None, 3)
    got_a, got_b = run(backend, [a, b], {x: np.zeros((2, 3))})
    np.testing.assert_array_equal(got_a, np.full((2, 3), 9, np.int32))
    np.testing.assert_array_equal(got_b, np.full((2, 3), 0.5, np.float32))


def test_fill_gradient_sums(backend):
    v = tf.placeholder(tf.float64, ())
    (g,) = tf.gradients(tf.reduce_sum(tf.fill([2, 3], v) * 2.0), [v])
    assert run(backend, g, {v: 1.0}) == 12.0


def test_eye(backend):
    n = tf.placeholder(tf.int32, ())
    fetches = [tf.eye(2), tf.eye(2, 3, dtype=tf.int32), tf.eye(2, batch_shape=[2]), tf.eye(n)]
    a, b, c, d = run(backend, fetches, {n: 3})
    np.testing.assert_array_equal(a, np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(b, np.eye(2, 3, dtype=np.int32))
    assert c.shape == (2, 2, 2) and (c == np.eye(2)).all()
    np.testing.assert_array_equal(d, np.eye(3, dtype=np.float32))


# -- tile, pad, reverse, size, rank ----------------------------------------------------


def test_tile(backend):
    x = tf.placeholder(tf.int32, (None, 3))
    t = tf.tile(x, [2, 1])
    assert t.shape == (None, 3)
    value = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    np.testing.assert_array_equal(run(backend, t, {x: value}), np.tile(value, (2, 1)))
    assert tf.tile(tf.constant([[1, 2]]), [3, 2]).shape == (3, 4)


def test_tile_multiples_tensor_and_its_gradient(backend):
    x = tf.placeholder(tf.float64, (1, 2))
    y = tf.placeholder(tf.float64, (None,))
    t = tf.tile(x, tf.stack([tf.shape(y)[0], 1]))
    (g,) = tf.gradients(tf.reduce_sum(t), [x])
    value, grad = run(backend, [t, g], {x: [[1.0, 2.0]], y: np.zeros(3)})
    np.testing.assert_array_equal(value, [[1, 2]] * 3)
    np.testing.assert_array_equal(grad, [[3.0, 3.0]])  # each element was copied 3 times


def test_pad_modes_match_tf1_docs(backend):
    t = tf.constant([[1, 2, 3], [4, 5, 6]])
    paddings = [[1, 1], [2, 2]]
    fetches = [tf.pad(t, paddings), tf.pad(t, paddings, "REFLECT"),
               tf.pad(t, paddings, "SYMMETRIC"), tf.pad(t, [[0, 0], [1, 0]], constant_values=9)]
    constant, reflect, symmetric, nines = run(backend, fetches)
    np.testing.assert_array_equal(constant, [[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0],
                                             [0, 0, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(reflect, [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1],
                                            [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1]])
    np.testing.assert_array_equal(symmetric, [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2],
                                              [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]])
    np.testing.assert_array_equal(nines, [[9, 1, 2, 3], [9, 4, 5, 6]])
    assert constant.dtype == np.int32


def test_pad_errors():
    x = tf.placeholder(tf.float32, (2, 3))
    with pytest.raises(ValueError, match="REFLECT padding .2, 0. is too large for axis 0"):
        tf.pad(x, [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="mode must be one of"):
        tf.pad(x, [[0, 0], [0, 0]], "WRAP")
    with pytest.raises(ValueError, match="2 rows for an input of rank 3"):
        tf.pad(tf.zeros((1, 1, 1)), [[0, 0], [0, 0]])


def test_pad_reflect_size_checked_at_run_time(backend):
    x = tf.placeholder(tf.float32, (None,))
    with pytest.raises(InvalidArgumentError, match="too large for axis 0 of size 2"):
        run(backend, tf.pad(x, [[2, 0]], "REFLECT"), {x: [1.0, 2.0]})


def test_reverse(backend):
    x = tf.constant(np.arange(6).reshape(2, 3))
    a, b, c, d = run(backend, [tf.reverse(x, [1]), tf.reverse_v2(x, [0, -1]),
                               tf.reverse(x, [True, False]), tf.reverse(x, [])])
    np.testing.assert_array_equal(a, [[2, 1, 0], [5, 4, 3]])
    np.testing.assert_array_equal(b, [[5, 4, 3], [2, 1, 0]])
    np.testing.assert_array_equal(c, [[3, 4, 5], [0, 1, 2]])
    np.testing.assert_array_equal(d, np.arange(6).reshape(2, 3))


def test_size_and_rank_are_int32_scalars(backend):
    x = tf.placeholder(tf.float32, (None, 3, 2))
    size, rank = tf.size(x), tf.rank(x)
    assert size.shape == () and size.dtype is tf.int32 and rank.dtype is tf.int32
    got_size, got_rank = run(backend, [size, rank], {x: np.zeros((4, 3, 2))})
    assert got_size == 24 and got_size.dtype == np.int32
    assert got_rank == 3 and got_rank.dtype == np.int32
    assert run(backend, tf.size(x, out_type=tf.int64), {x: np.zeros((0, 3, 2))}).dtype == np.int64


# -- slice and strided_slice --------------------------------------------------------------


def test_slice_matches_tf1_docs(backend):
    t = tf.constant(T3)
    got = run(backend, [tf.slice(t, [1, 0, 0], [1, 1, 3]), tf.slice(t, [1, 0, 0], [1, 2, 3]),
                        tf.slice(t, [1, 0, 0], [2, 1, 3]), tf.slice(t, [1, 1, 0], [-1, -1, 2])])
    np.testing.assert_array_equal(got[0], [[[3, 3, 3]]])
    np.testing.assert_array_equal(got[1], [[[3, 3, 3], [4, 4, 4]]])
    np.testing.assert_array_equal(got[2], [[[3, 3, 3]], [[5, 5, 5]]])
    np.testing.assert_array_equal(got[3], [[[4, 4]], [[6, 6]]])


def test_slice_static_shape_and_errors():
    x = tf.placeholder(tf.float32, (None, 5))
    assert tf.slice(x, [0, 1], [-1, 3]).shape == (None, 3)
    with pytest.raises(ValueError, match="goes past axis 1 of 'Placeholder' .size 5."):
        tf.slice(x, [0, 3], [-1, 3])
    with pytest.raises(ValueError, match="one entry per axis"):
        tf.slice(x, [0], [1])
    with pytest.raises(TypeError, match="begin must be known"):
        tf.slice(x, tf.placeholder(tf.int32, (2,)), [1, 1])


def test_strided_slice_matches_tf1_docs(backend):
    t = tf.constant(T3)
    got = run(backend, [tf.strided_slice(t, [1, 0, 0], [2, 1, 3], [1, 1, 1]),
                        tf.strided_slice(t, [1, 0, 0], [2, 2, 3], [1, 1, 1]),
                        tf.strided_slice(t, [1, -1, 0], [2, -3, 3], [1, -1, 1])])
    np.testing.assert_array_equal(got[0], [[[3, 3, 3]]])
    np.testing.assert_array_equal(got[1], [[[3, 3, 3], [4, 4, 4]]])
    np.testing.assert_array_equal(got[2], [[[4, 4, 4], [3, 3, 3]]])


def test_strided_slice_masks(backend):
    x = tf.constant(np.arange(24).reshape(2, 3, 4))
    v = np.arange(24).reshape(2, 3, 4)
    fetches = [
        tf.strided_slice(x, [0, 1], [0, 3], begin_mask=1, end_mask=1),  # x[:, 1:3]
        tf.strided_slice(x, [1, 0], [2, 0], shrink_axis_mask=1, end_mask=2),  # x[1, :]
        tf.strided_slice(x, [0, 2], [0, 3], ellipsis_mask=1),  # x[..., 2:3]
        tf.strided_slice(x, [0, 0, 1], [0, 0, 2], new_axis_mask=2, begin_mask=1, end_mask=1,
                         shrink_axis_mask=4),  # x[:, None, 1]
    ]
    want = [v[:, 1:3], v[1, :], v[..., 2:3], v[:, None, 1]]
    for got, w, t in zip(run(backend, fetches), want, fetches):
        np.testing.assert_array_equal(got, w)
        assert tuple(t.shape) == w.shape
    with pytest.raises(ValueError, match="must not hold 0"):
        tf.strided_slice(x, [0], [1], [0])


# -- gather_nd and boolean_mask --------------------------------------------------------


def test_gather_nd_matches_tf1_docs(backend):
    params = tf.constant([[1, 2], [3, 4]])
    got = run(backend, [tf.gather_nd(params, [[0, 0], [1, 1]]), tf.gather_nd(params, [[1], [0]]),
                        tf.gather_nd(params, [[[0, 1]], [[1, 0]]]), tf.gather_nd(params, [1, 0])])
    np.testing.assert_array_equal(got[0], [1, 4])
    np.testing.assert_array_equal(got[1], [[3, 4], [1, 2]])
    np.testing.assert_array_equal(got[2], [[2], [3]])
    assert got[3] == 3


def test_gather_nd_gradient_adds_repeated_indices(backend):
    params = tf.placeholder(tf.float64, (2, 3))
    out = tf.gather_nd(params, [[0, 1], [1, 2], [0, 1]])
    (g,) = tf.gradients(tf.reduce_sum(out * tf.constant([1.0, 2.0, 4.0], tf.float64)), [params])
    np.testing.assert_array_equal(run(backend, g, {params: np.zeros((2, 3))}),
                                  [[0, 5, 0], [0, 0, 2]])


def test_gather_nd_errors(backend):
    params = tf.placeholder(tf.float32, (2, 2))
    with pytest.raises(ValueError, match="index tuples of length 3 for params of rank 2"):
        tf.gather_nd(params, [[0, 0, 0]])
    with pytest.raises(InvalidArgumentError,
                       match=r"indices\[0\] = \[0, 2\] does not index into param shape \[2,2\]"):
        run(backend, tf.gather_nd(params, [[0, 2]]), {params: np.zeros((2, 2))})


def test_boolean_mask(backend):
    x = tf.placeholder(tf.float32, (None, 2))
    mask = tf.placeholder(tf.bool, (None,))
    out = tf.boolean_mask(x, mask)
    assert out.shape == (None, 2)
    assert tf.boolean_mask(tf.constant([0, 1, 2, 3]), [True, False, True, False]).shape == (None,)
    value = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    got = run(backend, out, {x: value, mask: [True, False, True]})
    np.testing.assert_array_equal(got, [[1, 2], [5, 6]])
    doc = run(backend, tf.boolean_mask(tf.constant([0, 1, 2, 3]), np.array([True, False] * 2)))
    np.testing.assert_array_equal(doc, [0, 2])


def test_boolean_mask_gradient_and_errors(backend):
    x = tf.placeholder(tf.float64, (2, 3))
    mask = tf.constant([[True, False, True], [False, True, True]])
    (g,) = tf.gradients(tf.reduce_sum(tf.boolean_mask(x, mask) * 3.0), [x])
    np.testing.assert_array_equal(run(backend, g, {x: np.ones((2, 3))}),
                                  [[3, 0, 3], [0, 3, 3]])
    with pytest.raises(ValueError, match="does not fit axes 0..0"):
        tf.boolean_mask(x, tf.constant([True, False, True]))
    with pytest.raises(TypeError, match="must be bool"):
        tf.boolean_mask(x, tf.constant([1, 0]))
    loose = tf.placeholder(tf.bool, (None,))
    with pytest.raises(InvalidArgumentError, match=r"the mask has shape \(3,\)"):
        run(backend, tf.boolean_mask(x, loose), {x: np.ones((2, 3)), loose: [True] * 3})


# -- reductions and deprecated argument names -------------------------------------------


def test_reduce_any_all(backend):
    x = tf.constant([[True, True], [False, False]])
    got = run(backend, [tf.reduce_all(x), tf.reduce_all(x, 0), tf.reduce_all(x, 1),
                        tf.reduce_any(x), tf.reduce_any(x, 0), tf.reduce_any(x, 1)])
    want = [False, [False, False], [True, False], True, [True, True], [True, False]]
    for g, w in zip(got, want):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, w)
    with pytest.raises(TypeError, match="must be bool"):
        tf.reduce_any(tf.constant([1.0]))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                  "reduce_prod", "reduce_any", "reduce_all"])
def test_deprecated_reduction_arguments(name, backend):
    fn = getattr(tf, name)
    value = np.array([[1.0, 2.0, 3.0], [4.0, 0.5, 6.0]])
    x = tf.constant(value > 1.5 if name in ("reduce_any", "reduce_all") else value)
    new = fn(x, axis=1, keepdims=True)
    old = fn(x, reduction_indices=[1], keep_dims=True)
    mixed = fn(x, reduction_indices=1)
    assert old.shape == (2, 1) and mixed.shape == (2,)
    got_new, got_old, got_mixed = run(backend, [new, old, mixed])
    np.testing.assert_array_equal(got_old, got_new)
    np.testing.assert_array_equal(got_mixed, got_new[:, 0])
    with pytest.raises(ValueError, match="axis= or reduction_indices=, not both"):
        fn(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="keepdims= or keep_dims=, not both"):
        fn(x, keepdims=True, keep_dims=True)


def test_reduction_positional_arguments_keep_tf1_order(backend):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    # reduce_sum(input_tensor, axis, keepdims, name, reduction_indices, keep_dims)
    assert tf.reduce_sum(x, None, True, "s").shape == (1, 1)
    assert tf.reduce_sum(x, None, None, None, [0]).shape == (2,)
    np.testing.assert_array_equal(run(backend, tf.reduce_sum(x, 1, False, "total")), [3, 7])


def test_argmax_dimension_and_arg_max(backend):
    x = tf.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    fetches = [tf.argmax(x, dimension=1), tf.argmin(x, dimension=0), tf.arg_max(x, 1),
               tf.arg_min(x, 1), tf.arg_max(x, 0, output_type=tf.int32)]
    got = run(backend, fetches)
    for g, w in zip(got, [[1, 0], [0, 1, 0], [1, 0], [0, 1], [1, 0, 1]]):
        np.testing.assert_array_equal(g, w)
    assert [g.dtype for g in got] == [np.int64] * 4 + [np.int32]
    with pytest.raises(ValueError, match="axis= or dimension=, not both"):
        tf.argmax(x, axis=0, dimension=0)


def test_softmax_dim_alias(backend):
    logits = tf.constant([[1.0, 2.0], [3.0, 5.0]])
    a, b, c, d = run(backend, [tf.nn.softmax(logits, dim=0), tf.nn.softmax(logits, axis=0),
                               tf.nn.log_softmax(logits, dim=0), tf.nn.softmax(logits)])
    np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(a.sum(0), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(np.exp(c), a, rtol=1e-6)
    np.testing.assert_allclose(d.sum(1), [1.0, 1.0], rtol=1e-6)
    with pytest.raises(ValueError, match="axis= or dim=, not both"):
        tf.nn.softmax(logits, axis=0, dim=0)


def test_to_dtype_helpers(backend):
    x = tf.constant([1.7, -2.2])
    fetches = [tf.to_float(tf.constant([1, 2])), tf.to_double(x), tf.to_int32(x), tf.to_int64(x)]
    assert [t.dtype for t in fetches] == [tf.float32, tf.float64, tf.int32, tf.int64]
    a, b, c, d = run(backend, fetches)
    np.testing.assert_array_equal(a, np.array([1, 2], np.float32))
    np.testing.assert_allclose(b, [1.7, -2.2], rtol=1e-6)
    np.testing.assert_array_equal(c, np.array([1, -2], np.int32))  # truncation, as TF1
    assert d.dtype == np.int64
    assert tf.to_float(tf.constant(1)).name.startswith("ToFloat")


# -- floordiv and mod ---------------------------------------------------------------------


def test_floordiv_and_mod_follow_python(backend):
    a = tf.constant([7, -7, 7, -7])
    b = tf.constant([3, 3, -3, -3])
    fetches = [tf.floordiv(a, b), tf.floor_div(a, b), tf.mod(a, b), tf.floormod(a, b),
               tf.mod(tf.constant([5.5, -5.5]), 2.0)]
    div, div2, mod, mod2, fmod = run(backend, fetches)
    np.testing.assert_array_equal(div, [7 // 3, -7 // 3, 7 // -3, -7 // -3])
    np.testing.assert_array_equal(div2, div)
    np.testing.assert_array_equal(mod, [7 % 3, -7 % 3, 7 % -3, -7 % -3])
    np.testing.assert_array_equal(mod2, mod)
    np.testing.assert_allclose(fmod, [1.5, 0.5])
    assert mod.dtype == np.int32


def test_mod_gradient(backend):
    x = tf.placeholder(tf.float64, ())
    y = tf.placeholder(tf.float64, ())
    gx, gy = tf.gradients(tf.mod(x, y), [x, y])
    got = run(backend, [gx, gy], {x: 7.5, y: 2.0})
    assert got == [1.0, -3.0]  # d/dy (x - floor(x/y) y) = -floor(x/y)


# -- cumsum -------------------------------------------------------------------------------


def test_cumsum_matches_tf1_docs(backend):
    x = tf.constant([1.0, 2.0, 4.0])  # a, b, c
    got = run(backend, [tf.cumsum(x), tf.cumsum(x, exclusive=True), tf.cumsum(x, reverse=True),
                        tf.cumsum(x, exclusive=True, reverse=True)])
    want = [[1, 3, 7], [0, 1, 3], [7, 6, 4], [6, 4, 0]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    ints = run(backend, tf.cumsum(tf.constant([[1, 2], [3, 4]]), axis=1))
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, [[1, 3], [3, 7]])


# -- tensordot, einsum, norm ---------------------------------------------------------------


def test_tensordot(backend):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 3, 5))
    ta, tb = tf.constant(a), tf.constant(b)
    fetches = [tf.tensordot(ta, tb, [[1, 2], [1, 0]]), tf.tensordot(ta, tb, 1),
               tf.tensordot(ta[0], ta[1], [[0, 1], [0, 1]])]
    want = [np.tensordot(a, b, [[1, 2], [1, 0]]), np.tensordot(a, b, 1),
            np.tensordot(a[0], a[1], 2)]
    for t, g, w in zip(fetches, run(backend, fetches), want):
        assert tuple(t.shape) == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-10)
    with pytest.raises(ValueError, match="axis 2 of a .size 4. and axis 0 of b .size 3."):
        tf.tensordot(ta, tf.constant(np.zeros((3, 2))), 1)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,i->", [(3,), (3,)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
    ("bi,bi->b", [(2, 3), (2, 3)]), ("i,j->ij", [(2,), (3,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("ba,ca", [(2, 3), (4, 3)]), ("...ij,...jk->...ik", [(2, 2, 3), (2, 3, 2)]),
    ("ij,jk,kl->li", [(2, 3), (3, 2), (2, 4)]), ("bijk,bjk->bi", [(2, 2, 2, 3), (2, 2, 3)]),
    ("ij, ij -> i", [(2, 3), (2, 3)]),
])
def test_einsum_matches_numpy(equation, shapes, backend):
    rng = np.random.default_rng(len(equation))
    arrays = [rng.normal(size=s) for s in shapes]
    out = tf.einsum(equation, *[tf.constant(a) for a in arrays])
    want = np.einsum(equation, *arrays)
    assert tuple(out.shape) == want.shape
    np.testing.assert_allclose(run(backend, out), want, rtol=1e-10, atol=1e-12)


def test_einsum_unknown_dims_and_gradient(backend):
    a = tf.placeholder(tf.float64, (None, None, 3))
    b = tf.placeholder(tf.float64, (None, 3, 2))
    out = tf.einsum("bij,bjk->bik", a, b)
    assert out.shape == (None, None, 2)
    ga, gb = tf.gradients(tf.reduce_sum(out), [a, b])
    va, vb = np.ones((2, 4, 3)), np.arange(12.0).reshape(2, 3, 2)
    got_ga, got_gb = run(backend, [ga, gb], {a: va, b: vb})
    np.testing.assert_allclose(got_ga, np.broadcast_to(vb.sum(-1)[:, None, :], va.shape))
    np.testing.assert_allclose(got_gb, np.full(vb.shape, 4.0))


def test_einsum_errors():
    x = tf.constant(np.zeros((2, 2)))
    with pytest.raises(NotImplementedError, match="diagonals and traces"):
        tf.einsum("ii->i", x)
    with pytest.raises(ValueError, match="names 2 operands, 1 were given"):
        tf.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="do not fit"):
        tf.einsum("ijk->k", x)


def test_norm(backend):
    v = np.array([[3.0, -4.0], [-1.0, 2.0]])
    x = tf.constant(v)
    fetches = [tf.norm(x), tf.norm(x, axis=1), tf.norm(x, ord=1, axis=0),
               tf.norm(x, ord=np.inf, axis=1), tf.norm(x, "fro", axis=(0, 1)),
               tf.norm(x, 1, axis=[0, 1]), tf.norm(x, np.inf, axis=[0, 1]),
               tf.norm(x, axis=1, keep_dims=True), tf.norm(x, ord=3, axis=1)]
    want = [np.sqrt(30.0), [5.0, np.sqrt(5.0)], [4.0, 6.0], [4.0, 2.0], np.sqrt(30.0), 6.0, 7.0,
            [[5.0], [np.sqrt(5.0)]], np.linalg.norm(v, 3, axis=1)]
    for t, g, w in zip(fetches, run(backend, fetches), want):
        assert tuple(t.shape) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="ord=2"):
        tf.norm(x, 2, axis=(0, 1))
    with pytest.raises(ValueError, match="ord must be"):
        tf.norm(x, ord=-1, axis=0)


# -- split and unstack of an axis of unknown size -------------------------------------------


def test_split_of_unknown_axis(backend):
    x = tf.placeholder(tf.float32, (None, 28), name="images")
    rows = tf.split(x, 28, 0)  # TF1 RNN tutorials split time steps like this
    assert len(rows) == 28 and rows[0].shape == (None, 28)
    value = np.arange(56 * 28, dtype=np.float32).reshape(56, 28)
    got = run(backend, rows, {x: value})
    for k, part in enumerate(got):
        np.testing.assert_array_equal(part, value[2 * k:2 * k + 2])


def test_split_of_unknown_axis_checks_divisibility_at_run_time(backend):
    x = tf.placeholder(tf.float32, (None, 4), name="images")
    parts = tf.split(x, 3, 0)
    with pytest.raises(InvalidArgumentError) as err:
        run(backend, parts, {x: np.zeros((7, 4))})
    message = str(err.value)
    assert "'images'" in message and "size 7" in message and "3 equal parts" in message


def test_split_sizes_of_unknown_axis(backend):
    x = tf.placeholder(tf.float32, (2, None), name="seq")
    a, b, c = tf.split(x, [1, -1, 2], axis=1)
    assert a.shape == (2, 1) and b.shape == (2, None) and c.shape == (2, 2)
    value = np.arange(12, dtype=np.float32).reshape(2, 6)
    got = run(backend, [a, b, c], {x: value})
    for g, w in zip(got, np.split(value, [1, 4], axis=1)):
        np.testing.assert_array_equal(g, w)
    d, e = tf.split(x, [2, 3], axis=1)
    with pytest.raises(InvalidArgumentError, match=r"sizes \(2, 3\) add up to 5, but axis 1 "
                                                   r"of 'seq' has size 6"):
        run(backend, [d, e], {x: value})


def test_split_of_unknown_axis_gradient(backend):
    x = tf.placeholder(tf.float64, (None, 2))
    parts = tf.split(x, 2, 0)
    loss = tf.reduce_sum(parts[0] * 2.0) + tf.reduce_sum(parts[1] * 5.0)
    (g,) = tf.gradients(loss, [x])
    np.testing.assert_array_equal(run(backend, g, {x: np.zeros((4, 2))}),
                                  [[2, 2], [2, 2], [5, 5], [5, 5]])


def test_split_known_axis_still_checked_at_build():
    x = tf.placeholder(tf.float32, (None, 28), name="images")
    with pytest.raises(ValueError, match="axis 1 of 'images' .size 28. does not divide into 3"):
        tf.split(x, 3, 1)


def test_unstack_with_num_of_unknown_axis(backend):
    x = tf.placeholder(tf.float32, (2, None), name="steps")
    steps = tf.unstack(x, num=3, axis=1)
    assert len(steps) == 3 and all(s.shape == (2,) for s in steps)
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k, got in enumerate(run(backend, steps, {x: value})):
        np.testing.assert_array_equal(got, value[:, k])
    with pytest.raises(InvalidArgumentError, match="axis 1 of 'steps' has size 4, but num=3"):
        run(backend, steps, {x: np.zeros((2, 4))})
    with pytest.raises(ValueError, match="pass num="):
        tf.unstack(x, axis=1)
    with pytest.raises(ValueError, match="num=3, but axis 0 of 'steps' has size 2"):
        tf.unstack(x, num=3, axis=0)


def test_fill_and_tile_take_lists_mixing_ints_and_tensors(backend):
    x = tf.placeholder(tf.float32, (None, 3))
    batch = tf.shape(x)[0]
    zeros = tf.fill([batch, 4], 0.0)
    tiled = tf.tile(tf.constant([[1.0, 2.0]]), [batch, 2])
    assert zeros.shape == (None, 4) and tiled.shape == (None, 4)
    got_zeros, got_tiled = run(backend, [zeros, tiled], {x: np.ones((3, 3))})
    np.testing.assert_array_equal(got_zeros, np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(got_tiled, [[1, 2, 1, 2]] * 3)


def test_split_in_the_pre_1_0_argument_order_says_so():
    x = tf.placeholder(tf.float32, (4, 2))
    with pytest.raises(TypeError, match="split.value, num_or_size_splits, axis."):
        tf.split(0, 2, x)


def test_a_list_holding_tensors_is_packed_into_one_tensor(backend):
    """TF1 converts a (nested) list that holds tensors by stacking it (``Pack``, named
    ``packed``), Python numbers taking the tensors' dtype. TensorFlow 2.21's values for
    the same statements (``tf.compat.v1``, run once): packed [[1.5, 0], [0, -4]], sum 2.5,
    gradient [1, 8], shapes (2, 2) and (1,); its errors are TypeErrors too."""
    x = tf.placeholder(tf.float32, [2])
    a, b = x[0], x[1]
    packed = tf.convert_to_tensor([[a, 0.0], [0.0, b * 2]])
    total = tf.reduce_sum([a, b, 3])
    grad = tf.gradients(tf.reduce_sum(packed * [[1., 2.], [3., 4.]]), x)[0]
    one = tf.convert_to_tensor([a])
    assert packed.shape.as_list() == [2, 2] and one.shape.as_list() == [1]
    assert packed.dtype is tf.float32 and packed.name == "packed"
    got = run(backend, [packed, total, grad, one], {x: [1.5, -2.0]})
    np.testing.assert_array_equal(got[0], np.float32([[1.5, 0.0], [0.0, -4.0]]))
    assert got[1] == np.float32(2.5)
    np.testing.assert_array_equal(got[2], np.float32([1.0, 8.0]))
    np.testing.assert_array_equal(got[3], np.float32([1.5]))
    i = tf.constant(3, name="i")
    with pytest.raises(TypeError):
        tf.convert_to_tensor([i, 2.5])  # TF1: Expected int32, but got 2.5
    with pytest.raises(TypeError, match="'i' of dtype int32"):
        tf.convert_to_tensor([a, i])
    with pytest.raises(ValueError):
        tf.convert_to_tensor([x, a])  # shapes (2,) and () do not stack
