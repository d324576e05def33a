"""``tf.nn.dilation2d`` and ``tf.nn.erosion2d``, with their gradients, against
TensorFlow 2.21: the program below ran once on ``tensorflow.compat.v1`` in graph mode
(``/tmp/bench/bin/python``) in float64; the literals are, per result (dilation, erosion,
the gradients of ``sum(dilation * cos(k)) + sum(erosion ** 2)`` in input and filter, for
four stride/rate/padding cases), its shape, sum and ``sum(v * sin(k))`` over the
flattened positions ``k``.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as tf

_TF = [
    ((2, 6, 5, 3), 251.64536515092976, 8.780357603603921),
    ((2, 6, 5, 3), -207.30004754355866, -3.573434673448326),
    ((2, 6, 5, 3), -414.5341150840527, 37.300902395281874),
    ((3, 2, 3), 414.6660750901821, -39.78068186405671),
    ((2, 3, 5, 3), 109.46598852498997, -2.792836639420714),
    ((2, 3, 5, 3), -106.08579931224467, -9.419867320807887),
    ((2, 6, 5, 3), -210.62933685843842, 18.076478596390352),
    ((3, 2, 3), 213.71386039054028, -15.269518482019222),
    ((2, 2, 2, 3), 35.49648881573259, 1.2142232980262941),
    ((2, 2, 2, 3), -35.1298027467018, 0.504047286820573),
    ((2, 6, 5, 3), -70.8005200334229, 1.9704129064629843),
    ((3, 2, 3), 69.71869095338431, 9.409053069153725),
    ((2, 2, 2, 3), 34.44363117925633, 0.843191535695794),
    ((2, 2, 2, 3), -33.8856347128827, -0.21806782606519837),
    ((2, 6, 5, 3), -68.3121839657847, 15.79416410642192),
    ((3, 2, 3), 67.2303548857461, 8.214380072510345),
]

CASES = [([1, 1, 1, 1], [1, 1, 1, 1], "SAME"), ([1, 2, 1, 1], [1, 1, 2, 1], "SAME"),
         ([1, 1, 2, 1], [1, 2, 1, 1], "VALID"), ([1, 2, 2, 1], [1, 1, 1, 1], "VALID")]


def test_dilation_and_erosion_as_tensorflow(backend):
    rng = np.random.RandomState(1)
    xv = rng.randn(2, 6, 5, 3)
    fv = rng.randn(3, 2, 3) * 0.5
    x = tf.constant(xv, tf.float64)
    f = tf.constant(fv, tf.float64)
    outs = []
    for s, r, p in CASES:
        d = tf.nn.dilation2d(x, f, s, r, p)
        e = tf.nn.erosion2d(x, f, s, r, p)
        n = int(np.prod(d.shape.as_list()))
        w = tf.constant(np.cos(np.arange(n)).reshape(d.shape.as_list()))
        outs += [d, e] + tf.gradients(tf.reduce_sum(d * w) + tf.reduce_sum(e * e), [x, f])
    with tf.Session(backend=backend) as sess:
        values = sess.run(outs)
    for v, (shape, total, weighted) in zip(values, _TF):
        assert v.shape == shape
        assert float(v.sum()) == pytest.approx(total, rel=1e-9, abs=1e-9)
        twisted = float((v * np.sin(np.arange(v.size)).reshape(v.shape)).sum())
        assert twisted == pytest.approx(weighted, rel=1e-9, abs=1e-9)


def test_dilation_arguments():
    x = tf.zeros([1, 4, 4, 2])
    f = tf.zeros([2, 2, 2])
    y = tf.nn.dilation2d(x, filters=f, strides=[1, 1, 1, 1], dilations=[1, 2, 2, 1],
                         padding="VALID")
    assert y.shape.as_list() == [1, 2, 2, 2]
    with pytest.raises(ValueError, match=r"strides must be \[1, height, width, 1\]"):
        tf.nn.dilation2d(x, f, [1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="the input has 2 channels, the filter 3"):
        tf.nn.dilation2d(x, tf.zeros([2, 2, 3]), [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
