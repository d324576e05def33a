"""Batch normalization (nn.moments, nn.batch_normalization, nn.fused_batch_norm,
layers.batch_normalization, contrib.layers.batch_norm) and the layers' regularizers,
against NumPy on every backend. Gradients are checked by the op specs (bn_*)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

EPS = 1e-3


def _var(name):
    return next(v for v in gf.global_variables() + gf.local_variables() if v.name == name)


def _bn(x, mean, var, eps=EPS):
    return (x - mean) / np.sqrt(var + eps)


def test_moments_and_batch_normalization(backend):
    x_value = np.random.default_rng(0).normal(size=(4, 3, 2)).astype(np.float32)
    x = gf.placeholder(gf.float32, (None, 3, 2))
    mean, var = gf.nn.moments(x, axes=[0, 2])
    mean_k, var_k = gf.nn.moments(x, [0, 2], keepdims=True)
    y = gf.nn.batch_normalization(x, mean_k, var_k, offset=1.0, scale=2.0,
                                  variance_epsilon=0.01)
    assert tuple(mean.shape) == (3,) and tuple(var_k.shape) == (1, 3, 1)
    with gf.Session(backend=backend) as sess:
        m, v, yv = sess.run([mean, var, y], {x: x_value})
    np.testing.assert_allclose(m, x_value.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, x_value.var((0, 2)), rtol=1e-5, atol=1e-6)
    want = 2.0 * _bn(x_value, x_value.mean((0, 2), keepdims=True),
                     x_value.var((0, 2), keepdims=True), 0.01) + 1.0
    np.testing.assert_allclose(yv, want, rtol=1e-5, atol=1e-5)


def test_fused_batch_norm_reports_unbiased_variance(backend):
    x_value = np.random.default_rng(1).normal(size=(2, 3, 3, 4))
    x = gf.constant(x_value)
    y, mean, var = gf.nn.fused_batch_norm(x, gf.ones([4], gf.float64),
                                          gf.zeros([4], gf.float64))
    with gf.Session(backend=backend) as sess:
        yv, m, v = sess.run([y, mean, var])
    n = 2 * 3 * 3
    np.testing.assert_allclose(m, x_value.mean((0, 1, 2)), rtol=1e-12)
    np.testing.assert_allclose(v, x_value.var((0, 1, 2)) * n / (n - 1), rtol=1e-12)
    np.testing.assert_allclose(yv, _bn(x_value, x_value.mean((0, 1, 2)),
                                       x_value.var((0, 1, 2))), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="mean and variance are required"):
        gf.nn.fused_batch_norm(x, gf.ones([4], gf.float64), gf.zeros([4], gf.float64),
                               is_training=False)


def test_layer_variables_and_collections():
    x = gf.placeholder(gf.float32, (None, 5))
    gf.layers.batch_normalization(x, training=True)
    gf.layers.batch_normalization(x, training=False, name="bn", center=False)
    names = [v.name for v in gf.global_variables()]
    assert names == ["batch_normalization/gamma", "batch_normalization/beta",
                     "batch_normalization/moving_mean", "batch_normalization/moving_variance",
                     "bn/gamma", "bn/moving_mean", "bn/moving_variance"]
    assert [v.name for v in gf.trainable_variables()] == [
        "batch_normalization/gamma", "batch_normalization/beta", "bn/gamma"]
    # as in TF1: MOVING_AVERAGE_VARIABLES is for what an ExponentialMovingAverage shadows
    assert gf.moving_average_variables() == []
    # training=False (a Python bool) uses the moving statistics and updates nothing
    updates = gf.get_collection(gf.GraphKeys.UPDATE_OPS)
    assert [u.name for u in updates] == ["batch_normalization/AssignMovingAvg",
                                         "batch_normalization/AssignMovingAvg_1"]
    gf.layers.batch_normalization(x, training=True)
    assert _var("batch_normalization_1/gamma") is not None
    gf.layers.batch_normalization(x, name="bn", center=False, reuse=True)
    assert len(gf.global_variables()) == 11


def _train_steps(backend, shape, steps, momentum, fused=None):
    """Train a batch-norm layer under the UPDATE_OPS pattern; returns the moving mean and
    variance and the NumPy exponential averages of the batch statistics."""
    rng = np.random.default_rng(2)
    axes = tuple(range(len(shape) - 1))
    x = gf.placeholder(gf.float32, (None,) + shape[1:])
    h = gf.layers.batch_normalization(x, momentum=momentum, training=True, fused=fused)
    w = gf.get_variable("w", shape[-1:], initializer=gf.ones_initializer())
    loss = gf.reduce_mean(gf.square(h * w - 1.0))
    with gf.control_dependencies(gf.get_collection(gf.GraphKeys.UPDATE_OPS)):
        train_op = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    mean_np, var_np = np.zeros(shape[-1]), np.ones(shape[-1])
    bessel = fused is not False and len(shape) == 4
    n = int(np.prod(shape[:-1]))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(steps):
            batch = (rng.normal(size=shape) * 3.0 + 2.0).astype(np.float32)
            sess.run(train_op, {x: batch})
            var = batch.var(axes) * (n / (n - 1) if bessel else 1.0)
            mean_np = momentum * mean_np + (1 - momentum) * batch.mean(axes)
            var_np = momentum * var_np + (1 - momentum) * var
        got = sess.run([_var("batch_normalization/moving_mean"),
                        _var("batch_normalization/moving_variance")])
    return got, (mean_np, var_np)


@pytest.mark.parametrize("shape,fused", [((8, 3), None), ((2, 3, 3, 2), None),
                                         ((2, 3, 3, 2), False)],
                         ids=["dense", "conv_fused", "conv_not_fused"])
def test_moving_averages_follow_numpy(backend, shape, fused):
    (mean, var), (mean_np, var_np) = _train_steps(backend, shape, 5, 0.9, fused)
    np.testing.assert_allclose(mean, mean_np, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, var_np, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fused,want", [(None, 278.25), (True, 318.0), (False, 278.25)])
def test_float64_layers_take_the_unfused_path_unless_asked(fused, want):
    """TF's fused kernel has no float64, so ``fused=None`` averages the biased variance
    there (TF 2.21's compat.v1 layer gave 278.25 for these numbers)."""
    x = gf.constant(np.arange(8.0).reshape(2, 2, 2, 1) ** 2)
    gf.layers.batch_normalization(x, training=True, momentum=0.0, fused=fused)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(gf.get_collection(gf.GraphKeys.UPDATE_OPS))
        got = sess.run(_var("batch_normalization/moving_variance"))
    np.testing.assert_allclose(got, [want])


def test_updates_run_only_when_asked(backend):
    x = gf.placeholder(gf.float32, (None, 2))
    h = gf.layers.batch_normalization(x, training=True)
    loss = gf.reduce_sum(h * h)
    train_op = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    batch = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    moving = _var("batch_normalization/moving_mean")
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        sess.run([loss, train_op], {x: batch})
        np.testing.assert_array_equal(sess.run(moving), [0.0, 0.0])
        sess.run(gf.get_collection(gf.GraphKeys.UPDATE_OPS), {x: batch})
        np.testing.assert_allclose(sess.run(moving), [0.02, 0.035], rtol=1e-6)


def test_training_placeholder(backend):
    x = gf.placeholder(gf.float32, (None, 3))
    training = gf.placeholder(gf.bool, ())
    y = gf.layers.batch_normalization(x, training=training, momentum=0.5)
    updates = gf.get_collection(gf.GraphKeys.UPDATE_OPS)
    batch = np.random.default_rng(3).normal(size=(6, 3)).astype(np.float32) + 4.0
    mean, var = _var("batch_normalization/moving_mean"), \
        _var("batch_normalization/moving_variance")
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        # not training: the moving statistics (0 and 1), and the updates change nothing
        out, _ = sess.run([y, updates], {x: batch, training: False})
        np.testing.assert_allclose(out, batch / np.sqrt(1 + EPS), rtol=1e-5)
        np.testing.assert_array_equal(sess.run(mean), np.zeros(3))
        np.testing.assert_array_equal(sess.run(var), np.ones(3))
        # training: the batch statistics, and the updates move the averages halfway
        out, _ = sess.run([y, updates], {x: batch, training: True})
        np.testing.assert_allclose(out, _bn(batch, batch.mean(0), batch.var(0)), rtol=1e-4,
                                   atol=1e-5)
        np.testing.assert_allclose(sess.run(mean), batch.mean(0) / 2, rtol=1e-5)
        np.testing.assert_allclose(sess.run(var), (1 + batch.var(0)) / 2, rtol=1e-5)
        out = sess.run(y, {x: batch, training: False})
        np.testing.assert_allclose(out, _bn(batch, batch.mean(0) / 2, (1 + batch.var(0)) / 2),
                                   rtol=1e-4, atol=1e-5)


def test_channels_first_axis(backend):
    x_value = np.random.default_rng(4).normal(size=(2, 3, 2, 2)).astype(np.float32)
    y = gf.layers.batch_normalization(gf.constant(x_value), axis=1, training=True)
    assert tuple(_var("batch_normalization/gamma").shape) == (3,)
    with gf.Session(backend=backend) as sess:
        out = sess.run(y)
    axes = (0, 2, 3)
    want = _bn(x_value, x_value.mean(axes, keepdims=True), x_value.var(axes, keepdims=True))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)


