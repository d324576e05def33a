"""oneDNN on the NumPy backend (``gradflow.backends.onednn.library``, ``onednn_conv``): the
three convolution passes against the float64 reference, from several threads at once,
with the same bits on any thread count; OpenBLAS kept to one thread while oneDNN's
pool is in use; and the way back to im2col where oneDNN is off, missing or
misbehaves."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from gradflow.backends.cpu import openmp, threads
from gradflow.backends.numpy import windows as numpy_windows
from gradflow.backends.onednn import conv as onednn_conv
from gradflow.backends.onednn import library as onednn
from gradflow.prim.conv import window_geometry

pytestmark = pytest.mark.skipif(not onednn.available(),
                                reason="oneDNN (onednn-cpu-gomp) is not installed or loads not")


def _case(rng, shape, ksize, co, strides, padding):
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(ksize + (shape[3], co), dtype=np.float32)
    oh, ow, ph, pw = window_geometry(shape, ksize, strides, padding)
    g = rng.standard_normal((shape[0], oh, ow, co), dtype=np.float32)
    geometry = (x.shape, w.shape, (oh, ow), strides, (ph[0], pw[0]), (ph[1], pw[1]))
    return x, w, g, geometry


def _reference(x, w, g, strides, padding):
    """The three passes in float64 through im2col."""
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    return (numpy_windows.conv_forward(x, w, strides, padding),
            numpy_windows.conv_backprop_input(g, w, x.shape, strides, padding),
            numpy_windows.conv_backprop_filter(x, g, w.shape, strides, padding))


def _passes(x, w, g, geometry, layout="NHWC"):
    """The three passes through oneDNN, each into a new float32 array; NCHW arrays in
    and out with ``layout="NCHW"`` (the results given back in NHWC)."""
    def laid(a, perm=(0, 3, 1, 2)):
        return np.ascontiguousarray(a.transpose(perm)) if layout == "NCHW" else a

    x, g = laid(x), laid(g)
    out = [np.full(g.shape, np.nan, np.float32), np.full(x.shape, np.nan, np.float32),
           np.full(w.shape, np.nan, np.float32)]
    for kind, a, b, o in zip(("forward", "input", "filter"), (x, g, x), (w, w, g), out):
        assert onednn_conv.convolve(kind, a, b, o, *geometry, layout=layout) is o, kind
    return [laid(out[0], (0, 2, 3, 1)), laid(out[1], (0, 2, 3, 1)), out[2]]


CASES = [((2, 14, 14, 32), (5, 5), 64, (1, 1), "SAME"),
         ((3, 28, 28, 1), (5, 5), 32, (1, 1), "SAME"),
         ((3, 14, 14, 6), (5, 5), 16, (1, 1), "VALID"),
         ((2, 32, 32, 3), (3, 3), 64, (2, 2), "SAME"),
         ((2, 13, 11, 3), (3, 3), 8, (2, 2), "VALID"),
         ((2, 9, 9, 3), (7, 7), 5, (3, 3), "SAME"),
         ((1, 10, 10, 4), (1, 1), 6, (2, 2), "SAME"),
         ((2, 11, 11, 2), (4, 3), 3, (3, 1), "VALID")]


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("shape,ksize,co,strides,padding", CASES)
def test_the_three_passes_match_the_float64_reference(shape, ksize, co, strides, padding,
                                                      layout):
    """NHWC images, and NCHW ones (``nchw_native``: as they are, or reordered into
    oneDNN's own layout and back)."""
    rng = np.random.default_rng(0)
    x, w, g, geometry = _case(rng, shape, ksize, co, strides, padding)
    got = _passes(x, w, g, geometry, layout)
    for kind, a, want in zip(("forward", "input", "filter"), got, _reference(
            x, w, g, strides, padding)):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(a, want, rtol=0, atol=2e-6 * scale, err_msg=kind)


def test_the_numpy_lowerings_use_it_for_float32_and_not_for_float64():
    rng = np.random.default_rng(1)
    x, w, g, geometry = _case(rng, (2, 14, 14, 32), (5, 5), 64, (1, 1), "SAME")
    onednn_conv.convolution.cache_clear()
    numpy_windows.conv_forward(x, w, (1, 1), "SAME")
    numpy_windows.conv_forward(x.astype(np.float64), w.astype(np.float64), (1, 1), "SAME")
    assert onednn_conv.convolution.cache_info().currsize == 1
    implementation = onednn_conv.convolution("forward", *geometry, 2)[1]
    assert "gemm" not in implementation  # a direct kernel, not im2col


def test_threads_share_a_primitive():
    """Each thread has its own memory objects and scratch: no thread sees another's
    arrays."""
    rng = np.random.default_rng(2)
    x, w, g, geometry = _case(rng, (4, 14, 14, 32), (5, 5), 64, (1, 1), "SAME")
    want = _passes(x, w, g, geometry)
    failures = []

    def train(seed):
        scale = np.float32(seed + 1)
        for _ in range(20):
            got = _passes(x * scale, w, g, geometry)
            for kind, a, b in zip(("forward", "input", "filter"), got, want):
                b = b if kind == "input" else b * scale
                if not np.allclose(a, b, rtol=1e-4, atol=1e-3 * float(np.abs(b).max())):
                    failures.append((seed, kind))

    _in_threads(train, 4)
    assert not failures


def _in_threads(fn, count):
    """``fn(i)`` on ``count`` threads at once, ``i`` each thread's number."""
    workers = [threading.Thread(target=fn, args=(i,)) for i in range(count)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


def _in_a_fresh_process(env, code):
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout + run.stderr


def test_off_or_missing_means_im2col():
    code = ("import logging; logging.basicConfig(level=logging.DEBUG)\n"
            "import numpy as np\n"
            "from gradflow.backends.onednn import library as onednn\n"
            "from gradflow.backends.numpy import windows as numpy_windows\n"
            "x = np.ones((1, 5, 5, 2), np.float32); w = np.ones((3, 3, 2, 4), np.float32)\n"
            "y = numpy_windows.conv_forward(x, w, (1, 1), 'SAME')\n"
            "print('available', onednn.available(), float(y[0, 2, 2, 0]))\n")
    assert "available False 18.0" in _in_a_fresh_process({"GRADFLOW_ONEDNN": "0"}, code)
    missing = _in_a_fresh_process({"GRADFLOW_ONEDNN": "/nowhere/libdnnl.so.3"}, code)
    assert "available False 18.0" in missing
    assert "oneDNN not used (/nowhere/libdnnl.so.3)" in missing


@pytest.mark.parametrize("shared", [False, True])
def test_while_convolutions_use_openmp_the_blas_keeps_to_one_thread(monkeypatch, shared):
    """Two pools: the BLAS keeps to one thread while OpenMP's is in use. One pool (the
    BLAS's jobs on OpenMP's threads): it keeps the count."""
    monkeypatch.setattr(openmp, "shared", lambda: shared)
    monkeypatch.setattr(threads, "OPENMP_HOLD", 0.3)
    monkeypatch.setenv("GRADFLOW_THREADS", "auto")
    monkeypatch.setattr(threads, "allowed_cores", lambda: 2)
    monkeypatch.setattr(threads, "_sample", lambda: None)  # as if no other process ran
    threads.reset()
    threads.refresh()
    assert (threads.current(), threads.blas_current()) == (2, 2)
    rng = np.random.default_rng(3)
    x, w, _, _ = _case(rng, (2, 8, 8, 4), (3, 3), 8, (1, 1), "SAME")
    numpy_windows.conv2d(np, (1, 1), "SAME")(x, w)  # refresh, then the OpenMP kernel
    assert threads.openmp_in_use()
    numpy_windows.conv2d(np, (1, 1), "SAME")(x, w)
    assert (threads.current(), threads.blas_current()) == (2, 2 if shared else 1)
    time.sleep(0.35)
    assert not threads.openmp_in_use()
    threads.reset()
    threads.refresh()
    assert threads.blas_current() == 2
    monkeypatch.setenv("GRADFLOW_THREADS", "2")  # a fixed count is exactly that, always
    numpy_windows.conv2d(np, (1, 1), "SAME")(x, w)
    threads.reset()
    numpy_windows.conv2d(np, (1, 1), "SAME")(x, w)
    assert threads.openmp_in_use() and (threads.current(), threads.blas_current()) == (2, 2)
    threads.reset()


# one geometry for each kernel of the input gradient (``input_gradient_kernel``)
KERNEL_CASES = [((16, 14, 14, 32), (3, 3), 64, (1, 1), "SAME"),  # oneDNN's first choice
                ((16, 14, 14, 6), (5, 5), 16, (1, 1), "VALID"),  # jit
                ((16, 28, 28, 1), (5, 5), 32, (1, 1), "SAME"),  # gemm
                ((16, 14, 14, 32), (5, 5), 64, (1, 1), "VALID"),  # jit: padded by 4
                ((16, 14, 14, 32), (1, 1), 64, (1, 1), "VALID"),  # 1x1: first choice
                ((16, 15, 15, 32), (5, 5), 64, (2, 2), "VALID")]  # stride 2: first choice


def test_the_input_gradient_with_few_channels_takes_its_faster_kernel():
    expected = ["brg", "jit:", "gemm", "jit:", "brg", None]
    for case, kernel in zip(KERNEL_CASES, expected):
        geometry = _case(np.random.default_rng(0), *case)[3]
        first = onednn_conv.input_gradient_kernel
        for count in (1, 2):
            chosen = onednn_conv.convolution("input", *geometry, count)[1]
            if kernel is None:  # whatever oneDNN chooses first
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(onednn_conv, "input_gradient_kernel", lambda *a: None)
                    onednn_conv.convolution.cache_clear()
                    kernel = onednn_conv.convolution("input", *geometry, count)[1]
                onednn_conv.convolution.cache_clear()
            assert kernel in chosen, case
        assert onednn_conv.input_gradient_kernel is first
    # the forward pass and the filter gradient keep oneDNN's first choice
    geometry = _case(np.random.default_rng(0), *KERNEL_CASES[1])[3]
    assert "gemm" not in onednn_conv.convolution("forward", *geometry, 2)[1]


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("case", KERNEL_CASES)
def test_the_same_bits_on_one_thread_and_on_two(monkeypatch, case, layout):
    """The thread count follows the load; the numbers must not: the forward pass and
    the input gradient give the same bits on any count, and the filter gradient sums
    fixed parts of the batch (or, without llvmlite, runs on the cores the process may
    use)."""
    rng = np.random.default_rng(7)
    x, w, g, geometry = _case(rng, *case)
    runs = []
    for count in ("1", "2"):
        monkeypatch.setenv("GRADFLOW_THREADS", count)
        threads.reset()
        threads.refresh()
        assert threads.current() == int(count)
        runs.append(_passes(x, w, g, geometry, layout))
    threads.reset()
    for name, one, two in zip(("forward", "input", "filter"), *runs):
        np.testing.assert_array_equal(one, two, err_msg=name)


def test_its_thread_count_does_not_outlive_its_calls(monkeypatch):
    """OpenMP's thread count is one setting for every library on the same runtime
    (PyTorch's CPU ops load the same ``libgomp``): a convolution on gradflow's count
    leaves the caller's count as it found it, whatever gradflow chose."""
    api = onednn.api()
    x, w, g, geometry = _case(np.random.default_rng(3), *CASES[1])
    before = api.get_threads()
    try:
        for ours, theirs in ((1, 2), (2, 1)):
            monkeypatch.setenv("GRADFLOW_THREADS", str(ours))
            threads.reset()
            threads.refresh()
            api.set_threads(theirs)
            _passes(x, w, g, geometry)
            assert api.get_threads() == theirs
    finally:
        api.set_threads(before)
        threads.reset()


def test_a_cnn_trains_alike_with_and_without_onednn():
    """The same three steps of a small CNN (convolutions, a dense layer, Adam) from the
    same weights, with oneDNN and with im2col and OpenBLAS: the same losses."""
    import gradflow as gf

    def losses(use_onednn):
        old = numpy_windows.ONEDNN
        numpy_windows.ONEDNN = use_onednn
        try:
            graph = gf.Graph()
            with graph.as_default():
                gf.set_random_seed(0)
                x = gf.placeholder(gf.float32, [None, 12, 12, 3])
                y = gf.placeholder(gf.int64, [None])
                h = gf.layers.conv2d(x, 16, 5, padding="same", activation=gf.nn.relu)
                h = gf.layers.max_pooling2d(h, 2, 2)
                h = gf.layers.conv2d(h, 32, 3, activation=gf.nn.relu)
                logits = gf.layers.dense(gf.layers.flatten(h), 10)
                loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=logits))
                train = gf.train.AdamOptimizer(1e-2).minimize(loss)
                init = gf.global_variables_initializer()
            rng = np.random.default_rng(5)
            feed = {x: rng.random((16, 12, 12, 3), dtype=np.float32),
                    y: rng.integers(0, 10, 16)}
            with gf.Session(graph=graph) as sess:
                sess.run(init)
                return [sess.run([loss, train], feed)[0] for _ in range(3)]
        finally:
            numpy_windows.ONEDNN = old

    onednn_conv.convolution.cache_clear()
    with_onednn = losses(True)
    assert onednn_conv.convolution.cache_info().currsize > 0
    np.testing.assert_allclose(with_onednn, losses(False), rtol=1e-4)


