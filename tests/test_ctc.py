"""Sparse tensors, ``nn.ctc_loss``, ``nn.ctc_greedy_decoder`` and ``edit_distance``.

The loss and its gradient are checked in ``op_specs`` against a sum over every path
(finite differences, float64, every backend). Here: the figures TF 2.21 gave for the
same arguments (``tf.compat.v1.nn.ctc_loss``, ``ctc_greedy_decoder``,
``edit_distance``, run once by hand; TensorFlow is not a test dependency), TF1's
errors, feeding and fetching ``SparseTensor``s, and a speech-style TF1 program that
trains with CTC until its greedy decoding is right.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow import backends
from gradflow.errors import InvalidArgumentError

AVAILABLE = [name for name in ("numpy", "array_api_strict", "torch", "cupy")
             if backends.available()[name] is None]


def _labels(rows):
    indices = np.array([[b, j] for b, row in enumerate(rows) for j in range(len(row))],
                       np.int64).reshape(-1, 2)
    values = np.array([v for row in rows for v in row], np.int32)
    shape = np.array([len(rows), max(len(r) for r in rows)], np.int64)
    return indices, values, shape


def _ctc_graph(classes, dtype=gf.float64, **kw):
    g = gf.Graph()
    with g.as_default():
        labels = gf.sparse_placeholder(gf.int32)
        x = gf.placeholder(dtype, (None, None, classes))
        lengths = gf.placeholder(gf.int32, (None,))
        loss = gf.nn.ctc_loss(labels, x, lengths, **kw)
        grad = gf.gradients(gf.reduce_sum(loss), x)[0]
    return g, labels, x, lengths, loss, grad


# TF 2.21, tf.compat.v1.nn.ctc_loss of these logits (float64) and labels
_RNG_LOGITS = np.random.default_rng(0).standard_normal((12, 4, 6))
_ROWS = [[1, 2, 2], [0], [4], [3, 1, 4, 0, 2]]
_LENGTHS = np.array([12, 5, 3, 9], np.int32)
_TF_LOSS = np.array([17.8906051, 8.02431055, 3.88220687, 10.74130475])


def test_the_loss_is_tensorflows(backend):
    g, labels, x, lengths, loss, grad = _ctc_graph(6)
    with gf.Session(graph=g, backend=backend) as sess:
        got, dx = sess.run([loss, grad], {labels: _labels(_ROWS), x: _RNG_LOGITS,
                                          lengths: _LENGTHS})
    np.testing.assert_allclose(got, _TF_LOSS, rtol=1e-8)
    # past each sequence's length the gradient is zero; before it, each step's
    # gradient sums to zero over the classes (softmax less the occupancy, both sum to 1)
    for b, n in enumerate(_LENGTHS):
        assert not dx[n:, b].any()
        np.testing.assert_allclose(dx[:n, b].sum(axis=1), 0.0, atol=1e-12)


def test_float32_and_every_backend_give_one_number():
    runs = []
    for backend in AVAILABLE:
        g, labels, x, lengths, loss, grad = _ctc_graph(6, gf.float32)
        with gf.Session(graph=g, backend=backend) as sess:
            runs.append(sess.run([loss, grad], {labels: _labels(_ROWS),
                                                x: _RNG_LOGITS.astype(np.float32),
                                                lengths: _LENGTHS}))
    np.testing.assert_allclose(runs[0][0], _TF_LOSS, rtol=2e-6)
    for other in runs[1:]:
        np.testing.assert_allclose(other[0], runs[0][0], rtol=1e-6)
        np.testing.assert_allclose(other[1], runs[0][1], atol=5e-6)


@pytest.mark.parametrize("rows,lengths,message", [
    ([[1], []], [3, 3], "labels length is zero in batch 1"),
    ([[1, 5]], [4], r"labels.values\[1\] = 5 is not in \[0, 5\)"),
    ([[1, 1, 1]], [4], r"not enough time for target transition sequence \(required: 5, "
                       r"available: 4\) in batch entry 0"),
    ([[1]], [7], r"sequence_length\(0\) = 7 is not in \[0, 6\]"),
])
def test_tf1s_errors_name_the_argument(rows, lengths, message):
    g, labels, x, seq, loss, _ = _ctc_graph(6)
    with gf.Session(graph=g) as sess, pytest.raises(InvalidArgumentError, match=message):
        sess.run(loss, {labels: _labels(rows), x: np.zeros((6, len(rows), 6)), seq: lengths})


def test_labels_out_of_order_are_refused():
    g, labels, x, seq, loss, _ = _ctc_graph(4)
    feed = {labels: ([[0, 1], [0, 0]], [1, 2], [1, 2]), x: np.zeros((3, 1, 4)), seq: [3]}
    with gf.Session(graph=g) as sess, pytest.raises(InvalidArgumentError, match="out of order"):
        sess.run(loss, feed)


def test_sequences_too_short_are_ignored_where_asked():
    g, labels, x, seq, loss, grad = _ctc_graph(4, ignore_longer_outputs_than_inputs=True)
    logits = np.random.default_rng(2).standard_normal((4, 2, 4))
    with gf.Session(graph=g) as sess:
        got, dx = sess.run([loss, grad], {labels: _labels([[0, 0, 0], [1, 2]]), x: logits,
                                          seq: [4, 4]})
    assert got[0] == 0.0 and not dx[:, 0].any()
    assert got[1] > 0 and dx[:, 1].any()


def test_wrong_arguments_are_refused_when_built():
    g = gf.Graph()
    with g.as_default():
        x = gf.placeholder(gf.float32, (5, 2, 4))
        with pytest.raises(TypeError, match="SparseTensor"):
            gf.nn.ctc_loss(gf.constant([[1, 2]]), x, [5, 5])
        with pytest.raises(NotImplementedError, match="ctc_merge_repeated"):
            gf.nn.ctc_loss(gf.sparse_placeholder(gf.int32), x, [5, 5], ctc_merge_repeated=False)


def test_greedy_decoding_and_edit_distance_are_tensorflows(backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 3, 5)).astype(np.float32)
    x[3:6, 0, :] = 0.0
    x[3:6, 0, 2] = 5.0  # one label held for three steps: merged, or not
    g = gf.Graph()
    with g.as_default():
        inputs = gf.placeholder(gf.float32, (None, None, 5))
        lengths = gf.placeholder(gf.int32, (None,))
        (merged,), neg_sum = gf.nn.ctc_greedy_decoder(inputs, lengths)
        (apart,), _ = gf.nn.ctc_greedy_decoder(inputs, lengths, merge_repeated=False)
        hyp = gf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1]], [1, 2, 3, 1, 1], [3, 2])
        truth = gf.SparseTensor([[0, 0], [0, 1], [0, 2], [2, 0]], [1, 3, 2, 1], [4, 3])
        distances = [gf.edit_distance(hyp, truth), gf.edit_distance(hyp, truth, False)]
    with gf.Session(graph=g, backend=backend) as sess:
        got = sess.run([merged, neg_sum, apart] + distances,
                       {inputs: x, lengths: [10, 6, 0]})
    decoded, sums, unmerged, normalized, plain = got
    assert isinstance(decoded, gf.SparseTensorValue)
    # TF 2.21's outputs for the same arguments
    np.testing.assert_array_equal(decoded.indices, [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0],
                                                    [1, 1], [1, 2]])
    np.testing.assert_array_equal(decoded.values, [0, 2, 3, 3, 2, 0, 2])
    np.testing.assert_array_equal(decoded.dense_shape, [3, 4])
    np.testing.assert_array_equal(unmerged.values, [0, 0, 2, 2, 2, 3, 3, 2, 2, 0, 2])
    np.testing.assert_array_equal(unmerged.dense_shape, [3, 7])
    np.testing.assert_allclose(sums[:, 0], [-23.985578536987305, -5.060714244842529, 0.0],
                               rtol=1e-6)
    np.testing.assert_allclose(normalized, [1 / 3, np.inf, 1.0, 0.0])
    np.testing.assert_array_equal(plain, [1.0, 1.0, 1.0, 0.0])


def test_sparse_tensors_feed_and_fetch():
    g = gf.Graph()
    with g.as_default():
        free = gf.sparse_placeholder(gf.float32)
        fixed = gf.sparse_placeholder(gf.float32, shape=[2, 3])
        dense = gf.sparse_tensor_to_dense(free, default_value=-1.0)
        also = gf.sparse.to_dense(fixed)
        spread = gf.sparse_to_dense([1, 3], [5], 9.0)
    value = gf.SparseTensorValue(np.array([[0, 0], [1, 2]]), np.array([7.0, 9.0]), [2, 3])
    with gf.Session(graph=g) as sess:
        got = sess.run([dense, also, spread, free], {free: value, fixed: tuple(value)})
        np.testing.assert_array_equal(got[0], [[7, -1, -1], [-1, -1, 9]])
        np.testing.assert_array_equal(got[1], [[7, 0, 0], [0, 0, 9]])
        np.testing.assert_array_equal(got[2], [0, 9, 0, 9, 0])
        assert isinstance(got[3], gf.SparseTensorValue)
        np.testing.assert_array_equal(got[3].indices, value.indices)
        assert fixed.shape.as_list() == [2, 3]
        with pytest.raises(ValueError, match=r"dense shape \[2, 3\].*\[2, 4\]"):
            sess.run(also, {fixed: (value.indices, value.values, [2, 4])})
        with pytest.raises(InvalidArgumentError, match="more than once"):
            sess.run(dense, {free: ([[0, 0], [0, 0]], [1.0, 2.0], [2, 3])})
        with pytest.raises(InvalidArgumentError, match=r"\[5, 0\] does not index"):
            sess.run(dense, {free: ([[0, 0], [5, 0]], [1.0, 2.0], [2, 3])})
        with pytest.raises(TypeError, match="SparseTensorValue"):
            sess.run(dense, {free: np.zeros((2, 3))})


def test_a_tf1_speech_style_program_learns_its_transcripts():
    """The shape of TF1's CTC tutorials (features -> LSTM -> dense -> ctc_loss, momentum,
    greedy decoding, label error rate), on a toy task: each input frame says which
    symbol is spoken, with silences, and the network must transcribe it."""
    tf = gf
    rng = np.random.default_rng(0)
    classes, steps, batch = 4, 12, 8  # 3 symbols and the blank
    transcripts = [list(rng.integers(0, 3, rng.integers(1, 4))) for _ in range(batch)]
    frames = np.zeros((batch, steps, 4), np.float32)
    for b, text in enumerate(transcripts):
        for k, sym in enumerate(text):
            frames[b, 3 * k:3 * k + 2, sym] = 1.0  # two frames of the symbol, one silent
        frames[b, 3 * len(text):, 3] = 1.0
    lengths = np.full(batch, steps, np.int32)
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(1)
        inputs = tf.placeholder(tf.float32, [None, None, 4])
        targets = tf.sparse_placeholder(tf.int32)
        seq_len = tf.placeholder(tf.int32, [None])
        cell = tf.nn.rnn_cell.LSTMCell(32, state_is_tuple=True)
        outputs, _ = tf.nn.dynamic_rnn(cell, inputs, seq_len, dtype=tf.float32)
        shape = tf.shape(inputs)
        flat = tf.reshape(outputs, [-1, 32])
        logits = tf.layers.dense(flat, classes)
        logits = tf.transpose(tf.reshape(logits, [shape[0], -1, classes]), (1, 0, 2))
        cost = tf.reduce_mean(tf.nn.ctc_loss(targets, logits, seq_len))
        train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(cost)
        decoded, _ = tf.nn.ctc_greedy_decoder(logits, seq_len)
        ler = tf.reduce_mean(tf.edit_distance(tf.cast(decoded[0], tf.int32), targets))
        init = tf.global_variables_initializer()
    feed = {inputs: frames, targets: _labels(transcripts), seq_len: lengths}
    with tf.Session(graph=g) as sess:
        sess.run(init)
        first = sess.run(cost, feed)
        for _ in range(150):
            sess.run(train, feed)
        last, error = sess.run([cost, ler], feed)
    assert last < first / 10
    assert error == 0.0


def test_dense_labels_to_a_sparse_tensor_as_tf1_programs_do():
    """TF1 programs make CTC labels from a padded dense matrix: ``tf.where`` of the
    entries that are not padding (its one-argument form: their coordinates),
    ``gather_nd`` of those, and ``tf.shape(..., out_type=tf.int64)``."""
    tf = gf
    g = tf.Graph()
    with g.as_default():
        padded = tf.placeholder(tf.int32, [None, None])
        logits = tf.placeholder(tf.float64, [None, None, 6])
        seq_len = tf.placeholder(tf.int32, [None])
        indices = tf.where(tf.not_equal(padded, 5))
        sparse = tf.SparseTensor(indices, tf.gather_nd(padded, indices),
                                 tf.shape(padded, out_type=tf.int64))
        from_dense = tf.nn.ctc_loss(sparse, logits, seq_len)
        fed = tf.sparse_placeholder(tf.int32)
        from_feed = tf.nn.ctc_loss(fed, logits, seq_len)
    rows = _ROWS
    dense = np.full((len(rows), 5), 5, np.int32)
    for b, row in enumerate(rows):
        dense[b, :len(row)] = row
    with tf.Session(graph=g) as sess:
        a, b, where = sess.run([from_dense, from_feed, indices],
                               {padded: dense, fed: _labels(rows), logits: _RNG_LOGITS,
                                seq_len: _LENGTHS})
    np.testing.assert_array_equal(where, np.argwhere(dense != 5))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, _TF_LOSS, rtol=1e-8)


def test_the_gradient_reuses_the_forward_recursion_of_its_run(monkeypatch):
    """The gradient op takes the loss op's lattice of the same run (known by the very loss
    array), so a training step runs the forward recursion once; a lattice of an earlier
    run is never taken."""
    from gradflow.prim import ctc as prim_ctc

    made = []

    class Counted(prim_ctc._Lattice):
        def __init__(self, *args):
            made.append(1)
            super().__init__(*args)

    monkeypatch.setattr(prim_ctc, "_Lattice", Counted)
    g, labels, x, lengths, loss, grad = _ctc_graph(6)
    feed = {labels: _labels(_ROWS), x: _RNG_LOGITS, lengths: _LENGTHS}
    with gf.Session(graph=g) as sess:
        got, dx = sess.run([loss, grad], feed)
        assert len(made) == 1
        sess.run(loss, feed)  # leaves its lattice behind
        other = {**feed, x: _RNG_LOGITS * 2.0}
        dx2 = sess.run(grad, other)
    fresh = gf.Session(graph=g)
    np.testing.assert_array_equal(dx2, fresh.run(grad, other))
    np.testing.assert_allclose(got, _TF_LOSS, rtol=1e-8)
