"""The exact text of the backend errors: each says what is wrong and what to do.

Library states a test needs (no CUDA, a CUDA build, CuPy missing) are set up with
monkeypatch, so the same text is checked on every machine.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import gradflow as gf
from gradflow import backends
from gradflow.backends.cupy import backend as cupy_backend
from gradflow.backends.numpy import backend as numpy_backend
from gradflow.backends.torch import backend as torch_backend
from gradflow.errors import BackendUnavailableError

KNOWN = "numpy, array_api_strict, torch, cupy"


def here():
    """``Available here: ...`` as the messages end it, for this machine."""
    return ", ".join(n for n, reason in backends.available().items() if reason is None)


def message(**session_args):
    with pytest.raises(BackendUnavailableError) as info:
        gf.Session(**session_args)
    return str(info.value)


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("GRADFLOW_BACKEND", raising=False)


@pytest.fixture
def torch(monkeypatch):
    """PyTorch, with CUDA reported missing unless a test says otherwise."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    return torch


@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError


def fake_cupy(monkeypatch, count):
    def get_device_count():
        if isinstance(count, Exception):
            raise count
        return count

    runtime = types.SimpleNamespace(getDeviceCount=get_device_count)
    module = types.SimpleNamespace(__version__="13.0.0",
                                   cuda=types.SimpleNamespace(runtime=runtime))
    monkeypatch.setitem(sys.modules, "cupy", module)


# -- the backend name ------------------------------------------------------------------


def test_unknown_name_from_the_environment_says_so(monkeypatch):
    monkeypatch.setenv("GRADFLOW_BACKEND", "numpyy")
    assert message() == (
        "$GRADFLOW_BACKEND is 'numpyy', which is not a backend (unknown backend 'numpyy'). "
        f"Did you mean 'numpy'? gradflow knows {KNOWN}; available here: {here()}. Set "
        "GRADFLOW_BACKEND to one of the available ones, or unset it to get numpy.")
    monkeypatch.setenv("GRADFLOW_BACKEND", "  jax ")
    assert message() == (
        "$GRADFLOW_BACKEND is 'jax', which is not a backend (unknown backend 'jax'). gradflow "
        f"knows {KNOWN}; available here: {here()}. Set GRADFLOW_BACKEND to one of the available "
        "ones, or unset it to get numpy.")


def test_an_explicit_name_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("GRADFLOW_BACKEND", "numpyy")
    assert gf.Session(backend="numpy").backend.name == "numpy"


def test_unknown_name_as_an_argument(no_env):
    assert message(backend="jax") == (
        f"unknown backend 'jax'. gradflow knows {KNOWN}; available here: {here()}. Pass one of "
        "the available names as backend=, or a gradflow backend object.")
    assert message(backend="Array-API-Strict") == (
        "unknown backend 'Array-API-Strict'. Did you mean 'array_api_strict'? Names are lower "
        f"case. gradflow knows {KNOWN}; available here: {here()}. Pass one of the available "
        "names as backend=, or a gradflow backend object.")
    assert message(backend="pytorch") == (
        f"unknown backend 'pytorch'. Did you mean 'torch'? gradflow knows {KNOWN}; available "
        f"here: {here()}. Pass one of the available names as backend=, or a gradflow backend "
        "object.")


def test_a_module_instead_of_a_name(no_env):
    import numpy

    assert message(backend=numpy) == (
        f"backend must be a backend name such as 'numpy' or a gradflow backend object, not "
        f"module {numpy!r}. Did you mean backend='numpy'? Known backends: {KNOWN}; available "
        f"here: {here()}.")


def test_an_unavailable_backend_chosen_by_the_environment(monkeypatch, no_cupy):
    monkeypatch.setenv("GRADFLOW_BACKEND", "cupy")
    assert message() == (
        "backend 'cupy' cannot run here (chosen by $GRADFLOW_BACKEND='cupy': set it to an "
        "available backend, or unset it to get numpy): CuPy is not installed: pip install "
        "cupy-cuda12x (cupy-cuda13x for a CUDA 13 driver), and it needs an NVIDIA GPU "
        f"with its driver. Available here: {here()}")


