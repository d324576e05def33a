"""benchmarks/gpu_transformer.py and benchmarks/cudnn_sdpa_probe.py without a GPU: the
encoder rows (gradflow on the numpy backend, tiny sizes) build, time and print; the PyTorch
model the GPU rows time is transformer.py's step; both scripts say why they measured
nothing and exit 0; the probe's float32 reference gradient and bf16 rounding are right."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
TINY = [(64, 1, 2, 8)]  # width 64 (one head), 1 layer, batch 2 x 8 tokens


def _cuda_reason():
    from gradflow.backends.cupy import backend as cupy_backend

    return cupy_backend.unavailable_reason("cuda")


def test_the_encoder_rows_run_on_numpy(benchmark_modules, monkeypatch, capsys):
    common = importlib.import_module("gpu_common")
    monkeypatch.setattr(common, "BACKEND", "numpy")
    monkeypatch.setattr(common, "_torch_cuda", lambda: None)
    monkeypatch.setattr(common, "kernels_per_step", lambda step: None)
    bench = importlib.import_module("gpu_transformer")
    bench.transformer_rows(0.01, compile_too=False, sizes=TINY)
    out = capsys.readouterr().out
    assert "FAILED" not in out, out
    rows = []
    for group in ("BERT w=64 ", "GPT-2 w=64 "):  # the padding and the causal mask
        mine = [line[len(group):].split() for line in out.splitlines()
                if line.startswith(group)]
        assert {" ".join(r[:-3]) for r in mine} == set(common.gradflow_variants()), out
        rows += mine
    for row in rows:
        assert float(row[-3]) > 0 and row[-2] == "-" and float(row[-1]) >= 0, row
    rates = [line.split() for line in out.splitlines() if line.endswith(" tokens/s")]
    assert len(rates) == len(rows), out  # no GPU: no share of a bf16 peak
    assert all(float(r[0].replace(",", "")) > 0 for r in rates), out


def test_the_step_flops_count_the_products(benchmark_modules):
    bench = importlib.import_module("gpu_transformer")
    # width 2, 1 layer, batch 1 x 3 tokens: dense 2 * 3 * 12 * 4 = 288, attention
    # 2 * 2 * 3 * 3 * 2 = 72, forward and twice that backward
    assert bench.step_flops(2, 1, 1, 3) == 3 * (288 + 72)


def test_the_sdpa_and_causal_torch_models_match_the_written_out_one(benchmark_modules):
    torch = pytest.importorskip("torch")
    bench = importlib.import_module("gpu_transformer")
    transformer = importlib.import_module("transformer")
    weights = transformer.init_weights(128, 1, 16)
    ids, mask, _ = bench.inputs(2, 16)
    ids_t = torch.from_numpy(ids.astype(np.int64))
    for causal in (False, True):
        written = bench.torch_model(weights, 1, mask, dropout=0.0, causal=causal).eval()
        fused = bench.torch_model(weights, 1, mask, dropout=0.0, causal=causal, sdpa=True)
        with torch.no_grad():
            np.testing.assert_allclose(fused.eval()(ids_t), written(ids_t), atol=1e-6)


def test_the_torch_rows_model_is_transformer_py_step(benchmark_modules):
    """One Adam step of the nn.Module (dropout 0) moves every weight as transformer.py's
    PyTorch step does; with dropout it is in train mode and two passes differ."""
    torch = pytest.importorskip("torch")
    bench = importlib.import_module("gpu_transformer")
    transformer = importlib.import_module("transformer")
    weights = transformer.init_weights(128, 2, 16)
    ids, mask, labels = bench.inputs(4, 16)
    step = transformer.torch_step(torch, weights, ids, mask, labels, 2, dropout=0.0)
    theirs = inspect.getclosurevars(step).nonlocals["p"]
    step()
    model = bench.torch_model(weights, 2, mask, dropout=0.0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    ids_t, labels_t = (torch.from_numpy(a.astype(np.int64)) for a in (ids, labels))
    bench._cross_entropy(model, ids_t, labels_t).backward()
    opt.step()
    for name in weights:
        ours = model.p[name.replace("/", "_")].detach()
        assert torch.allclose(ours, theirs[name].detach(), atol=1e-7), name
    assert any(not np.allclose(before, theirs[name].detach().numpy())
               for name, before in weights.items())
    dropping = bench.torch_model(weights, 2, mask)
    assert dropping.training
    assert not torch.equal(dropping(ids_t), dropping(ids_t))


def _run(script):
    return subprocess.run([sys.executable, os.path.join(BENCHMARKS, script)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.mark.skipif(_cuda_reason() is None, reason="this machine has a CUDA GPU")
def test_the_encoder_script_without_a_gpu_says_why_and_exits_0():
    done = _run("gpu_transformer.py")
    assert done.returncode == 0, done.stderr
    assert "no CUDA GPU to measure on, nothing measured" in done.stdout
    assert _cuda_reason() in done.stdout


@pytest.mark.skipif(_cuda_reason() is None, reason="this machine has a CUDA GPU")
def test_the_probe_without_a_gpu_says_why_and_exits_0():
    done = _run("cudnn_sdpa_probe.py")
    assert done.returncode == 0, done.stderr
    assert "cudnn_sdpa_probe: nothing measured: " in done.stdout, done.stdout
    assert "== (a) import cudnn" in done.stdout


@pytest.fixture
def probe():
    spec = importlib.util.spec_from_file_location(
        "cudnn_sdpa_probe", os.path.join(BENCHMARKS, "cudnn_sdpa_probe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mask", ["bias", "padding", "causal"])
def test_the_probe_reference_gradient_is_autograds(probe, mask):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    q, k, v, d_o = (rng.standard_normal((2, 3, 8, 4)) for _ in range(4))
    add = probe.additive_mask(mask, 2, 8, np).astype(np.float64)
    ours = probe.attention(q, k, v, add, 0.5, np, d_o)
    q_t, k_t, v_t = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    o = torch.softmax(q_t @ k_t.transpose(-1, -2) * 0.5 + torch.tensor(add), -1) @ v_t
    o.backward(torch.tensor(d_o))
    for got, want in zip(ours, (o, q_t.grad, k_t.grad, v_t.grad), strict=True):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_the_probe_rounds_to_bf16_as_torch_does(probe):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal(10_000).astype(np.float32) * 100
    x[:3] = (-10000.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8)  # ties round to even
    bits = probe.to_bf16(x, np)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(bits, want)
    np.testing.assert_array_equal(probe.from_bf16(bits, np),
                                  torch.from_numpy(x).to(torch.bfloat16).float().numpy())
