"""Shared fixtures: every CPU backend available on this machine."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import pathlib
import sys

import pytest

import gradflow as gf
from gradflow import backends

CPU_BACKENDS = ["numpy", "array_api_strict", "torch"]


def _glibc():
    """The C library when it is glibc (it has ``malloc_trim``), else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()
if _LIBC is not None:
    # The suite runs thousands of graphs in one process. glibc raises its mmap threshold
    # to the size of each large block freed (up to 32 MB), so later arrays of up to that
    # size come from the heap, and the holes they leave are never given back: the
    # process's memory grew by hundreds of MB with nothing alive in it. A fixed
    # threshold (M_MMAP_THRESHOLD, -3) keeps arrays of 1 MB and more in blocks of their own.
    _LIBC.mallopt(-3, 1 << 20)


@pytest.fixture(scope="module", autouse=True)
def _give_back_freed_memory():
    """After each test file, what the heap holds free goes back to the system. Garbage
    in reference cycles goes first: a test's session, plan and arrays in a cycle (a plan
    whose globals hold a closure over its arrays) otherwise waited for a full collection,
    which a process with millions of long-lived objects runs rarely, and its memory was
    fragmented into the heap by then (test_steady_memory's recorded CNN step: 200 MB)."""
    yield
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


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
