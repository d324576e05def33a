"""TF1 programs of issue 24 (see ``tf1_programs/README.md``): ``tf.contrib`` layers under
``arg_scope``, ``seq2seq.sequence_loss``, softmax cross-entropy over placeholders with no
shape, ``layers.dense`` on ``[None, None, 128]`` and ``random_normal(tf.shape(z))``, each
run on every CPU backend with its numbers checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from test_tf1_programs import (  # noqa: F401 - fixtures
    backend_name,
    load_program,
    restore_graph_stack,
)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def test_contrib_arg_scope_program(backend_name):  # noqa: F811 - the fixture
    out = load_program("contrib_arg_scope").main(steps=150 if backend_name == "numpy" else 60)
    assert sorted(n.split(":")[0] for n in out["names"] if "fc1" in n) == [
        "fc1/BatchNorm/beta", "fc1/BatchNorm/moving_mean", "fc1/BatchNorm/moving_variance",
        "fc1/weights"]  # batch_norm instead of biases, as TF1
    assert out["accuracy"] > 0.9
    assert out["losses"][-1] < out["losses"][0]
    # the regularizer set by arg_scope: 1e-3 * sum(w ** 2) / 2 over fc1 and fc2 only
    fc_weights = out["values"]["weights"][:2]
    np.testing.assert_allclose(out["reg"], sum(1e-3 * np.sum(w ** 2) / 2 for w in fc_weights),
                               rtol=1e-5)
    np.testing.assert_array_equal(*out["evaluated"])  # is_training False: no dropout
    means = [v for v in out["values"]["moving_mean"] if v.ndim == 1 and v.size == 32]
    assert np.abs(means[0]).max() > 0  # the UPDATE_OPS ran with the steps


def test_shapeless_softmax_program_with_two_batch_sizes(backend_name):  # noqa: F811 - the fixture
    rng = np.random.default_rng(5)
    batches = []
    for size in (5, 7, 5, 3, 7):
        labels = rng.integers(0, 3, size)
        batches.append((rng.normal(size=(size, 4)).astype(np.float32),
                        np.eye(3, dtype=np.float32)[labels]))
    out = load_program("shapeless_softmax").main(batches)
    W, b = np.zeros((4, 3), np.float32), np.zeros(3, np.float32)
    for xs, ys in batches:
        cost = np.mean(-(ys * _log_softmax(xs @ W + b)).sum(1))
        g = (_softmax(xs @ W + b) - ys) / len(xs)
        W, b = W - 0.5 * xs.T @ g, b - 0.5 * g.sum(0)
    np.testing.assert_allclose(out["W"], W, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["b"], b, rtol=1e-5, atol=1e-6)
    assert type(out["last"]) is np.float32  # printed as TF1 prints a fetched loss
    assert out["last"] == pytest.approx(cost, rel=1e-5)
    assert not any("array(" in line for line in out["printed"])


def test_sequence_tagger_program(backend_name):  # noqa: F811 - the fixture
    out = load_program("sequence_tagger").main(steps=120 if backend_name == "numpy" else 40)
    assert out["logits_shape"] == (None, None, 12)
    for words, tags, lengths, logits, loss, per_step in out["checks"]:
        assert logits.shape == words.shape + (12,)
        mask = (np.arange(words.shape[1]) < lengths[:, None]).astype(np.float32)
        xent = -np.take_along_axis(_log_softmax(logits.astype(np.float64)),
                                   tags[..., None], -1)[..., 0]
        np.testing.assert_allclose(loss, (xent * mask).sum() / mask.sum(), rtol=1e-5)
        count = mask.sum(0)  # averaged across the batch, one loss per time step
        want = np.where(count > 0, (xent * mask).sum(0) / np.maximum(count, 1), 0)
        np.testing.assert_allclose(per_step, want, rtol=1e-5)
    assert out["losses"][-1] < 0.5 * out["losses"][0]


def test_vae_program_draws_noise_of_the_batch_shape(backend_name):  # noqa: F811 - the fixture
    rng = np.random.default_rng(0)
    data = (rng.random((40, 6)) < np.linspace(0.1, 0.9, 6)).astype(np.float32)
    out = load_program("vae").main(data, steps=60 if backend_name == "numpy" else 20)
    for batch, w, (eps, cost) in out["snapshots"]:
        assert eps.shape == (len(batch), 2)  # two batch sizes, 7 then 10
        h = np.log1p(np.exp(batch @ w["h"]))
        mean, log_sigma = h @ w["mean"], h @ w["log_sigma"]
        recon = 1 / (1 + np.exp(-((mean + np.sqrt(np.exp(log_sigma)) * eps) @ w["out"])))
        rec = -np.sum(batch * np.log(1e-10 + recon) + (1 - batch) * np.log(1e-10 + 1 - recon), 1)
        lat = -0.5 * np.sum(1 + log_sigma - mean ** 2 - np.exp(log_sigma), 1)
        np.testing.assert_allclose(cost, np.mean(rec + lat), rtol=1e-4)
    assert np.mean(out["costs"][-5:]) < np.mean(out["costs"][:5])
