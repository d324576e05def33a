"""The NumPy backend's lowerings of matmul, the LSTM ops, convolution and max pooling
against the Array API impls."""

import array_api_compat.numpy as xp
import numpy as np
import pytest

import gradflow as gf
from gradflow.backends import get as get_backend
from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.numpy import matmul as numpy_matmul
from gradflow.backends.numpy import rnn as numpy_rnn
from gradflow.backends.numpy import windows as numpy_windows
from gradflow.backends.onednn import library as onednn
from gradflow.prim import rnn as prim_rnn
from gradflow.prim.array import _matmul_impl
from gradflow.prim.conv import window_geometry
from gradflow.prim.registry import REGISTRY

RNG = np.random.default_rng(0)

NUMPY = get_backend("numpy")


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("shapes", [((32, 512), (192, 512)), ((300, 16), (8, 16)),
                                    ((32, 10), (512, 10)), ((2, 5, 6), (2, 7, 6))])
def test_matmul_lowering(ta, tb, shapes):
    """Every variant (with ``b`` transposed: swapped for few rows and a long inner
    dimension, plain otherwise), with and without ``out=``."""
    sa, sb = shapes
    a = _rand(*(sa[:-2] + sa[-2:][::-1] if ta else sa))
    b = _rand(*(sb if tb else sb[:-2] + sb[-2:][::-1]))
    want = _matmul_impl(xp, a, b, ta, tb)
    lowered = numpy_matmul.lower_matmul(xp, ta, tb)
    got = lowered(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    out = np.full(want.shape, np.nan, np.float32)
    assert lowered(a, b, out=out) is out
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("batch_c", [4, 1])
def test_lstm_lowerings(batch_c):
    units = 5
    z, g4 = _rand(4, 4 * units), _rand(4, 4 * units)
    a = prim_rnn._lstm_gates_impl(xp, z, 1.0)
    np.testing.assert_allclose(numpy_rnn.lstm_gates(xp, 1.0)(z), a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(numpy_rnn.lstm_gates_grad(xp)(g4, a),
                               prim_rnn._lstm_gates_grad_impl(xp, g4, a), rtol=1e-6, atol=1e-6)
    g, c = _rand(4, units), _rand(batch_c, units)
    for wrt in ("gates", "state"):
        for lower, impl in ((numpy_rnn.lstm_c_grad, prim_rnn._lstm_c_grad_impl),
                            (numpy_rnn.lstm_h_grad, prim_rnn._lstm_h_grad_impl)):
            got, want = lower(xp, wrt)(g, a, c), impl(xp, g, a, c, wrt)
            assert got.shape == want.shape == ((4, 4 * units) if wrt == "gates" else c.shape)
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- convolution and max pooling (numpy_windows, numpy_conv_numba, numpy_conv_winograd) -----


@pytest.fixture(params=["onednn", "numba", "numpy"])
def window_path(request, monkeypatch):
    """Run the window lowerings with float32 convolutions through oneDNN, with their
    compiled kernels, or on NumPy alone (as without numba or with GRADFLOW_NUMBA=0)."""
    if request.param == "onednn" and not onednn.available():
        pytest.skip("oneDNN (onednn-cpu-gomp) is not installed")
    if request.param == "numba" and get_numba() is None:
        pytest.skip("numba is not installed")
    if request.param != "onednn":
        monkeypatch.setattr(numpy_windows, "ONEDNN", False)
    if request.param == "numpy":
        monkeypatch.setattr(numpy_windows, "_kernels", lambda dtype: None)
    return request.param


def _lowered(op, *args, **attrs):
    return numpy_windows.LOWERINGS[op](xp, **attrs)(*args)


def _generic(op, *args, **attrs):
    return REGISTRY[op].impl(xp, *args, **attrs)


def _assert_matches(got, want, dtype, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    tol = 1e-10 if dtype == np.float64 else 2e-5 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


_KSIZES = [(1, 1), (2, 2), (3, 3), (5, 5), (3, 2)]
_STRIDES = [(1, 1), (2, 2), (1, 2)]
# (input NHWC, output channels): batch 1, 1 and 3 channels, non-square; 16 channels
# take the Winograd path for 3x3 stride-1 convolutions where numba is installed
_CONV_SHAPES = [((1, 7, 5, 1), 4), ((2, 9, 8, 3), 1), ((1, 6, 7, 16), 16), ((3, 4, 3, 3), 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize", _KSIZES)
def test_conv_lowerings_match_the_array_api_versions(window_path, dtype, padding, ksize):
    rng = np.random.default_rng(1)
    for (shape, co), strides in ((c, s) for c in _CONV_SHAPES for s in _STRIDES):
        if padding == "VALID" and (ksize[0] > shape[1] or ksize[1] > shape[2]):
            continue
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal(ksize + (shape[3], co)).astype(dtype)
        oh, ow = window_geometry(shape, ksize, strides, padding)[:2]
        g = rng.standard_normal((shape[0], oh, ow, co)).astype(dtype)
        conv = dict(strides=strides, padding=padding)
        what = f"{shape} {ksize} {strides} {padding}"
        for op, args in (("conv2d", [x, w]), ("conv2d_backprop_input", [g, w, x]),
                         ("conv2d_backprop_filter", [x, g, w])):
            _assert_matches(_lowered(op, *args, **conv), _generic(op, *args, **conv), dtype,
                            f"{op} {what}")


def test_winograd_serves_3x3_stride_1_convolutions_with_many_channels():
    if get_numba() is None:
        pytest.skip("numba is not installed")
    conv = numpy_windows._Geometry((2, 6, 7, 16), (3, 3), (1, 1), "SAME")
    assert numpy_windows._winograd(conv, np.dtype(np.float32), 16, 16) is not None
    assert numpy_windows._winograd(conv, np.dtype(np.float32), 1, 16) is None  # too thin
    strided = numpy_windows._Geometry((2, 6, 7, 16), (3, 3), (2, 2), "SAME")
    assert numpy_windows._winograd(strided, np.dtype(np.float32), 16, 16) is None


def _pooled_or_skip(monkeypatch):
    """numpy_conv_winograd, with a block per image taking the pooled path from two
    blocks on (the tests' batches are small)."""
    from gradflow.backends.cpu import openmp
    from gradflow.backends.numpy import conv_winograd as numpy_conv_winograd

    if get_numba() is None or not onednn.available() or not openmp.shared():
        pytest.skip("needs numba, oneDNN and OpenMP's shared pool")
    monkeypatch.setattr(numpy_conv_winograd, "BLOCK_BYTES", 1)
    monkeypatch.setattr(numpy_conv_winograd, "MIN_POOLED_BLOCKS", 2)
    return numpy_conv_winograd


def _pooled_runs(monkeypatch):
    """``_pooled_or_skip``, and the list of the kinds of the pooled passes that run."""
    winograd, ran = _pooled_or_skip(monkeypatch), []
    monkeypatch.setattr(winograd.Pooled, "run", lambda self, *a, _run=winograd.Pooled.run:
                        ran.append(self.kind) or _run(self, *a))
    return ran


def test_winograd_blocks_go_to_openmps_pool_from_eight_blocks_on():
    from gradflow.backends.cpu import openmp
    from gradflow.backends.numpy import conv_winograd as winograd

    if not onednn.available() or not openmp.shared():
        pytest.skip("needs oneDNN and OpenMP's shared pool")
    f32 = np.dtype(np.float32)
    for batch, pooled in ((32, False), (48, True), (128, True)):  # 6 images a block
        geo = numpy_windows._Geometry((batch, 14, 14, 32), (3, 3), (1, 1), "SAME")
        assert winograd.pooled(geo, f32, 32, 64) is pooled, batch
    assert not winograd.pooled(geo, np.dtype(np.float64), 32, 64)


def _three_passes(x, w, g, padding):
    conv = dict(strides=(1, 1), padding=padding)
    return [_lowered(op, *args, **conv) for op, args in (
        ("conv2d", [x, w]), ("conv2d_backprop_input", [g, w, x]),
        ("conv2d_backprop_filter", [x, g, w]))]


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("shape", [(5, 6, 5, 16), (4, 9, 7, 24), (3, 4, 4, 32)])
def test_winograd_blocks_on_openmps_pool_match_the_reference(monkeypatch, shape, padding):
    """float32 3x3 convolutions with oneDNN take Winograd's blocks on OpenMP's pool
    (``numpy_conv_winograd.Pooled``); every pass against the float64 reference, a block
    per image (odd sizes: edge tiles)."""
    ran = _pooled_runs(monkeypatch)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((3, 3, shape[3], 16)).astype(np.float32)
    oh, ow = window_geometry(shape, (3, 3), (1, 1), padding)[:2]
    g = rng.standard_normal((shape[0], oh, ow, 16)).astype(np.float32)
    conv = dict(strides=(1, 1), padding=padding)
    want = [_generic(op, *[a.astype(np.float64) for a in args], **conv) for op, args in (
        ("conv2d", [x, w]), ("conv2d_backprop_input", [g, w, x]),
        ("conv2d_backprop_filter", [x, g, w]))]
    for got, ref, op in zip(_three_passes(x, w, g, padding), want, ("fwd", "input", "filter")):
        _assert_matches(got, ref.astype(np.float32), np.float32, f"{op} {shape} {padding}")
    assert ran == ["convolve", "convolve", "filter"]  # forward, input gradient, filter


def test_winograd_blocks_give_the_same_bits_on_one_thread_and_on_two(monkeypatch):
    from gradflow.backends.cpu import threads

    ran = _pooled_runs(monkeypatch)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 14, 14, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 32, 64)).astype(np.float32)
    g = rng.standard_normal((16, 14, 14, 64)).astype(np.float32)
    runs = []
    for count in ("1", "2"):
        monkeypatch.setenv("GRADFLOW_THREADS", count)
        threads.reset()
        threads.refresh()
        runs.append(_three_passes(x, w, g, "SAME"))
    threads.reset()
    assert ran == ["convolve", "convolve", "filter"] * 2
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one, two)


def test_winograd_blocks_from_several_threads_at_once(monkeypatch):
    """Each calling thread has its own blocks' buffers, memory objects and streams."""
    from concurrent.futures import ThreadPoolExecutor

    _pooled_or_skip(monkeypatch)
    rng = np.random.default_rng(5)
    cases = [[rng.standard_normal(s).astype(np.float32)
              for s in ((6, 10, 10, 16), (3, 3, 16, 16), (6, 10, 10, 16))] for _ in range(4)]
    want = [_three_passes(*case, "SAME") for case in cases]

    def work(k):
        return [_three_passes(*cases[k], "SAME") for _ in range(5)][-1]

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(work, range(4)))
    for mine, theirs in zip(got, want):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)


