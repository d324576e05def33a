"""The BLAS thread policy of the NumPy backend (gradflow.backends.cpu.threads)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import threads

threadpoolctl = pytest.importorskip("threadpoolctl")


def _openblas_threads():
    info = threadpoolctl.threadpool_info()
    return [lib["num_threads"] for lib in info if lib["user_api"] == "blas"]


@pytest.fixture(autouse=True)
def restore_blas(monkeypatch):
    """Each test starts from a fresh policy and leaves the BLAS as it found it."""
    before = threadpoolctl.threadpool_info()
    threads.reset()
    yield
    threads.reset()
    with_counts = {lib["filepath"]: lib["num_threads"] for lib in before}
    for lib in threads.blas_libraries():
        lib.set_num_threads(with_counts.get(lib.filepath, lib.num_threads))


def test_free_cores_count_what_other_processes_leave():
    # samples are (wall s, busy s of this process's cores, this process's CPU s)
    start = (0.0, 0.0, 0.0)
    assert threads.free_cores(start, (1.0, 1.0, 1.0), 2) == 2  # only this process ran
    assert threads.free_cores(start, (1.0, 2.0, 1.0), 2) == 1  # another one held a core
    assert threads.free_cores(start, (1.0, 2.0, 0.5), 2) == 1  # others 1.5 cores: one
    assert threads.free_cores(start, (1.0, 1.2, 1.0), 2) == 2  # a little noise: both
    assert threads.free_cores(start, (1.0, 4.0, 0.0), 2) == 1  # never fewer than one
    assert threads.free_cores(start, (1.0, 3.0, 0.0), 8) == 5


def test_allowed_cores_follow_the_users_omp_setting(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert threads.allowed_cores() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert 1 <= threads.allowed_cores() <= len(__import__("os").sched_getaffinity(0))


def test_fixed_setting_sets_the_blas(monkeypatch):
    if not threads.blas_libraries():
        pytest.skip("threadpoolctl finds no BLAS under NumPy here")
    monkeypatch.setenv("GRADFLOW_THREADS", "1")
    threads.reset()
    threads.blas_libraries.cache_clear()  # find the BLAS libraries loaded by now
    threads.refresh()
    assert threads.current() == 1
    assert set(_openblas_threads()) == {1}


def test_off_leaves_the_blas_alone(monkeypatch):
    monkeypatch.setenv("GRADFLOW_THREADS", "off")
    threads.refresh()
    assert threads.current() is None


def test_a_bad_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv("GRADFLOW_THREADS", "many")
    with pytest.raises(ValueError, match="GRADFLOW_THREADS='many'"):
        threads.refresh()


def test_a_numpy_session_sets_the_count_on_its_products(monkeypatch):
    monkeypatch.setenv("GRADFLOW_THREADS", "auto")
    x = gf.placeholder(gf.float32, (None, 4, 4, 1))
    y = gf.nn.conv2d(x, gf.ones((3, 3, 1, 2)), [1, 1, 1, 1], "SAME")
    with gf.Session() as sess:
        out = sess.run(y, {x: np.ones((2, 4, 4, 1), np.float32)})
    assert out[0, 1, 1, 0] == 9
    assert 1 <= threads.current() <= threads.allowed_cores()
