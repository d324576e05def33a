"""cuDNN's RNN for whole LSTM layers on a real GPU (``passes/cudnn_rnn.py``,
``backends/cupy/cudnn_rnn.py``), skipped without CuPy, a CUDA device or libcudnn 9: the
binding builds a layer (its weight layout checked against ``cudnnGetRNNWeightParams``),
the char-LSTM trains to the NumPy session's numbers through it, the step is captured as
one CUDA graph, and the kernels per step with and without it."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from test_steady_memory import session_of

import gradflow as gf
from gradflow.capture import WARM_RUNS

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from gradflow.backends.cupy import cudnn_rnn  # noqa: E402 - after the skips: CuPy's backend

try:
    cudnn_rnn.load()
except cudnn_rnn.CudnnUnavailable as _err:
    pytest.skip(f"libcudnn 9 is not loadable: {_err}", allow_module_level=True)

STEPS = 5


@pytest.fixture(autouse=True)
def _cudnn_on(monkeypatch):
    """The path under test: off by default until a GPU has run it (GRADFLOW_CUDNN_RNN)."""
    from gradflow.backends.cupy.backend import CupyBackend

    monkeypatch.setattr(CupyBackend, "cudnn_rnn", True)


@pytest.fixture
def forwards(monkeypatch):
    """The number of cuDNN forwards run (a list, one entry each)."""
    calls = []
    real = cudnn_rnn.CudnnLstm.forward

    def counted(self, *args):
        calls.append(1)
        return real(self, *args)

    monkeypatch.setattr(cudnn_rnn.CudnnLstm, "forward", counted)
    return calls


def _losses(backend, dtype=gf.float32, steps=STEPS, **options):
    sess, train, feed, variables = session_of("lstm", dtype, backend=backend, **options)
    loss, = sess.graph.get_collection(gf.GraphKeys.LOSSES)
    with sess:
        losses = [sess.run([train, loss], feed)[1] for _ in range(steps)]
        plans = [p for p in sess._plans.values() if hasattr(p, "captured")]
        return np.array(losses), [sess.run(v) for v in variables], plans


def test_the_binding_builds_the_char_lstm_layer():
    layer = cudnn_rnn.CudnnLstm(50, 32, 128, np.float32)
    assert cudnn_rnn.load().cudnnGetVersion() // 10000 == 9
    assert layer.layout_matches  # cudnnGetRNNWeightParams agrees with expected_offsets
    assert layer.reserve.nbytes > 1 and layer.weights.size == 4 * 128 * (512 + 128) + 8 * 128
    print("cuDNN", cudnn_rnn.load().cudnnGetVersion(), "work", layer.work.nbytes,
          "reserve", layer.reserve.nbytes)


def test_the_char_lstm_trains_through_cudnn_as_numpy(forwards):
    want, want_vars, _ = _losses("numpy", gf.float64)
    got, got_vars, _ = _losses("cupy", gf.float64, capture=False)
    assert len(forwards) == STEPS
    np.testing.assert_allclose(got, want, rtol=1e-9)
    for a, b in zip(got_vars, want_vars):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
    want32, _, _ = _losses("numpy")
    got32, _, _ = _losses("cupy", capture=False)
    np.testing.assert_allclose(got32, want32, rtol=2e-5)


def test_the_cudnn_step_is_captured_as_one_graph(forwards):
    plain, _, _ = _losses("cupy", capture=False, steps=WARM_RUNS + 4)
    used = len(forwards)
    captured, _, plans = _losses("cupy", capture=True, steps=WARM_RUNS + 4)
    assert used and len(forwards) > used  # cuDNN ran in both sessions
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]
    np.testing.assert_allclose(captured, plain, rtol=1e-6)


def test_kernels_per_step_with_and_without_cudnn():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import gpu_common

    if gpu_common._torch_cuda() is None:
        pytest.skip("PyTorch's CUDA build (its profiler counts the kernels) is not installed")
    counts = {}
    for cudnn in (True, False):
        sess, train, feed, _ = session_of("lstm", backend="cupy", capture=False)
        sess.backend.cudnn_rnn = cudnn
        with sess:
            sess.run(train, feed)
            counts[cudnn] = gpu_common.kernels_per_step(lambda: sess.run(train, feed))[0]
    print("kernels per char-LSTM step (10 steps): cuDNN", counts[True], "step kernels",
          counts[False])
    assert counts[True] < counts[False]
