"""nn.nce_loss, nn.sampled_softmax_loss and the candidate samplers (TF1 semantics).

The losses are checked against a NumPy transcription of TF1's
``_compute_sampled_logits`` on the same samples; the samplers against their
distributions and TF1's expected-count formulas; the numbers against every backend.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf

FLT_MAX = float(np.finfo(np.float32).max)


# -- NumPy references (TF1's formulas) -------------------------------------------------


def _log_uniform_p(k, range_max):
    k = np.asarray(k, np.float64)
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(range_max + 1.0)


def _expected_count(p, num_tries, num_sampled):
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-p))


def _ref_logits(w, b, labels, x, sampled, true_count, sampled_count, remove):
    w, b, x = (np.asarray(a, np.float64) for a in (w, b, x))
    labels = np.asarray(labels).reshape(x.shape[0], -1)
    num_true = labels.shape[1]
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels]
    sampled_logits = x @ w[sampled].T + b[sampled]
    if remove:
        hits = (labels[:, :, None] == np.asarray(sampled)[None, None, :]).any(1)
        sampled_logits = sampled_logits - FLT_MAX * hits
    true_logits = true_logits - np.log(np.asarray(true_count, np.float64))
    sampled_logits = sampled_logits - np.log(np.asarray(sampled_count, np.float64))
    logits = np.concatenate([true_logits, sampled_logits], 1)
    targets = np.concatenate([np.full(true_logits.shape, 1.0 / num_true),
                              np.zeros(sampled_logits.shape)], 1)
    return logits, targets


def ref_nce_loss(*args):
    z, t = _ref_logits(*args)
    return (np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))).sum(1)


def ref_sampled_softmax_loss(*args):
    z, t = _ref_logits(*args)
    shifted = z - z.max(1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return -(t * log_softmax).sum(1)


LOSSES = {"nce": (gf.nn.nce_loss, ref_nce_loss),
          "sampled_softmax": (gf.nn.sampled_softmax_loss, ref_sampled_softmax_loss)}


def _problem(num_true, dtype, seed=0, classes=12, dim=5, batch=4, num_sampled=6):
    """Weights, biases, labels, inputs and fixed sampled values with accidental hits."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(classes, dim)).astype(dtype)
    b = rng.normal(size=classes).astype(dtype)
    x = rng.normal(size=(batch, dim)).astype(dtype)
    labels = np.stack([rng.choice(classes, num_true, replace=False) for _ in range(batch)])
    sampled = rng.choice(classes, num_sampled, replace=False)
    sampled[0] = labels[0, 0]  # an accidental hit for example 0 (and maybe others)
    true_count = rng.uniform(0.2, 1.5, size=(batch, num_true)).astype(np.float32)
    sampled_count = rng.uniform(0.2, 1.5, size=num_sampled).astype(np.float32)
    return w, b, labels.astype(np.int64), x, sampled.astype(np.int64), true_count, \
        sampled_count