def test_conv_lowerings_in_blocks(window_path, monkeypatch):
    """Many small blocks of images (and Winograd blocks) give the same results."""
    from gradflow.backends.numpy import conv_winograd as numpy_conv_winograd

    monkeypatch.setattr(numpy_windows, "BLOCK_BYTES", 1)
    monkeypatch.setattr(numpy_conv_winograd, "BLOCK_BYTES", 1)
    rng = np.random.default_rng(2)
    for shape, ksize in (((5, 6, 5, 16), (3, 3)), ((3, 7, 6, 3), (3, 3)), ((3, 5, 5, 2), (2, 2))):
        x = rng.standard_normal(shape)
        w = rng.standard_normal(ksize + (shape[3], 16))
        g = rng.standard_normal(shape[:3] + (16,))
        conv = dict(strides=(1, 1), padding="SAME")
        for op, args in (("conv2d", [x, w]), ("conv2d_backprop_input", [g, w, x]),
                         ("conv2d_backprop_filter", [x, g, w])):
            _assert_matches(_lowered(op, *args, **conv), _generic(op, *args, **conv),
                            np.float64, f"{op} {shape}")


def test_conv_lowerings_write_into_a_given_buffer_only_when_it_is_free(window_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 4, 16))
    w = rng.standard_normal((3, 3, 16, 16))
    conv = dict(strides=(1, 1), padding="SAME")
    want = _generic("conv2d", x, w, **conv)
    lowered = numpy_windows.LOWERINGS["conv2d"](xp, **conv)
    assert lowered.accepts_out and lowered.reads_whole_inputs
    out = np.empty_like(want)
    assert lowered(x, w, out=out) is out
    _assert_matches(out, want, np.float64, "into out")
    aliased = x.copy()
    got = lowered(aliased, w, out=aliased)  # the output would overwrite the input
    assert got is not aliased
    _assert_matches(got, want, np.float64, "out aliasing the input")
    assert lowered(x, w, out=None).shape == want.shape  # a recycled buffer may be missing


