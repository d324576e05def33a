"""The example scripts run end to end and reach their targets.

Each example is imported from ``examples/`` by path and its ``main(argv)`` is
called with ``--out`` in a temporary folder; the affine and XOR examples run
on every CPU backend available here (CuPy where there is a GPU).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradflow import backends

pytest.importorskip("matplotlib", reason="the examples need matplotlib (gradflow[examples])")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name):
    """Import ``examples/NAME.py`` as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"gradflow_example_{name}",
                                                  EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def backend_names():
    """numpy, array_api_strict, torch (and cupy, marked gpu); unavailable ones skip with why."""
    reasons = backends.available()
    params = []
    for name in ["numpy", "array_api_strict", "torch", "cupy"]:
        marks = [pytest.mark.gpu] if name == "cupy" else []
        if reasons.get(name) is not None:
            marks.append(pytest.mark.skip(reason=f"{name}: {reasons[name]}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def assert_pngs(paths, out_dir):
    assert paths
    for path in paths:
        path = Path(path)
        assert path.parent == Path(out_dir)
        assert path.suffix == ".png"
        assert path.stat().st_size > 0
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("backend", backend_names())
def test_affine(backend, capsys):
    result = load("affine").main(["--backend", backend])
    np.testing.assert_array_equal(result["result"], [2.0, -1.0])
    assert result["backend"] == backend
    assert "[ 2. -1.]" in capsys.readouterr().out


def test_affine_takes_backend_from_environment(monkeypatch):
    monkeypatch.setenv("GRADFLOW_BACKEND", "array_api_strict")
    result = load("affine").main([])
    assert result["backend"] == "array_api_strict"
    np.testing.assert_array_equal(result["result"], [2.0, -1.0])


def test_affine_runs_as_a_script():
    env = dict(os.environ, GRADFLOW_BACKEND="numpy")
    done = subprocess.run([sys.executable, str(EXAMPLES / "affine.py")], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[ 2. -1.]"


@pytest.mark.parametrize("backend", backend_names())
def test_xor_tanh(backend, tmp_path, capsys):
    result = load("xor").main(["--backend", backend, "--out", str(tmp_path)])
    assert result["accuracy"] == 1.0
    assert result["loss"] < 0.05
    assert result["losses"][-1] < result["losses"][0]
    assert_pngs(result["outputs"], tmp_path)
    assert "accuracy 100%" in capsys.readouterr().out


def test_xor_same_numbers_on_every_backend(tmp_path):
    """The same seed gives the same training run on NumPy and array_api_strict."""
    xor = load("xor")
    args = ["--steps", "200", "--out", str(tmp_path)]
    a = xor.main(args + ["--backend", "numpy"])
    b = xor.main(args + ["--backend", "array_api_strict"])
    np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-4, atol=1e-6)


def test_xor_relu(tmp_path):
    result = load("xor").main(["--backend", "numpy", "--activation", "relu",
                               "--out", str(tmp_path)])
    assert result["accuracy"] == 1.0
    assert_pngs(result["outputs"], tmp_path)
    assert Path(result["outputs"][0]).name == "xor_relu_region.png"


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_disk(activation, tmp_path):
    result = load("disk").main(["--backend", "numpy", "--activation", activation,
                                "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.95
    assert result["test_accuracy"] >= 0.95
    assert_pngs(result["outputs"], tmp_path)


def test_perceptron(tmp_path, capsys):
    result = load("perceptron").main(["--backend", "numpy", "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.99
    assert_pngs(result["outputs"], tmp_path)
    out = capsys.readouterr().out
    assert out.count("loss") >= 10  # the loss is printed every so often


def test_two_clusters_mlp(tmp_path):
    result = load("two_clusters_mlp").main(["--backend", "numpy", "--out", str(tmp_path)])
    assert result["accuracy"] >= 0.99
    assert_pngs(result["outputs"], tmp_path)


def small_mnist(monkeypatch):
    """Replace the MNIST loader with 64 training and 50 test images of random pixels."""
    def load_small(data_dir=None, download=True, verify=True):
        rng = np.random.default_rng(0)
        return ((rng.integers(0, 256, (64, 28, 28), dtype=np.uint8),
                 rng.integers(0, 10, 64).astype(np.uint8)),
                (rng.integers(0, 256, (50, 28, 28), dtype=np.uint8),
                 rng.integers(0, 10, 50).astype(np.uint8)))

    import gradflow as gf

    monkeypatch.setattr(gf.data.mnist, "load", load_small)
    return load_small


@pytest.mark.parametrize("name", ["mnist_mlp", "mnist_cnn"])
def test_mnist_examples_checkpoint_and_resume(name, tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    module = load(name)
    common = ["--batch-size", "16", "--out", str(tmp_path / "out"), "--backend", "numpy"]
    small_mnist(monkeypatch)
    straight = module.main(common + ["--epochs", "2"])
    ckpt = str(tmp_path / "ckpt")
    module.main(common + ["--epochs", "1", "--checkpoint-dir", ckpt])
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "model-4"]
    capsys.readouterr()
    resumed = module.main(common + ["--epochs", "2", "--checkpoint-dir", ckpt, "--resume"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "epoch 1:" not in out and "epoch 2:" in out
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "model-4", "model-8"]
    if name == "mnist_mlp":  # no dropout: resuming is bit-exact
        assert resumed["accuracies"] == straight["accuracies"][1:]
    else:  # dropout masks after a resume come from a fresh random stream
        assert len(resumed["accuracies"]) == 1 and 0 <= resumed["accuracies"][0] <= 1
