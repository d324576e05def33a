"""A differential fuzzer over convolution, pooling and matrix-product geometry: every
float32 pass the NumPy backend lowers (oneDNN, Winograd, numba's kernels, im2col and
OpenBLAS, whichever it picks for the geometry) against a float64 reference written
here with plain ``einsum`` and slices, which no instruction-set dispatch touches.

``tests/test_isa_matrix.py`` runs this file again under each instruction set those
libraries dispatch to (oneDNN's ``ONEDNN_MAX_CPU_ISA``, numba's ``NUMBA_CPU_NAME``,
OpenBLAS's ``OPENBLAS_CORETYPE``). ``GRADFLOW_ISA_FUZZ`` sets the number of
geometries of each kind (``nox -s isa_fuzz`` runs 2,000)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from gradflow.backends.numpy import matmul as numpy_matmul
from gradflow.backends.numpy import windows as numpy_windows
from gradflow.prim.conv import window_geometry

COUNT = int(os.environ.get("GRADFLOW_ISA_FUZZ", "60"))
TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def _geometry(rng):
    """A random convolution: batch 1 and odd batches, 1x1 to 7x7 windows, strides 1-3,
    SAME/VALID, few and many channels."""
    n = int(rng.choice([1, 1, 2, 3, 5, 8]))
    kh, kw = (int(k) for k in rng.integers(1, 8, 2))
    if rng.random() < 0.4:
        kw = kh
    if rng.random() < 0.25:  # pointwise, as in ResNets' shortcuts and MobileNets
        kh = kw = 1
    sh, sw = (int(s) for s in rng.integers(1, 4, 2))
    padding = str(rng.choice(["SAME", "VALID"]))
    h, w = int(rng.integers(kh, kh + 14)), int(rng.integers(kw, kw + 14))
    c, co = (int(rng.choice([1, 2, 3, 4, 5, 8, 16, 17, 32, 64])) for _ in range(2))
    return (n, h, w, c), (kh, kw), (sh, sw), padding, co


def _cells(x, ksize, strides, padding, value):
    """The ``kh * kw`` strided slices of ``x`` padded with ``value``, row-major, and the
    padded array's shape."""
    (kh, kw), (sh, sw) = ksize, strides
    oh, ow, ph, pw = window_geometry(x.shape, ksize, strides, padding)
    padded = np.pad(x, ((0, 0), ph, pw, (0, 0)), constant_values=value)
    spans = [(i, j, (slice(None), slice(i, i + (oh - 1) * sh + 1, sh),
                     slice(j, j + (ow - 1) * sw + 1, sw)))
             for i in range(kh) for j in range(kw)]
    return padded, spans, (ph, pw)


def _unpad(a, ph, pw):
    return a[:, ph[0]:a.shape[1] - ph[1], pw[0]:a.shape[2] - pw[1]]


def reference_conv(x, w, g, strides, padding):
    """The three passes of an NHWC/HWIO convolution in float64."""
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    padded, spans, (ph, pw) = _cells(x, w.shape[:2], strides, padding, 0.0)
    forward, dw = 0.0, np.empty(w.shape)
    dx = np.zeros(padded.shape)
    for i, j, at in spans:
        forward = forward + np.einsum("nhwc,cd->nhwd", padded[at], w[i, j])
        dw[i, j] = np.einsum("nhwc,nhwd->cd", padded[at], g)
        dx[at] += np.einsum("nhwd,cd->nhwc", g, w[i, j])
    return forward, _unpad(dx, ph, pw), dw


def reference_pools(x, g, ksize, strides, padding):
    """max_pool, its gradient (to the first maximum of each window, as TF1),
    avg_pool (over the window's pixels inside the image) and its gradient."""
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    padded, spans, (ph, pw) = _cells(x64, ksize, strides, padding, -np.inf)
    inside, _, _ = _cells(np.ones_like(x64), ksize, strides, padding, 0.0)
    windows = np.stack([padded[at] for _, _, at in spans], axis=3)
    first = np.argmax(windows, axis=3)
    dmax, davg = np.zeros(padded.shape), np.zeros(padded.shape)
    counts = sum(inside[at] for _, _, at in spans)
    total = sum(np.where(np.isfinite(padded[at]), padded[at], 0.0) for _, _, at in spans)
    for k, (_, _, at) in enumerate(spans):
        dmax[at] += np.where(first == k, g64, 0.0)
        davg[at] += np.where(inside[at] > 0, g64 / counts, 0.0)
    return (windows.max(axis=3), _unpad(dmax, ph, pw), total / counts,
            _unpad(davg, ph, pw))


def _close(got, want, what, depth):
    """``got`` within float32 rounding of ``want``, sums of ``depth`` terms each: a
    wrong result (a missed part, a race) is off by about the largest value."""
    scale = float(np.abs(want).max()) if want.size else 0.0
    tol = 1e-5 * max(scale, 1.0) * np.sqrt(depth)
    assert got.shape == want.shape, what
    error = float(np.abs(got - want).max()) if want.size else 0.0
    assert error <= tol, f"{what}: off by {error:.3g} (largest {scale:.3g})"


