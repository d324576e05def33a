"""One OpenMP pool for OpenBLAS, numba's kernels and oneDNN (``backends/openmp``): the
same numbers on it as off it, on any thread count, and a forked child that still runs."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import numba_support, openmp, threads
from gradflow.backends.numpy import fused as numpy_fused
from gradflow.backends.onednn import library as onednn

needs_pool = pytest.mark.skipif(not openmp.shared(), reason=f"no shared OpenMP pool here: "
                                f"{openmp.why_not()}")


def _run(code, **env):
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.skipif(numba_support.get_numba() is None, reason="numba is not installed")
def test_off_says_why():
    code = ("from gradflow.backends.cpu import openmp\n"
            "print(openmp.shared(), openmp.why_not())\n")
    assert _run(code, GRADFLOW_OPENMP="0").split() == ["False", "GRADFLOW_OPENMP=0"]


_PRODUCTS = """
import hashlib, numpy as np
from gradflow.backends.cpu import openmp
from gradflow.backends.cpu import threads
threads.refresh()
print('shared', openmp.shared(), threads.blas_current())
rng = np.random.default_rng(0)
for m, k, n in [(16, 784, 512), (128, 512, 512), (333, 257, 129), (1024, 784, 512)]:
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        print(m, k, n, hashlib.sha1((a @ b).tobytes() + (a.T @ (a @ b)).tobytes()).hexdigest())
"""


@needs_pool
def test_products_on_the_pool_give_the_bits_of_openblas_own_threads():
    """OpenBLAS splits a product into the same jobs whoever runs them."""
    pooled = _run(_PRODUCTS, GRADFLOW_THREADS="2").splitlines()
    own = _run(_PRODUCTS, GRADFLOW_THREADS="2", GRADFLOW_OPENMP="0").splitlines()
    assert pooled[0] == "shared True 2" and own[0] == "shared False 2"
    assert pooled[1:] == own[1:]


def _adam_steps(steps=3):
    rng = np.random.default_rng(5)
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, (64, 512))
        w = gf.Variable(rng.standard_normal((512, 512)).astype(np.float32) * 0.05)
        loss = gf.reduce_mean(gf.square(gf.nn.relu(gf.matmul(x, w)) - 0.5))
        train = gf.train.AdamOptimizer(0.01).minimize(loss)
        with gf.Session(graph=graph) as sess:
            sess.run(gf.global_variables_initializer())
            feed = {x: rng.standard_normal((64, 512)).astype(np.float32)}
            for _ in range(steps):
                sess.run(train, feed)
            return sess.run(w)


@needs_pool
def test_a_parallel_kernel_gives_the_bits_of_one_thread(monkeypatch):
    """Adam's update of 262,144 floats is a kernel above PARALLEL_SIZE: it splits its
    rows over the threads, and each element's arithmetic stays the same."""
    assert 512 * 512 >= numpy_fused.PARALLEL_SIZE
    monkeypatch.setenv("GRADFLOW_THREADS", "2")  # the products' count stays fixed
    threads.reset()
    teams = []
    runs = []
    for team in (1, 2):
        monkeypatch.setattr(threads, "team", lambda team=team: teams.append(team) or team)
        runs.append(_adam_steps())
    threads.reset()
    assert set(teams) == {1, 2}
    np.testing.assert_array_equal(runs[0], runs[1])


@needs_pool
def test_a_kernel_on_a_team_leaves_the_callers_numba_count(monkeypatch):
    """numba's thread count (per calling thread) is the program's too: the kernels of
    Adam's update and of pooling on a team of two leave it as they found it."""
    from gradflow.backends.numpy import windows as numpy_windows

    numba = numba_support.get_numba()
    monkeypatch.setattr(threads, "team", lambda: 2)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        _adam_steps(1)
        assert numba.get_num_threads() == 1
        x = np.ones((9, 30, 30, 64), np.float32)
        numpy_windows.max_pool_forward(x, (2, 2), (2, 2), "VALID")
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


