"""The CuPy backend's convolutions (``gradflow.backends.cupy.im2col_conv``: im2col into kept
buffers plus one matrix product each), run here on NumPy, the same functions with
NumPy's ``empty`` and ``matmul``: forward pass and both gradients against the
reference convolution, every kernel size, stride and padding; and the same buffers
on every call, as a captured CUDA graph needs."""

from __future__ import annotations

import types

import array_api_compat.numpy as xp
import numpy as np
import pytest

from gradflow.backends.cuda import im2col as cuda_im2col
from gradflow.backends.cupy.im2col_conv import conv_lowerings
from gradflow.prim.registry import REGISTRY


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


class _HostWindows:
    """``cupy_emit.CudaWindows``'s role on the host: the CUDA C text of
    ``cuda_im2col``, specialized to each geometry, compiled with g++ and run as a grid
    of 3 blocks."""

    def __init__(self, directory):
        self.directory, self.libs = directory, {}
        self.calls = []
        self.width = ""  # the index width: a suffix of cuda_im2col.INDEX_WIDTHS

    def _launch(self, kind, source, result, geo):
        from cuda_host import build_printed, launch

        key = (source.dtype.name, geo.sizes()[1:])
        if key not in self.libs:
            self.libs[key] = build_printed(cuda_im2col.window_sources(*key), self.directory)
        lib, name = self.libs[key][kind + self.width]
        launch(lib, name, [np.ascontiguousarray(source), result, *geo.sizes()], blocks=3)
        self.calls.append(kind)
        return True

    def columns(self, x, cols, geo):
        return self._launch("columns", x, cols, geo)

    def pixels(self, cells, out, geo):
        return self._launch("pixels", cells, out, geo)


@pytest.fixture(scope="module")
def host_windows(tmp_path_factory):
    from cuda_host import GXX

    if GXX is None:
        pytest.skip("g++ is not installed: the CUDA C text is compiled on the host with it")
    return _HostWindows(str(tmp_path_factory.mktemp("im2col")))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_im2col_convolutions_match_the_reference(case):
    _check_case(case, LOWERINGS)


@pytest.mark.parametrize("width", list(cuda_im2col.INDEX_WIDTHS))
@pytest.mark.parametrize("case", CASES, ids=str)
def test_one_kernel_window_copies_match_the_reference(case, host_windows, width):
    """The CuPy backend's one-kernel im2col and col2im (their CUDA C text, run by g++)
    in the lowerings, with 64-bit and 32-bit indices: the reference's numbers, and the
    tap loop's bits."""
    host_windows.calls.clear()
    host_windows.width = width
    _check_case(case, conv_lowerings(np.empty, _matmul, host_windows))
    n = case[0]
    assert sorted(set(host_windows.calls)) == ([] if n == 0 else ["columns", "pixels"])
    rng = np.random.default_rng(5)
    n, size, k, c, co, stride, padding = case
    for dtype in ("float32", "float64"):
        x = rng.standard_normal((n, size, size, c)).astype(dtype)
        w = rng.standard_normal((k, k, c, co)).astype(dtype)
        g = rng.standard_normal(LOWERINGS["conv2d"](xp, strides=(stride, stride),
                                                    padding=padding)(x, w).shape).astype(dtype)
        for lowerings in (LOWERINGS, conv_lowerings(np.empty, _matmul, host_windows)):
            got = [lowerings[op](xp, strides=(stride, stride), padding=padding)(*args)
                   for op, args in (("conv2d", (x, w)), ("conv2d_backprop_filter", (x, g, w)),
                                    ("conv2d_backprop_input", (g, w, x)))]
            if lowerings is LOWERINGS:
                want = got
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def _check_case(case, lowerings):
    n, size, k, c, co, stride, padding = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, size, size, c))
    w = rng.standard_normal((k, k, c, co))
    strides = (stride, stride)
    want = _reference("conv2d", x, w, strides=strides, padding=padding)
    g = rng.standard_normal(want.shape)
    forward = lowerings["conv2d"](xp, strides=strides, padding=padding)
    filter_grad = lowerings["conv2d_backprop_filter"](xp, strides=strides, padding=padding)
    input_grad = lowerings["conv2d_backprop_input"](xp, strides=strides, padding=padding)
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


def test_32_bit_indices_serve_arrays_well_below_2_to_the_31():
    small, large = np.empty(10), types.SimpleNamespace(size=2**31 - 2**20)
    assert cuda_im2col.index_kind(small, small) == "_i32"
    assert cuda_im2col.index_kind(small, large) == ""


def test_a_specialized_window_text_reads_only_the_batch(host_windows):
    """The text is specialized to every size but the batch: one compiled text serves
    images of any batch with that geometry."""
    from gradflow.backends.cupy import im2col_conv

    rng = np.random.default_rng(2)
    host_windows.width = "_i32"
    for n in (1, 3):
        x = rng.standard_normal((n, 6, 6, 2)).astype(np.float32)
        geo = im2col_conv.geometry(x.shape, (3, 3), (1, 1), "SAME")
        cols = np.full((n, geo.oh, geo.ow, 3, 3, 2), 7, np.float32)
        assert host_windows.columns(x, cols, geo)
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        want = np.stack([padded[:, i:i + 6, j:j + 6, :] for i in range(3) for j in range(3)],
                        axis=3).reshape(cols.shape)
        np.testing.assert_array_equal(cols, want)
    assert sum(key[1] == geo.sizes()[1:] for key in host_windows.libs) == 1
    with pytest.raises(ValueError, match="fixed sizes"):
        cuda_im2col.window_sources("float32", geo.sizes())
