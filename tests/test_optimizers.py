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
        elif name == "adadelta":  # m: accum, v: accum_update
            m = 0.95 * m + 0.05 * g * g
            update = np.sqrt(v + 1e-8) / np.sqrt(m + 1e-8) * g
            v = 0.95 * v + 0.05 * update * update
            w = w - lr * update
        elif name.startswith("ftrl"):  # acc: accum, m: linear
            power, l1, l2, shrink = FTRL[name]
            g_s = g + 2 * shrink * w
            new_acc = acc + g * g
            m = m + g_s - (new_acc ** -power - acc ** -power) / lr * w
            quadratic = new_acc ** -power / lr + 2 * l2
            w = np.where(np.abs(m) > l1, (np.sign(m) * l1 - m) / quadratic, 0.0)
            acc = new_acc
        elif name.startswith("proximal_sgd"):
            l1, l2 = PROXIMAL[name]
            prox = w - lr * g
            w = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)
        elif name.startswith("proximal_adagrad"):
            l1, l2 = PROXIMAL[name]
            acc = acc + g * g
            rate = lr / np.sqrt(acc)
            prox = w - rate * g
            w = np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2)
    return w


# (learning_rate_power, l1, l2, l2_shrinkage): the l1 values zero w[0, 1] at the first step
FTRL = {
    "ftrl": (-0.5, 0.0, 0.0, 0.0),
    "ftrl_l1_l2": (-0.5, 4.0, 0.3, 0.0),
    "ftrl_power_shrinkage": (-0.7, 3.0, 0.2, 0.1),
}
PROXIMAL = {  # (l1, l2)
    "proximal_sgd": (0.0, 0.0),
    "proximal_sgd_l1_l2": (0.8, 0.5),
    "proximal_adagrad": (0.0, 0.0),
    "proximal_adagrad_l1_l2": (0.3, 0.5),
}


OPTIMIZERS = {
    "sgd": lambda: gf.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: gf.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: gf.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: gf.train.RMSPropOptimizer(0.1, momentum=0.5),
    "adam": lambda: gf.train.AdamOptimizer(0.1),
    "adadelta": lambda: gf.train.AdadeltaOptimizer(0.1),
    **{name: lambda p=params: gf.train.FtrlOptimizer(
        0.1, learning_rate_power=p[0], l1_regularization_strength=p[1],
        l2_regularization_strength=p[2], l2_shrinkage_regularization_strength=p[3])
       for name, params in FTRL.items()},
    "proximal_sgd": lambda: gf.train.ProximalGradientDescentOptimizer(0.1),
    "proximal_sgd_l1_l2": lambda: gf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.8, l2_regularization_strength=0.5),
    "proximal_adagrad": lambda: gf.train.ProximalAdagradOptimizer(0.1),
    "proximal_adagrad_l1_l2": lambda: gf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.3, l2_regularization_strength=0.5),
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
    assert opt.get_slot_names() == ["m", "v"]
    m = opt.get_slot(w, "m")
    assert m in gf.global_variables() and m not in gf.trainable_variables()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(m), 0.1 * 2 * W0)


SLOTS = [  # optimizer, TF1's slot names (sorted), the slot variables' names in order
    (lambda: gf.train.MomentumOptimizer(0.1, 0.9), ["momentum"], ["w/Momentum"]),
    (lambda: gf.train.AdagradOptimizer(0.1), ["accumulator"], ["w/Adagrad"]),
    (lambda: gf.train.RMSPropOptimizer(0.1), ["momentum", "rms"],
     ["w/RMSProp", "w/RMSProp_1"]),
    (lambda: gf.train.RMSPropOptimizer(0.1, centered=True), ["mg", "momentum", "rms"],
     ["w/RMSProp", "w/RMSProp_1", "w/RMSProp_2"]),
    (lambda: gf.train.AdamOptimizer(0.1), ["m", "v"],
     ["beta1_power", "beta2_power", "w/Adam", "w/Adam_1"]),
    (lambda: gf.train.AdadeltaOptimizer(), ["accum", "accum_update"],
     ["w/Adadelta", "w/Adadelta_1"]),
    (lambda: gf.train.FtrlOptimizer(0.1), ["accum", "linear"], ["w/Ftrl", "w/Ftrl_1"]),
    (lambda: gf.train.FtrlOptimizer(0.1, accum_name="A", linear_name="L"),
     ["accum", "linear"], ["w/A", "w/L"]),
    (lambda: gf.train.ProximalAdagradOptimizer(0.1), ["accumulator"],
     ["w/ProximalAdagrad"]),
    (lambda: gf.train.ProximalGradientDescentOptimizer(0.1), [], []),
]


