"""The printed CUDA kernels and the Philox kernels on a real GPU (skipped without CuPy
and a CUDA device): what tests/test_cuda_kernels.py and tests/test_philox.py prove
through g++ on the host, checked through NVRTC on the device."""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda_kernels import (
    LIBM,
    TIES,
    _mlp,
    _reference,
    assert_same,
    every_op_case,
)

import gradflow as gf
from gradflow.backends.cuda import kernels as cuda_kernels
from gradflow.backends.cuda import philox
from gradflow.backends.kernel_text import program_inputs

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


def _launch(program, kernel, arrays):
    outputs = [program.members[k] for k in program.outputs]
    shape = tuple(program.members[program.outputs[-1]].shape)
    device = [cp.asarray(a) for a in arrays]
    raw = [cp.empty(shape, o.dtype.as_numpy_dtype) for o in outputs]
    fn = cp.RawKernel(kernel.raw_source, kernel.name, options=kernel.options)
    fn((max(1, min(1024, (kernel.size + 255) // 256)),), (256,),
       (np.int64(kernel.size), np.int64(kernel.columns), *device, *raw))
    ew = cp.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation,
                              kernel.name + "_ew", preamble=kernel.preamble,
                              options=kernel.options)
    shaped = [d.reshape(tuple(i.shape)) for d, i in
              zip(device, program_inputs(program))]
    made = ew(*shaped)
    made = made if isinstance(made, tuple) else (made,)
    return [[cp.asnumpy(r) for r in raw], [cp.asnumpy(m) for m in made]]


@pytest.mark.parametrize("dtype", [gf.float16, gf.float32, gf.float64])
def test_every_scalar_op_on_the_device(dtype):
    program, arrays, want, kernel = every_op_case(dtype)
    for got in _launch(program, kernel, arrays):
        for k, member in enumerate(program.members):
            name = member.opdef.name
            if name in TIES:
                zero = (got[k] == 0) & (want[k] == 0)
                got[k][zero] = want[k][zero]
            assert_same(got[k], want[k], (2 if dtype == gf.float16 else 8) if name in LIBM
                        else 0, f"{name} {dtype.name}", 1.0 if name == "sigmoid" else 0.0)


def test_mlp_programs_on_the_device():
    rng = np.random.default_rng(1)
    with gf.Graph().as_default():
        for node in _mlp(gf.float32, batch=256):
            program = node.attrs["program"]
            kernel = cuda_kernels.print_kernel(program, tuple(node.shape))
            arrays = [rng.standard_normal(tuple(i.shape)).astype(i.dtype.as_numpy_dtype)
                      if not i.dtype.is_bool else rng.random(tuple(i.shape)) < 0.5
                      for i in program_inputs(program)]
            with np.errstate(all="ignore"):
                want = _reference(program, arrays)
            for got in _launch(program, kernel, arrays):
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_philox_on_the_device_advances_inside_a_captured_graph():
    seed, n = 1234, 10_000
    module = cp.RawModule(code=philox.CUDA_SOURCE)
    kernel = module.get_function("gf_philox_uniform_f32")
    state = cp.zeros(2, cp.uint64)
    out = cp.empty(n, cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        kernel((8,), (128,), (np.uint64(seed), state, np.int64(n), out))
        graph = stream.end_capture()
    offset = 0
    for _ in range(3):  # each replay draws the next numbers of the stream
        graph.launch(stream)
        stream.synchronize()
        want, offset = philox.uniform(seed, offset, n)
        assert cp.asnumpy(out).tobytes() == want.tobytes()
        assert list(cp.asnumpy(state)) == [offset, 0]


@pytest.mark.parametrize("shape", [(33, 10), (4, 5, 65), (3, 5000)])
def test_log_softmax_on_the_device_matches_numpy(shape):
    """One row kernel for rows of up to 4,096 values (``cuda_rows``), CuPy's functions
    for longer rows: both give NumPy's numbers, NaN rows included."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 10
    x.reshape(-1, shape[-1])[1, 0] = np.nan
    graph = gf.Graph()
    with graph.as_default():
        p = gf.placeholder(gf.float32, shape)
        y = gf.nn.log_softmax(p)
    results = []
    for backend in ("cupy", "numpy"):
        with gf.Session(graph=graph, backend=backend) as sess:
            results.append(sess.run(y, {p: x}))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6, equal_nan=True)


def test_the_cross_entropy_gradient_is_one_row_kernel_on_the_device():
    """The softmax cross-entropy's gradient (``absorb_row_sums``, ``print_row_kernel``)
    as one kernel in a cupy plan, with NumPy's gradient to float32 rounding."""
    rng = np.random.default_rng(1)
    logits_value = rng.standard_normal((64, 10)).astype(np.float32) * 3
    label_value = rng.integers(0, 10, 64)
    graph = gf.Graph()
    with graph.as_default():
        logits = gf.placeholder(gf.float32, (64, 10))
        labels = gf.placeholder(gf.int64, (64,))
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits * 2.0))
        (grad,) = gf.gradients(loss, [logits])
    feed = {logits: logits_value, labels: label_value}
    results = []
    for backend in ("cupy", "numpy"):
        with gf.Session(graph=graph, backend=backend) as sess:
            if backend == "cupy":
                assert "fused[where, reduce_sum, exp, multiply, subtract" in \
                    sess.describe_plan(grad, feed)
            results.append(sess.run(grad, feed))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", [(3, 12, 5, 3, 4, 1, "SAME"), (2, 11, 3, 2, 5, 2, "VALID")],
                         ids=str)
