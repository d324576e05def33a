"""The CuPy backend's LSTM step kernels (``gradflow.backends.cuda.lstm``): their CUDA C
text, compiled with g++ (tests/cuda_host.py) and run as a grid of 3 blocks, gives the
numbers of the ops' Array API functions (``gradflow.prim.rnn``), forward with two and three
terms and backward, float32 and float64."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

from gradflow.backends.cuda import lstm as cuda_lstm
from gradflow.prim import rnn as prim_rnn

pytestmark = needs_gxx
TOLERANCE = {"float32": 2e-6, "float64": 1e-14}  # libm's tanh against NumPy's


def _close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("terms", [2, 3])
@pytest.mark.parametrize("forget_bias", [0.0, 1.0])
def test_the_step_kernel_gives_the_reference_numbers(dtype, terms, forget_bias, tmp_path):
    sources = cuda_lstm.step_sources(dtype)
    source, name = sources[f"step{terms}"]
    lib = build(source, str(tmp_path))
    rng = np.random.default_rng(terms)
    batch, units = 5, 7
    parts = [(rng.standard_normal((batch, 4 * units)) * 3).astype(dtype)
             for _ in range(terms - 1)]
    row = rng.standard_normal(4 * units).astype(dtype)
    c_prev = rng.standard_normal((batch, units)).astype(dtype)
    want = prim_rnn._lstm_step_impl(xp, *parts, row, c_prev, forget_bias=forget_bias)
    got = [np.full((batch, 4 * units), np.nan, dtype), np.full((batch, units), np.nan, dtype),
           np.full((batch, units), np.nan, dtype)]
    launch(lib, name, [*parts, row, c_prev, *got, batch, units,
                       np.dtype(dtype).type(0.5 * forget_bias)], blocks=3)
    for g, w in zip(got, want):
        _close(g, w, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_step_gradient_kernel_gives_the_reference_numbers(dtype, tmp_path):
    source, name = cuda_lstm.step_sources(dtype)["grad"]
    lib = build(source, str(tmp_path))
    rng = np.random.default_rng(7)
    batch, units = 4, 6
    z = rng.standard_normal((batch, 4 * units))
    a = prim_rnn._lstm_gates_impl(np, z, 1.0).astype(dtype)
    c_prev, dh, dc_next = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(3))
    c = prim_rnn._lstm_c_impl(np, a, c_prev)
    want = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)
    got = [np.full(a.shape, np.nan, dtype), np.full(c.shape, np.nan, dtype)]
    launch(lib, name, [dh, dc_next, a, c, c_prev, *got, batch, units], blocks=3)
    for g, w in zip(got, want):
        _close(g, w, dtype)


def test_other_dtypes_have_no_kernels():
    assert cuda_lstm.step_sources("float16") is None


# -- the steps with their recurrent product (lstm_step_rec, lstm_step_rec_grad) --------
# One thread per block on the host, so the text is built with tiles of ones; the inner
# sizes cross the forward kernel's 128-column stages (and end inside one).
ONE, ONE_GRAD = (1, 1, 1), (1, 1, 1, 1)
REC_TOLERANCE = {"float32": 2e-5, "float64": 1e-13}  # the product's order against BLAS's


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch, units, inner", [(3, 5, 5), (4, 7, 37), (2, 20, 270)])
@pytest.mark.parametrize("rows", [1, 3])
def test_the_recurrent_step_kernel_gives_the_reference_numbers(dtype, batch, units, inner,
                                                               rows, tmp_path):
    tile = (1, 1, rows)  # one thread: rows of the batch per block, none past its end
    source, name = cuda_lstm.recurrent_sources(dtype, tile, ONE_GRAD)["step"]
    lib = build(source, str(tmp_path))
    rng = np.random.default_rng(inner)
    x = (rng.standard_normal((batch, 4 * units)) * 2).astype(dtype)
    h_prev = rng.standard_normal((batch, inner)).astype(dtype)
    w = (rng.standard_normal((inner, 4 * units)) / np.sqrt(inner)).astype(dtype)
    row = rng.standard_normal(4 * units).astype(dtype)
    c_prev = rng.standard_normal((batch, units)).astype(dtype)
    want = prim_rnn._lstm_step_rec_impl(xp, x, h_prev, w, row, c_prev, forget_bias=1.0)
    got = [np.full(x.shape, np.nan, dtype), np.full(c_prev.shape, np.nan, dtype),
           np.full(c_prev.shape, np.nan, dtype)]
    launch(lib, name, [x, h_prev, w, row, c_prev, *got, batch, units, inner,
                       np.dtype(dtype).type(0.5), 4 * units],
           blocks=cuda_lstm.step_blocks(batch, units, tile))
    for g, want_part in zip(got, want):
        np.testing.assert_allclose(g, want_part, rtol=REC_TOLERANCE[dtype],
                                   atol=REC_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch, units", [(3, 5), (2, 9), (4, 17)])
@pytest.mark.parametrize("tile", [ONE_GRAD, (1, 1, 2, 3)])
def test_the_recurrent_gradient_kernel_gives_the_reference_numbers(dtype, batch, units, tile,
                                                                   tmp_path):
    source, name = cuda_lstm.recurrent_sources(dtype, ONE, tile)["grad"]
    lib = build(source, str(tmp_path))
    rng = np.random.default_rng(units)
    a = prim_rnn._lstm_gates_impl(np, rng.standard_normal((batch, 4 * units)), 1.0).astype(dtype)
    c_prev, dy, dc_next = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(3))
    c = prim_rnn._lstm_c_impl(np, a, c_prev)
    dz_next = rng.standard_normal((batch, 4 * units)).astype(dtype)
    w = (rng.standard_normal((units, 4 * units)) / np.sqrt(units)).astype(dtype)
    want = prim_rnn._lstm_step_rec_grad_impl(xp, dy, dz_next, w, dc_next, a, c, c_prev)
    got = [np.full(a.shape, np.nan, dtype), np.full(c.shape, np.nan, dtype)]
    launch(lib, name, [dy, dz_next, w, dc_next, a, c, c_prev, *got, batch, units, units],
           blocks=cuda_lstm.grad_blocks(batch, units, tile))
    for g, want_part in zip(got, want):
        np.testing.assert_allclose(g, want_part, rtol=REC_TOLERANCE[dtype],
                                   atol=REC_TOLERANCE[dtype])


def test_the_recurrent_kernels_are_named_by_their_tiles():
    made = cuda_lstm.recurrent_sources("float32", (32, 8, 4), (32, 4, 2, 8))
    assert made["step"][1] == "gf_lstm_rec_step_float32_32x8x4"
    assert made["grad"][1] == "gf_lstm_rec_grad_float32_32x4x2x8"
    assert "#define GF_GTU 2" in made["grad"][0] and "#define GF_TB 4" in made["step"][0]
    assert cuda_lstm.recurrent_sources("float16") is None
    assert cuda_lstm.step_blocks(33, 128, (32, 8, 4)) == 4 * 9
    assert cuda_lstm.grad_blocks(33, 128, (32, 4, 2, 8)) == 64 * 5
    assert cuda_lstm.threads((32, 8, 4)) == 256
    # 8 x 8 x 4 x 32 partial sums: 32 KiB of floats fit, doubles take half the rows
    assert cuda_lstm.step_tile_for("float32", (32, 8, 8)) == (32, 8, 8)
    assert cuda_lstm.step_tile_for("float64", (32, 8, 8)) == (32, 8, 4)
    assert "_32x8x4" in cuda_lstm.recurrent_sources("float64", (32, 8, 8))["step"][1]
