"""Placeholders without a shape (unknown rank), as TF1 tutorials write them.

Unknown rank flows the way TF1's shape inference lets it: ops keep every static
fact they can, the gradient of a variable has the variable's shape, assignments
of values of unknown shape are checked at run time, and ``dropout`` with a
shapeless ``keep_prob`` keeps ``x``'s shape. Also: random-op parameters and
shapes given as tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_optimizers import OPTIMIZERS, W0, X, _reference

import gradflow as gf
from gradflow.errors import InvalidArgumentError

# -- static shapes ------------------------------------------------------------------


def test_unknown_rank_keeps_what_tf1_shape_inference_keeps():
    x = gf.placeholder(gf.float32, name="x")
    m = gf.placeholder(gf.float32, (None, 3), name="m")
    assert x.shape is None
    assert (x * m).shape is None  # a broadcast with an unknown rank may add axes
    assert gf.exp(x).shape is None
    assert gf.reduce_sum(x).shape == ()  # a reduction over every axis is a scalar
    assert gf.reduce_sum(x, 1).shape is None
    assert gf.reshape(x, [-1, 28, 28, 1]).shape == (None, 28, 28, 1)
    assert gf.cast(x, gf.float64).shape is None
    assert gf.reduce_mean(gf.square(x - 1.0)).shape == ()


def test_dropout_with_a_shapeless_keep_prob_keeps_the_shape_of_x(backend):
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    keep_prob = gf.placeholder(gf.float32, name="keep_prob")
    h = gf.nn.dropout(x, keep_prob)
    assert h.shape == (None, 4)
    rate = gf.placeholder(gf.float32, name="rate")
    assert gf.nn.dropout(x, rate=rate).shape == (None, 4)
    logits = gf.layers.dense(h, 3)
    assert logits.shape == (None, 3)
    labels = gf.placeholder(gf.int64, (None,))
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.shape == (None,)
    value = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(h, {x: value, keep_prob: 1.0}), value)
        with pytest.raises(InvalidArgumentError, match=r"'keep_prob' has shape \(2,\) at run "
                           r"time, expected \(\)"):
            sess.run(h, {x: value, keep_prob: [0.5, 0.5]})


def test_gradient_of_a_variable_has_the_variable_shape():
    w = gf.Variable(W0, name="w")
    x = gf.placeholder(gf.float64, name="x")
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w)))
    assert gf.matmul(x, w).shape is None
    grad, = gf.gradients(loss, [w])
    assert grad.shape == (2, 2)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_every_optimizer_trains_through_a_shapeless_placeholder(name, backend):
    x = gf.placeholder(gf.float64, name="x")  # no shape: unknown rank
    w = gf.Variable(W0)
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w))) / 2.0
    train = OPTIMIZERS[name]().minimize(loss)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, {x: X})
        np.testing.assert_allclose(sess.run(w), _reference(name, 5), rtol=1e-10, atol=1e-12)


def test_dropout_keep_prob_placeholder_with_adam_trains(backend):
    """The MNIST tutorial's shape: x (None, 4), keep_prob = placeholder(float32), Adam."""
    gf.set_random_seed(0)
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    y = gf.placeholder(gf.int64, (None,), name="y")
    keep_prob = gf.placeholder(gf.float32, name="keep_prob")
    w = gf.Variable(np.zeros((4, 2), np.float32), name="w")
    logits = gf.matmul(gf.nn.dropout(x, keep_prob), w)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = gf.train.AdamOptimizer(0.1).minimize(loss)
    xs = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], np.float32)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train, {x: xs, y: [0, 1], keep_prob: 1.0})
        # Adam's first step moves every weight with a gradient by lr: here sign(-g) * 0.1
        np.testing.assert_allclose(sess.run(w), [[0.1, -0.1], [-0.1, 0.1], [0, 0], [0, 0]],
                                   atol=1e-6)


def test_dtypeless_placeholders_train_a_perceptron(backend):
    """The tutorial's ``W = Variable(random(2, 2)); x = placeholder(); ... minimize(loss)``."""
    w0 = np.array([[0.2, -0.4], [0.7, 0.1]])
    w = gf.Variable(w0)  # float64, from NumPy
    x = gf.placeholder()
    y = gf.placeholder()
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w) - y))
    train = gf.train.GradientDescentOptimizer(0.01).minimize(loss)
    xs, ys = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0], [0, 1], [1, 1]])
    with gf.Session(backend=backend) as sess:
        first = sess.run([train, loss], {x: xs, y: ys})[1]
        after = sess.run(w)
    assert first == pytest.approx(np.sum((xs @ w0 - ys) ** 2), rel=1e-12)
    np.testing.assert_allclose(after, w0 - 0.01 * 2 * xs.T @ (xs @ w0 - ys), rtol=1e-12)
    assert after.dtype == np.float64


# -- assignments of values of unknown shape -------------------------------------------


