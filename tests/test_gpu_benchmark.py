"""benchmarks/gpu.py without a GPU: it says so and exits 0 having measured nothing, and its
gradflow rows (run here on the numpy backend, with tiny batches) build, time and print."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")


def _cuda_reason():
    from gradflow.backends.cupy import backend as cupy_backend

    return cupy_backend.unavailable_reason("cuda")


@pytest.mark.skipif(_cuda_reason() is None, reason="this machine has a CUDA GPU")
def test_without_a_gpu_it_says_why_and_exits_0():
    done = subprocess.run([sys.executable, os.path.join(BENCHMARKS, "gpu.py")],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    assert "no CUDA GPU to measure on, nothing measured" in done.stdout
    assert _cuda_reason() in done.stdout


def test_the_gradflow_rows_run_on_numpy(benchmark_modules, monkeypatch, capsys):
    gpu = importlib.import_module("gpu")
    common = importlib.import_module("gpu_common")
    monkeypatch.setattr(common, "BACKEND", "numpy")
    monkeypatch.setattr(common, "_torch_cuda", lambda: None)
    monkeypatch.setattr(common, "kernels_per_step", lambda step: None)
    gpu.mlp_rows(8, 0.02, compile_too=False)
    gpu.cnn_rows(2, 0.02, compile_too=False)
    out = capsys.readouterr().out
    assert "FAILED" not in out, out
    rows = [line.split() for line in out.splitlines() if line.startswith(("MLP", "CNN"))]
    names = {" ".join(r[2:-3]) for r in rows if r[-3] != "available"}
    assert {"gradflow numpy", "gradflow numpy optimize=False"} <= names, out
    for row in rows:
        if row[-1] != "available":  # JAX without a GPU: "not available"
            assert float(row[-3]) > 0 and row[-2] == "-" and float(row[-1]) >= 0, row
