"""The CUDA C text of the transformer kernels (gradflow/backends/cuda/transformer.py):
layer norm forward and backward, GELU (tanh form) forward and backward, and the softmax
of rows wider than the one-thread-per-row kernel takes, compiled by g++ through the
host header (tests/cuda_host.py: one thread per block, blocks in turn) and compared
with NumPy written out from the TF1 ops that google-research/bert builds them from."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

from gradflow.backends.cuda import rows as cuda_rows
from gradflow.backends.cuda import transformer as cuda_transformer

pytestmark = needs_gxx
TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}
EPS = 1e-12


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cuda-transformer"))
    built = {}
    for dtype in TOL:
        printed = cuda_transformer.sources(dtype)
        lib = build(next(iter(printed.values()))[0], folder)
        built[dtype] = {kind: (lib, name) for kind, (_, name) in printed.items()}
    return built


def _run(libs, dtype, kind, args, blocks=3):
    lib, name = libs[dtype][kind]
    launch(lib, name, args, blocks=blocks)


def np_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + EPS)
    return (x - mean) * rstd * gamma + beta, mean[:, 0], rstd[:, 0]


def np_layer_norm_grads(dy, x, gamma):
    _, mean, rstd = np_layer_norm(x, gamma, 0)
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * gamma
    dx = rstd[:, None] * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1,
                                                                                  keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _close(got, want, dtype):
    tol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol,
                               atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("cols", [1, 7, 128])
def test_layer_norm_forward_and_backward(libs, dtype, cols):
    rng = np.random.default_rng(cols)
    rows = 5
    x = (rng.normal(size=(rows, cols)) * 3 + 1).astype(dtype)
    gamma, beta = (rng.normal(size=cols).astype(dtype) for _ in range(2))
    stat = np.float32 if dtype == "float16" else dtype
    y = np.full_like(x, np.nan)
    mean, rstd = np.full(rows, np.nan, stat), np.full(rows, np.nan, stat)
    _run(libs, dtype, "layer_norm", [x, gamma, beta, y, mean, rstd, rows, cols, EPS])
    wide = [a.astype(np.float64) for a in (x, gamma, beta)]
    want_y, want_mean, want_rstd = np_layer_norm(*wide)
    _close(y, want_y, dtype)
    _close(mean, want_mean, dtype)
    np.testing.assert_allclose(rstd, want_rstd, rtol=TOL[dtype])
    dy = rng.normal(size=(rows, cols)).astype(dtype)
    dx = np.full_like(x, np.nan)
    _run(libs, dtype, "layer_norm_grad", [dy, x, gamma, mean, rstd, dx, rows, cols])
    dgamma, dbeta = np.full_like(gamma, np.nan), np.full_like(beta, np.nan)
    _run(libs, dtype, "layer_norm_params_grad", [dy, x, mean, rstd, dgamma, dbeta, rows, cols])
    want_dx, want_dgamma, want_dbeta = np_layer_norm_grads(dy.astype(np.float64), wide[0],
                                                           wide[1])
    if cols > 1:  # one column: xhat is 0 and dx is rounding noise
        _close(dx, want_dx, dtype)
    _close(dgamma, want_dgamma, dtype)
    _close(dbeta, want_dbeta, dtype)


@pytest.mark.parametrize("dtype", list(TOL))
def test_gelu_forward_and_backward_match_the_tanh_form_and_its_derivative(libs, dtype):
    x = np.concatenate([np.linspace(-6, 6, 61), [0.0, -0.0, 1e-4, 10.0, -10.0]]).astype(dtype)
    y, dx = np.full_like(x, np.nan), np.full_like(x, np.nan)
    _run(libs, dtype, "gelu", [x, y, x.size])
    wide = x.astype(np.float64)
    _close(y, np_gelu(wide), dtype)
    dy = np.ones_like(x)
    _run(libs, dtype, "gelu_grad", [dy, x, dx, x.size])
    h = 1e-6
    slope = (np_gelu(wide + h) - np_gelu(wide - h)) / (2 * h)
    np.testing.assert_allclose(dx.astype(np.float64), slope,
                               atol=max(TOL[dtype], 1e-7) * 10)


@pytest.mark.parametrize("dtype", list(TOL))
def test_the_wide_softmax_matches_numpy_in_place_too(libs, dtype):
    cols = cuda_rows.MAX_COLUMNS + 3
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(4, cols)) * 4).astype(dtype)
    x[1, 5] = np.nan
    x[2, :] = -3.0  # equal values: 1 / cols each
    wide = x.astype(np.float64)
    e = np.exp(wide - wide.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    for in_place in (False, True):
        y = x.copy() if in_place else np.full_like(x, 7.0)
        _run(libs, dtype, "softmax_wide", [y if in_place else x, y, 4, cols])
        assert np.isnan(y[1]).all() and not np.isnan(y[[0, 2, 3]]).any()
        _close(y[[0, 2, 3]], want[[0, 2, 3]], dtype)


def test_other_dtypes_have_no_kernels():
    assert cuda_transformer.sources("int32") is None