def test_one_kernel_window_copies_give_the_tap_loops_bits_on_the_device(case, caplog):
    """``cupy_emit.CudaWindows`` (NVRTC-compiled ``cuda_im2col``) in the CuPy
    convolution lowerings: the bits of the tap loop they replace, nothing declined."""
    from gradflow.backends.cupy import emit as cupy_emit
    from gradflow.backends.cupy import im2col_conv
    from gradflow.backends.cupy.emit import CudaWindows

    def matmul(a, b, out, transpose_a, transpose_b):
        return cp.matmul(a.T if transpose_a else a, b.T if transpose_b else b, out=out)

    n, size, k, c, co, stride, padding = case
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal((n, size, size, c)))
    w = cp.asarray(rng.standard_normal((k, k, c, co)))
    attrs = {"strides": (stride, stride), "padding": padding}
    shape = im2col_conv.conv_lowerings(cp.empty, matmul)["conv2d"](cp, **attrs)(x, w).shape
    g = cp.asarray(rng.standard_normal(shape))
    results = []
    windows = CudaWindows()
    for chosen in (None, windows):
        lowerings = im2col_conv.conv_lowerings(cp.empty, matmul, chosen)
        results.append([lowerings["conv2d"](cp, **attrs)(x, w),
                        lowerings["conv2d_backprop_filter"](cp, **attrs)(x, g, w),
                        lowerings["conv2d_backprop_input"](cp, **attrs)(g, w, x)])
    made = [k for key, k in cupy_emit._WINDOW_KERNELS.made.items() if key[0] == "float64"]
    assert made and None not in made, caplog.text
    for a, b in zip(*results):
        np.testing.assert_array_equal(cp.asnumpy(a), cp.asnumpy(b))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_lstm_step_kernels_give_the_reference_numbers_on_the_device(dtype):
    """``cupy_rnn.lower_lstm_step``/``lower_lstm_step_grad`` (NVRTC-compiled
    ``cuda_lstm``) against the ops' Array API functions on CuPy."""
    from array_api_compat import cupy as cxp

    from gradflow.backends.cupy import rnn as cupy_rnn
    from gradflow.prim import rnn as prim_rnn

    rng = np.random.default_rng(3)
    batch, units = 33, 20
    x, y = (cp.asarray(rng.standard_normal((batch, 4 * units)).astype(dtype)) for _ in "xy")
    row = cp.asarray(rng.standard_normal(4 * units).astype(dtype))
    c_prev, dh, dc_next = (cp.asarray(rng.standard_normal((batch, units)).astype(dtype))
                           for _ in range(3))
    assert cupy_rnn._STEP_KERNELS.get(np.dtype(dtype)) is not None
    tol = 2e-6 if dtype == "float32" else 1e-13
    got = cupy_rnn.lower_lstm_step(cxp, 1.0)(x, y, row, c_prev)
    want = prim_rnn._lstm_step_impl(cxp, x, y, row, c_prev, forget_bias=1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(w), rtol=tol, atol=tol)
    a, c, _ = got
    got = cupy_rnn.lower_lstm_step_grad(cxp)(dh, dc_next, a, c, c_prev)
    want = prim_rnn._lstm_step_grad_impl(cxp, dh, dc_next, a, c, c_prev)
    for g, w in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(w), rtol=tol, atol=tol)