# -- the losses against NumPy, with sampled_values given --------------------------------


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("num_true", [1, 3])
@pytest.mark.parametrize("remove", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_loss_matches_numpy(loss, num_true, remove, dtype, backend):
    fn, ref = LOSSES[loss]
    w, b, labels, x, sampled, tc, sc = _problem(num_true, dtype)
    out = fn(gf.constant(w), gf.constant(b), gf.constant(labels), gf.constant(x),
             num_sampled=len(sampled), num_classes=len(b), num_true=num_true,
             sampled_values=(sampled, tc, sc), remove_accidental_hits=remove)
    assert out.dtype is gf.as_dtype(dtype) and tuple(out.shape) == (len(x),)
    with gf.Session(backend=backend) as sess:
        value = sess.run(out)
    expected = ref(w, b, labels, x, sampled, tc, sc, remove)
    rtol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(value, expected, rtol=rtol, atol=rtol)


def test_accidental_hits_change_only_the_hit_examples():
    w, b, labels, x, sampled, tc, sc = _problem(1, "float64")
    args = (w, b, labels, x, sampled, tc, sc)
    kept = ref_nce_loss(*args, False)
    removed = ref_nce_loss(*args, True)
    hit = (labels == sampled[None, :]).any(1)
    assert hit[0]
    np.testing.assert_allclose(removed[~hit], kept[~hit])
    assert np.all(removed[hit] < kept[hit])
    for fn, ref in LOSSES.values():
        with gf.Graph().as_default():
            out = fn(w, b, labels, x, len(sampled), len(b), sampled_values=(sampled, tc, sc),
                     remove_accidental_hits=True)
            with gf.Session() as sess:
                np.testing.assert_allclose(sess.run(out), ref(*args, True), rtol=1e-10)


def test_rank_one_labels_and_unknown_batch(backend):
    """Labels [batch] are [batch, 1] when num_true is 1; the batch may be unknown."""
    w, b, labels, x, sampled, tc, sc = _problem(1, "float32")
    xp = gf.placeholder(gf.float32, (None, x.shape[1]))
    yp = gf.placeholder(gf.int64, (None,))
    out = gf.nn.sampled_softmax_loss(w, b, yp, xp, len(sampled), len(b),
                                     sampled_values=(sampled, tc, sc))
    with gf.Session(backend=backend) as sess:
        value = sess.run(out, {xp: x, yp: labels[:, 0]})
    np.testing.assert_allclose(value, ref_sampled_softmax_loss(w, b, labels, x, sampled, tc,
                                                               sc, True), rtol=1e-5)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_loss_with_a_sampler_in_the_graph(loss, backend):
    """The samples a run fetches are those its loss used; new samples every run."""
    fn, ref = LOSSES[loss]
    w, b, labels, x, *_ = _problem(2, "float32", classes=30)
    gf.set_random_seed(7)
    values = gf.nn.log_uniform_candidate_sampler(labels, 2, 10, True, 30)
    out = fn(w, b, labels, x, 10, 30, num_true=2, sampled_values=values)
    with gf.Session(backend=backend) as sess:
        runs = [sess.run([out, values]) for _ in range(2)]
    for value, (sampled, tc, sc) in runs:
        remove = loss == "sampled_softmax"
        np.testing.assert_allclose(value, ref(w, b, labels, x, sampled, tc, sc, remove),
                                   rtol=1e-5)
    assert not np.array_equal(runs[0][1][0], runs[1][1][0])


def test_default_sampler_is_seeded(backend):
    """Without sampled_values the loss draws log-uniform unique samples from the graph seed:
    the same graph gives the same losses on every backend and in every session."""
    def build():
        gf.set_random_seed(11)
        w, b, labels, x, *_ = _problem(1, "float32", classes=40)
        return (gf.nn.nce_loss(w, b, labels, x, 8, 40),
                gf.nn.sampled_softmax_loss(w, b, labels, x, 8, 40))

    with gf.Graph().as_default() as g1:
        fetch1 = build()
    with gf.Graph().as_default() as g2:
        fetch2 = build()
    with gf.Session(graph=g1, backend="numpy") as sess:
        expected = [sess.run(fetch1) for _ in range(3)]
    with gf.Session(graph=g2, backend=backend) as sess:
        actual = [sess.run(fetch2) for _ in range(3)]
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, e, rtol=1e-5)
    assert not np.allclose(expected[0][0], expected[1][0])


# -- gradients -------------------------------------------------------------------------


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("num_true", [1, 2])
def test_finite_difference_gradients(loss, num_true, backend):
    """float64 central differences w.r.t. weights, biases and inputs, fixed samples."""
    fn, _ = LOSSES[loss]
    w, b, labels, x, sampled, tc, sc = _problem(num_true, "float64", classes=7, dim=3,
                                                batch=3, num_sampled=4)
    rng = np.random.default_rng(5)
    mix = rng.normal(size=len(x))
    ps = [gf.placeholder(gf.float64, a.shape) for a in (w, b, x)]
    out = fn(ps[0], ps[1], labels, ps[2], len(sampled), len(b), num_true=num_true,
             sampled_values=(sampled, tc, sc), remove_accidental_hits=True)
    total = gf.reduce_sum(out * mix)
    grads = gf.gradients(total, ps)
    arrays = [w, b, x]
    with gf.Session(backend=backend) as sess:
        feed = dict(zip(ps, arrays))
        analytic = sess.run(grads, feed)
        for k, (p, a) in enumerate(zip(ps, arrays)):
            numeric = numeric_grad(sess, total, p, a, feed=feed)
            np.testing.assert_allclose(analytic[k], numeric, rtol=1e-5, atol=1e-7,
                                       err_msg=f"input {k}")
    # rows of weights and biases that no label or sample names get no gradient
    unused = sorted(set(range(len(b))) - set(labels.ravel()) - set(sampled))
    assert unused and np.all(analytic[0][unused] == 0) and np.all(analytic[1][unused] == 0)


# -- the samplers ----------------------------------------------------------------------


def _chi_square(counts, probabilities):
    expected = counts.sum() * probabilities
    return float(((counts - expected) ** 2 / expected).sum())


