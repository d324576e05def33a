"""Dropout semantics, conv2d against PyTorch, and the layer helpers' variable names."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import draws_reference

import gradflow as gf


def _x(shape=(4, 50), seed=0):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)


def test_dropout_keep_prob_one_is_identity(backend):
    x = gf.placeholder(gf.float32, (None, 50))
    keep = gf.placeholder_with_default(1.0, ())
    y = gf.nn.dropout(x, keep)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: _x()}), _x())
        dropped = sess.run(y, {x: _x(), keep: 0.5})
    assert set(np.unique(np.isclose(dropped, 2 * _x()) | (dropped == 0))) == {True}
    assert (dropped == 0).any()


def test_dropout_rate_preserves_the_mean_and_draws_per_run():
    x = gf.constant(np.ones((200, 100), np.float32))
    y = gf.nn.dropout(x, rate=0.3, seed=1)
    with gf.Session() as sess:
        a, b = sess.run(y), sess.run(y)
    assert abs(a.mean() - 1.0) < 0.03
    assert abs((a == 0).mean() - 0.3) < 0.03
    assert not np.array_equal(a, b)


def test_dropout_gradient_uses_the_forward_mask(backend):
    x = gf.placeholder(gf.float32, (None, 50))  # unknown batch: the run-time-shape random op
    y = gf.nn.dropout(x, keep_prob=0.5, seed=3)
    g, = gf.gradients(gf.reduce_sum(y), [x])
    with gf.Session(backend=backend) as sess:
        out, grad = sess.run([y, g], {x: _x()})
    np.testing.assert_allclose(grad, np.where(out != 0, 2.0, 0.0))


def test_dropout_argument_errors():
    x = gf.constant(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="exactly one"):
        gf.nn.dropout(x)
    with pytest.raises(ValueError, match="exactly one"):
        gf.nn.dropout(x, 0.5, rate=0.5)
    with pytest.raises(ValueError, match="keep_prob"):
        gf.nn.dropout(x, 0.0)
    with pytest.raises(ValueError, match="rate"):
        gf.nn.dropout(x, rate=1.0)


@pytest.mark.parametrize("static", [True, False])
def test_dropout_same_numbers_on_every_backend(backend, static):
    def run(name):
        g = gf.Graph()
        with g.as_default():
            gf.set_random_seed(7)
            x = gf.placeholder(gf.float32, (4, 50) if static else (None, 50))
            y = gf.nn.dropout(x, 0.6)
        with gf.Session(graph=g, backend=name) as sess:
            return sess.run(y, {x: _x()})

    np.testing.assert_allclose(run(backend), run(draws_reference(backend)), rtol=1e-6)


def test_conv2d_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, wv = rng.normal(size=(2, 7, 6, 3)), rng.normal(size=(3, 3, 3, 4))
    x, w = gf.constant(xv), gf.constant(wv)
    y = gf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="VALID")
    with gf.Session() as sess:
        got = sess.run(y)
    want = torch.nn.functional.conv2d(torch.tensor(xv).permute(0, 3, 1, 2),
                                      torch.tensor(wv).permute(3, 2, 0, 1), stride=2)
    np.testing.assert_allclose(got, want.permute(0, 2, 3, 1).numpy(), rtol=1e-10, atol=1e-10)


def test_conv2d_arguments():
    x = gf.placeholder(gf.float32, (None, 28, 28, 1))
    w = gf.zeros((5, 5, 1, 8))
    assert gf.nn.conv2d(x, w, 1, "SAME").shape.as_list() == [None, 28, 28, 8]
    assert gf.nn.conv2d(x, w, [1, 2, 2, 1], "VALID").shape.as_list() == [None, 12, 12, 8]
    with pytest.raises(ValueError, match="padding"):
        gf.nn.conv2d(x, w, 1, "FULL")
    with pytest.raises(NotImplementedError):
        gf.nn.conv2d(x, w, 1, "SAME", dilations=[1, 2, 2, 1])
    with pytest.raises(ValueError, match="channels"):
        gf.nn.conv2d(x, gf.zeros((3, 3, 2, 4)), 1, "SAME")


def test_layers_naming_and_shapes():
    x = gf.placeholder(gf.float32, (None, 28, 28, 1))
    h = gf.layers.conv2d(x, 8, 5, padding="same", activation=gf.nn.relu)
    h = gf.layers.max_pooling2d(h, 2, 2)
    h = gf.layers.conv2d(h, 4, (3, 3))
    h = gf.layers.dropout(h, rate=0.5, training=gf.placeholder_with_default(False, ()))
    names = [v.name for v in gf.global_variables()]
    assert names == ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0",
                     "conv2d_1/bias:0"] or names == ["conv2d/kernel", "conv2d/bias",
                                                     "conv2d_1/kernel", "conv2d_1/bias"]
    assert h.shape.as_list() == [None, 12, 12, 4]
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        a = sess.run(h, {x: np.ones((2, 28, 28, 1), np.float32)})
        b = sess.run(h, {x: np.ones((2, 28, 28, 1), np.float32)})
    np.testing.assert_array_equal(a, b)  # not training: the identity


_WINDOW_CASES = [((3, 3), (1, 1), "SAME"), ((3, 3), (1, 1), "VALID"), ((2, 2), (2, 2), "VALID"),
                 ((3, 2), (2, 3), "SAME"), ((5, 5), (1, 1), "SAME"), ((3, 3), (2, 2), "SAME")]


@pytest.mark.parametrize("ksize,strides,padding", _WINDOW_CASES)
def test_numpy_conv_lowerings_match_the_array_api_versions(ksize, strides, padding):
    """The numpy backend's strided-view convolutions give the Array API results."""
    import array_api_compat.numpy as xp

    from gradflow.backends.numpy.windows import LOWERINGS
    from gradflow.prim.conv import window_geometry
    from gradflow.prim.registry import REGISTRY

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 9, 8, 3))
    w = rng.standard_normal(ksize + (3, 4))
    oh, ow = window_geometry(x.shape, ksize, strides, padding)[:2]
    g = rng.standard_normal((2, oh, ow, 4))
    conv = dict(strides=strides, padding=padding)
    cases = [("conv2d", [x, w], conv), ("conv2d_backprop_input", [g, w, x], conv),
             ("conv2d_backprop_filter", [x, g, w], conv)]
    for op, args, attrs in cases:
        fast = LOWERINGS[op](xp, **attrs)(*args)
        slow = REGISTRY[op].impl(xp, *args, **attrs)
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12, err_msg=op)