@pytest.mark.parametrize("tiles", [((32, 8, 4), (32, 8, 4, 4)), ((32, 4, 1), (32, 4, 2, 8)),
                                   ((32, 16, 2), (32, 8, 1, 1)), ((32, 8, 8), (32, 2, 3, 5)),
                                   ((16, 4, 3), (16, 2, 4, 2))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch, units, inner", [(33, 20, 70), (32, 128, 128), (5, 3, 300)])
def test_the_recurrent_lstm_kernels_give_the_reference_numbers_on_the_device(
        tiles, dtype, batch, units, inner, monkeypatch):
    """``cupy_rnn.lower_lstm_step_rec``/``_grad`` (NVRTC-compiled
    ``cuda_lstm.recurrent_sources``: lanes, warps splitting the inner dimension, rows and
    units per block, dividing the sizes or not) against the ops' Array API functions."""
    from array_api_compat import cupy as cxp

    from gradflow.backends.cuda import lstm as cuda_lstm
    from gradflow.backends.cupy import rnn as cupy_rnn
    from gradflow.prim import rnn as prim_rnn

    monkeypatch.setattr(cuda_lstm, "STEP_TILE", tiles[0])
    monkeypatch.setattr(cuda_lstm, "GRAD_TILE", tiles[1])
    rng = np.random.default_rng(batch + units)

    def arr(*shape, scale=1.0):
        return cp.asarray((rng.standard_normal(shape) * scale).astype(dtype))

    x, h_prev, row = arr(batch, 4 * units), arr(batch, inner), arr(4 * units)
    w, c_prev = arr(inner, 4 * units, scale=inner ** -0.5), arr(batch, units)
    tol = 3e-5 if dtype == "float32" else 1e-12
    got = cupy_rnn.lower_lstm_step_rec(cxp, 1.0)(x, h_prev, w, row, c_prev)
    assert cupy_rnn._rec_kernels(np.dtype(dtype)) is not None
    want = prim_rnn._lstm_step_rec_impl(cxp, x, h_prev, w, row, c_prev, forget_bias=1.0)
    for g, ref in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(ref), rtol=tol, atol=tol)
    a, c, _ = got
    w_sq, dy, dc_next = arr(units, 4 * units, scale=units ** -0.5), arr(batch, units), \
        arr(batch, units)
    dz_next = arr(batch, 4 * units)
    got = cupy_rnn.lower_lstm_step_rec_grad(cxp)(dy, dz_next, w_sq, dc_next, a, c, c_prev)
    want = prim_rnn._lstm_step_rec_grad_impl(cxp, dy, dz_next, w_sq, dc_next, a, c, c_prev)
    for g, ref in zip(got, want):
        np.testing.assert_allclose(cp.asnumpy(g), cp.asnumpy(ref), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_max_pool_kernels_give_the_references_bits_on_the_device(dtype):
    """``cupy_emit.lower_max_pool`` and its gradients (NVRTC-compiled ``cuda_pool``)
    against the ops' Array API functions on CuPy, ties and NaN included."""
    from array_api_compat import cupy as cxp

    from gradflow.backends.cupy import emit as cupy_emit
    from gradflow.prim.registry import REGISTRY

    rng = np.random.default_rng(4)
    host = np.round(rng.standard_normal((3, 9, 9, 5)) * 2).astype(dtype)
    host[0, 1, 1, 0] = np.nan
    x = cp.asarray(host)
    for attrs in ({"ksize": (2, 2), "strides": (2, 2), "padding": "SAME"},
                  {"ksize": (3, 3), "strides": (2, 2), "padding": "VALID"},
                  {"ksize": (3, 3), "strides": (3, 3), "padding": "VALID"}):  # tiled
        y = cupy_emit.lower_max_pool(cxp, **attrs)(x)
        np.testing.assert_array_equal(cp.asnumpy(y), cp.asnumpy(
            REGISTRY["max_pool"].impl(cxp, x, **attrs)))
        g = cp.asarray(rng.standard_normal(y.shape).astype(dtype))
        for op in ("max_pool_grad", "max_pool_relu_grad"):
            got = getattr(cupy_emit, f"lower_{op}")(cxp, **attrs)(g, x)
            np.testing.assert_array_equal(cp.asnumpy(got), cp.asnumpy(
                REGISTRY[op].impl(cxp, g, x, **attrs)))
    made = [k for key, k in cupy_emit._POOL_KERNELS.made.items() if key[0] == dtype]
    assert len(made) >= 3 and None not in made  # one compiled text per geometry


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bias_gradient_column_sums_match_numpy_on_the_device(dtype):
    """``cupy_emit.lower_unbroadcast`` (NVRTC-compiled ``cuda_columns``) against NumPy's
    float64 sum, with the same bits on every call."""
    from array_api_compat import cupy as cxp

    from gradflow.backends.cupy import emit as cupy_emit

    rng = np.random.default_rng(5)
    host = rng.standard_normal((64, 28, 28, 32)).astype(dtype)
    g, x = cp.asarray(host), cp.empty((32,), dtype)
    assert cupy_emit._COLUMN_KERNELS.get(np.dtype(dtype)) is not None
    lower = cupy_emit.lower_unbroadcast(cxp)
    got = lower(g, x)
    tol = 1e-4 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(cp.asnumpy(got), host.astype(np.float64).sum((0, 1, 2)),
                               rtol=tol, atol=tol)
    np.testing.assert_array_equal(cp.asnumpy(lower(g, x)), cp.asnumpy(got))
