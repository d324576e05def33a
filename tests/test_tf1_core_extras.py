"""TF1 behaviour of the smaller core names the op table cannot show: ``case`` without a
default and with ``exclusive``, the higher-order functions' errors, ``sequence_mask``
and ``linspace`` arguments, the error classes."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


def _case(exclusive=False, default=True):
    x = gf.placeholder(gf.float32, ())
    pairs = [(x < 0.0, lambda: gf.constant(-1.0)), (x > 10.0, lambda: gf.constant(10.0)),
             (x > 5.0, lambda: gf.constant(5.0))]
    fallback = (lambda: gf.constant(0.0)) if default else None
    return x, gf.case(pairs, default=fallback, exclusive=exclusive)


def test_case_takes_the_first_true_predicate_else_the_default(backend):
    x, r = _case()
    with gf.Session(backend=backend) as sess:
        assert [float(sess.run(r, {x: v})) for v in (-3.0, 12.0, 7.0, 2.0)] == \
            [-1.0, 10.0, 5.0, 0.0]


def test_case_exclusive_raises_when_two_predicates_hold(backend):
    x, r = _case(exclusive=True)
    with gf.Session(backend=backend) as sess:
        assert float(sess.run(r, {x: 7.0})) == 5.0
        with pytest.raises(gf.errors.InvalidArgumentError, match="more than one condition"):
            sess.run(r, {x: 12.0})


def test_case_without_default_runs_the_last_branch_but_needs_a_true_predicate(backend):
    x, r = _case(default=False)
    with gf.Session(backend=backend) as sess:
        assert float(sess.run(r, {x: 7.0})) == 5.0
        assert float(sess.run(r, {x: 12.0})) == 10.0
        with pytest.raises(gf.errors.InvalidArgumentError, match="none of the conditions"):
            sess.run(r, {x: 2.0})


def test_case_dict_and_bad_arguments():
    x = gf.placeholder(gf.float32, ())
    r = gf.case({x > 1.0: lambda: x * 2.0}, default=lambda: x)
    with gf.Session() as sess:
        assert float(sess.run(r, {x: 3.0})) == 6.0
    with pytest.raises(TypeError, match="predicate 0 .* must be a bool scalar"):
        gf.case([(x, lambda: x)])
    with pytest.raises(TypeError, match=r"pred_fn_pairs\[0\] must be a"):
        gf.case([x > 1.0])
    with pytest.raises(ValueError, match="empty"):
        gf.case([])


def test_map_fn_over_a_tuple_and_its_errors(backend):
    a = gf.constant(np.arange(6.0).reshape(3, 2))
    b = gf.constant(np.array([1.0, 10.0, 100.0]))
    out = gf.map_fn(lambda e: e[0] * e[1], (a, b))
    pair = gf.map_fn(lambda e: (e * 2.0, gf.reduce_sum(e)), a)
    with gf.Session(backend=backend) as sess:
        got, (twice, sums) = sess.run([out, pair])
    np.testing.assert_allclose(got, np.arange(6.0).reshape(3, 2) * [[1.0], [10.0], [100.0]])
    np.testing.assert_allclose(twice, np.arange(6.0).reshape(3, 2) * 2)
    np.testing.assert_allclose(sums, [1.0, 5.0, 9.0])
    with pytest.raises(ValueError, match="different first-axis lengths"):
        gf.map_fn(lambda e: e[0], (a, gf.constant([1.0, 2.0])))
    unknown = gf.placeholder(gf.float32, (None, 2), name="rows")
    with pytest.raises(ValueError, match="first axis of 'rows' .* must be known"):
        gf.map_fn(gf.reduce_sum, unknown)


def test_foldl_without_initializer_and_scan_reverse(backend):
    x = gf.constant([1.0, 2.0, 3.0, 4.0])
    folded = gf.foldl(lambda acc, e: acc - e, x)  # ((1 - 2) - 3) - 4
    scanned = gf.scan(lambda acc, e: acc + e, x, reverse=True)
    with gf.Session(backend=backend) as sess:
        f, s = sess.run([folded, scanned])
    assert float(f) == -8.0
    np.testing.assert_allclose(s, [10.0, 9.0, 7.0, 4.0])


def test_sequence_mask_with_maxlen_and_dtype(backend):
    lengths = gf.placeholder(gf.int32, (None,))
    mask = gf.sequence_mask(lengths, maxlen=4, dtype=gf.float32)
    assert tuple(mask.shape) == (None, 4)
    with gf.Session(backend=backend) as sess:
        got = sess.run(mask, {lengths: [0, 2, 4]})
    np.testing.assert_array_equal(got, [[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    with pytest.raises(TypeError, match="must be integers"):
        gf.sequence_mask(gf.constant([1.5]))


def test_linspace_constant_and_bad_num():
    assert gf.linspace(0.0, 1.0, 3).dtype == gf.float32
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(gf.lin_space(2.0, 3.0, 3)), [2.0, 2.5, 3.0])
        np.testing.assert_allclose(sess.run(gf.linspace(gf.constant(1.0), 2.0, 1)), [1.0])
    with pytest.raises(ValueError, match="num must be a positive int"):
        gf.linspace(0.0, 1.0, 0)


def test_logsumexp_of_all_minus_infinity_is_minus_infinity():
    x = gf.constant(np.full((2, 3), -np.inf, np.float32))
    with gf.Session() as sess, np.errstate(divide="ignore"):
        np.testing.assert_array_equal(sess.run(gf.reduce_logsumexp(x, 1)), [-np.inf, -np.inf])


def test_error_classes_have_tf1_names():
    assert issubclass(gf.errors.OutOfRangeError, gf.errors.GradflowError)
    assert issubclass(gf.errors.NotFoundError, LookupError)
    assert issubclass(gf.errors.UnimplementedError, NotImplementedError)


def test_variables_made_under_control_dependencies_initialize_without_them(backend):
    # TF1's pattern: the optimizer's slots are made inside control_dependencies(UPDATE_OPS);
    # initializing them must not run (or need the feeds of) those update ops
    x = gf.placeholder(gf.float32, (None, 2), name="x")
    w = gf.Variable(np.ones((2, 1), np.float32), name="w")
    seen = gf.Variable(0.0, name="seen", trainable=False)
    update = seen.assign_add(gf.reduce_sum(x))
    loss = gf.reduce_mean(gf.square(gf.matmul(x, w)))
    with gf.control_dependencies([update]):
        train = gf.train.AdamOptimizer(0.1).minimize(loss)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())  # no feed for x needed
        assert float(sess.run(seen)) == 0.0
        sess.run(train, {x: np.ones((3, 2), np.float32)})
        assert float(sess.run(seen)) == 6.0