# -- devices, per backend --------------------------------------------------------------


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "gpu"])
def test_numpy_runs_on_the_cpu_only(no_env, device):
    assert message(backend="numpy", device=device) == (
        f"backend 'numpy' cannot run here on device {device!r}: NumPy runs on the CPU only, so "
        f"it cannot use device {device!r}; leave device out (or pass device='cpu'), or use a "
        f"GPU backend: backend='cupy', or backend='torch' with device='cuda'. Available here: "
        f"{here()}")
    assert gf.Session(backend="numpy", device="cpu").backend.name == "numpy"


def test_array_api_strict_lists_its_devices(no_env):
    strict = pytest.importorskip("array_api_strict")
    devices = ", ".join(repr(d._device) for d in strict.__array_namespace_info__().devices())
    assert "'device1'" in devices
    assert message(backend="array_api_strict", device="gpu") == (
        "backend 'array_api_strict' cannot run here on device 'gpu': array_api_strict has no "
        f"device 'gpu'; its devices are {devices} (or leave device out). Available here: "
        f"{here()}")


def test_torch_installed_but_cpu_only_build(no_env, torch):
    reason = (f"PyTorch {torch.__version__} is installed, but CUDA is not available: it is a "
              "CPU-only build (torch.version.cuda is None), so it has no CUDA device to use. Use "
              "device='cpu', or install a CUDA build of PyTorch (pytorch.org) on a machine with "
              "an NVIDIA GPU")
    assert torch_backend.unavailable_reason("cuda") == reason
    assert message(backend="torch", device="cuda") == (
        f"backend 'torch' cannot run here on device 'cuda': {reason}. Available here: {here()}")
    assert "pip install" not in reason  # it is installed: do not say to install it