def test_window_lowerings_take_strided_and_float16_inputs(window_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5, 2, 16)).transpose(2, 0, 1, 3)  # not C-contiguous
    w = rng.standard_normal((3, 3, 16, 16))
    conv = dict(strides=(1, 1), padding="SAME")
    pool = dict(ksize=(2, 2), strides=(2, 2), padding="VALID")
    cases = [("conv2d", [x, w], conv), ("conv2d_backprop_input", [x, w, x], conv),
             ("conv2d_backprop_filter", [x, x, w], conv), ("max_pool", [x], pool),
             ("max_pool_grad", [x[:, ::2, ::2][:, :, :2], x], pool)]
    for dtype in (np.float64, np.float16):
        for op, args, attrs in cases:
            args = [a.astype(dtype, copy=False) for a in args]
            got, want = _lowered(op, *args, **attrs), _generic(op, *args, **attrs)
            assert got.dtype == want.dtype == dtype, op
            tol = 1e-10 if dtype == np.float64 else 2e-2 * float(np.abs(want).max())
            np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=tol,
                                       atol=tol, err_msg=f"{op} {dtype}")


def test_window_lowerings_reject_mismatched_shapes(window_path):
    """The compiled loops trust their shapes: a gradient of the wrong shape is an
    error, not a write past an array."""
    x, g = np.ones((2, 6, 5, 3)), np.ones((2, 3, 3, 3))  # max_pool 2x2 gives (2, 3, 2, 3)
    with pytest.raises(ValueError, match="max_pool_grad: the gradient has shape"):
        _lowered("max_pool_grad", g, x, ksize=(2, 2), strides=(2, 2), padding="VALID")
    conv = dict(strides=(1, 1), padding="SAME")
    w = np.ones((3, 3, 3, 4))
    with pytest.raises(ValueError, match="conv2d_backprop_input: the gradient"):
        _lowered("conv2d_backprop_input", np.ones((2, 6, 5, 3)), w, x, **conv)
    with pytest.raises(ValueError, match="conv2d_backprop_filter: the gradient"):
        _lowered("conv2d_backprop_filter", x, np.ones((2, 6, 4, 4)), w, **conv)
    with pytest.raises(ValueError, match="conv2d: the input"):
        _lowered("conv2d", np.ones((2, 6, 5, 2)), w, **conv)