@pytest.mark.parametrize("make,slots,names", SLOTS,
                         ids=[names[0] if names else "proximal_gd" for _, _, names in SLOTS])
def test_slot_and_variable_names_are_tf1s(make, slots, names):
    w = gf.Variable(W0, name="w")
    opt = make()
    assert opt.get_slot_names() == []  # slots are made by minimize, as in TF1
    opt.minimize(gf.reduce_sum(w * w))
    assert opt.get_slot_names() == slots
    made = [v.name for v in gf.global_variables() if v is not w]
    assert made == names and [v.name for v in opt.variables()] == sorted(names)
    for slot in slots:
        var = opt.get_slot(w, slot)
        assert var.shape == w.shape and not var.trainable
    assert opt.get_slot(w, "no_such_slot") is None


def test_slots_of_a_scoped_variable_and_a_second_optimizer():
    with gf.variable_scope("layer"):
        v = gf.get_variable("kernel", [2, 2])
    gf.train.AdamOptimizer(0.1).minimize(gf.reduce_sum(v * v))
    gf.train.AdamOptimizer(0.1).minimize(gf.reduce_sum(v * v))
    assert [x.name for x in gf.global_variables()] == [
        "layer/kernel", "beta1_power", "beta2_power", "layer/kernel/Adam", "layer/kernel/Adam_1",
        "beta1_power_1", "beta2_power_1", "layer/kernel/Adam_2", "layer/kernel/Adam_3"]


def test_new_optimizers_have_tf1_defaults():
    ada = gf.train.AdadeltaOptimizer()
    assert (ada._learning_rate, ada._rho, ada._epsilon) == (0.001, 0.95, 1e-8)
    ftrl = gf.train.FtrlOptimizer(0.1)
    assert (ftrl._power, ftrl._initial, ftrl._l1, ftrl._l2, ftrl._l2_shrinkage) == \
        (-0.5, 0.1, 0.0, 0.0, 0.0)
    assert ftrl.get_name() == "Ftrl"
    prox = gf.train.ProximalAdagradOptimizer(0.1)
    assert (prox._initial, prox._l1, prox._l2) == (0.1, 0.0, 0.0)


@pytest.mark.parametrize("make,match", [
    (lambda: gf.train.FtrlOptimizer(0.1, learning_rate_power=0.5),
     "Ftrl: learning_rate_power must be negative or zero, got 0.5"),
    (lambda: gf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0),
     "initial_accumulator_value must be positive or zero"),
    (lambda: gf.train.FtrlOptimizer(0.1, l1_regularization_strength=-0.1),
     "l1_regularization_strength must be positive or zero, got -0.1"),
    (lambda: gf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-2),
     "l2_shrinkage_regularization_strength"),
    (lambda: gf.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=-1),
     "ProximalGradientDescent: l2_regularization_strength must be positive or zero"),
    (lambda: gf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0),
     "ProximalAdagrad: initial_accumulator_value must be positive, got 0.0"),
    (lambda: gf.train.AdagradOptimizer(0.1, initial_accumulator_value=-0.5),
     "Adagrad: initial_accumulator_value must be positive"),
])
def test_bad_hyperparameters_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_new_optimizers_take_a_scheduled_float32_rate_for_float64_variables(backend):
    step = gf.train.get_or_create_global_step()
    lr = gf.train.piecewise_constant(step, [2], [0.1, 0.05])
    x = gf.placeholder(gf.float64, (None, 2))
    w = gf.Variable(W0)
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w))) / 2.0
    train = gf.train.ProximalGradientDescentOptimizer(lr).minimize(loss, global_step=step)
    expected = W0.copy()
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for i in range(4):
            sess.run(train, {x: X})
            rate = np.float64(np.float32(0.1 if i < 3 else 0.05))  # step 0, 1, 2 <= 2
            expected = expected - rate * _loss_grad(expected)
        np.testing.assert_allclose(sess.run(w), expected, rtol=1e-10, atol=1e-12)


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