def _lowered(name, layout, *args):
    form = name if layout == "NHWC" else f"nchw_{name}"
    return numpy_windows.LOWERINGS[form](np, *args)


@pytest.mark.parametrize("seed", range(COUNT))
def test_the_three_convolution_passes(seed):
    """Each pass in NHWC and NCHW (oneDNN's own layout where it takes it)."""
    rng = np.random.default_rng(seed)
    shape, ksize, strides, padding, co = _geometry(rng)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(ksize + (shape[3], co), dtype=np.float32)
    oh, ow, _, _ = window_geometry(shape, ksize, strides, padding)
    g = rng.standard_normal((shape[0], oh, ow, co), dtype=np.float32)
    want = reference_conv(x, w, g, strides, padding)
    what = f"{shape} {ksize} -> {co} {strides} {padding}"
    nchw = {"NHWC": lambda a: a, "NCHW": lambda a: np.ascontiguousarray(a.transpose(TO_NCHW))}
    back = {"NHWC": lambda a: a, "NCHW": lambda a: a.transpose(TO_NHWC)}
    for layout in ("NHWC", "NCHW"):
        to, fro = nchw[layout], back[layout]
        forward = _lowered("conv2d", layout, strides, padding)(to(x), w)
        grad_in = _lowered("conv2d_backprop_input", layout, strides, padding)(
            to(g), w, np.empty(to(x).shape, np.float32))
        grad_w = _lowered("conv2d_backprop_filter", layout, strides, padding)(
            to(x), to(g), np.empty(w.shape, np.float32))
        depths = (ksize[0] * ksize[1] * shape[3], ksize[0] * ksize[1] * co,
                  shape[0] * oh * ow)
        for name, got, ref, depth in zip(("forward", "input", "filter"),
                                         (fro(forward), fro(grad_in), grad_w), want, depths):
            _close(np.asarray(got, np.float64), ref, f"{name} {layout} {what}", depth)


@pytest.mark.parametrize("seed", range(COUNT))
def test_max_and_average_pooling(seed):
    rng = np.random.default_rng(10_000 + seed)
    shape, ksize, strides, padding, _ = _geometry(rng)
    ksize = tuple(min(k, 4) for k in ksize)
    shape = (shape[0], max(shape[1], ksize[0]), max(shape[2], ksize[1]), shape[3])
    x = rng.standard_normal(shape, dtype=np.float32)
    oh, ow, _, _ = window_geometry(shape, ksize, strides, padding)
    g = rng.standard_normal((shape[0], oh, ow, shape[3]), dtype=np.float32)
    mx, dmax, avg, davg = reference_pools(x, g, ksize, strides, padding)
    what = f"{shape} {ksize} {strides} {padding}"
    pool = {"ksize": ksize, "strides": strides, "padding": padding}
    got = numpy_windows.max_pool_forward(x, **pool)
    np.testing.assert_array_equal(got, mx.astype(np.float32), err_msg=f"max_pool {what}")
    depth = ksize[0] * ksize[1]
    _close(numpy_windows.max_pool_backprop(g, x, **pool), dmax, f"max_pool_grad {what}", depth)
    _close(numpy_windows.avg_pool_forward(x, **pool), avg, f"avg_pool {what}", depth)
    _close(numpy_windows.avg_pool_backprop(g, x.shape, **pool), davg, f"avg_pool_grad {what}",
           depth)


@pytest.mark.parametrize("seed", range(COUNT))
def test_matrix_products_in_every_transposition(seed):
    """Small products (NumPy's) and large ones (oneDNN's, from ``MIN_WORK``), thin and
    long inner dimensions."""
    rng = np.random.default_rng(20_000 + seed)
    m, n = (int(rng.choice([1, 2, 7, 8, 33, 64, 129, 300])) for _ in range(2))
    k = int(rng.choice([1, 3, 64, 784, 1000, 4097, 60_000]))
    ta, tb = (bool(t) for t in rng.integers(0, 2, 2))
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    got = numpy_matmul.lower_matmul(np, ta, tb)(a, b, out=np.empty((m, n), np.float32))
    _close(np.asarray(got, np.float64), want, f"{m} x {k} x {n} ta={ta} tb={tb}", k)


def test_a_strided_pointwise_filter_gradient_as_a_user_wrote_it():
    """Issue 44's case on the default backend: under oneDNN's AVX2 kernels (``nox -s
    isa_matrix``, or ``ONEDNN_MAX_CPU_ISA=AVX2``) its filter gradient was off by 15.5
    where its largest entry is 99.8, and batch 2 corrupted the heap."""
    import gradflow as tf

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 10, 10, 4)).astype(np.float32)
    w = rng.standard_normal((1, 1, 4, 6)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        kernel = tf.Variable(w)
        y = tf.nn.conv2d(tf.constant(x), kernel, [1, 2, 2, 1], "SAME")
        grad, = tf.gradients(tf.reduce_sum(y * y), [kernel])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(grad)
    taken = x.astype(np.float64)[:, ::2, ::2, :]
    want = 2 * np.einsum("nhwc,nhwd->cd", taken, taken @ w[0, 0].astype(np.float64))
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-5, atol=1e-4)
