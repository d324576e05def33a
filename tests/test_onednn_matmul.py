"""oneDNN's matrix products on the NumPy backend (``gradflow.backends.onednn.matmul``):
every transposition the ``matmul`` op lowers against the float64 product, into a
plan's buffer and into a new array, from several threads at once, with the same bits
on one thread and two; and NumPy for what oneDNN is not there for (small products,
float64, stacks of matrices, odd strides)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import threads
from gradflow.backends.numpy import matmul as numpy_matmul
from gradflow.backends.onednn import library as onednn
from gradflow.backends.onednn import matmul as onednn_matmul

pytestmark = pytest.mark.skipif(not onednn.available(),
                                reason="oneDNN (onednn-cpu-gomp) is not installed or loads not")

SHAPES = [(64, 784, 512), (50, 3136, 256), (300, 129, 257), (7, 1000, 1000)]


def _brg():
    """Whether oneDNN runs its ``brg`` product kernels here (AVX-512); below, it has its
    ``gemm`` alone and ``multiply`` leaves every product to NumPy."""
    rows = ((64, 784), (784, 1))
    found = onednn_matmul.product(rows, ((784, 512), (512, 1)), ((64, 512), (512, 1)), 1)
    return found is not None and found[1].startswith("brg")


BRG = onednn.available() and _brg()


def _operand(rng, rows, cols, transposed):
    """A float32 ``rows x cols`` matrix, as the transposed view of a C-ordered array
    when ``transposed``."""
    if transposed:
        return rng.standard_normal((cols, rows), dtype=np.float32).T
    return rng.standard_normal((rows, cols), dtype=np.float32)


@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_every_transposition_matches_the_float64_product(m, k, n, ta, tb):
    rng = np.random.default_rng(m + n)
    a, b = _operand(rng, m, k, ta), _operand(rng, k, n, tb)
    assert m * k * n >= onednn_matmul.MIN_WORK
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 * np.sqrt(k) * float(np.abs(want).max())
    out = np.full((m, n), np.nan, np.float32)
    if not BRG:  # NumPy's product, through the lowering below
        assert onednn_matmul.multiply(a, b, out) is None and np.isnan(out).all()
        out = np.matmul(a, b)
    else:
        assert onednn_matmul.multiply(a, b, out) is out
        fresh = onednn_matmul.multiply(a, b)
        assert fresh.flags.c_contiguous and fresh.dtype == np.float32
        np.testing.assert_array_equal(fresh, out)
    np.testing.assert_allclose(out, want, rtol=0, atol=tol)
    # the lowering of the op, which is handed the untransposed arrays
    lowered = numpy_matmul.lower_matmul(np, ta, tb)
    given = (a.T if ta else a, b.T if tb else b)
    for got in (lowered(*given, out=np.empty((m, n), np.float32)), lowered(*given)):
        if BRG:  # the product above, bit for bit
            np.testing.assert_array_equal(got, out)
        else:  # NumPy's, whose bits follow OpenBLAS's threads
            np.testing.assert_allclose(got, want, rtol=0, atol=tol)


@pytest.mark.parametrize("m, k, n", SHAPES + [(16, 784, 512), (8, 200000, 8)])
def test_the_same_bits_on_one_thread_and_on_two(monkeypatch, m, k, n):
    """The thread count follows the load; the numbers must not. oneDNN's ``brg``
    kernels (AVX-512) do not split the inner dimension between threads (OpenBLAS's
    bits differ for 16 x 784 x 512); its ``gemm`` (AVX2, SSE4.1) does, and is never
    used (``multiply`` returns None: checked under every instruction set of
    ``tests/test_isa_matrix.py``)."""
    rng = np.random.default_rng(k)
    a, b = _operand(rng, m, k, False), _operand(rng, k, n, True)
    runs = []
    for count in ("1", "2"):
        monkeypatch.setenv("GRADFLOW_THREADS", count)
        threads.reset()
        threads.refresh()
        assert threads.current() == int(count)
        runs.append(onednn_matmul.multiply(a, b, np.empty((m, n), np.float32)))
    threads.reset()
    if not BRG:
        assert runs == [None, None]
        return
    np.testing.assert_array_equal(runs[0], runs[1])


def test_numpy_takes_what_onednn_is_not_there_for():
    rng = np.random.default_rng(3)
    a, b = _operand(rng, 64, 784, False), _operand(rng, 784, 512, False)
    small = _operand(rng, 16, 16, False)
    assert onednn_matmul.multiply(small, small) is None  # below MIN_WORK
    assert onednn_matmul.multiply(a.astype(np.float64), b.astype(np.float64)) is None
    assert onednn_matmul.multiply(np.stack([a, a]), b) is None
    assert onednn_matmul.multiply(a[:, ::2], b[::2]) is None  # no axis of unit stride
    assert onednn_matmul.multiply(a, b, np.empty((512, 64), np.float32).T) is None
    assert onednn_matmul.multiply(a, b[::-1]) is None
    # and the lowering gives NumPy's product for them
    lowered = numpy_matmul.lower_matmul(np, False, False)
    np.testing.assert_allclose(lowered(a[:, ::2], b[::2]), a[:, ::2] @ b[::2], rtol=1e-5,
                               atol=1e-3)


def test_threads_share_a_product():
    rng = np.random.default_rng(4)
    a, b = _operand(rng, 64, 784, False), _operand(rng, 784, 512, True)
    product = onednn_matmul.multiply if BRG else np.matmul  # NumPy's below AVX-512
    want = product(a, b)

    def work(seed):
        scale = np.float32(seed + 1)
        return all(np.allclose(product(a * scale, b), want * scale, rtol=1e-5,
                               atol=1e-3) for _ in range(30))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(4)))


def test_a_dense_layer_trains_alike_with_numpy_products():
    """The same training run of a 784-512-10 network, with oneDNN's products and with
    NumPy's for every product (``MIN_WORK`` above them all), to float32 agreement."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)

    def train():
        graph = gf.Graph()
        with graph.as_default():
            gf.set_random_seed(0)
            xp, yp = gf.placeholder(gf.float32, (None, 784)), gf.placeholder(gf.int64, (None,))
            h = gf.layers.dense(xp, 512, activation=gf.nn.relu)
            loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=yp, logits=gf.layers.dense(h, 10)))
            train = gf.train.AdamOptimizer(1e-3).minimize(loss)
            with gf.Session(graph=graph) as sess:
                sess.run(gf.global_variables_initializer())
                return [sess.run([train, loss], {xp: x, yp: y})[1] for _ in range(5)]

    onednn_matmul.product.cache_clear()
    with_onednn = train()
    assert onednn_matmul.product.cache_info().currsize > 0
    keep = onednn_matmul.MIN_WORK
    onednn_matmul.MIN_WORK = 1 << 62
    try:
        onednn_matmul.product.cache_clear()
        with_numpy = train()
        assert onednn_matmul.product.cache_info().currsize == 0
    finally:
        onednn_matmul.MIN_WORK = keep
    np.testing.assert_allclose(with_onednn, with_numpy, rtol=1e-4)
    assert with_onednn[-1] < with_onednn[0]