def test_channels_first_layers_match_channels_last(backend):
    """tf.layers with data_format='channels_first' (NCHW) give the channels_last results,
    transposed, from the same variables."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    k1, k2 = rng.standard_normal((3, 3, 3, 4)), rng.standard_normal((3, 3, 2, 4))

    def run(fmt):
        g = gf.Graph()
        with g.as_default():
            first = fmt == "channels_first"
            x = gf.placeholder(gf.float32, (None, 3, 9, 8) if first else (None, 9, 8, 3))
            h = gf.layers.conv2d(x, 4, 3, padding="same", data_format=fmt,
                                 kernel_initializer=gf.constant_initializer(k1),
                                 bias_initializer=gf.constant_initializer(0.5))
            h = gf.layers.MaxPooling2D(2, 2, data_format=fmt)(h)
            h = gf.layers.average_pooling2d(h, 2, 1, padding="same", data_format=fmt)
            h = gf.layers.conv2d_transpose(h, 2, 3, strides=2, padding="valid", data_format=fmt,
                                           kernel_initializer=gf.constant_initializer(k2),
                                           bias_initializer=gf.constant_initializer(-0.25))
            loss = gf.reduce_sum(h * h)
            grads = gf.gradients(loss, [x] + gf.trainable_variables())
            init = gf.global_variables_initializer()
        with gf.Session(graph=g, backend=backend) as sess:
            sess.run(init)
            return sess.run([h] + grads, {x: xv.transpose(0, 3, 1, 2) if first else xv})

    last, first = run("channels_last"), run("channels_first")
    assert first[0].shape == (2, 2, 9, 9)
    np.testing.assert_allclose(first[0], last[0].transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first[1], last[1].transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)
    for a, b in zip(first[2:], last[2:]):  # the variables' gradients
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_nchw_arguments():
    x = gf.placeholder(gf.float32, (None, 1, 28, 28))
    w = gf.zeros((5, 5, 1, 8))
    assert gf.nn.conv2d(x, w, [1, 1, 2, 2], "SAME", data_format="NCHW").shape.as_list() == \
        [None, 8, 14, 14]
    assert gf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "VALID",
                          data_format="NCHW").shape.as_list() == [None, 1, 14, 14]
    with pytest.raises(ValueError, match=r"batch and channel entries must be 1 \(NCHW\)"):
        gf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME", data_format="NCHW")
    with pytest.raises(ValueError, match="data_format must be 'NHWC' or 'NCHW'"):
        gf.nn.avg_pool(x, 2, 2, "SAME", data_format="CHWN")
    with pytest.raises(ValueError, match="rank 4"):
        gf.nn.max_pool(gf.zeros((2, 3, 4)), 2, 2, "SAME", data_format="NCHW")
    with pytest.raises(ValueError, match="output_shape must have 4 entries"):
        gf.nn.conv2d_transpose(gf.zeros((1, 8, 2, 2)), w, [1, 1, 4], 2, "SAME",
                               data_format="NCHW")
    with pytest.raises(ValueError, match="axis 1 of"):
        gf.nn.bias_add(x, gf.zeros((28,)), data_format="NCHW")
    with pytest.raises(ValueError, match="known rank"):
        gf.nn.bias_add(gf.placeholder(gf.float32), gf.zeros((3,)), data_format="NCHW")
    with pytest.raises(ValueError, match="channels_first"):
        gf.layers.conv2d(x, 4, 3, data_format="NCHW")
