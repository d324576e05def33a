"""TF1's ``tf.layers`` extras: the 3-D and separable convolution functions, 1-D/3-D pooling
and the layer objects (``Conv1D``, ``Conv2DTranspose``, ``Conv3D``, ``Conv3DTranspose``,
``SeparableConv1D``/``2D``, ``BatchNormalization``, the pooling classes).

TensorFlow 2.21 forwards ``tf.compat.v1.layers`` to the ``tf_keras`` package, which is
not installed beside it, so no TensorFlow values are pasted here: the variable names and
shapes are TF1's documented ones, and each layer's result is checked against the
``tf.nn`` function (itself checked against TensorFlow 2.21 in test_nn_extras_tf1.py)
applied to the layer's own variables.
"""

from __future__ import annotations

import numpy as np

import gradflow as tf


def arr(*shape, k=1.0):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 * k + 0.3) * 1.5).reshape(shape).astype(np.float32)


def names(layer):
    return [v.name.split(":")[0] for v in layer.variables]


def run(fetches, feeds):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feeds)


def test_conv3d_layer_shares_variables_and_matches_nn():
    x = tf.placeholder(tf.float32, (None, 4, 4, 3, 2))
    layer = tf.layers.Conv3D(3, (2, 2, 1), strides=(1, 2, 1), padding="same", name="vol")
    a, b = layer(x), layer(x)
    assert names(layer) == ["vol/kernel", "vol/bias"]
    assert tuple(layer.kernel.shape) == (2, 2, 1, 2, 3)
    ref = tf.nn.bias_add(tf.nn.conv3d(x, layer.kernel, [1, 1, 2, 1, 1], "SAME"), layer.bias)
    got = run([a, b, ref], {x: arr(2, 4, 4, 3, 2)})
    np.testing.assert_allclose(got[0], got[2], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[2], rtol=1e-6)
    assert len(tf.trainable_variables()) == 2


def test_transposed_layers_give_tf1_sizes():
    x5 = tf.placeholder(tf.float32, (None, 3, 3, 3, 2))
    x4 = tf.placeholder(tf.float32, (None, 5, 5, 3))
    up3 = tf.layers.Conv3DTranspose(4, 3, strides=2, padding="valid")
    up2 = tf.layers.Conv2DTranspose(2, 3, strides=2, padding="same")
    y3, y2 = up3(x5), up2(x4)
    assert tuple(up3.kernel.shape) == (3, 3, 3, 4, 2)
    assert tuple(y3.shape) == (None, 7, 7, 7, 4) and tuple(y2.shape) == (None, 10, 10, 2)
    ref = tf.nn.conv3d_transpose(x5, up3.kernel, [2, 7, 7, 7, 4], [1, 2, 2, 2, 1], "VALID")
    got = run([y3, ref + up3.bias, y2], {x5: arr(2, 3, 3, 3, 2), x4: arr(2, 5, 5, 3)})
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6)
    assert got[2].shape == (2, 10, 10, 2)


def test_separable_layers():
    x = tf.placeholder(tf.float32, (None, 6, 6, 3))
    layer = tf.layers.SeparableConv2D(4, 3, padding="same", depth_multiplier=2)
    y = layer(x)
    assert names(layer) == ["separable_conv2d/depthwise_kernel",
                            "separable_conv2d/pointwise_kernel", "separable_conv2d/bias"]
    dw, pw, bias = layer.variables
    assert tuple(dw.shape) == (3, 3, 3, 2) and tuple(pw.shape) == (1, 1, 6, 4)
    ref = tf.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME") + bias
    x1 = tf.placeholder(tf.float32, (None, 8, 3))
    y1 = tf.layers.separable_conv1d(x1, 5, 3, padding="valid", name="sep1")
    got = run([y, ref, y1], {x: arr(2, 6, 6, 3), x1: arr(2, 8, 3)})
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6)
    assert got[2].shape == (2, 6, 5)


def test_batch_normalization_layer_object():
    x = tf.placeholder(tf.float32, (None, 3))
    bn = tf.layers.BatchNormalization(momentum=0.5)
    train, infer = bn(x, training=True), bn(x, training=False)
    assert names(bn) == ["batch_normalization/gamma", "batch_normalization/beta",
                         "batch_normalization/moving_mean",
                         "batch_normalization/moving_variance"]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    data = arr(4, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(train, {x: data})
        sess.run(updates, {x: data})
        mean = sess.run(bn.moving_mean)
        held = sess.run(infer, {x: data})
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(mean, 0.5 * data.mean(0), rtol=1e-5)
    assert held.shape == (4, 3)


def test_pooling_layers_and_conv1d_object():
    x3 = tf.placeholder(tf.float32, (None, 8, 3))
    x5 = tf.placeholder(tf.float32, (None, 4, 4, 4, 2))
    conv = tf.layers.Conv1D(5, 3, padding="same")
    outs = [tf.layers.AveragePooling1D(2, 2)(x3), tf.layers.MaxPooling3D(2, 2)(x5),
            tf.layers.AveragePooling3D(3, 1, padding="same")(x5),
            tf.layers.average_pooling1d(x3, 3, 1), conv(x3)]
    refs = [tf.nn.avg_pool1d(x3, 2, 2, "VALID"), tf.nn.max_pool3d(x5, 2, 2, "VALID"),
            tf.nn.avg_pool3d(x5, 3, 1, "SAME"), tf.nn.avg_pool1d(x3, 3, 1, "VALID"),
            tf.nn.conv1d(x3, conv.kernel, 1, "SAME") + conv.bias]
    got = run(outs + refs, {x3: arr(2, 8, 3), x5: arr(2, 4, 4, 4, 2)})
    for a, b in zip(got[:5], got[5:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
