"""Convolutions (NHWC) as im2col into kept buffers plus one matrix product each, written
against any array module whose arrays take slice assignment: the CuPy backend's
convolutions (CuPy 14 has no cuDNN), with their products through the planned nvmath
matmuls of the plan (``cupy_emit``), so that a convolution captures in a CUDA graph.

``conv_lowerings(empty, matmul, windows=None)`` gives the lowerings of ``conv2d`` and its two
gradients: ``empty(shape, dtype)`` makes an array of the module,
``matmul(a, b, out, transpose_a, transpose_b)`` writes the product of two 2-D arrays
into ``out``; ``windows``, where given, builds the column matrix
(``columns(x, cols, geometry)``) and adds the column gradient back onto the pixels
(``pixels(cells, out, geometry)``) in one call each, returning False where it cannot
(the CuPy backend's one-kernel copies, ``gradflow.backends.cuda.im2col``); without
it, or where it declines, each is one strided copy per filter tap. The padded input,
the column matrix and the column gradient are kept on the bound function, one set
per shape: the same addresses on every run. The tests run these very functions on
NumPy against the reference convolution.

Forward: ``cols (N*OH*OW, KH*KW*C) @ w (KH*KW*C, CO)``; filter gradient:
``cols^T @ g``; input gradient: ``g @ w^T`` added back onto the pixels each window
read (col2im), one strided slice per filter tap.
"""

from __future__ import annotations

from gradflow.backends.base import KeptArrays
from gradflow.prim.conv import window_geometry

OPS = ("conv2d", "conv2d_backprop_filter", "conv2d_backprop_input")  # conv_lowerings' keys


class _Geometry:
    def __init__(self, x_shape, ksize, strides, padding):
        self.n, self.h, self.w, self.c = x_shape
        self.kh, self.kw = ksize
        self.sh, self.sw = strides
        self.oh, self.ow, (pt, pb), (pl, pr) = window_geometry(x_shape, ksize, strides, padding)
        self.pt, self.pl = pt, pl
        self.padded_shape = (self.n, self.h + pt + pb, self.w + pl + pr, self.c)
        self.padded = self.padded_shape != tuple(x_shape)
        self.rows = self.n * self.oh * self.ow
        self.k = self.kh * self.kw * self.c

    def tap(self, i, j):
        """The slice of the padded input that filter tap ``(i, j)`` reads."""
        return (slice(None), slice(i, i + (self.oh - 1) * self.sh + 1, self.sh),
                slice(j, j + (self.ow - 1) * self.sw + 1, self.sw), slice(None))

    def sizes(self):
        """``(n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow)``: the window kernels' sizes."""
        return (self.n, self.h, self.w, self.c, self.kh, self.kw, self.sh, self.sw, self.pt,
                self.pl, self.oh, self.ow)

    def interior(self):
        return (slice(None), slice(self.pt, self.pt + self.h),
                slice(self.pl, self.pl + self.w), slice(None))


def geometry(x_shape, ksize, strides, padding):
    """The window geometry of images of ``x_shape`` (NHWC): ``.sizes()`` gives the
    window kernels' sizes (``cuda_im2col``, ``cuda_pool``)."""
    return _Geometry(x_shape, ksize, strides, padding)


def _columns(kept, x, geo, windows):
    """The im2col matrix of ``x`` (kept): rows (n, oy, ox), columns (i, j, c)."""
    if windows is not None:
        cols = kept.get_array("columns", (geo.n, geo.oh, geo.ow, geo.kh, geo.kw, geo.c),
                              x.dtype)
        if windows.columns(x, cols, geo):
            return cols.reshape(geo.rows, geo.k)
    source = x
    if geo.padded:
        source = kept.get_array("padded", geo.padded_shape, x.dtype)
        source[...] = 0
        source[geo.interior()] = x
    cols = kept.get_array("columns", (geo.n, geo.oh, geo.ow, geo.kh, geo.kw, geo.c), x.dtype)
    for i in range(geo.kh):
        for j in range(geo.kw):
            cols[:, :, :, i, j, :] = source[geo.tap(i, j)]
    return cols.reshape(geo.rows, geo.k)


def conv_lowerings(empty, matmul, windows=None):
    """``{op name: lower(xp, strides, padding)}`` for ``conv2d`` and its gradients;
    ``windows`` (optional) copies windows in one call each (see the module doc)."""

    def conv2d(xp, strides, padding):
        kept = KeptArrays(empty)

        def forward(x, w, out=None):
            kh, kw, c, co = w.shape
            geo = _Geometry(tuple(x.shape), (kh, kw), strides, padding)
            if out is None:
                out = empty((geo.n, geo.oh, geo.ow, co), x.dtype)
            if geo.rows and co:
                matmul(_columns(kept, x, geo, windows), w.reshape(geo.k, co),
                       out.reshape(geo.rows, co), False, False)
            return out

        return _writes_out(forward)

    def backprop_filter(xp, strides, padding):
        kept = KeptArrays(empty)

        def filter_grad(x, g, w_like, out=None):
            kh, kw, c, co = w_like.shape
            geo = _Geometry(tuple(x.shape), (kh, kw), strides, padding)
            if out is None:
                out = empty(tuple(w_like.shape), g.dtype)
            if geo.rows == 0:
                out[...] = 0
                return out
            matmul(_columns(kept, x, geo, windows), g.reshape(geo.rows, co),
                   out.reshape(geo.k, co), True, False)
            return out

        return _writes_out(filter_grad)

    def backprop_input(xp, strides, padding):
        kept = KeptArrays(empty)

        def input_grad(g, w, x_like, out=None):
            kh, kw, c, co = w.shape
            geo = _Geometry(tuple(x_like.shape), (kh, kw), strides, padding)
            if out is None:
                out = empty(tuple(x_like.shape), g.dtype)
            if not (geo.rows and co):
                out[...] = 0
                return out
            cells = kept.get_array("cells", (geo.rows, geo.k), g.dtype)
            matmul(g.reshape(geo.rows, co), w.reshape(geo.k, co), cells, False, True)
            if windows is not None and windows.pixels(cells, out, geo):
                return out
            target = kept.get_array("padded", geo.padded_shape, g.dtype) if geo.padded else out
            target[...] = 0
            taps = cells.reshape(geo.n, geo.oh, geo.ow, geo.kh, geo.kw, geo.c)
            for i in range(geo.kh):
                for j in range(geo.kw):
                    target[geo.tap(i, j)] += taps[:, :, :, i, j, :]
            if geo.padded:
                out[...] = target[geo.interior()]
            return out

        return _writes_out(input_grad)

    return dict(zip(OPS, (conv2d, backprop_filter, backprop_input)))


def _writes_out(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn

