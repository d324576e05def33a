"""``tf.nn.safe_embedding_lookup_sparse`` and ``tf.nn.with_space_to_batch`` against
TensorFlow 2.21's values: the literals below were printed by the same program run once
on ``tensorflow.compat.v1`` in graph mode (``/tmp/bench/bin/python``), rounded to 6
decimals; for ``with_space_to_batch``, each result's shape, sum and a position-weighted
checksum (``sum(v * arange(v.size).reshape(v.shape) % 7)``).
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

_TABLE = np.arange(12, dtype=np.float32).reshape(6, 2) / 4 - 1
_POS = [[0, 0], [0, 1], [1, 0], [3, 0], [3, 1], [3, 2]]

# TensorFlow 2.21
_TF_LOOKUPS = [
    [[0.25, 0.5], [0.0, 0.0], [0.0, 0.0], [0.166667, 0.416667], [0.0, 0.0]],
    [[0.0, 0.25], [0.0, 0.0], [0.0, 0.0], [-0.857143, -0.607143], [0.0, 0.0]],
    [[0.0, 0.75], [0.5, 0.75], [0.5, 0.75], [-4.5, -3.875], [0.5, 0.75]],
    [[0.0, 0.33541], [0.0, 0.0], [0.0, 0.0], [-0.986394, -0.698696], [0.0, 0.0]],
    [[[-0.5, -0.25], [1.5, 2.0]], [[0.0, 0.0], [0.0, 0.25]]],
    [[[-0.5, -0.25], [0.75, 1.0]], [[-1.0, -0.75], [0.0, 0.25]]],
]
_TF_TABLE_GRAD = [[-1.469388, -1.040816], [0.0, 0.333333], [-0.244898, -0.173469], [0.0, 0.0],
                  [0.0, 0.166667], [0.0, 0.0]]
_TF_SPACE_TO_BATCH = [((2, 7, 6, 2), 435.85211181640625, 543.4455518722534),
                      ((2, 3, 2, 2), 223.6619110107422, 81.45634174346924),
                      ((2, 7, 6, 2), 300.8544006347656, 588.3825630545616),
                      ((2, 3, 9, 8), 1265.0400390625, 819.5599906668067)]


def test_safe_embedding_lookup_sparse_as_tensorflow():
    ids = gf.SparseTensor(_POS, gf.constant([1, 4, -1, 2, 5, 0], gf.int64), [5, 3])
    w = gf.SparseTensor(_POS, [2.0, 1.0, 1.0, 0.5, -1.0, 3.0], [5, 3])
    ids3 = gf.SparseTensor([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 1, 0]],
                           gf.constant([1, 4, 3, 2], gf.int64), [2, 2, 2])
    table = gf.constant(_TABLE)
    parts = [gf.constant(_TABLE[:3]), gf.constant(_TABLE[3:])]
    outs = [gf.nn.safe_embedding_lookup_sparse(table, ids),
            gf.nn.safe_embedding_lookup_sparse(table, ids, w),
            gf.nn.safe_embedding_lookup_sparse(table, ids, w, combiner="sum", default_id=3),
            gf.nn.safe_embedding_lookup_sparse(table, ids, w, combiner="sqrtn"),
            gf.nn.safe_embedding_lookup_sparse(parts, ids3, combiner="sum"),
            gf.nn.safe_embedding_lookup_sparse(table, ids3, default_id=0)]
    grad = gf.gradients(gf.reduce_sum(outs[1] * outs[1]), table)[0]
    with gf.Session() as sess:
        values = sess.run(outs + [gf.convert_to_tensor(grad)])
    for got, want in zip(values, _TF_LOOKUPS + [_TF_TABLE_GRAD]):
        np.testing.assert_allclose(got, want, atol=2e-6)
    with pytest.raises(TypeError, match="must be a SparseTensor"):
        gf.nn.safe_embedding_lookup_sparse(table, [[1]])


def _checksum(v):
    return v.shape, float(v.sum()), float((v * np.arange(v.size).reshape(v.shape) % 7).sum())


def test_with_space_to_batch_as_tensorflow():
    x = gf.constant(np.arange(2 * 7 * 6 * 3, dtype=np.float32).reshape(2, 7, 6, 3) / 50)
    f = gf.constant(np.linspace(-1, 1, 54, dtype=np.float32).reshape(3, 3, 3, 2))

    def op(v, n, p):
        assert n == 2
        return gf.nn.conv2d(v, f, [1, 1, 1, 1], p)

    xn = gf.transpose(x, [0, 3, 1, 2])
    outs = [gf.nn.with_space_to_batch(x, [2, 2], "SAME", op, filter_shape=[3, 3]),
            gf.nn.with_space_to_batch(x, [2, 2], "VALID", op),
            gf.nn.with_space_to_batch(x, [1, 1], "SAME", op),
            gf.nn.with_space_to_batch(xn, [2, 2], "SAME", lambda v, n, p: v * 2.0,
                                      filter_shape=[2, 2], data_format="NCHW")]
    atrous = gf.nn.atrous_conv2d(x, f, 2, "SAME")
    with gf.Session() as sess:
        values = sess.run(outs + [atrous])
    for got, (shape, total, weighted) in zip(values, _TF_SPACE_TO_BATCH):
        s, t, w = _checksum(got)
        assert s == shape
        assert t == pytest.approx(total, rel=1e-5) and w == pytest.approx(weighted, rel=1e-5)
    np.testing.assert_allclose(values[0], values[4], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="needs filter_shape"):
        gf.nn.with_space_to_batch(x, [2, 2], "SAME", op)
