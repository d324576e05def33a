"""``dynamic_rnn`` over a time length known only at run time on a real GPU (skipped without
CuPy and a CUDA device): the plan specialized to the fed shapes unrolls the loop, so the
CuPy backend's LSTM kernels with the recurrent product inside (``lstm_step_rec``) run
each step and the training step is captured as one CUDA graph, with NumPy's losses."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradflow as gf
from gradflow.capture import WARM_RUNS

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

VOCAB, EMBED, UNITS, BATCH, STEPS = 11, 6, 16, 4, 9


def _losses(backend, capture, steps_fed):
    """The losses of ``WARM_RUNS + 3`` Adam steps per fed length, and the session's plans."""
    gf.reset_default_graph()
    gf.set_random_seed(1)
    ids = gf.placeholder(gf.int32, (None, None))
    targets = gf.placeholder(gf.int32, (None, None))
    emb = gf.get_variable("emb", (VOCAB, EMBED))
    outputs, _ = gf.nn.dynamic_rnn(gf.nn.rnn_cell.LSTMCell(UNITS),
                                   gf.nn.embedding_lookup(emb, ids), dtype=gf.float32)
    logits = gf.layers.dense(gf.reshape(outputs, (-1, UNITS)), VOCAB)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=gf.reshape(targets, (-1,)), logits=logits))
    train = gf.train.AdamOptimizer(1e-2).minimize(loss)
    rng = np.random.default_rng(0)
    losses, described = [], []
    with gf.Session(backend=backend, capture=capture) as sess:
        sess.run(gf.global_variables_initializer())
        for t in steps_fed:
            feed = {ids: rng.integers(0, VOCAB, (BATCH, t)).astype(np.int32),
                    targets: rng.integers(0, VOCAB, (BATCH, t)).astype(np.int32)}
            losses += [sess.run([train, loss], feed)[1] for _ in range(WARM_RUNS + 3)]
            described.append(sess.describe_plan(train, feed))
        plans = [p for p in sess._plans.values() if hasattr(p, "captured")]
    return np.array(losses), described, plans


def test_an_unrolled_dynamic_lstm_step_is_captured_with_numpys_losses():
    lengths = (STEPS, 3)
    reference, _, _ = _losses("numpy", False, lengths)
    captured, described, plans = _losses("cupy", True, lengths)
    for text in described:
        assert not re.search(r"^\s*\d+ while ", text, re.M)
        assert "lstm_step_rec" in text
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]
    np.testing.assert_allclose(captured, reference, rtol=2e-4)