_FORK = """
import os, numpy as np, gradflow as gf
from gradflow.backends.onednn import library as onednn
from gradflow.backends.cpu import openmp
rng = np.random.default_rng(0)
graph = gf.Graph()
with graph.as_default():
    x = gf.placeholder(gf.float32, (8, 12, 12, 3))
    f = gf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32) * 0.1)
    d = gf.Variable(rng.standard_normal((1152, 256)).astype(np.float32) * 0.01)
    v = gf.Variable(rng.standard_normal((512, 512)).astype(np.float32))
    h = gf.nn.relu(gf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"))
    loss = gf.reduce_sum(gf.matmul(gf.reshape(h, (8, 1152)), d)) + gf.reduce_sum(v * v)
    train = gf.train.AdamOptimizer(0.01).minimize(loss)
    sess = gf.Session(graph=graph)
    sess.run(gf.global_variables_initializer())
    feed = {x: rng.standard_normal((8, 12, 12, 3)).astype(np.float32)}
    for _ in range(3):
        sess.run(train, feed)
    print('parent', openmp.shared(), onednn.available(), flush=True)
    pid = os.fork()
    for _ in range(2):
        sess.run(train, feed)
    value = sess.run(loss, feed)
    if pid == 0:
        print('child', openmp.usable(), onednn.available(), float(value), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print('parent', float(value))
"""


@needs_pool
def test_a_forked_child_runs_without_openmp():
    """GNU OpenMP's pool is not there in a forked child: the child's products, kernels
    and convolutions keep off it (a first parallel region there would wait forever)
    and give the parent's numbers."""
    lines = _run(_FORK).splitlines()
    assert lines[0] == f"parent True {onednn.available()}"
    child = next(line for line in lines if line.startswith("child"))
    assert child.split()[1:3] == ["False", "False"]
    np.testing.assert_allclose(float(child.split()[3]), float(lines[-1].split()[1]),
                               rtol=1e-5)


@pytest.mark.skipif(numba_support.get_numba() is None, reason="numba is not installed")
def test_without_an_openblas_callback_the_pools_stay_apart(monkeypatch):
    """An OpenBLAS older than 0.3.27 (or one built with OpenMP) has no callback: nothing
    is set up, and the reason is kept for ``why_not``."""
    monkeypatch.setattr(openmp, "_openblas_setters", lambda: [])
    monkeypatch.setitem(openmp._state, "why", None)
    assert openmp._set_up() is False
    assert "no OpenBLAS with pthreads and a threads callback" in openmp.why_not()


@needs_pool
@pytest.mark.parametrize("ksize,strides,padding", [((2, 2), (2, 2), "VALID"),
                                                   ((3, 3), (2, 2), "SAME")])
def test_pooling_on_a_team_gives_the_bits_of_one_thread(monkeypatch, ksize, strides, padding):
    """Max and average pooling and their gradients above PARALLEL_SIZE split the images
    over the team: the same bits as on one thread, NaN and ties included."""
    from gradflow.backends.numpy import windows as numpy_windows

    rng = np.random.default_rng(3)
    x = rng.integers(-3, 3, (9, 30, 30, 64)).astype(np.float32)  # many ties
    x[0, 0, 0, :4] = np.nan
    assert x.size >= numpy_fused.PARALLEL_SIZE
    oh, ow = (15, 15)
    g = rng.standard_normal((9, oh, ow, 64)).astype(np.float32)
    teams, runs = [], []
    for team in (1, 2):
        monkeypatch.setattr(threads, "team", lambda team=team: teams.append(team) or team)
        runs.append([numpy_windows.max_pool_forward(x, ksize, strides, padding),
                     numpy_windows.max_pool_backprop(g, x, ksize, strides, padding),
                     numpy_windows.avg_pool_forward(x, ksize, strides, padding),
                     numpy_windows.avg_pool_backprop(g, x.shape, ksize, strides, padding)])
    assert set(teams) == {1, 2}
    for got, want in zip(runs[1], runs[0]):
        np.testing.assert_array_equal(got, want)


@needs_pool
@pytest.mark.parametrize("threads_", [1, 2, 3])
def test_run_blocks_calls_each_block_once_on_a_team_thread(threads_):
    """``openmp.run_blocks``: every block called exactly once, with the calling thread's
    number in the team, whatever the team's size."""
    import ctypes

    seen = np.full((50, 2), -1, np.int64)

    @ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
    def block(k, thread, args):
        base = ctypes.cast(args, ctypes.POINTER(ctypes.c_int64))
        base[2 * k] += 2  # -1 -> 1 when called once
        base[2 * k + 1] = thread

    address = ctypes.cast(block, ctypes.c_void_p).value
    openmp.run_blocks(address, seen.ctypes.data, len(seen), threads_)
    assert (seen[:, 0] == 1).all()
    assert ((seen[:, 1] >= 0) & (seen[:, 1] < threads_)).all()