def test_log_uniform_sampler_distribution(backend):
    """With replacement: the draws follow P(k) = log((k + 2) / (k + 1)) / log(R + 1), and
    the expected counts are num_sampled P(k)."""
    range_max, n = 30, 30000
    gf.set_random_seed(1)
    true = np.array([[0], [5], [29]], np.int64)
    values = gf.nn.log_uniform_candidate_sampler(true, 1, n, False, range_max)
    assert [t.dtype for t in values] == [gf.int64, gf.float32, gf.float32]
    assert [tuple(t.shape) for t in values] == [(n,), (3, 1), (n,)]
    with gf.Session(backend=backend) as sess:
        sampled, tc, sc = sess.run(values)
    p = _log_uniform_p(np.arange(range_max), range_max)
    assert abs(p.sum() - 1) < 1e-12
    counts = np.bincount(sampled, minlength=range_max)
    assert len(counts) == range_max  # every sample is in [0, range_max)
    assert _chi_square(counts, p) < 70  # 29 degrees of freedom: p-value ~ 3e-5
    np.testing.assert_allclose(tc, n * _log_uniform_p(true, range_max), rtol=1e-6)
    np.testing.assert_allclose(sc, n * _log_uniform_p(sampled, range_max), rtol=1e-6)


def test_uniform_sampler_distribution(backend):
    range_max, n = 20, 20000
    gf.set_random_seed(2)
    values = gf.nn.uniform_candidate_sampler(np.zeros((2, 1), np.int64), 1, n, False,
                                             range_max)
    with gf.Session(backend=backend) as sess:
        sampled, tc, sc = sess.run(values)
    counts = np.bincount(sampled, minlength=range_max)
    assert len(counts) == range_max
    assert _chi_square(counts, np.full(range_max, 1 / range_max)) < 55  # 19 dof: p ~ 4e-5
    np.testing.assert_allclose(tc, n / range_max, rtol=1e-6)
    np.testing.assert_allclose(sc, n / range_max, rtol=1e-6)


@pytest.mark.parametrize("sampler", ["log_uniform", "uniform"])
def test_unique_samples_and_expected_counts(sampler, backend):
    """unique=True: distinct classes, and TF1's expected count -expm1(tries log1p(-p))
    with the number of draws it took (p num_sampled when no draw was rejected)."""
    fn = getattr(gf.nn, f"{sampler}_candidate_sampler")
    range_max, num_sampled = 50, 20
    true = np.array([[0, 3], [7, 49]], np.int64)
    gf.set_random_seed(3)
    values = fn(true, 2, num_sampled, True, range_max)
    packed = values[0].inputs[0]  # the sampler node: the classes, then the number of draws
    with gf.Session(backend=backend) as sess:
        runs = [sess.run([values, packed]) for _ in range(20)]
    tries_seen = set()
    for (sampled, tc, sc), raw in runs:
        assert len(set(sampled.tolist())) == num_sampled
        assert sampled.min() >= 0 and sampled.max() < range_max
        tries = int(raw[-1])
        np.testing.assert_array_equal(raw[:-1], sampled)
        assert tries >= num_sampled
        tries_seen.add(tries)
        if sampler == "uniform":
            p_true, p_sampled = np.full(true.shape, 1 / range_max), np.full(num_sampled,
                                                                             1 / range_max)
        else:
            p_true, p_sampled = _log_uniform_p(true, range_max), _log_uniform_p(sampled,
                                                                                range_max)
        np.testing.assert_allclose(tc, _expected_count(p_true, tries, num_sampled), rtol=1e-6)
        np.testing.assert_allclose(sc, _expected_count(p_sampled, tries, num_sampled),
                                   rtol=1e-6)
    assert max(tries_seen) > num_sampled  # rejections happen at this size


def test_unique_first_draw_follows_the_base_distribution():
    """The first class of a unique batch is never rejected, so it follows P(k)."""
    range_max = 10
    gf.set_random_seed(4)
    sampled, _, _ = gf.nn.log_uniform_candidate_sampler(np.zeros((1, 1), np.int64), 1, 3,
                                                        True, range_max)
    with gf.Session() as sess:
        firsts = np.array([sess.run(sampled)[0] for _ in range(4000)])
    counts = np.bincount(firsts, minlength=range_max)
    assert _chi_square(counts, _log_uniform_p(np.arange(range_max), range_max)) < 35  # 9 dof


def test_all_classes_when_num_sampled_is_range_max():
    values = gf.nn.log_uniform_candidate_sampler(np.zeros((1, 1), np.int64), 1, 8, True, 8)
    with gf.Session() as sess:
        sampled = sess.run(values[0])
    assert sorted(sampled.tolist()) == list(range(8))


