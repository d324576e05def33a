"""Optimizers follow TF1's update formulas on every backend; clipping; global step."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

W0 = np.array([[0.5, -1.0], [1.5, 2.0]])
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]])


def _loss_grad(w):
    """L = sum((X w)^2) / 2 and its gradient X^T X w."""
    return X.T @ (X @ w)


def _reference(name, steps, lr=0.1):
    """The TF1 update formulas, written out in NumPy."""
    w = W0.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    acc = np.full_like(w, 0.1)
    ms = np.ones_like(w)
    for t in range(1, steps + 1):
        g = _loss_grad(w)
        if name == "sgd":
            w = w - lr * g
        elif name in ("momentum", "nesterov"):
            m = 0.9 * m + g
            w = w - lr * (g + 0.9 * m if name == "nesterov" else m)
        elif name == "adagrad":
            acc = acc + g * g
            w = w - lr * g / np.sqrt(acc)
        elif name == "rmsprop":
            ms = 0.9 * ms + 0.1 * g * g
            m = 0.5 * m + lr * g / np.sqrt(ms + 1e-10)
            w = w - m
        elif name == "adam":
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            lr_t = lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
            w = w - lr_t * m / (np.sqrt(v) + 1e-8)
    return w


OPTIMIZERS = {
    "sgd": lambda: gf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: gf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: gf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: gf.train.RMSPropOptimizer(0.1, momentum=0.5),
    "adam": lambda: gf.train.AdamOptimizer(0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_tf1_formulas(name, backend):
    x = gf.placeholder(gf.float64, (None, 2))
    w = gf.Variable(W0)
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w))) / 2.0
    step = gf.train.get_or_create_global_step()
    train = OPTIMIZERS[name]().minimize(loss, global_step=step)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(5):
            sess.run(train, {x: X})
        np.testing.assert_allclose(sess.run(w), _reference(name, 5), rtol=1e-10, atol=1e-12)
        assert sess.run(step) == 5


def test_slots_are_variables_in_the_session():
    w = gf.Variable(W0)
    opt = gf.train.AdamOptimizer(0.1)
    train = opt.minimize(gf.reduce_sum(w * w))
    assert opt.get_slot_names() == ["Adam", "Adam_1"]
    m = opt.get_slot(w, "Adam")
    assert m in gf.global_variables() and m not in gf.trainable_variables()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(m), 0.1 * 2 * W0)


def test_compute_and_apply_gradients_with_clipping():
    w = gf.Variable(np.array([3.0, 4.0]))
    loss = gf.reduce_sum(w * w) / 2.0  # gradient = w, norm 5
    opt = gf.train.GradientDescentOptimizer(1.0)
    grads, variables = zip(*opt.compute_gradients(loss))
    clipped, norm = gf.clip_by_global_norm(list(grads), 1.0)
    train = opt.apply_gradients(zip(clipped, variables))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(norm) == pytest.approx(5.0)
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [3.0 - 0.6, 4.0 - 0.8])


def test_clip_by_value_and_global_norm_below_threshold():
    t = gf.constant([-2.0, 0.5, 3.0])
    clipped, norm = gf.clip_by_global_norm([t, None], 100.0)
    assert clipped[1] is None
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(gf.clip_by_value(t, -1.0, 1.0)), [-1.0, 0.5, 1.0])
        np.testing.assert_allclose(sess.run(clipped[0]), [-2.0, 0.5, 3.0])


def test_learning_rate_may_be_a_tensor():
    lr = gf.placeholder(gf.float32, ())
    w = gf.Variable(np.float32(1.0))
    train = gf.train.GradientDescentOptimizer(lr).minimize(w * 2.0)
    with gf.Session() as sess:
        sess.run(train, {lr: 0.25})
        assert sess.run(w) == pytest.approx(0.5)


def test_dense_layer_trains_a_regression(backend):
    gf.set_random_seed(0)
    x = gf.placeholder(gf.float32, (None, 3))
    y = gf.placeholder(gf.float32, (None, 1))
    pred = gf.layers.dense(gf.layers.dense(x, 8, activation=gf.nn.tanh), 1)
    loss = gf.reduce_mean(gf.square(pred - y))
    train = gf.train.AdamOptimizer(0.05).minimize(loss)
    names = [v.name for v in gf.trainable_variables()]
    assert names == ["dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]])).astype(np.float32)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        first = sess.run(loss, {x: xs, y: ys})
        for _ in range(200):
            sess.run(train, {x: xs, y: ys})
        assert sess.run(loss, {x: xs, y: ys}) < 0.02 * first


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay_follows_the_global_step(backend, staircase):
    step = gf.train.get_or_create_global_step()
    lr = gf.train.exponential_decay(0.1, step, decay_steps=4, decay_rate=0.5, staircase=staircase)
    bump = gf.assign_add(step, 3)
    with gf.Session(backend=backend) as sess:
        for done in (0, 3, 6, 9):
            exponent = done // 4 if staircase else done / 4
            np.testing.assert_allclose(sess.run(lr), 0.1 * 0.5 ** exponent, rtol=1e-6)
            sess.run(bump)


def test_exponential_decay_arguments():
    step = gf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="decay_steps must be positive"):
        gf.train.exponential_decay(0.1, step, 0, 0.5)
    with pytest.raises(ValueError, match="global_step is required"):
        gf.train.exponential_decay(0.1, None, 10, 0.5)