def test_assign_of_unknown_shape_is_checked_at_run_time(backend):
    v = gf.Variable(np.zeros((2, 2), np.float32), name="w")
    new = gf.placeholder(gf.float32, name="new_w")
    assign = v.assign(new)
    assert assign.shape == (2, 2)
    derived = v.assign(new * 2.0)
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        value = np.ones((2, 2), np.float32)
        sess.run(assign, {new: value})
        value[:] = 5.0  # the variable owns a copy of the fed array
        np.testing.assert_array_equal(sess.run(v), np.ones((2, 2)))
        with pytest.raises(InvalidArgumentError, match=r"assign: variable 'w' has shape "
                           r"\(2, 2\), but the value 'new_w' has shape \(3,\) at run time"):
            sess.run(assign, {new: np.ones(3, np.float32)})
        with pytest.raises(InvalidArgumentError, match=r"variable 'w' has shape \(2, 2\), but "
                           r"the value 'multiply' \(its shape comes from placeholder\(s\) "
                           r"'new_w'\) has shape \(2, 3\) at run time"):
            sess.run(derived, {new: np.ones((2, 3), np.float32)})
        np.testing.assert_array_equal(sess.run(v), np.ones((2, 2)))


def test_assign_of_a_partly_known_shape():
    v = gf.Variable(np.zeros((2, 3)), name="w")
    rows = gf.placeholder(gf.float64, (None, 3), name="rows")
    assert v.assign(rows).shape == (2, 3)
    wrong = gf.placeholder(gf.float64, (None, 4), name="wrong")
    with pytest.raises(ValueError, match=r"variable 'w' has shape \(2, 3\), the value has "
                       r"shape \(None, 4\).*'wrong'"):
        v.assign(wrong)


def test_variable_from_a_value_of_unknown_shape_needs_and_checks_shape(backend):
    init = gf.placeholder_with_default(np.ones((2, 2), np.float32), shape=None)
    with pytest.raises(ValueError, match="not fully known; pass shape="):
        gf.Variable(init)
    v = gf.Variable(init, shape=(2, 2), name="v")
    assert v.shape == (2, 2)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(v), np.ones((2, 2)))
        with pytest.raises(InvalidArgumentError, match=r"variable 'v' has shape \(2, 2\)"):
            sess.run(v.initializer, {init: np.ones((1, 2), np.float32)})


def test_ensure_shape(backend):
    x = gf.placeholder(gf.float32, name="x")
    y = gf.ensure_shape(x, [None, 3])
    assert y.shape == (None, 3)
    z = gf.ensure_shape(gf.placeholder(gf.float32, (2, None)), (None, 3))
    assert z.shape == (2, 3)
    with pytest.raises(ValueError, match=r"ensure_shape: the shape \(2, 4\) does not fit "
                       r"\(None, 3\)"):
        gf.ensure_shape(gf.placeholder(gf.float32, (2, 4)), (None, 3))
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.ones((5, 3))}), np.ones((5, 3)))
        with pytest.raises(InvalidArgumentError, match=r"'x' has shape \(5, 2\) at run time, "
                           r"expected \(None, 3\)"):
            sess.run(y, {x: np.ones((5, 2))})
        g, = gf.gradients(gf.reduce_sum(y * 3.0), [x])
        np.testing.assert_array_equal(sess.run(g, {x: np.ones((1, 3))}), [[3.0, 3.0, 3.0]])


# -- random ops with tensor parameters and shapes ----------------------------------------


def test_random_parameters_may_be_tensors(backend):
    gf.set_random_seed(1)
    n = 4
    fixed = gf.random_normal([n, 3], mean=1.0, stddev=0.5, seed=3)
    tensor = gf.random_normal([n, 3], mean=gf.constant(1.0), stddev=1 / gf.sqrt(float(n)),
                              seed=3)
    trunc = gf.truncated_normal([5], stddev=gf.sqrt(2.0 / n), seed=4)
    trunc_fixed = gf.truncated_normal([5], stddev=(2.0 / n) ** 0.5, seed=4)
    uni = gf.random_uniform([5], minval=-gf.sqrt(6.0 / 8), maxval=gf.sqrt(6.0 / 8), seed=5)
    uni_fixed = gf.random_uniform([5], minval=-(6.0 / 8) ** 0.5, maxval=(6.0 / 8) ** 0.5,
                                  seed=5)
    assert tensor.shape == (4, 3) and tensor.dtype is gf.float32
    with gf.Session(backend=backend) as sess:
        a, b, t, tf_, u, uf = sess.run([fixed, tensor, trunc, trunc_fixed, uni, uni_fixed])
    np.testing.assert_allclose(b, a, rtol=1e-6)
    np.testing.assert_allclose(t, tf_, rtol=1e-6)
    assert np.all(np.abs(t) <= 2 * (2.0 / n) ** 0.5 + 1e-6)
    np.testing.assert_allclose(u, uf, rtol=1e-6, atol=1e-7)
    assert np.all(np.abs(u) <= (6.0 / 8) ** 0.5)
    # the same seed gives the same numbers on every backend
    with gf.Session(backend="numpy") as sess:
        np.testing.assert_allclose(sess.run(tensor), b, rtol=1e-6)