def test_same_seed_same_samples_on_every_backend(backend):
    def build(op_seed=None):
        g = gf.Graph()
        with g.as_default():
            gf.set_random_seed(21)
            true = gf.placeholder(gf.int64, (None, 1))
            out = gf.nn.log_uniform_candidate_sampler(true, 1, 16, True, 1000, seed=op_seed)
        return g, true, out

    feed_value = np.array([[1], [500]], np.int64)
    results = {}
    for name in ("numpy", backend):
        g, true, out = build()
        with gf.Session(graph=g, backend=name) as sess:
            results[str(name)] = [sess.run(out, {true: feed_value}) for _ in range(3)]
    reference, actual = results["numpy"], results[str(backend)]
    for r, a in zip(reference, actual):
        np.testing.assert_array_equal(a[0], r[0])
        np.testing.assert_allclose(a[1], r[1], rtol=1e-6)
        np.testing.assert_allclose(a[2], r[2], rtol=1e-6)
    assert not np.array_equal(reference[0][0], reference[1][0])  # new samples every run
    g, true, out = build(op_seed=5)  # an op seed also fixes them
    g2, true2, out2 = build(op_seed=6)
    with gf.Session(graph=g) as s1, gf.Session(graph=g2) as s2:
        assert not np.array_equal(s1.run(out[0], {true: feed_value}),
                                  s2.run(out2[0], {true2: feed_value}))


def test_sampler_and_loss_errors():
    true = np.zeros((2, 1), np.int64)
    with pytest.raises(ValueError, match="distinct"):
        gf.nn.log_uniform_candidate_sampler(true, 1, 11, True, 10)
    with pytest.raises(ValueError, match="num_true"):
        gf.nn.uniform_candidate_sampler(np.zeros((2, 3), np.int64), 1, 4, True, 10)
    with pytest.raises(TypeError, match="int64"):
        gf.nn.uniform_candidate_sampler(np.zeros((2, 1), np.float32), 1, 4, True, 10)
    w, b, labels, x, sampled, tc, sc = _problem(1, "float32")
    with pytest.raises(ValueError, match="sampled_values"):
        gf.nn.nce_loss(w, b, labels, x, 6, 12, sampled_values=(sampled, tc))
    with pytest.raises(NotImplementedError, match="sharded"):
        gf.nn.nce_loss([w, w], b, labels, x, 6, 12)
    with pytest.raises(TypeError, match="labels"):
        gf.nn.nce_loss(w, b, labels.astype(np.float32), x, 6, 12)


# -- training --------------------------------------------------------------------------


def _skipgram_pairs(vocab, rng, n):
    """(center, context) pairs from a toy corpus: words come in groups of five whose
    members appear next to each other, with Zipf-like frequencies (low ids common)."""
    weights = 1.0 / np.arange(1, vocab // 5 + 1)
    groups = rng.choice(vocab // 5, size=n, p=weights / weights.sum())
    centers = groups * 5 + rng.integers(0, 5, n)
    contexts = groups * 5 + rng.integers(0, 5, n)
    return centers.astype(np.int64), contexts.astype(np.int64)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_word2vec_training_loss_falls(loss, backend):
    vocab, dim, batch, num_sampled = 50, 8, 32, 6
    fn, _ = LOSSES[loss]
    gf.set_random_seed(0)
    centers = gf.placeholder(gf.int64, (batch,))
    contexts = gf.placeholder(gf.int64, (batch, 1))
    embeddings = gf.Variable(gf.random_uniform((vocab, dim), -1.0, 1.0))
    nce_w = gf.Variable(gf.truncated_normal((vocab, dim), stddev=1.0 / math.sqrt(dim)))
    nce_b = gf.Variable(gf.zeros((vocab,)))
    embed = gf.nn.embedding_lookup(embeddings, centers)
    cost = gf.reduce_mean(fn(weights=nce_w, biases=nce_b, labels=contexts, inputs=embed,
                             num_sampled=num_sampled, num_classes=vocab))
    train = gf.train.AdamOptimizer(0.05).minimize(cost)
    rng = np.random.default_rng(0)
    c, t = _skipgram_pairs(vocab, rng, batch * 80)
    losses = []
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for step in range(80):
            sl = slice(step * batch, (step + 1) * batch)
            _, value = sess.run([train, cost], {centers: c[sl], contexts: t[sl, None]})
            losses.append(value)
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    assert np.isfinite(losses).all()
    assert last < 0.5 * first, (first, last)
