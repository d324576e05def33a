"""``benchmarks/transformer.py --profile`` on a tiny encoder: its timers wrap the
executor's ``bind`` and name the fused layer-norm and attention pairs of the BERT-style
step (one call per layer norm each way), and ``--unfused-layer-norm``'s step has none."""

from __future__ import annotations

import collections
import importlib

import numpy as np

from gradflow.passes.layer_norm import fuse_layer_norm


def _profile(bench, without):
    rng = np.random.default_rng(1)
    ids = rng.integers(0, bench.VOCAB, (2, 16)).astype(np.int32)
    mask = np.ones((2, 16), np.float32)
    labels = np.array([0, 1], np.int32)
    weights = bench.init_weights(64, 1, 16)
    return bench.profile_ops(lambda: bench.unfused_step(weights, ids, mask, labels, 1,
                                                        without), steps=2)


def test_the_encoder_profile_names_the_fused_pairs(benchmark_modules):
    bench = importlib.import_module("transformer")
    from gradflow import executor

    bind = executor.bind
    wall, ops = _profile(bench, None)
    assert executor.bind is bind  # put back
    calls = collections.Counter()
    for name, (_, n) in ops.items():  # one row per shape: the embeddings' are 3-D
        calls[name.split("(")[0]] += n
    assert calls["layer_norm_fwd"] == calls["layer_norm_bwd"] == 3  # embeddings, 2 per layer
    assert calls["attention_fwd"] == calls["attention_bwd"] == 1
    assert 0 < sum(ms for ms, _ in ops.values()) <= wall * 1.5
    _, unfused = _profile(bench, fuse_layer_norm)
    assert not any(name.startswith("layer_norm") for name in unfused)