def test_torch_cuda_build_without_a_device(no_env, torch, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    assert torch_backend.unavailable_reason("cuda:0") == (
        f"PyTorch {torch.__version__} is installed, but CUDA is not available: it is built for "
        "CUDA 12.4 but finds no CUDA device (no NVIDIA GPU, a driver older than that CUDA, or "
        "CUDA_VISIBLE_DEVICES hides it; nvidia-smi should list the GPU). Use device='cpu' "
        "without a GPU")


def test_torch_cuda_device_number_out_of_range(torch, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert torch_backend.unavailable_reason("cuda:3") == (
        f"PyTorch {torch.__version__} sees 2 CUDA devices (cuda:0 to cuda:1), so there is no "
        "cuda:3")
    assert torch_backend.unavailable_reason("cuda:1") is None
    assert torch_backend.unavailable_reason("cuda") is None


def test_torch_bad_device_name_and_mps(no_env, torch, monkeypatch):
    assert message(backend="torch", device="gpu") == (
        "backend 'torch' cannot run here on device 'gpu': 'gpu' is not a PyTorch device name; "
        "use 'cpu', 'cuda' or 'cuda:N' (or leave device out for the CPU). Available here: "
        f"{here()}")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert torch_backend.unavailable_reason("mps") == (
        f"PyTorch {torch.__version__} is installed, but MPS (the Apple GPU) is not available to "
        "it here; use device='cpu'")
    assert torch_backend.unavailable_reason("cpu") is None
    assert torch_backend.unavailable_reason() is None


def test_torch_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert torch_backend.unavailable_reason("cuda") == (
        "PyTorch is not installed: pip install torch (the CPU-only build: pip install torch "
        "--index-url https://download.pytorch.org/whl/cpu; for a GPU, a CUDA build of "
        "PyTorch from pytorch.org)")


def test_cupy_messages(no_env, no_cupy, monkeypatch):
    assert message(backend="cupy") == (
        "backend 'cupy' cannot run here: CuPy is not installed: pip install cupy-cuda12x "
        "(cupy-cuda13x for a CUDA 13 driver), and it needs an NVIDIA GPU with its driver. "
        f"Available here: {here()}")
    assert message(backend="cupy", device="cpu") == (
        "backend 'cupy' cannot run here on device 'cpu': CuPy runs on CUDA GPUs only, and 'cpu' "
        "is not one: pass device='cuda' or 'cuda:N' (or leave it out); for the CPU use "
        f"backend='numpy'. Available here: {here()}")
    fake_cupy(monkeypatch, RuntimeError("cudaErrorNoDevice: no CUDA-capable device"))
    assert cupy_backend.unavailable_reason() == (
        "CuPy 13.0.0 is installed but found no usable CUDA device (RuntimeError: "
        "cudaErrorNoDevice: no CUDA-capable device); it needs an NVIDIA GPU and its driver "
        "(nvidia-smi should list the GPU), else use backend='numpy'")
    fake_cupy(monkeypatch, 0)
    assert cupy_backend.unavailable_reason() == (
        "CuPy is installed but found no CUDA device (is CUDA_VISIBLE_DEVICES empty?); without "
        "a GPU use backend='numpy'")
    fake_cupy(monkeypatch, 1)
    assert cupy_backend.unavailable_reason("cuda:2") == (
        "CuPy sees 1 CUDA device (cuda:0 to cuda:0), so there is no cuda:2")
    assert cupy_backend.unavailable_reason("cuda:0") is None
    assert cupy_backend.unavailable_reason(0) is None


def test_every_unavailable_reason_says_what_to_do():
    for name, reason in backends.available().items():
        if reason is not None:
            assert any(word in reason for word in ("pip install", "use ", "Use ")), name
    assert numpy_backend.unavailable_reason() is None


def test_backend_fixture_runs_on_each_cpu_backend(backend):
    """A Session starts on every CPU backend the fixture gives (none of the above errors)."""
    with gf.Session(backend=backend) as sess:
        assert sess.run(gf.constant(2.0) * 3.0) == 6.0


def test_a_misspelt_feed_or_fetch_name_is_tf1s_error_with_the_closest_names():
    """Issue 44: a bare ``KeyError`` before; TF1 raises TypeError for a feed key and
    ValueError for a fetch that names nothing."""
    images = gf.placeholder(gf.float32, [None, 3], name="images")
    doubled = gf.multiply(images, 2.0, name="doubled")
    with gf.Session() as sess:
        with pytest.raises(TypeError, match=r"'image:0'.*did you mean 'images:0'"):
            sess.run(doubled, {"image:0": np.ones((1, 3))})
        with pytest.raises(ValueError, match=r"'double:0'.*did you mean 'doubled:0'"):
            sess.run("double:0", {images: np.ones((1, 3))})


def test_labels_and_logits_of_different_batches_name_the_users_tensors(backend):
    """Issue 44: 64 labels against 128 images failed inside the loss, naming its
    internal ops (where, one_hot, zeros_like)."""
    images = gf.placeholder(gf.float32, [None, 4], name="images")
    labels = gf.placeholder(gf.int64, [None], name="labels")
    logits = gf.matmul(images, gf.ones([4, 3]), name="logits")
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    with gf.Session(backend=backend) as sess:
        with pytest.raises(gf.errors.InvalidArgumentError,
                           match=r"labels 'labels' of shape \(64,\) and logits 'logits' of "
                                 r"shape \(128, 3\) must have the same first dimensions"):
            sess.run(loss, {images: np.ones((128, 4)), labels: np.zeros(64, np.int64)})
        assert np.isclose(sess.run(loss, {images: np.ones((2, 4)),
                                          labels: np.zeros(2, np.int64)}), np.log(3.0))
    with pytest.raises(ValueError, match="must have the same first dimensions"):
        gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.zeros([5], gf.int64), logits=gf.ones([6, 3]))