def test_contrib_batch_norm(backend):
    x = gf.placeholder(gf.float32, (None, 4))
    y = gf.contrib.layers.batch_norm(x, decay=0.5, updates_collections=None)
    assert [v.name for v in gf.global_variables()] == [
        "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance"]
    assert gf.model_variables() == gf.global_variables()
    assert [v.name for v in gf.trainable_variables()] == ["BatchNorm/beta"]
    assert gf.get_collection(gf.GraphKeys.UPDATE_OPS) == []
    batch = np.random.default_rng(5).normal(size=(5, 4)).astype(np.float32)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        out = sess.run(y, {x: batch})  # updates_collections=None: they run with y
        mean, var = sess.run([_var("BatchNorm/moving_mean"), _var("BatchNorm/moving_variance")])
    np.testing.assert_allclose(out, _bn(batch, batch.mean(0), batch.var(0)), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(mean, batch.mean(0) / 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, (1 + batch.var(0) * 5 / 4) / 2, rtol=1e-5)
    gf.contrib.layers.batch_norm(x, scale=True, is_training=False)
    assert _var("BatchNorm_1/gamma") is not None


def test_batch_norm_errors():
    with pytest.raises(TypeError, match="'ints'"):
        gf.layers.batch_normalization(gf.constant([[1, 2]], name="ints"))
    with pytest.raises(ValueError, match="known size"):
        gf.layers.batch_normalization(gf.placeholder(gf.float32, (2, None)))
    with pytest.raises(TypeError, match="bool"):
        gf.layers.batch_normalization(gf.placeholder(gf.float32, (2, 3)),
                                      training=gf.placeholder(gf.float32, ()))


# -- regularizers of the layers and the tf.losses collections ----------------------------


def test_layer_regularizers(backend):
    l2 = gf.contrib.layers.l2_regularizer(0.1)
    x_value = np.random.default_rng(6).normal(size=(4, 3)).astype(np.float32)
    x = gf.placeholder(gf.float32, (None, 3))
    h = gf.layers.dense(x, 2, kernel_regularizer=l2, bias_regularizer=l2,
                        bias_initializer=gf.constant_initializer(0.5),
                        activity_regularizer=gf.contrib.layers.l1_regularizer(0.01))
    image = gf.placeholder(gf.float32, (None, 4, 4, 1))
    gf.layers.conv2d(image, 2, 3, kernel_regularizer=l2, name="conv")
    reg = gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 4
    assert gf.losses.get_regularization_losses() == reg
    assert gf.losses.get_regularization_losses(scope="conv") == reg[3:]
    total = gf.losses.get_regularization_loss()
    assert total.name == "total_regularization_loss"
    kernel, bias, conv_kernel = (_var("dense/kernel"), _var("dense/bias"),
                                 _var("conv/kernel"))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        values, total_value, k, b, ck, hv = sess.run([reg, total, kernel, bias, conv_kernel, h],
                                                     {x: x_value})
    want = [0.05 * (k ** 2).sum(), 0.05 * (b ** 2).sum(), 0.01 * np.abs(hv).sum() / 4,
            0.05 * (ck ** 2).sum()]
    np.testing.assert_allclose(values, want, rtol=1e-5)
    np.testing.assert_allclose(total_value, sum(want), rtol=1e-5)


def test_get_variable_regularizer_matches_layers():
    l2 = gf.contrib.layers.l2_regularizer(1.0)
    gf.get_variable("v", (2,), regularizer=l2)
    with gf.variable_scope("scoped", regularizer=l2):
        gf.get_variable("w", (2,))
    assert [t.name.split("/")[0] for t in gf.losses.get_regularization_losses()] == \
        ["v", "scoped"]
    assert gf.losses.get_regularization_loss(scope="nothing").dtype is gf.float32
