"""TF1 names added for issue 24's programs: the variable updates ``scatter_update``,
``scatter_add`` and ``scatter_sub``; ``random_shuffle`` and ``multinomial``; the layer
classes (``layers.Dense``...) and ``layers.max_pooling1d``. ``sort``, ``argsort``,
``unique`` and ``scatter_nd`` are rows of the op-spec table."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import draws_reference

import gradflow as gf
from gradflow.errors import InvalidArgumentError

V0 = np.arange(12.0).reshape(4, 3)
IDX = [2, 0, 2]
UPD = np.array([[1.0] * 3, [2.0] * 3, [3.0] * 3])


@pytest.mark.parametrize("op,want", [
    (gf.scatter_update, np.array([V0[0] * 0 + 2, V0[1], V0[2] * 0 + 3, V0[3]])),
    (gf.scatter_add, V0 + [[2], [0], [4], [0]]),
    (gf.scatter_sub, V0 - [[2], [0], [4], [0]]),
])
def test_scatter_updates_a_variable_when_the_run_commits(op, want, backend):
    v = gf.Variable(V0, name="table")
    idx = gf.placeholder(gf.int32, (None,), name="idx")
    upd = gf.placeholder(gf.float64, (None, 3), name="upd")
    update = op(v, idx, upd)
    seen = gf.identity(v) * 1.0  # read in the same run: the old value
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        new, old = sess.run([update, seen], {idx: IDX, upd: UPD})
        np.testing.assert_array_equal(new, want)  # the last of repeated indices wins
        np.testing.assert_array_equal(old, V0)
        np.testing.assert_array_equal(sess.run(v), want)


def test_scatter_checks_its_arguments():
    v = gf.Variable(V0, name="table")
    with pytest.raises(TypeError, match="scatter_add: 'x' is not a gf.Variable"):
        gf.scatter_add(gf.constant(V0, name="x"), [0], [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match=r"scatter_update: updates .* have shape \(2, 2\), "
                       r"but indices of shape \(2,\) into variable 'table' of shape \(4, 3\) "
                       r"need \(2, 3\)"):
        gf.scatter_update(v, [0, 1], np.ones((2, 2)))
    with pytest.raises(TypeError, match="indices .* must be int32 or int64"):
        gf.scatter_sub(v, [0.5], [[1.0, 2.0, 3.0]])


def test_scatter_nd_an_index_out_of_range_fails_at_run_time():
    i = gf.placeholder(gf.int32, (None, 1), name="i")
    out = gf.scatter_nd(i, gf.constant([1.0]), [3])
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out, {i: [[2]]}), [0, 0, 1])
        with pytest.raises(InvalidArgumentError):
            sess.run(out, {i: [[7]]})


def test_random_shuffle_permutes_rows_the_same_way_on_every_backend(backend):
    gf.set_random_seed(4)
    x = gf.placeholder(gf.float32, (None, 2), name="x")
    shuffled = gf.random_shuffle(x)
    assert shuffled.shape == (None, 2)
    assert gf.gradients(gf.reduce_sum(shuffled), [x]) == [None]  # as TF1: no gradient
    rows = np.arange(20.0, dtype=np.float32).reshape(10, 2)
    runs = []
    for name in (draws_reference(backend), backend):
        with gf.Session(backend=name) as sess:
            runs.append([sess.run(shuffled, {x: rows}) for _ in range(2)])
    first, second = runs[1]
    np.testing.assert_array_equal(first, runs[0][0])
    for out in (first, second):
        np.testing.assert_array_equal(np.sort(out[:, 0]), rows[:, 0])
        np.testing.assert_array_equal(out[:, 1], out[:, 0] + 1)  # whole rows move
    assert not np.array_equal(first, second)  # a new order each run


def test_multinomial_draws_from_the_softmax(backend):
    gf.set_random_seed(7)
    logits = gf.placeholder(gf.float32, (None, 3), name="logits")
    draws = gf.multinomial(logits, 4000)
    assert draws.shape == (None, 4000) and draws.dtype is gf.int64
    probs = np.array([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]])
    with gf.Session(backend=backend) as sess:
        out = sess.run(draws, {logits: np.log(probs).astype(np.float32)})
    with gf.Session(backend=draws_reference(backend)) as sess:
        np.testing.assert_array_equal(sess.run(draws, {logits: np.log(probs)}), out)
    freq = np.array([np.bincount(row, minlength=3) / row.size for row in out])
    np.testing.assert_allclose(freq, probs, atol=0.03)  # ~4 standard errors
    assert gf.multinomial(logits, 2, output_dtype=gf.int32).dtype is gf.int32
    with pytest.raises(ValueError, match=r"must be \[batch, classes\]"):
        gf.multinomial(gf.constant([1.0, 2.0]), 1)


def test_dense_layer_object_shares_its_variables_across_calls(backend):
    a = gf.placeholder(gf.float64, (None, 3), name="a")
    b = gf.placeholder(gf.float64, (None, None, 3), name="b")
    with gf.variable_scope("model"):
        layer = gf.layers.Dense(2, activation=gf.nn.relu,
                                kernel_initializer=gf.constant_initializer(
                                    np.arange(6.0).reshape(3, 2) - 2))
        ya = layer(a)
    yb = layer.apply(b)
    assert [v.name for v in layer.variables] == ["model/dense/kernel", "model/dense/bias"]
    assert layer.kernel is layer.variables[0] and layer.bias is layer.variables[1]
    assert layer.trainable_variables == layer.variables and layer.name == "dense"
    assert len(gf.global_variables()) == 2 and yb.shape == (None, None, 2)
    xs = np.random.default_rng(0).normal(size=(2, 4, 3))
    w = np.arange(6.0).reshape(3, 2) - 2
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        out_a, out_b = sess.run([ya, yb], {a: xs[0], b: xs})
    np.testing.assert_allclose(out_a, np.maximum(xs[0] @ w, 0), rtol=1e-12)
    np.testing.assert_allclose(out_b, np.maximum(xs @ w, 0), rtol=1e-12)


def test_conv_and_pooling_layer_objects(backend):
    x = gf.placeholder(gf.float32, (None, 6, 6, 1), name="x")
    conv = gf.layers.Conv2D(2, 3, padding="same", kernel_initializer=gf.ones_initializer())
    pool = gf.layers.MaxPooling2D(2, 2)
    y = gf.layers.Flatten()(pool(conv(x)))
    assert conv.kernel.shape == (3, 3, 1, 2) and y.shape == (None, 18)
    assert [v.name for v in gf.global_variables()] == ["conv2d/kernel", "conv2d/bias"]
    drop = gf.layers.Dropout(0.5)
    assert drop(y) is y  # training=False: the identity


def test_max_pooling1d(backend):
    x = gf.placeholder(gf.float32, (None, 5, 2), name="x")
    valid = gf.layers.max_pooling1d(x, pool_size=2, strides=2)
    same = gf.layers.MaxPooling1D(2, 2, padding="same")(x)
    assert valid.shape == (None, 2, 2) and same.shape == (None, 3, 2)
    xs = np.random.default_rng(3).normal(size=(2, 5, 2)).astype(np.float32)
    with gf.Session(backend=backend) as sess:
        got_valid, got_same = sess.run([valid, same], {x: xs})
    np.testing.assert_array_equal(got_valid, np.maximum(xs[:, 0:4:2], xs[:, 1:4:2]))
    np.testing.assert_array_equal(got_same[:, :2], got_valid)
    np.testing.assert_array_equal(got_same[:, 2], xs[:, 4])


def _roc_auc(labels, scores):
    pos, neg = scores[labels == 1], scores[labels == 0]
    return (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()


@pytest.mark.parametrize("curve", ["ROC", "PR"])
def test_auc_streams_over_batches(curve, backend):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    scores = np.clip(labels * 0.35 + rng.random(400) * 0.65, 0, 1).astype(np.float32)
    y = gf.placeholder(gf.int64, (None,), name="y")
    p = gf.placeholder(gf.float32, (None,), name="p")
    value, update = gf.metrics.auc(y, p, curve=curve, num_thresholds=50)
    assert [v.name for v in gf.local_variables()] == [
        "auc/true_positives", "auc/false_negatives", "auc/true_negatives",
        "auc/false_positives"]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.local_variables_initializer())
        for k in range(4):
            sess.run(update, {y: labels[k * 100:(k + 1) * 100], p: scores[k * 100:(k + 1) * 100]})
        got = sess.run(value)
    cuts = np.array([-1e-7] + [(i + 1) / 49 for i in range(48)] + [1 + 1e-7])
    pos = scores[None, :] > cuts[:, None]
    tp, fp = (pos & (labels == 1)).sum(1), (pos & (labels == 0)).sum(1)
    fn, tn = (~pos & (labels == 1)).sum(1), (~pos & (labels == 0)).sum(1)
    rec = (tp + 1e-6) / (tp + fn + 1e-6)
    x, yv = ((fp / (fp + tn + 1e-6), rec) if curve == "ROC"
             else (rec, (tp + 1e-6) / (tp + fp + 1e-6)))
    want = np.sum((x[:-1] - x[1:]) * (yv[:-1] + yv[1:]) / 2)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    if curve == "ROC":
        assert abs(got - _roc_auc(labels, scores)) < 0.01


def test_resize_images_bilinear_and_nearest_as_tf1(backend):
    x = gf.placeholder(gf.float64, (None, 2, 3, 1), name="images")
    up = gf.image.resize_images(x, [4, 5])
    near = gf.image.resize_images(x, [4, 6], method=gf.image.ResizeMethod.NEAREST_NEIGHBOR)
    corners = gf.image.resize_images(x, [3, 5], align_corners=True)
    grad, = gf.gradients(gf.reduce_sum(up), [x])
    img = np.arange(6.0).reshape(1, 2, 3, 1)
    with gf.Session(backend=backend) as sess:
        got_up, got_near, got_corners, g = sess.run([up, near, corners, grad], {x: img})
    # TF1's legacy rule: source row = out_row * in / out, rows clamped at the border; the
    # positions in float32, as TF1's kernel computes them (tests/test_image_io.py: its bits)
    rows = np.array([0, 0.5, 1, 1])
    want = rows[:, None] * 3 + np.minimum(np.arange(5) * 0.6, 2)[None, :]
    np.testing.assert_allclose(got_up[0, :, :, 0], want, rtol=1e-7)
    np.testing.assert_array_equal(got_near[0, :, :, 0],
                                  img[0, [0, 0, 1, 1]][:, [0, 0, 1, 1, 2, 2], 0])
    np.testing.assert_allclose(got_corners[0, :, :, 0],
                               np.linspace(0, 1, 3)[:, None] * 3 + np.linspace(0, 2, 5)[None],
                               rtol=1e-7)
    assert g.shape == img.shape and np.isclose(g.sum(), 20.0)  # every output pixel sums to 1
    single = gf.image.resize_images(gf.constant(np.ones((2, 3, 1), np.uint8)), [4, 6])
    assert single.shape == (4, 6, 1) and single.dtype is gf.float32


def test_random_flip_left_right_flips_about_half(backend):
    gf.set_random_seed(2)
    batch = gf.placeholder(gf.float32, (None, 1, 3, 1), name="batch")
    flipped = gf.image.random_flip_left_right(batch)
    one = gf.image.random_flip_left_right(gf.constant(np.arange(3.0).reshape(1, 3, 1)))
    images = np.tile(np.arange(3.0, dtype=np.float32).reshape(1, 1, 3, 1), (200, 1, 1, 1))
    with gf.Session(backend=backend) as sess:
        out = sess.run(flipped, {batch: images})[:, 0, :, 0]
        singles = [sess.run(one)[0, :, 0] for _ in range(20)]
    reversed_rows = np.all(out == [2, 1, 0], axis=1)
    assert np.all(reversed_rows | np.all(out == [0, 1, 2], axis=1))
    assert 70 < reversed_rows.sum() < 130
    assert {tuple(s) for s in singles} == {(0, 1, 2), (2, 1, 0)}


# -- two calls that stopped TF1 programs of others (issue 47) -----------------------------


def test_integer_random_uniform_draws_integers_in_range_the_same_on_every_backend(backend):
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(4)
        coins = gf.random_uniform([200], minval=0, maxval=2, dtype=gf.int32)
        dice = gf.random_uniform([3, 50], minval=1, maxval=7, dtype=gf.int64)
    with gf.Session(graph=graph, backend=backend) as sess:
        got_coins, got_dice = sess.run([coins, dice])
    with gf.Session(graph=graph, backend="numpy") as sess:
        want_coins, want_dice = sess.run([coins, dice])
    assert got_coins.dtype == np.int32 and got_dice.dtype == np.int64
    assert set(got_coins.tolist()) == {0, 1} and set(got_dice.ravel().tolist()) == set(range(1, 7))
    np.testing.assert_array_equal(got_coins, want_coins)
    np.testing.assert_array_equal(got_dice, want_dice)


@pytest.mark.parametrize("bounds, error, match", [
    ({}, ValueError, "needs maxval"),
    ({"maxval": 2.5}, TypeError, "must be Python integers"),
    ({"minval": 3, "maxval": 3}, ValueError, r"minval < maxval within int32, got \[3, 3\)"),
    ({"maxval": 2 ** 40}, ValueError, "within int32")])
def test_integer_random_uniform_refuses_what_tf1_refuses(bounds, error, match):
    with pytest.raises(error, match=match):
        gf.random_uniform([2], dtype=gf.int32, **bounds)
    with pytest.raises(TypeError, match="floating or integer, got bool"):
        gf.random_uniform([2], dtype=gf.bool)


def test_concat_of_one_tensor_is_that_tensor(backend):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with gf.Graph().as_default():
        t = gf.constant(x)
        joined, from_array = gf.concat(t, 1), gf.concat(x, 0)
        with gf.Session(backend=backend) as sess:
            got = sess.run([joined, from_array])
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1], x)
