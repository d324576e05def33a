"""benchmarks/rnn_peers.py: the TensorFlow and JAX rows of lstm_step.py and rnn_models.py.

Where TensorFlow or JAX is installed (never in CI: ``/tmp/bench`` of the development VM),
each peer, at tiny sizes and from the same weights, gives gradflow's first loss and its loss
after two Adam steps (which checks the peer's gradients and its Adam). Everywhere, the
benchmarks run without them: the missing libraries are named and their rows left out."""

from __future__ import annotations

import argparse
import importlib
import importlib.util

import pytest

TINY = {"VOCAB": 11, "EMBED": 6, "HIDDEN": 8, "STEPS": 5, "BATCH": 3}
MODELS = ("LSTM", "GRU", "LSTM x2", "biLSTM")
LIBRARIES = {"tf": "tensorflow", "jax": "jax"}


@pytest.fixture
def modules(benchmark_modules, monkeypatch):
    """``(rnn_peers, rnn_models, lstm_step)`` from benchmarks/, the models made tiny."""
    rnn_models = importlib.import_module("rnn_models")
    lstm_step = importlib.import_module("lstm_step")
    for target in (rnn_models, lstm_step):
        for name, value in TINY.items():
            monkeypatch.setattr(target, name, value)
    yield importlib.import_module("rnn_peers"), rnn_models, lstm_step


def _gradflow_step(rnn_models, lstm_step, model, x, y):
    """``(weights, step, first loss, session, loss tensor, feed)`` of a model's gradflow
    row (``"LSTM"``: lstm_step.py's char-LSTM)."""
    if model == "LSTM":
        weights = lstm_step.init_weights()
        return (weights, *lstm_step.gradflow_step(weights, x, y, "numpy"))
    spec = rnn_models.MODELS[model]
    weights = spec.init_weights()
    return (weights, *spec.gradflow_step(weights, x, y, "numpy"))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("peer", sorted(LIBRARIES))
def test_a_peer_trains_gradflows_model_from_the_same_weights(modules, peer, model):
    pytest.importorskip(LIBRARIES[peer], reason=f"{LIBRARIES[peer]} is not installed")
    rnn_peers, rnn_models, lstm_step = modules
    x, y = rnn_models.make_data()
    weights, gf_step, gf_first, sess, loss, feed = _gradflow_step(
        rnn_models, lstm_step, model, x, y)
    assert rnn_peers.model_kind(weights) == model
    (label, make), = rnn_peers.peer_makers(weights, x, y, (peer,)).items()
    step, first = make()
    assert first == pytest.approx(gf_first, rel=1e-6), label
    for _ in range(2):
        step()
        gf_step()
    after = float(sess.run(loss, feed))
    assert after < gf_first
    assert step.loss() == pytest.approx(after, rel=1e-5), label


def _hide_the_peers(monkeypatch):
    find_spec = importlib.util.find_spec

    def without_peers(name, *args, **kwargs):
        return None if name in LIBRARIES.values() else find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", without_peers)


def test_rnn_models_runs_without_the_peers(modules, monkeypatch, capsys):
    rnn_peers, rnn_models, _ = modules
    _hide_the_peers(monkeypatch)
    table = rnn_models.cpu_rows(0.02, "numpy", only={"GRU", "biLSTM"})
    out = capsys.readouterr().out
    assert "tensorflow not installed: no TF rows" in out
    assert "jax not installed: no JAX rows" in out
    assert "FAILED" not in out and "DIFFER" not in out, out
    assert set(table) == {"GRU", "biLSTM"}
    for rows in table.values():
        assert not any(row.startswith(("TF ", "JAX ")) for row in rows), rows
        assert all(ms is not None and ms > 0 for ms in rows.values()), table


def test_lstm_step_runs_without_the_peers(modules, monkeypatch, capsys):
    _, _, lstm_step = modules
    _hide_the_peers(monkeypatch)
    monkeypatch.setattr(lstm_step, "build_time", lambda steps, backend: (1, 2, 0.1, 0.1, 0.1))
    results = lstm_step.main(["--seconds", "0.02", "--default-malloc"])
    out = capsys.readouterr().out
    assert "tensorflow not installed: no TF rows" in out
    assert "jax not installed: no JAX rows" in out
    assert "FAILED" not in out, out
    assert "gradflow (numpy)" in " ".join(results)
    assert not any(row.startswith(("TF ", "JAX ")) for row in results), results


def test_peers_option(modules):
    rnn_peers, _, _ = modules
    parser = argparse.ArgumentParser()
    rnn_peers.add_argument(parser)
    assert parser.parse_args([]).peers == ["tf", "jax"]
    assert parser.parse_args(["--peers", "jax"]).peers == ["jax"]
    assert parser.parse_args(["--peers"]).peers == []
    with pytest.raises(SystemExit):
        parser.parse_args(["--peers", "mxnet"])


def test_model_kind_names_unknown_weights(modules):
    rnn_peers, _, _ = modules
    with pytest.raises(ValueError, match="no recurrent model known"):
        rnn_peers.model_kind({"emb": None, "w_out": None})


def test_a_library_that_fails_to_import_gives_no_row(modules, monkeypatch, capsys):
    rnn_peers, rnn_models, _ = modules

    def broken(weights, x, y):
        raise ImportError("libtensorflow_framework.so.2: cannot open shared object file")

    monkeypatch.setattr(rnn_peers, "tf_row", broken)
    x, y = rnn_models.make_data()
    steps = {}
    assert rnn_peers.add_rows(steps, rnn_models.gru_weights(), x, y, ("tf",)) == {}
    assert steps == {}
    assert "tensorflow failed to import (ImportError: libtensorflow" in capsys.readouterr().out