def _pool_input(rng, shape, dtype):
    """ReLU-like values: many windows tie at 0, some at a repeated maximum."""
    x = np.maximum(rng.standard_normal(shape), 0).round(1)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize", [(1, 1), (2, 2), (3, 3), (2, 3)])
def test_max_pool_lowerings_match_the_array_api_versions(window_path, dtype, padding, ksize):
    rng = np.random.default_rng(4)
    for shape, strides in ((s, st) for s in [(1, 7, 5, 1), (2, 8, 6, 3), (1, 4, 4, 16)]
                           for st in _STRIDES + [(3, 3)]):
        if padding == "VALID" and (ksize[0] > shape[1] or ksize[1] > shape[2]):
            continue
        x = _pool_input(rng, shape, dtype)
        pool = dict(ksize=ksize, strides=strides, padding=padding)
        oh, ow = window_geometry(shape, ksize, strides, padding)[:2]
        g = rng.standard_normal((shape[0], oh, ow, shape[3])).astype(dtype)
        what = f"{shape} {ksize} {strides} {padding}"
        np.testing.assert_array_equal(_lowered("max_pool", x, **pool),
                                      _generic("max_pool", x, **pool), err_msg=what)
        _assert_matches(_lowered("max_pool_grad", g, x, **pool),
                        _generic("max_pool_grad", g, x, **pool), dtype, what)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_special_values(window_path, padding):
    """A NaN wins its window (and takes no gradient); a window of -inf sends its
    gradient to its first cell, which under SAME padding may be a padding cell."""
    x = np.array([[1.0, np.nan, 2.0, 0.5, -np.inf],
                  [0.0, 3.0, -np.inf, -np.inf, -np.inf],
                  [4.0, 4.0, 4.0, 4.0, 1.0]], np.float32)[None, :, :, None]
    for ksize, strides in (((2, 2), (2, 2)), ((3, 3), (1, 1)), ((2, 2), (1, 2))):
        pool = dict(ksize=ksize, strides=strides, padding=padding)
        oh, ow = window_geometry(x.shape, ksize, strides, padding)[:2]
        g = np.arange(1, oh * ow + 1, dtype=np.float32).reshape(1, oh, ow, 1)
        np.testing.assert_array_equal(_lowered("max_pool", x, **pool),
                                      _generic("max_pool", x, **pool))
        got, want = _lowered("max_pool_grad", g, x, **pool), _generic("max_pool_grad", g, x,
                                                                        **pool)
        finite = np.isfinite(want)  # the Array API version spreads NaN * 0 around
        np.testing.assert_array_equal(got[finite], want[finite])


