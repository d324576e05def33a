"""The CuPy backend's convolutions (``gradflow.backends.im2col_conv``: im2col into kept
buffers plus one matrix product each), run here on NumPy, the same functions with
NumPy's ``empty`` and ``matmul``: forward pass and both gradients against the
reference convolution, every kernel size, stride and padding; and the same buffers
on every call, as a captured CUDA graph needs."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np
import pytest

from gradflow.backends.im2col_conv import conv_lowerings
from gradflow.ops.registry import REGISTRY


def _matmul(a, b, out, transpose_a, transpose_b):
    return np.matmul(a.T if transpose_a else a, b.T if transpose_b else b, out=out)


LOWERINGS = conv_lowerings(np.empty, _matmul)
CASES = [  # batch, size, kernel, in, out, stride, padding
    (2, 7, 1, 3, 4, 1, "SAME"), (2, 8, 3, 1, 5, 1, "SAME"), (3, 9, 3, 4, 2, 2, "SAME"),
    (1, 10, 5, 2, 3, 1, "VALID"), (2, 11, 5, 3, 4, 2, "VALID"), (2, 12, 7, 3, 2, 2, "SAME"),
    (1, 6, 3, 2, 2, 3, "VALID"), (0, 5, 3, 2, 2, 1, "SAME"),
]


def _reference(op, *args, strides, padding):
    return REGISTRY[op].impl(xp, *args, strides=strides, padding=padding)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_im2col_convolutions_match_the_reference(case):
    n, size, k, c, co, stride, padding = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, size, size, c))
    w = rng.standard_normal((k, k, c, co))
    strides = (stride, stride)
    want = _reference("conv2d", x, w, strides=strides, padding=padding)
    g = rng.standard_normal(want.shape)
    forward = LOWERINGS["conv2d"](xp, strides=strides, padding=padding)
    filter_grad = LOWERINGS["conv2d_backprop_filter"](xp, strides=strides, padding=padding)
    input_grad = LOWERINGS["conv2d_backprop_input"](xp, strides=strides, padding=padding)
    np.testing.assert_allclose(forward(x, w), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        filter_grad(x, g, w),
        _reference("conv2d_backprop_filter", x, g, w, strides=strides, padding=padding),
        rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(
        input_grad(g, w, x),
        _reference("conv2d_backprop_input", g, w, x, strides=strides, padding=padding),
        rtol=1e-12, atol=1e-11)


def test_each_call_writes_into_out_through_the_same_buffers():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    w = rng.standard_normal((5, 5, 3, 4)).astype(np.float32)
    out = np.empty((2, 9, 9, 4), np.float32)
    seen = []
    calls = []

    def matmul(a, b, into, transpose_a, transpose_b):
        calls.append((a.__array_interface__["data"][0], into.__array_interface__["data"][0]))
        return _matmul(a, b, into, transpose_a, transpose_b)

    forward = conv_lowerings(np.empty, matmul)["conv2d"](xp, strides=(1, 1), padding="SAME")
    for scale in (1.0, 2.0, 3.0):
        assert forward(x * scale, w, out=out) is out
        seen.append(out.copy())
    assert len(set(calls)) == 1  # the same column matrix, into the same output
    np.testing.assert_allclose(seen[2], 3 * seen[0], rtol=1e-5, atol=1e-4)
