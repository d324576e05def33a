"""benchmarks/rnn_models.py at tiny sizes: each gradflow model gives the first loss of its
PyTorch model from the same weights (and, with PyTorch's second LSTM bias frozen at 0,
the same loss after two Adam steps, which checks the gradients), trains, and its CPU and
GPU-script rows (the latter on the numpy backend) run without a FAILED row."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

TINY = {"VOCAB": 11, "EMBED": 6, "HIDDEN": 8, "STEPS": 5, "BATCH": 3}
MODEL_NAMES = ("GRU", "LSTM x2", "biLSTM", "LSTM dynamic", "LSTM peephole", "biLSTM dynamic")


@pytest.fixture
def rnn_models(benchmark_modules, monkeypatch):
    """rnn_models from benchmarks/ (``benchmark_modules``), it and lstm_step made tiny."""
    module = importlib.import_module("rnn_models")
    lstm_step = importlib.import_module("lstm_step")
    for target in (module, lstm_step):
        for name, value in TINY.items():
            monkeypatch.setattr(target, name, value)
    yield module


def test_the_models_are_the_ones_named(rnn_models):
    assert tuple(rnn_models.MODELS) == MODEL_NAMES
    assert [m.group for m in rnn_models.MODELS.values()] == ["GRU", "LSTM x2", "biLSTM",
                                                             "LSTM dyn", "LSTM peep",
                                                             "biLSTM dyn"]


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_gradflow_and_torch_agree_from_the_same_weights(rnn_models, name):
    torch = pytest.importorskip("torch")
    model = rnn_models.MODELS[name]
    weights = model.init_weights()
    x, y = rnn_models.make_data()
    step, first, sess, loss, feed = model.gradflow_step(weights, x, y, "numpy")
    peer = model.torch_model(weights)
    for param_name, param in peer.named_parameters():
        if "bias_hh" in param_name:  # TF has one bias: keep PyTorch's second one at 0
            param.requires_grad_(False)
    torch_step, torch_first = rnn_models.torch_step(peer, x, y)
    assert first == pytest.approx(torch_first, rel=1e-4)
    for _ in range(2):
        step()
        torch_step()
    second = float(sess.run(loss, feed))
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    torch_second = float(rnn_models.torch_loss(peer, xt, yt).detach())
    assert math.isfinite(second) and second != first
    if getattr(model, "same_after_steps", True):  # peepholes: the same function at first
        assert second == pytest.approx(torch_second, rel=1e-4)
    if model.reference is not None:  # the dynamic LSTM against the static one
        ref_step, ref_first, *_ = model.reference(weights, x, y, "numpy")
        ref_step()
        assert first == pytest.approx(ref_first, rel=1e-5)
    if model.torch_peer is not None:  # nn.GRU: own weights, just trains
        peer_step, peer_first = rnn_models.torch_step(model.torch_peer(weights), x, y)
        peer_step()
        assert math.isfinite(peer_first)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_two_training_steps_without_torch(rnn_models, name):
    model = rnn_models.MODELS[name]
    x, y = rnn_models.make_data()
    step, first, sess, loss, feed = model.gradflow_step(model.init_weights(), x, y, "numpy",
                                                        optimize=False)
    step()
    step()
    after = float(sess.run(loss, feed))
    assert math.isfinite(first) and math.isfinite(after) and after < first


def test_cpu_rows_time_every_model(rnn_models, capsys):
    table = rnn_models.cpu_rows(0.02, "numpy")
    out = capsys.readouterr().out
    assert "FAILED" not in out and "DIFFER" not in out, out
    assert set(table) == set(MODEL_NAMES)
    for rows in table.values():
        assert all(ms is not None and ms > 0 for ms in rows.values()), table
    assert "gradflow static (lstm_step)" in table["LSTM dynamic"]
    assert "gradflow static (biLSTM)" in table["biLSTM dynamic"]


def test_gpu_rows_run_on_numpy(rnn_models, monkeypatch, capsys):
    common = importlib.import_module("gpu_common")
    monkeypatch.setattr(common, "BACKEND", "numpy")
    monkeypatch.setattr(common, "_torch_cuda", lambda: None)
    monkeypatch.setattr(common, "kernels_per_step", lambda step: None)
    rnn_models.gpu_rows(common, 0.02, compile_too=False)
    out = capsys.readouterr().out
    assert "FAILED" not in out, out
    groups = {"GRU": 0, "LSTM x2": 0, "biLSTM": 0, "LSTM dyn": 0, "LSTM peep": 0,
              "biLSTM dyn": 0}
    for line in out.splitlines():
        for group in groups:
            if line.startswith(group + " ") and "gradflow numpy" in line:
                groups[group] += 1
                assert float(line.split()[-3]) > 0, line
    assert all(groups.values()), out
    assert "gradflow numpy static" in out, out


def test_the_fused_cells_benchmark_runs(rnn_models, capsys):
    """benchmarks/rnn_fused_cells.py: the fused and elementary-op cells give one first loss
    each pair and are timed."""
    fused_cells = importlib.import_module("rnn_fused_cells")
    ms = fused_cells.main(0.02)
    out = capsys.readouterr().out
    assert set(ms) == set(fused_cells.ROWS) and all(t > 0 for t in ms.values())
    firsts = dict(part.rsplit(" ", 1) for part in
                  out.split("first losses: ")[1].splitlines()[0].split(", "))
    assert firsts["GRU fused"] == firsts["GRU elementary ops"]
    assert firsts["LSTM peephole fused"] == firsts["LSTM peephole elementary ops"]