def test_random_parameter_of_another_dtype_is_refused():
    with pytest.raises(TypeError, match="random_normal: stddev must be float32.*'scale' of "
                       "dtype float64"):
        gf.random_normal([2], stddev=gf.constant(1.0, gf.float64, name="scale"))


def test_random_shape_given_as_tensors():
    x = gf.placeholder(gf.float32, (3, 4))
    assert gf.random_normal(gf.constant([2, 5])).shape == (2, 5)
    assert gf.random_uniform([2, gf.shape(x)[1]]).shape == (2, 4)
    assert gf.truncated_normal(gf.shape(x)).shape == (3, 4)


@pytest.mark.parametrize("make", [gf.random_normal, gf.random_uniform, gf.truncated_normal,
                                  gf.zeros, gf.ones, lambda s: gf.fill(s, 2.5)])
def test_shapes_given_by_run_time_tensors(make, backend):
    """``random_normal(tf.shape(z))`` in a VAE: the shape is the value of a tensor, and
    each run draws numbers of the shape fed, one session, two batch sizes."""
    z = gf.placeholder(gf.float32, (None, 4), name="z")
    shaped = make(gf.shape(z))
    mixed = make([gf.shape(z)[0], 3])
    assert shaped.shape == (None, 4) and mixed.shape == (None, 3)
    assert shaped.dtype is gf.float32
    with gf.Session(backend=backend) as sess:
        for batch in (2, 5):
            a, b = sess.run([shaped, mixed], {z: np.zeros((batch, 4), np.float32)})
            assert a.shape == (batch, 4) and b.shape == (batch, 3)
            assert np.all(np.isfinite(a)) and len(np.unique(a)) in (1, batch * 4)


def test_random_shape_from_an_unknown_rank_tensor_draws_the_same_numbers(backend):
    gf.set_random_seed(3)
    z = gf.placeholder(gf.float32, name="z")
    eps = gf.random_normal(gf.shape(z), stddev=0.5)
    assert eps.shape is None
    with gf.Session(backend="numpy") as sess:
        want = sess.run(eps, {z: np.zeros((2, 3))})
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(eps, {z: np.zeros((2, 3))}), want, rtol=1e-6)
    assert 0.2 < want.std() < 1.0


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_apply_gradients_fed_through_shapeless_placeholders(name, backend):
    """Gradients computed elsewhere and fed in (TF1's A3C / parameter-server style)."""
    w = gf.Variable(W0, name="w")
    grad = gf.placeholder(gf.float64, name="grad_w")
    train = OPTIMIZERS[name]().apply_gradients([(grad, w)])
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, {grad: X.T @ (X @ sess.run(w))})
        np.testing.assert_allclose(sess.run(w), _reference(name, 5), rtol=1e-10, atol=1e-12)
        with pytest.raises(InvalidArgumentError, match=r"apply_gradients: variable 'w' has "
                           r"shape \(2, 2\), but the gradient 'grad_w' has shape \(2, 3\) at "
                           r"run time; created at .*test_shapeless.py:\d+"):
            sess.run(train, {grad: np.ones((2, 3))})
        np.testing.assert_allclose(sess.run(w), _reference(name, 5), rtol=1e-10, atol=1e-12)


def test_apply_gradients_of_a_statically_wrong_shape():
    w = gf.Variable(W0, name="w")
    grad = gf.placeholder(gf.float64, (None, 3), name="grad_w")
    with pytest.raises(ValueError, match=r"apply_gradients: variable 'w' has shape \(2, 2\), "
                       r"but the gradient 'grad_w' has shape \(None, 3\)"):
        gf.train.AdamOptimizer(0.1).apply_gradients([(grad, w)])


def test_axes_of_tensors_of_unknown_rank_resolve_at_run_time(backend):
    x = gf.placeholder(gf.float64, name="x")
    outs = [gf.squeeze(x), gf.squeeze(x, [0]), gf.transpose(x), gf.concat([x, x], 1),
            gf.stack([x, x], 0), gf.gather(x, [1, 0], axis=1), gf.reduce_sum(x, -1)]
    assert all(o.shape is None for o in outs)
    grads = gf.gradients(gf.add_n([gf.reduce_sum(o) for o in outs]), [x])
    with gf.Session(backend=backend) as sess:
        for rows in (2, 4):  # a second shape in the same session: nothing baked in
            fed = np.arange(rows * 3.0).reshape(1, rows, 3)
            got = sess.run(outs + grads, {x: fed})
            want = [fed[0], fed[0], fed.T, np.concatenate([fed, fed], 1),
                    np.stack([fed, fed]), fed[:, [1, 0]], fed.sum(-1)]
            for k, (g, w) in enumerate(zip(got, want)):
                np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
            # 1 + 1 + 1 + 2 + 2 + 1 everywhere, and 1 more for the two rows gathered
            np.testing.assert_array_equal(got[-1][0, :, 0], [9.0, 9.0] + [8.0] * (rows - 2))
    with pytest.raises(ValueError, match=r"concat: the negative axis -1 needs the rank of "
                       r"'x', which is unknown"):
        gf.concat([x, x], -1)
