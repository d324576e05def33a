"""``tf.nn.fixed_unigram_candidate_sampler`` (and ``tf.random.``): the classes cannot be
TensorFlow's (another generator), so these tests check what TF1 fixes: shapes and dtypes,
the expected counts of given classes (TensorFlow 2.21's values, taken once from
``tensorflow.compat.v1`` in graph mode with ``/tmp/bench/bin/python`` for the same
calls), reserved ids and shards, the frequencies of the draws, the same classes on every
backend for a seed, and TF's check of ``range_max``.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

# TensorFlow 2.21, unigrams [1..6], distortion 0.5, num_sampled 4, unique=False:
# true_expected_count of [[0, 2], [5, 1]] and the sampled count of each class seen
_TF_TRUE = [[0.3692822754383087, 0.6396156549453735], [0.9045531749725342, 0.5222439765930176]]
_TF_SAMPLED = {5: 0.9045531749725342, 4: 0.8257402777671814, 2: 0.6396156549453735}


def _calls():
    true = gf.constant([[0, 2], [5, 1]], gf.int64)
    a = gf.nn.fixed_unigram_candidate_sampler(true, 2, 4, False, 6, unigrams=[1, 2, 3, 4, 5, 6],
                                              distortion=0.5, seed=1)
    b = gf.random.fixed_unigram_candidate_sampler(true, 2, 3, True, 6, unigrams=[4, 1, 0, 2],
                                                  num_reserved_ids=2, seed=2)
    c = gf.nn.fixed_unigram_candidate_sampler(gf.constant([[0, 2], [1, 1]], gf.int64), 2, 3,
                                              False, 3, unigrams=[1, 2, 3, 4, 5, 6],
                                              num_shards=2, shard=1, seed=3)
    return a, b, c


def test_counts_as_tensorflow(backend):
    a, b, c = _calls()
    shapes = [(4,), (2, 2), (4,), (3,), (2, 2), (3,), (3,), (2, 2), (3,)]  # TF 2.21's
    assert [tuple(t.shape.as_list()) for t in a + b + c] == shapes
    assert [t.dtype for t in a] == [gf.int64, gf.float32, gf.float32]
    with gf.Session(backend=backend) as sess:
        ra, rb, rc = sess.run([a, b, c])
    with gf.Session() as sess:
        again = sess.run([a, b, c])
    np.testing.assert_array_equal(ra[0], again[0][0])
    np.testing.assert_allclose(ra[1], _TF_TRUE, rtol=1e-6)
    weights = np.sqrt(np.arange(1, 7))
    want = 4 * weights[ra[0]] / weights.sum()  # num_sampled * P(k)
    np.testing.assert_allclose(ra[2], want, rtol=1e-6)
    for k, count in zip(ra[0], ra[2]):
        if int(k) in _TF_SAMPLED:
            assert count == pytest.approx(_TF_SAMPLED[int(k)], rel=1e-6)
    # reserved ids and zero counts are never drawn; unique draws are distinct
    assert len(set(rb[0].tolist())) == 3 and set(rb[0].tolist()) == {2, 3, 5}
    assert rb[1][0, 0] == 0.0 and rb[1][1, 1] == 0.0  # classes 0, 1: reserved (TF: 0.0)
    # shard 1 of 2 keeps classes 1, 3, 5 (weights 2, 4, 6) as 0, 1, 2: TF's [[0.5, 1.5],
    # [1.0, 1.0]] for true classes [[0, 2], [1, 1]]
    np.testing.assert_allclose(rc[1], [[0.5, 1.5], [1.0, 1.0]], rtol=1e-6)
    assert set(rc[0].tolist()) <= {0, 1, 2}


def test_frequencies():
    a, _, _ = _calls()
    with gf.Session() as sess:
        draws = np.concatenate([sess.run(a[0]) for _ in range(1500)])
    weights = np.sqrt(np.arange(1, 7))
    np.testing.assert_allclose(np.bincount(draws, minlength=6) / draws.size,
                               weights / weights.sum(), atol=0.02)


def test_vocab_file_and_errors(tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("the,10\nof,0\ncat,5\n")
    s = gf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 3, vocab_file=str(vocab),
                                              seed=1)
    with gf.Session() as sess:
        classes, true_count, _ = sess.run(s)
    assert set(classes.tolist()) <= {0, 2}
    assert true_count[0, 0] == pytest.approx(2 * 10 / 15)
    # TF: "range is 6 must be equal to weights size 3" (there when run; here when built)
    with pytest.raises(ValueError, match="range_max=5 but there are 6 classes"):
        gf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 5, unigrams=[1] * 6)
    with pytest.raises(ValueError, match="exactly one of vocab_file and unigrams"):
        gf.nn.fixed_unigram_candidate_sampler([[0]], 1, 2, False, 5)


# TensorFlow 2.21: learned_unigram_candidate_sampler(true, 1, 3, False, 4) run four times
# in one Session with these true classes: true_expected_count of each run (the counts
# start at 1 per class and grow by 1 per true class seen in earlier runs)
_LEARNED_FEEDS = [[[0]], [[0]], [[1], [0]], [[3]]]
_TF_LEARNED_TRUE = [[[0.75]], [[1.2000000476837158]], [[0.5], [1.5]], [[0.375]]]


def test_learned_unigram_learns_as_tensorflow(backend):
    true = gf.placeholder(gf.int64, [None, 1])
    s = gf.nn.learned_unigram_candidate_sampler(true, 1, 3, False, 4, seed=1)
    u = gf.random.learned_unigram_candidate_sampler(true, 1, 3, True, 4, seed=2)
    assert [t.dtype for t in s] == [gf.int64, gf.float32, gf.float32]
    runs = []
    with gf.Session(backend=backend) as sess:
        for feed, want in zip(_LEARNED_FEEDS, _TF_LEARNED_TRUE):
            classes, true_count, sampled_count = sess.run(s, {true: feed})
            np.testing.assert_allclose(true_count, want, rtol=1e-6)
            runs.append(classes)
        classes, _, _ = sess.run(u, {true: [[0]]})
        assert len(set(classes.tolist())) == 3
    # the sampled counts follow the same learnt distribution: after the four runs the
    # counts are [4, 2, 1, 1] (TF: class 0 -> 1.5, class 3 -> 0.375 in the fourth run)
    assert set(np.concatenate(runs).tolist()) <= {0, 1, 2, 3}
    with gf.Session() as sess:  # a new Session learns again: the first run's counts
        _, true_count, _ = sess.run(s, {true: [[0]]})
    np.testing.assert_allclose(true_count, [[0.75]], rtol=1e-6)
    with gf.Session() as sess:  # numpy
        again = [sess.run(s, {true: feed})[0] for feed in _LEARNED_FEEDS]
    for a, b in zip(runs, again):  # seeded: the same classes on every backend
        np.testing.assert_array_equal(a, b)
