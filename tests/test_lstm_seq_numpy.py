"""Whole LSTM layers as one loop each way on NumPy (``backends/numpy/lstm_seq.py``): the
NumPy backend's kernel pass ``fuse_lstm_layers`` (the recurrence pass, the sequence pass
``passes/cudnn_rnn.py``, then ``unfuse_lstm_recurrence`` for the layers it leaves) and
the lowerings of ``lstm_seq`` / ``lstm_seq_grad``.

Each model trains here three Adam steps, fetching the loss and the gradients, against
a Session with ``optimize=False`` (float64: rtol 1e-12; float32: rtol 2e-4, the numba
kernels' rational ``tanh`` being within 4e-7 of NumPy's and the optimized plan's sums
ordered differently, over three steps of Adam) and, in float32, against a Session whose
kernel passes leave out ``fuse_lstm_layers``: there the numbers are equal bit for bit
(the loops make the step plan's array calls in its order). Every case asserts how many
``lstm_seq`` the plan has, so that a pass that silently stops applying fails here.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.numpy import lstm_seq
from gradflow.passes.cudnn_rnn import SequenceLink
from gradflow.prim import rnn_seq

VOCAB, STEPS, BATCH, UNITS = 11, 6, 4, 7


def _without_layers(sess):
    """``sess`` with the NumPy backend's kernel passes minus the sequence pass."""
    sess.backend.kernel_passes = tuple(p for p in sess.backend.kernel_passes
                                       if p is not lstm_seq.fuse_lstm_layers)


def _embedded(dtype, steps=STEPS):
    ids = gf.placeholder(gf.int32, [None, steps])
    emb = gf.get_variable("emb", [VOCAB, 6], dtype=dtype)
    return ids, emb


def _loss(outputs, ids, units=UNITS):
    """Softmax cross-entropy of a dense layer over ``outputs`` ([time * batch, units],
    time-major) against the ids."""
    logits = gf.layers.dense(outputs, VOCAB)
    labels = gf.reshape(gf.transpose(ids), [-1])
    return gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))


def _static(cell):
    def build(dtype):
        ids, emb = _embedded(dtype)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(STEPS)]
        outputs, _ = gf.nn.static_rnn(cell(), inputs, dtype=dtype)
        return ids, _loss(gf.concat(outputs, 0), ids)

    return build


def _dynamic(lengths=False, bidirectional=False):
    """``dynamic_rnn`` (or ``bidirectional_dynamic_rnn``) over a time length known at run
    time only (the while_unroll pass unrolls it per fed length), with ``sequence_length``
    masking when ``lengths``."""
    def build(dtype):
        ids = gf.placeholder(gf.int32, (None, None))
        emb = gf.get_variable("emb", [VOCAB, 6], dtype=dtype)
        x = gf.nn.embedding_lookup(emb, ids)
        extra = {"sequence_length": gf.fill([gf.shape(ids)[0]], gf.shape(ids)[1] - 1)} \
            if lengths else {}
        if bidirectional:
            (fw, bw), _ = gf.nn.bidirectional_dynamic_rnn(
                gf.nn.rnn_cell.LSTMCell(UNITS), gf.nn.rnn_cell.LSTMCell(UNITS), x,
                dtype=dtype, **extra)
            outputs = gf.concat([fw, bw], 2)
        else:
            outputs, _ = gf.nn.dynamic_rnn(gf.nn.rnn_cell.LSTMCell(UNITS), x, dtype=dtype,
                                           **extra)
        width = 2 * UNITS if bidirectional else UNITS
        logits = gf.layers.dense(gf.reshape(outputs, (-1, width)), VOCAB)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.reshape(ids, (-1,)), logits=logits))
        return ids, loss

    return build


def _stack():
    return gf.nn.rnn_cell.MultiRNNCell([gf.nn.rnn_cell.LSTMCell(UNITS) for _ in range(2)])


# (builder, lstm_seq per plan): what the sequence pass takes of each model
MODELS = {
    "LSTMCell": (_static(lambda: gf.nn.rnn_cell.LSTMCell(UNITS)), 1),
    "BasicLSTMCell": (_static(lambda: gf.nn.rnn_cell.BasicLSTMCell(UNITS)), 1),
    "MultiRNNCell x2": (_static(_stack), 2),
    "dynamic_rnn": (_dynamic(), 1),
    "bidirectional_dynamic_rnn": (_dynamic(bidirectional=True), 2),
    # the masking's selects sit between the steps: no whole layer, the steps stay
    "dynamic_rnn sequence_length": (_dynamic(lengths=True), 0),
}


def _train(build, dtype, feeds, optimize=True, layers=True, seed=3):
    """Loss and gradients of each of three Adam steps (one per feed), and the plan."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        ids, loss = build(dtype)
        opt = gf.train.AdamOptimizer(1e-2)
        grads = opt.compute_gradients(loss)
        train = opt.apply_gradients(grads)
        init = gf.global_variables_initializer()
    fetches = [loss] + [g for g, _ in grads]
    with gf.Session(graph=graph, optimize=optimize) as sess:
        if not layers:
            _without_layers(sess)
        sess.run(init)
        got = [sess.run(fetches + [train], {ids: f})[:-1] for f in feeds]
        plan = sess.describe_plan(fetches + [train], {ids: feeds[-1]})
    return got, plan


def _feeds(steps=STEPS, count=3):
    rng = np.random.default_rng(7)
    return [rng.integers(0, VOCAB, (BATCH, steps)).astype(np.int32) for _ in range(count)]


def _assert_close(got, want, rtol, atol=0.0):
    for g_step, w_step in zip(got, want, strict=True):
        for g, w in zip(g_step, w_step, strict=True):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_float64_trains_as_the_unoptimized_session(model):
    build, layers = MODELS[model]
    feeds = _feeds()
    got, plan = _train(build, gf.float64, feeds)
    want, _ = _train(build, gf.float64, feeds, optimize=False)
    assert _ops(plan, "lstm_seq") == _ops(plan, "lstm_seq_grad") == layers, plan
    _assert_close(got, want, rtol=1e-12, atol=1e-15)


def _ops(plan, op):
    """How many steps of ``plan`` (``describe_plan``'s text) are ``op``."""
    return sum(1 for line in plan.splitlines() if line.split()[1:2] == [op])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_float32_is_bit_equal_to_the_step_plan(model):
    build, layers = MODELS[model]
    feeds = _feeds()
    got, plan = _train(build, gf.float32, feeds)
    steps, step_plan = _train(build, gf.float32, feeds, layers=False)
    assert _ops(plan, "lstm_seq") == layers and _ops(step_plan, "lstm_seq") == 0
    assert "lstm_step_rec" not in plan  # the layers left run the step plan's nodes
    for g_step, w_step in zip(got, steps, strict=True):
        for g, w in zip(g_step, w_step, strict=True):
            np.testing.assert_array_equal(g, w)
    want, _ = _train(build, gf.float32, feeds, optimize=False)
    _assert_close(got, want, rtol=2e-4, atol=1e-6)
