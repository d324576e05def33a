"""Shared fixtures: every CPU backend available on this machine."""

from __future__ import annotations

import pathlib
import sys

import pytest

import gradflow as gf
from gradflow import backends

CPU_BACKENDS = ["numpy", "array_api_strict", "torch"]


def backend_params():
    """One pytest param per backend: available ones run, the others skip with the reason."""
    reasons = backends.available()
    params = []
    for name in CPU_BACKENDS + ["cupy"]:
        marks = [pytest.mark.gpu] if name == "cupy" else []
        if reasons[name] is not None:
            marks.append(pytest.mark.skip(reason=f"{name}: {reasons[name]}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture(params=backend_params())
def backend(request):
    """The name of a backend; array_api_strict runs on a non-default device."""
    if request.param == "array_api_strict":
        return backends.get("array_api_strict", device="device1")
    return request.param


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts with an empty default graph."""
    gf.reset_default_graph()
    yield
    gf.reset_default_graph()


def draws_reference(backend):
    """The backend whose random numbers ``backend``'s must equal with the same seeds:
    NumPy's (the host's), except for cupy, which draws uniform numbers on the device
    (Philox: reproducible from the seeds, but not the host's numbers) and is compared
    with a second session of its own. Variables' initial values are host-drawn on
    every backend."""
    return "cupy" if backend == "cupy" else "numpy"


BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def benchmark_modules(monkeypatch):
    """benchmarks/ first on sys.path, and the names of its modules free while the test
    runs (examples/ has a mnist_mlp too) and given back as they were after it."""
    names = [path.stem for path in BENCHMARKS.glob("*.py")]
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    yield
    for name in names:
        sys.modules.pop(name, None)
    sys.modules.update(saved)