def _small_cnn_loss(dtype):
    """The benchmark's model, small: conv 3x3 (1 -> 16) + ReLU, max-pool 2, conv 3x3
    (16 -> 16, Winograd where numba is installed) + ReLU, max-pool 2, dense."""
    rng = np.random.default_rng(5)
    x = gf.constant(rng.random((2, 8, 6, 1)).astype(dtype))
    y = gf.constant(np.array([1, 3]))
    params = [gf.Variable((rng.standard_normal(s) * 0.5).astype(dtype))
              for s in [(3, 3, 1, 16), (16,), (3, 3, 16, 16), (16,), (2 * 2 * 16, 4)]]
    k1, b1, k2, b2, w3 = params
    h = gf.nn.relu(gf.nn.bias_add(gf.nn.conv2d(x, k1, 1, "SAME"), b1))
    h = gf.nn.max_pool(h, 2, 2, "VALID")
    h = gf.nn.relu(gf.nn.bias_add(gf.nn.conv2d(h, k2, 1, "SAME"), b2))
    h = gf.nn.max_pool(h, 2, 2, "SAME")
    logits = gf.matmul(gf.reshape(h, (2, -1)), w3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    return loss, params


@pytest.mark.parametrize("optimize", [True, False])
def test_cnn_gradients_match_finite_differences(window_path, optimize):
    loss, params = _small_cnn_loss(np.float64)
    grads = gf.gradients(loss, params)
    rng = np.random.default_rng(6)
    eps = 1e-6
    with gf.Session(optimize=optimize) as sess:
        sess.run(gf.global_variables_initializer())
        analytic = sess.run(grads)
        for var, grad in zip(params, analytic):
            value = sess.run(var)
            for index in map(tuple, rng.integers(0, value.shape, (6, value.ndim))):
                shifted = []
                for sign in (1, -1):
                    bumped = value.copy()
                    bumped[index] += sign * eps
                    var.load(bumped, sess)
                    shifted.append(sess.run(loss))
                var.load(value, sess)
                numeric = (shifted[0] - shifted[1]) / (2 * eps)
                assert abs(grad[index] - numeric) <= 1e-6 * max(1.0, abs(numeric)), \
                    (var.name, index, grad[index], numeric)


def test_cnn_float32_gradients_match_the_array_api_backend():
    """The small CNN's float32 gradients from the NumPy lowerings are those of the
    Array API versions (run on array_api_strict)."""
    from gradflow import backends

    if backends.available()["array_api_strict"] is not None:
        pytest.skip("array_api_strict is not installed")
    loss, params = _small_cnn_loss(np.float32)
    grads = gf.gradients(loss, params)
    results = []
    for backend in ("numpy", "array_api_strict"):
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            results.append(sess.run([loss] + grads))
    for got, want in zip(*results):
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("ksize", [(1, 1), (2, 2), (3, 3), (2, 3)])
def test_avg_pool_lowerings_match_the_array_api_versions(window_path, dtype, padding, ksize):
    rng = np.random.default_rng(6)
    for shape, strides in ((s, st) for s in [(1, 7, 5, 1), (2, 8, 6, 3)]
                           for st in _STRIDES + [(3, 3)]):
        if padding == "VALID" and (ksize[0] > shape[1] or ksize[1] > shape[2]):
            continue
        x = rng.standard_normal(shape).astype(dtype)
        pool = dict(ksize=ksize, strides=strides, padding=padding)
        oh, ow = window_geometry(shape, ksize, strides, padding)[:2]
        g = rng.standard_normal((shape[0], oh, ow, shape[3])).astype(dtype)
        what = f"{shape} {ksize} {strides} {padding}"
        _assert_matches(_lowered("avg_pool", x, **pool), _generic("avg_pool", x, **pool),
                        dtype, what)
        _assert_matches(_lowered("avg_pool_grad", g, x, **pool),
                        _generic("avg_pool_grad", g, x, **pool), dtype, what)


def _window_cases(rng):
    """(op, inputs, attrs) of every window lowering: the 5x5 convolutions of the
    deep-MNIST network (few and many channels), a Winograd 3x3 one, and poolings."""
    cases = []
    for shape, k, co in (((8, 16, 16, 1), 5, 16), ((8, 12, 12, 16), 5, 16),
                         ((8, 12, 12, 16), 3, 16)):
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((k, k, shape[3], co)).astype(np.float32)
        g = rng.standard_normal(shape[:3] + (co,)).astype(np.float32)
        conv = dict(strides=(1, 1), padding="SAME")
        cases += [("conv2d", [x, w], conv), ("conv2d_backprop_input", [g, w, x], conv),
                  ("conv2d_backprop_filter", [x, g, w], conv)]
    x = rng.standard_normal((8, 16, 16, 16)).astype(np.float32)
    for pool in (dict(ksize=(2, 2), strides=(2, 2), padding="VALID"),
                 dict(ksize=(3, 3), strides=(2, 2), padding="SAME")):
        oh, ow = window_geometry(x.shape, pool["ksize"], pool["strides"], pool["padding"])[:2]
        g = rng.standard_normal((8, oh, ow, 16)).astype(np.float32)
        cases += [("max_pool", [x], pool), ("max_pool_grad", [g, x], pool),
                  ("avg_pool", [x], pool), ("avg_pool_grad", [g, x], pool)]
    return cases


def test_window_lowerings_write_into_out_and_allocate_nothing_more(window_path):
    """Every window lowering takes ``out=`` (the plan's arena buffer): the result written
    there equals the allocating call's, and a steady call allocates no array of the
    result's size (its scratch is kept from call to call; numba's row buffers of a few
    KB are all that is left)."""
    import tracemalloc

    for op, args, attrs in _window_cases(np.random.default_rng(8)):
        fn = numpy_windows.LOWERINGS[op](xp, **attrs)
        assert fn.accepts_out and fn.reads_whole_inputs, op
        assert NUMPY.accepts_out(fn), op
        want = fn(*args)
        out = np.full_like(want, np.nan)
        assert fn(*args, out=out) is out, op
        np.testing.assert_array_equal(out, want, err_msg=op)
        fn(*args, out=out)
        tracemalloc.start()
        try:
            fn(*args, out=out)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if window_path == "numba":  # NumPy's strided ufuncs buffer a few blocks
            assert peak < 24 << 10, f"{op} {attrs}: {peak} bytes"


def test_steady_cnn_training_step_allocates_no_conv_or_pool_buffer():
    """A traced plan of a CNN's training step (convolutions, both poolings, their
    gradients, Adam), run steady: each conv/pool step that the plan gives a buffer
    (``out=``) allocates less than a few KB; the plan gives one to most of them."""
    import tracemalloc

    if get_numba() is None:
        pytest.skip("numba is not installed (NumPy's strided ufuncs buffer a few blocks)")
    rng = np.random.default_rng(9)
    g = gf.Graph()
    with g.as_default():
        x = gf.placeholder(gf.float32, (8, 16, 16, 1))
        y = gf.placeholder(gf.int64, (8,))
        h = gf.layers.conv2d(x, 16, 5, padding="same", activation=gf.nn.relu)
        h = gf.layers.max_pooling2d(h, 2, 2)
        h = gf.layers.conv2d(h, 16, 3, padding="same", activation=gf.nn.relu)  # Winograd
        h = gf.layers.average_pooling2d(h, 2, 2)
        h = gf.layers.conv2d(h, 8, 3, padding="valid")
        logits = gf.layers.dense(gf.layers.flatten(h), 4)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
        init = gf.global_variables_initializer()
    feed = {x: rng.standard_normal((8, 16, 16, 1)).astype(np.float32),
            y: rng.integers(0, 4, 8)}
    options = gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE)
    windows = set(numpy_windows.LOWERINGS)
    with gf.Session(graph=g, backend="numpy") as sess:
        sess.run(init)
        sess.run(train, feed, options=options)
        plan = next(p for key, p in sess._plans.items() if key[0] == "trace")
        env = plan.fn.__globals__
        found = []

        def measured(fn, node):
            def run(*args, out=None):
                tracemalloc.reset_peak()
                start = tracemalloc.get_traced_memory()[0]
                result = fn(*args, out=out)
                found.append((node, out is not None, tracemalloc.get_traced_memory()[1] - start))
                return result
            return run

        steps = [k[1:] for k, node in env.items() if k[:1] == "S" and k[1:].isdigit()
                 and node.opdef.name in windows]
        for k in steps:
            env[f"F{k}"] = measured(env[f"F{k}"], env[f"S{k}"])
        sess.run(train, feed, options=options)  # scratch buffers settle
        found.clear()
        tracemalloc.start()
        try:
            sess.run(train, feed, options=options)
        finally:
            tracemalloc.stop()
    given = [(node, peak) for node, has_out, peak in found if has_out]
    assert len(given) >= 8 and len(found) == len(steps) >= 10, [n.name for n, *_ in found]
    for node, peak in given:
        assert peak < 24 << 10, f"{node.describe()}: {peak} bytes"