def test_a_primitive_that_writes_past_its_memory_is_dropped(caplog):
    """Each thread's scratch has slack and a canary after it; a primitive found to have
    written there is never used again, and im2col computes the result instead."""
    rng = np.random.default_rng(6)
    x, w, g, geometry = _case(rng, (2, 9, 9, 8), (3, 3), 8, (1, 1), "SAME")
    key = ("forward",) + tuple(tuple(v) for v in geometry) + (onednn.api().thread_count(),
                                                              "NHWC")
    steps = onednn_conv.convolution(*key)[0]
    want = _reference(x, w, g, (1, 1), "SAME")[0]
    numpy_windows.conv_forward(x, w, (1, 1), "SAME")
    buffers = steps._thread_state().buffers
    assert buffers, "the primitive has a buffer of the thread"
    role = next(iter(buffers))
    buffers[role][-1] ^= 0xFF  # as if oneDNN had written past twice what it asked for
    try:
        with caplog.at_level("WARNING", logger="gradflow.onednn"):
            got = numpy_windows.conv_forward(x, w, (1, 1), "SAME")
        assert key in onednn_conv._dropped
        assert f"wrote past twice the {role} memory" in caplog.text
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * float(np.abs(want).max()))
        assert onednn_conv.convolve("forward", x, w, np.empty_like(got), *geometry) is None
    finally:
        onednn_conv._dropped.discard(key)
        buffers[role][-1] ^= 0xFF


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0)])
def test_reorder_copies_a_transpose(perm):
    """NCHW <-> NHWC copies above ONEDNN_PERMUTE_SIZE go through oneDNN's reorder: the
    very values of NumPy's transpose (a copy, so the same bits)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 16, 19, 23)).astype(np.float32)
    assert x.size >= numpy_windows.ONEDNN_PERMUTE_SIZE
    out = np.empty(x.transpose(perm).shape, np.float32)
    got = onednn_conv.permute(x, perm, out)
    if not onednn.available():
        assert got is None
        pytest.skip("oneDNN is not installed")
    assert got is out
    np.testing.assert_array_equal(out, x.transpose(perm))
    np.testing.assert_array_equal(numpy_windows.image_layout(np, perm)(x), x.transpose(perm))
    assert onednn_conv.permute(x.astype(np.float64), perm, out) is None  # float32 only


@pytest.mark.skipif(not onednn.parts_available(), reason="llvmlite is not installed")
@pytest.mark.parametrize("batch", [1, 5, 16])
def test_the_filter_gradient_in_parts_gives_the_same_bits_on_any_team(batch):
    """Each part of the batch on one thread, the parts added in order: a team of one,
    two or three threads gives the same bits, and they match the reference."""
    rng = np.random.default_rng(8)
    x, w, g, geometry = _case(rng, (batch, 14, 14, 8), (5, 5), 16, (1, 1), "SAME")
    parts = onednn_conv.batch_parts("filter", *geometry, 2)
    assert len(parts.bounds) - 1 == min(2, batch)
    runs = [parts(x, g, np.full(w.shape, np.nan, np.float32), team) for team in (1, 2, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])
    want = _reference(x, w, g, (1, 1), "SAME")[2]
    np.testing.assert_allclose(runs[0], want, rtol=0, atol=2e-6 * float(np.abs(want).max()))


@pytest.mark.skipif(not onednn.parts_available(), reason="llvmlite is not installed")
@pytest.mark.parametrize("kind", ["forward", "input", "filter"])
def test_a_pass_in_many_parts_gives_the_same_bits_on_any_team(kind):
    """More parts than cores, taken in turn: a team of one, two or three threads gives
    the same bits; the forward pass and the input gradient give those of the whole
    pass, the filter gradient matches the reference."""
    rng = np.random.default_rng(11)
    x, w, g, geometry = _case(rng, (16, 12, 12, 8), (3, 3), 16, (2, 2), "SAME")
    a, b, shape, index = {"forward": (x, w, g.shape, 0), "input": (g, w, x.shape, 1),
                          "filter": (x, g, w.shape, 2)}[kind]
    whole = _passes(x, w, g, geometry)[index]
    parts = onednn_conv.batch_parts(kind, *geometry, 8)
    assert len(parts.bounds) == 9
    runs = [parts(a, b, np.full(shape, np.nan, np.float32), team) for team in (1, 2, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])
    if kind == "filter":
        want = _reference(x, w, g, (2, 2), "SAME")[2]
        np.testing.assert_allclose(runs[0], want, rtol=0, atol=2e-6 * float(np.abs(want).max()))
    else:
        np.testing.assert_array_equal(runs[0], whole)


@pytest.mark.skipif(not onednn.parts_available(), reason="llvmlite is not installed")
def test_a_few_channel_input_gradient_runs_in_parts_with_the_bits_of_the_whole(monkeypatch):
    """1 -> 32 channels: oneDNN's input gradient through a GEMM, in 4 parts per core
    taken in turn by every allowed core; the bits of the whole pass on one thread."""
    rng = np.random.default_rng(12)
    x, w, g, geometry = _case(rng, (16, 9, 9, 1), (5, 5), 32, (1, 1), "SAME")
    monkeypatch.setattr(threads, "cores", lambda: 2)
    assert onednn_conv._parted("input", x.shape, w.shape, 2)
    assert not onednn_conv._parted("forward", x.shape, w.shape, 2)
    assert not onednn_conv._parted("input", x.shape, w.shape, 1)
    assert not onednn_conv._parted("input", (4,) + x.shape[1:], w.shape, 2)  # 4 images
    assert not onednn_conv._parted("input", x.shape, w.shape[:3] + (16,), 2)  # jit
    whole = onednn_conv.convolution("input", *geometry, 1)[0]
    want = whole(g, w, np.full(x.shape, np.nan, np.float32)).copy()
    hits = onednn_conv.batch_parts.cache_info().hits + onednn_conv.batch_parts.cache_info().misses
    got = onednn_conv.convolve("input", g, w, np.full(x.shape, np.nan, np.float32), *geometry)
    info = onednn_conv.batch_parts.cache_info()
    assert info.hits + info.misses == hits + 1  # through the parts
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not onednn.parts_available(), reason="llvmlite is not installed")
def test_the_filter_gradient_in_parts_from_several_threads():
    """Each calling thread has its own memory objects, streams and part sums."""
    rng = np.random.default_rng(9)
    x, w, g, geometry = _case(rng, (6, 10, 10, 4), (3, 3), 8, (1, 1), "SAME")
    parts = onednn_conv.batch_parts("filter", *geometry, 2)
    want = parts(x, g, np.empty(w.shape, np.float32), 2).copy()
    failures = []

    def train(seed):
        scale = np.float32(seed + 1)
        for _ in range(30):
            got = parts(x * scale, g, np.empty(w.shape, np.float32), 2)
            if not np.allclose(got, want * scale, rtol=1e-5, atol=1e-4):
                failures.append(seed)

    _in_threads(train, 4)
    assert not failures


@pytest.mark.skipif(not onednn.parts_available(), reason="llvmlite is not installed")
def test_a_part_that_writes_past_its_memory_is_dropped(caplog):
    """A part whose scratch canary is overwritten: the parts are never used again for
    that geometry, and im2col computes the gradient."""
    rng = np.random.default_rng(10)
    x, w, g, geometry = _case(rng, (4, 9, 9, 8), (3, 3), 8, (1, 1), "SAME")
    key = ("parts", "filter") + tuple(tuple(v) for v in geometry) + (
        threads.cores() * onednn_conv.PARTS_PER_CORE, "NHWC")
    out = np.empty(w.shape, np.float32)
    assert onednn_conv.convolve("filter", x, g, out, *geometry) is out
    states = onednn_conv.batch_parts(*key[1:]).team._thread_state().states
    buffers = next((s.buffers for s in states[::-1] if s.buffers), None)
    assert buffers, "the parts have buffers of the thread"
    role = next(iter(buffers))
    buffers[role][-1] ^= 0xFF
    try:
        with caplog.at_level("WARNING", logger="gradflow.onednn"):
            got = numpy_windows.conv_backprop_filter(x, g, w.shape, (1, 1), "SAME")
        assert key in onednn_conv._dropped
        assert f"wrote past twice the {role} memory" in caplog.text
        want = _reference(x, w, g, (1, 1), "SAME")[2]
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * float(np.abs(want).max()))
    finally:
        onednn_conv._dropped.discard(key)
        buffers[role][-1] ^= 0xFF
