"""Fused attention on a real GPU (skipped without CuPy, a CUDA device or cuDNN's Python
frontend): BERT's and GPT-2's attention in float16 run through cuDNN's SDPA forward and
backward (gradflow/backends/cupy/attention.py) and give the unfused CuPy ops' numbers to
half-precision tolerance, with dropout's same draw; a captured training step replays
them; float32 keeps the unfused path's numbers."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import gradflow as gf
import gradflow.passes as passes
from gradflow.capture import WARM_RUNS
from gradflow.passes.attention import fuse_attention

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
from gradflow.backends.cupy import attention as cupy_attention  # noqa: E402

_cudnn, _why = cupy_attention.load_cudnn()
if _cudnn is None:
    pytest.skip(_why, allow_module_level=True)

B, H, S, D = 4, 2, 128, 64


def _model(dtype, causal, dropout):
    gf.set_random_seed(11)
    rng = np.random.default_rng(0)
    q, k, v = (gf.Variable(rng.normal(size=(B, H, S, D)).astype(dtype), name=n)
               for n in "qkv")
    w = gf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(D))
    feed = {}
    if causal:
        b = gf.reshape(gf.cast(gf.range(S)[:, None] >= gf.range(S), w.dtype), [1, 1, S, S])
        w = w * b - gf.cast(1e10, w.dtype) * (1 - b)
    else:
        mask = gf.placeholder(dtype, [None, S])
        w = w + gf.expand_dims(gf.expand_dims((1.0 - mask) * -10000.0, 1), 1)
        pad = np.ones((B, S), dtype)
        pad[:, S * 3 // 4:] = 0.0
        feed[mask] = pad
    probs = gf.nn.softmax(w)
    if dropout:
        probs = gf.nn.dropout(probs, rate=0.1)
    o = gf.matmul(probs, v)
    loss = gf.reduce_sum(gf.cast(o, gf.float32) ** 2)
    return [o] + gf.gradients(loss, [q, k, v]), feed, loss, [q, k, v]


def _run(fetches, feed, fused, **session):
    saved = passes.PASSES
    passes.PASSES = saved if fused else [p for p in saved if p is not fuse_attention]
    try:
        with gf.Session(backend="cupy", **session) as sess:
            sess.run(gf.global_variables_initializer())
            return [np.asarray(x, np.float64) for x in sess.run(fetches, feed)]
    finally:
        passes.PASSES = saved


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout", [False, True])
def test_float16_attention_runs_cudnn_with_the_unfused_numbers(causal, dropout, caplog):
    fetches, feed, _, _ = _model(np.float16, causal, dropout)
    before = cupy_attention.CudnnSdpa.built
    with caplog.at_level(logging.WARNING, logger="gradflow.cupy"):
        got = _run(fetches, feed, True)
    refused = [r.message for r in caplog.records if "refused" in r.message]
    assert not refused, refused
    assert cupy_attention.CudnnSdpa.built >= before + 2  # a forward and a backward graph
    want = _run(fetches, feed, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=3e-2, atol=3e-2 * np.abs(w).max())


def test_float32_keeps_the_unfused_numbers():
    fetches, feed, _, _ = _model(np.float32, False, True)
    before = cupy_attention.CudnnSdpa.built
    got, want = _run(fetches, feed, True), _run(fetches, feed, False)
    assert cupy_attention.CudnnSdpa.built == before
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * np.abs(w).max())


def test_a_captured_float16_step_replays_cudnns_attention():
    _, feed, loss, variables = _model(np.float16, False, False)
    train = gf.train.GradientDescentOptimizer(1e-3).minimize(loss)

    def steps(capture):
        with gf.Session(backend="cupy", capture=capture) as sess:
            sess.run(gf.global_variables_initializer())
            losses = [sess.run([train, loss], feed)[1] for _ in range(WARM_RUNS + 3)]
            plans = [p for p in sess._plans.values() if hasattr(p, "captured")]
            return np.array(losses), plans

    plain, _ = steps(False)
    captured, plans = steps(True)
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]
    np.testing.assert_allclose(captured, plain, rtol=1e-3)