def test_winograd_blocks_write_into_a_strided_out(monkeypatch):
    """The pooled forward pass and input gradient into ``out`` views that are not
    C-ordered (the blocks write into a buffer of their own, then copy)."""
    ran = _pooled_runs(monkeypatch)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 8, 8, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    g = rng.standard_normal((4, 8, 8, 16)).astype(np.float32)
    conv = dict(strides=(1, 1), padding="SAME")
    for op, args in (("conv2d", [x, w]), ("conv2d_backprop_input", [g, w, x])):
        want = _lowered(op, *args, **conv)
        wide = np.full((4, 8, 8, 32), 7, np.float32)
        got = numpy_windows.LOWERINGS[op](xp, **conv)(*args, out=wide[..., ::2])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(wide[..., 1::2], 7)  # nothing written beside it
    assert ran == ["convolve"] * 4


@pytest.mark.skipif(get_numba() is None, reason="numba is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row_shape", [(), (16,), (3, 4)])
def test_the_scatter_kernel_sums_in_float64(monkeypatch, dtype, row_shape):
    """Above the one-hot product's size, rows are added into their targets by a numba
    loop in float64: the float32 result is the float64 sum rounded once (the sorted
    float32 sums of ``np.add.reduceat`` it replaced were further off), into ``out`` too."""
    from gradflow.backends.numpy import backend as numpy_backend

    rng = np.random.default_rng(4)
    count, num_rows = 50_000, 300  # 15M one-hot entries: past the product path
    rows = rng.standard_normal((count,) + row_shape).astype(dtype)
    indices = rng.integers(0, num_rows, count)
    got = numpy_backend._scatter_add_rows(xp, rows, indices, num_rows)
    out = np.full((num_rows,) + row_shape, np.nan, dtype)
    assert numpy_backend._scatter_add_rows(xp, rows, indices, num_rows, out=out) is out
    exact = np.zeros((num_rows,) + row_shape, np.float64)
    np.add.at(exact, indices, rows.astype(np.float64))
    np.testing.assert_allclose(got, exact.astype(dtype), rtol=1e-12 if dtype == np.float64
                               else 1e-6, atol=1e-12 if dtype == np.float64 else 1e-5)
    np.testing.assert_array_equal(out, got)
    monkeypatch.setattr(numpy_backend, "_scatter_kernel", lambda dtype: None)
    sorted_sums = numpy_backend._scatter_add_rows(xp, rows, indices, num_rows)
    assert np.abs(got - exact).max() <= np.abs(sorted_sums - exact).max()
