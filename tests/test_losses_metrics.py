"""tf.losses (every loss, weights broadcasting, every reduction, the collections) and
tf.metrics (streaming over batches, reset), against NumPy on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

R = gf.losses.Reduction
rng = np.random.default_rng(0)
LABELS = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
PREDICTIONS = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
WEIGHTS = {"scalar": 2.0, "rows": np.array([[1.0], [0.0], [2.0], [0.5]], np.float32),
           "full": rng.choice([0.0, 1.0, 3.0], (4, 3)).astype(np.float32),
           "columns": np.array([[0.0, 1.0, 2.0]], np.float32)}


def np_reduce(losses, weights, reduction):
    weights = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * weights
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    denominator = {R.SUM: 1.0, R.MEAN: weights.sum(), R.SUM_OVER_BATCH_SIZE: losses.size,
                   R.SUM_BY_NONZERO_WEIGHTS: np.count_nonzero(weights)}[reduction]
    return total / denominator if denominator else 0.0


def _run(backend, fetches, feed=None):
    with gf.Session(backend=backend) as sess:
        sess.run(gf.local_variables_initializer())
        return sess.run(fetches, feed)


@pytest.mark.parametrize("weights", sorted(WEIGHTS))
@pytest.mark.parametrize("reduction", [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE,
                                       R.SUM_BY_NONZERO_WEIGHTS])
def test_reductions_and_weights(backend, weights, reduction):
    w = WEIGHTS[weights]
    w_in = w if np.ndim(w) == 0 else gf.placeholder(gf.float32, np.shape(w))
    loss = gf.losses.mean_squared_error(LABELS, PREDICTIONS, weights=w_in, reduction=reduction)
    assert gf.losses.get_losses() == [loss]
    feed = {} if np.ndim(w) == 0 else {w_in: w}
    got = _run(backend, loss, feed)
    want = np_reduce((PREDICTIONS.astype(np.float64) - LABELS) ** 2, w, reduction)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_all_zero_weights_give_zero(backend):
    loss = gf.losses.absolute_difference(LABELS, PREDICTIONS, weights=0.0)
    mean = gf.losses.absolute_difference(LABELS, PREDICTIONS, weights=np.zeros((4, 1)),
                                         reduction=R.MEAN)
    assert _run(backend, [loss, mean]) == [0.0, 0.0]


def _sigmoid_xent(z, x):
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def _log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def test_each_loss_against_numpy(backend):
    y, p = LABELS.astype(np.float64), PREDICTIONS.astype(np.float64)
    probs = 1 / (1 + np.exp(-p))
    bits = (y > 0).astype(np.float64)
    onehot = np.eye(3)[[0, 2, 1, 1]]
    classes = np.array([0, 2, 1, 1])
    w = WEIGHTS["rows"].astype(np.float64)
    cases = [
        (gf.losses.absolute_difference(y, p, w),
         np_reduce(np.abs(p - y), w, R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.huber_loss(y, 3 * p, delta=0.7, reduction=R.SUM),
         np_reduce(np.where(np.abs(3 * p - y) <= 0.7, 0.5 * (3 * p - y) ** 2,
                            0.7 * (np.abs(3 * p - y) - 0.35)), 1.0, R.SUM)),
        (gf.losses.log_loss(bits, probs, w),
         np_reduce(-bits * np.log(probs + 1e-7) - (1 - bits) * np.log(1 - probs + 1e-7), w,
                   R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.hinge_loss(bits, p), np.mean(np.maximum(0, 1 - (2 * bits - 1) * p))),
        (gf.losses.cosine_distance(y, p, axis=1, weights=w[:, :1]),
         np_reduce(1 - (y * p).sum(1, keepdims=True), w[:, :1], R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.sigmoid_cross_entropy(bits, p, weights=w, label_smoothing=0.3),
         np_reduce(_sigmoid_xent(bits * 0.7 + 0.15, p), w, R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.softmax_cross_entropy(onehot, p, weights=w[:, 0], label_smoothing=0.3),
         np_reduce(-((onehot * 0.7 + 0.1) * _log_softmax(p)).sum(1), w[:, 0],
                   R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.sparse_softmax_cross_entropy(classes, p, weights=w),
         np_reduce(-_log_softmax(p)[np.arange(4), classes], w[:, 0],
                   R.SUM_BY_NONZERO_WEIGHTS)),
        (gf.losses.sparse_softmax_cross_entropy(classes[:, None], p, reduction=R.NONE),
         -_log_softmax(p)[np.arange(4), classes]),
    ]
    got = _run(backend, [c[0] for c in cases])
    for k, (value, (_, want)) in enumerate(zip(got, cases)):
        np.testing.assert_allclose(value, want, rtol=1e-9, atol=1e-12, err_msg=f"case {k}")
    assert gf.losses.get_losses() == [c[0] for c in cases]


def test_loss_names_and_collections():
    loss = gf.losses.softmax_cross_entropy(np.eye(3), np.zeros((3, 3), np.float32))
    assert loss.name == "softmax_cross_entropy_loss/value"
    other = gf.losses.mean_squared_error(LABELS, PREDICTIONS, scope="mine",
                                         loss_collection="my_losses")
    assert other.name.startswith("mine/")
    assert gf.losses.get_losses() == [loss]
    assert gf.losses.get_losses(loss_collection="my_losses") == [other]
    gf.losses.hinge_loss(LABELS > 0, PREDICTIONS, loss_collection=None)
    assert len(gf.get_collection(gf.GraphKeys.LOSSES)) == 1
    gf.losses.add_loss(other)
    assert gf.losses.get_losses(scope="mine") == [other]


def test_total_loss(backend):
    w = gf.get_variable("w", (3,), initializer=gf.constant_initializer([1.0, 2.0, 3.0]),
                        regularizer=gf.contrib.layers.l2_regularizer(0.5))
    loss = gf.losses.mean_squared_error(gf.zeros((3,)), w)
    total = gf.losses.get_total_loss()
    data_only = gf.losses.get_total_loss(add_regularization_losses=False)
    assert total.name == "total_loss"
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        values = sess.run([loss, total, data_only, gf.losses.get_regularization_loss()])
    np.testing.assert_allclose(values, [14 / 3, 14 / 3 + 3.5, 14 / 3, 3.5], rtol=1e-6)


def test_loss_errors():
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        gf.losses.compute_weighted_loss(LABELS, reduction="average")
    with pytest.raises(ValueError, match="cannot be broadcast"):
        gf.losses.mean_squared_error(LABELS, PREDICTIONS, weights=np.ones((3,), np.float32))
    with pytest.raises(ValueError, match="not compatible"):
        gf.losses.absolute_difference(LABELS, PREDICTIONS[:, :2])
    with pytest.raises(ValueError, match="must not be None"):
        gf.losses.log_loss(None, PREDICTIONS)
    with pytest.raises(ValueError, match="specify 'axis'"):
        gf.losses.cosine_distance(LABELS, PREDICTIONS)
    with pytest.raises(ValueError, match="No losses"):
        gf.losses.get_total_loss()
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
    assert len(set(R.all())) == 5


# -- metrics ------------------------------------------------------------------------------


BATCHES = [
    (np.array([1, 0, 2, 2]), np.array([1, 1, 2, 0]), np.array([1.0, 0.5, 0.0, 2.0])),
    (np.array([0, 0, 1, 2]), np.array([0, 0, 1, 2]), np.array([1.0, 1.0, 1.0, 3.0])),
    (np.array([2, 1, 1, 0]), np.array([0, 1, 0, 0]), np.array([0.0, 2.0, 1.0, 1.0])),
]


def _stream(backend, pairs, feeds):
    """Run every update op over ``feeds``; returns the values after each update (from the
    update ops and from the value tensors), then those after a reset."""
    with gf.Session(backend=backend) as sess:
        sess.run(gf.local_variables_initializer())
        after_update, after_read = [], []
        for feed in feeds:
            after_update.append(sess.run([u for _, u in pairs], feed))
            after_read.append(sess.run([v for v, _ in pairs]))
        sess.run(gf.local_variables_initializer())
        reset = sess.run([v for v, _ in pairs])
    return np.array(after_update), np.array(after_read), reset


def test_streaming_metrics(backend):
    labels, predictions = gf.placeholder(gf.int64, (None,)), gf.placeholder(gf.int64, (None,))
    weights = gf.placeholder(gf.float32, (None,))
    y, p = gf.cast(labels, gf.float32), gf.cast(predictions, gf.float32)
    pairs = [gf.metrics.accuracy(labels, predictions),
             gf.metrics.accuracy(labels, predictions, weights=weights),
             gf.metrics.mean(y, weights=weights),
             gf.metrics.mean_squared_error(y, p),
             gf.metrics.mean_absolute_error(y, p, weights=weights),
             gf.metrics.precision(labels > 0, predictions > 0),
             gf.metrics.recall(labels > 0, predictions > 0, weights=weights)]
    feeds = [{labels: a, predictions: b, weights: w} for a, b, w in BATCHES]
    updated, read, reset = _stream(backend, pairs, feeds)
    want = []
    for k in range(1, len(BATCHES) + 1):
        a = np.concatenate([b[0] for b in BATCHES[:k]]).astype(np.float64)
        b = np.concatenate([b[1] for b in BATCHES[:k]]).astype(np.float64)
        w = np.concatenate([b[2] for b in BATCHES[:k]])
        tp = ((a > 0) & (b > 0)).astype(np.float64)
        want.append([np.mean(a == b), np.average(a == b, weights=w), np.average(a, weights=w),
                     np.mean((a - b) ** 2), np.average(np.abs(a - b), weights=w),
                     tp.sum() / (b > 0).sum(), (tp * w).sum() / ((a > 0) * w).sum()])
    np.testing.assert_allclose(updated, want, rtol=1e-6)
    np.testing.assert_allclose(read, want, rtol=1e-6)
    assert reset == [0.0] * len(pairs)


def test_metric_variables_and_collections():
    value, update = gf.metrics.accuracy(gf.constant([1, 2]), gf.constant([1, 3]),
                                        metrics_collections=["m"], updates_collections=["u"])
    gf.metrics.mean(gf.constant([1.0]))
    gf.metrics.precision(gf.constant([True]), gf.constant([False]))
    names = [v.name for v in gf.local_variables()]
    assert names == ["accuracy/total", "accuracy/count", "mean/total", "mean/count",
                     "precision/true_positives/count", "precision/false_positives/count"]
    assert gf.get_collection(gf.GraphKeys.METRIC_VARIABLES) == gf.local_variables()
    assert gf.global_variables() == [] and gf.trainable_variables() == []
    assert gf.get_collection("m") == [value] and gf.get_collection("u") == [update]
    gf.metrics.accuracy(gf.constant([1]), gf.constant([1]))
    assert gf.local_variables()[-1].name == "accuracy_1/count"


def test_empty_metric_is_zero(backend):
    value, update = gf.metrics.mean(gf.placeholder(gf.float32, (None,)))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.local_variables_initializer())
        assert sess.run(value) == 0.0
