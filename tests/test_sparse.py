"""Sparse tensors in models: ``sparse_retain``, ``sparse_tensor_dense_matmul``, a
``SparseTensor`` times a scalar, and a graph convolution written as TF1's GCN code
writes it (sparse features with sparse dropout, a sparse normalized adjacency). The
product and its gradients are also in ``op_specs``; feeding, fetching and densifying
are in ``test_ctc.py``."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


def test_retain_keeps_the_flagged_entries_and_their_gradients():
    g = gf.Graph()
    with g.as_default():
        values = gf.placeholder(gf.float64, (None,))
        flags = gf.placeholder(gf.bool)  # rank unknown until fed, as a dropout mask's
        sp = gf.SparseTensor([[0, 0], [1, 2], [2, 1]], values, [3, 3])
        kept = gf.sparse_retain(sp, flags) * 2.0 / 4.0
        dense = gf.sparse_tensor_to_dense(kept)
        grad = gf.gradients(gf.reduce_sum(dense * dense), values)[0]
    with gf.Session(graph=g) as sess:
        d, dv, k = sess.run([dense, grad, kept], {values: [1.0, 2.0, 3.0],
                                                  flags: [True, False, True]})
    np.testing.assert_array_equal(d, [[0.5, 0, 0], [0, 0, 0], [0, 1.5, 0]])
    np.testing.assert_array_equal(k.indices, [[0, 0], [2, 1]])
    np.testing.assert_allclose(dv, [0.5, 0.0, 1.5])  # d/dv of (v / 2)^2 where kept
    with pytest.raises(NotImplementedError, match="only a scalar"):
        sp * gf.ones((3,), gf.float64)
    with pytest.raises(ValueError, match="must be a vector"):
        gf.sparse_retain(sp, gf.ones((3, 1), gf.bool))


def test_a_placeholder_with_a_constant_dense_shape():
    """GCN feeds its features through ``sparse_placeholder(shape=tf.constant(...))``: the
    fed dense shape must agree with it."""
    g = gf.Graph()
    with g.as_default():
        sp = gf.sparse_placeholder(gf.float32, shape=gf.constant([2, 3], dtype=gf.int64))
        dense = gf.sparse_tensor_to_dense(sp)
    with gf.Session(graph=g) as sess:
        got = sess.run(dense, {sp: ([[1, 2]], [5.0], [2, 3])})
        np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 5]])
        with pytest.raises(ValueError, match=r"dense shape \[2, 3\]"):
            sess.run(dense, {sp: ([[1, 2]], [5.0], [3, 3])})
    assert sp.shape.as_list() == [2, 3]


def _graph(rng, nodes=30, features=12):
    """A random graph's normalized adjacency D^-1/2 (A + I) D^-1/2 and sparse binary
    features, as (indices, values, shape) triples."""
    adj = (rng.random((nodes, nodes)) < 0.1).astype(np.float64)
    adj = np.maximum(adj, adj.T) + np.eye(nodes)
    scale = 1 / np.sqrt(adj.sum(1))
    norm = adj * scale[:, None] * scale[None, :]
    x = (rng.random((nodes, features)) < 0.2).astype(np.float64)

    def triple(a):
        idx = np.argwhere(a != 0)
        return idx.astype(np.int64), a[a != 0].astype(np.float32), np.array(a.shape, np.int64)

    return triple(norm), triple(x), norm, x


def test_a_graph_convolution_network_trains_and_matches_its_dense_form(backend):
    rng = np.random.default_rng(0)
    (support, feats, norm, x) = _graph(rng)
    # labels that a graph convolution can tell: the best of 3 scores of the neighbourhood
    labels = np.eye(3, dtype=np.float32)[np.argmax(norm @ x @ rng.standard_normal((12, 3)), 1)]
    w1 = rng.standard_normal((12, 8)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8, 3)).astype(np.float32) * 0.3
    tf = gf
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(3)
        a = tf.sparse_placeholder(tf.float32)
        f = tf.sparse_placeholder(tf.float32, shape=tf.constant(feats[2], dtype=tf.int64))
        keep = tf.placeholder_with_default(1.0, shape=())
        nonzero = tf.placeholder(tf.int32)
        y = tf.placeholder(tf.float32, (None, 3))
        v1, v2 = tf.Variable(w1), tf.Variable(w2)
        mask = tf.cast(tf.floor(keep + tf.random_uniform(nonzero)), dtype=tf.bool)
        dropped = tf.sparse_retain(f, mask) * (1.0 / keep)
        h = tf.nn.relu(tf.sparse_tensor_dense_matmul(a, tf.sparse_tensor_dense_matmul(
            dropped, v1)))
        logits = tf.sparse_tensor_dense_matmul(a, tf.matmul(h, v2))
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(0.05).minimize(loss)
        dense_logits = tf.matmul(tf.constant(norm.astype(np.float32)), tf.matmul(tf.nn.relu(
            tf.matmul(tf.constant(norm.astype(np.float32)),
                      tf.matmul(tf.constant(x.astype(np.float32)), v1))), v2))
        init = tf.global_variables_initializer()
    feed = {a: support, f: feats, y: labels, nonzero: [len(feats[1])]}
    with tf.Session(graph=g, backend=backend) as sess:
        sess.run(init)
        sparse_out, dense_out, first = sess.run([logits, dense_logits, loss], feed)
        np.testing.assert_allclose(sparse_out, dense_out, rtol=1e-5, atol=1e-6)
        for _ in range(100):
            sess.run(train, {**feed, keep: 0.8})
        last = sess.run(loss, feed)
    assert last < 0.5 * first, (first, last)


def test_sparse_tensors_without_entries():
    """No entries: zeros from to_dense and from the product, distances against nothing,
    no coordinates from where, an empty decoding of sequences without steps."""
    none = (np.zeros((0, 2), np.int64), np.zeros(0, np.float32), [2, 3])
    g = gf.Graph()
    with g.as_default():
        sp = gf.sparse_placeholder(gf.float32)
        b = gf.placeholder(gf.float32, (None, 2))
        hyp, truth = gf.sparse_placeholder(gf.int64), gf.sparse_placeholder(gf.int64)
        x = gf.placeholder(gf.float32, (None, None, 4))
        lengths = gf.placeholder(gf.int32, (None,))
        (decoded,), neg_sum = gf.nn.ctc_greedy_decoder(x, lengths)
        outs = [gf.sparse_tensor_to_dense(sp), gf.sparse_tensor_dense_matmul(sp, b),
                gf.edit_distance(hyp, truth), gf.where(gf.zeros((0, 3), gf.bool)),
                decoded, neg_sum]
    with gf.Session(graph=g) as sess:
        dense, product, distance, where, dec, sums = sess.run(outs, {
            sp: none, b: np.ones((3, 2), np.float32),
            hyp: (np.zeros((0, 2), np.int64), np.zeros(0, np.int64), [2, 0]),
            truth: ([[0, 0]], [1], [2, 1]),
            x: np.zeros((0, 2, 4), np.float32), lengths: [0, 0]})
    np.testing.assert_array_equal(dense, np.zeros((2, 3)))
    np.testing.assert_array_equal(product, np.zeros((2, 2)))
    np.testing.assert_array_equal(distance, [1.0, 0.0])
    assert where.shape == (0, 2)
    assert dec.indices.shape == (0, 2) and list(dec.dense_shape) == [2, 0]
    assert not np.signbit(sums).any()
