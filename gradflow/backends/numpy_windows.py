"""NumPy fast paths for convolution (lowerings of the ops in ``conv_ops``).

The Array API version stacks ``kh * kw`` slices into a new array; here the
windows are a strided view (``sliding_window_view``), so im2col is one copy in
the filter's row layout, and the adjoint adds in place. Results match the
Array API versions (the tests compare both). Pooling needs no fast path: the
Array API version already works on strided slices without copies.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.ops.conv_ops import window_geometry


def _windows(x, ksize, strides, padding, value=0.0):
    """A view (N, OH, OW, C, kh, kw) of the windows of ``x``, padded with ``value``."""
    oh, ow, ph, pw = window_geometry(x.shape, ksize, strides, padding)
    if any(ph) or any(pw):
        x = np.pad(x, ((0, 0), ph, pw, (0, 0)), constant_values=value)
    view = sliding_window_view(x, ksize, axis=(1, 2))
    return view[:, :(oh - 1) * strides[0] + 1:strides[0], :(ow - 1) * strides[1] + 1:strides[1]]


def _im2col(x, ksize, strides, padding):
    """The windows as a matrix (N * OH * OW, kh * kw * C), the row layout of an HWIO filter."""
    view = _windows(x, ksize, strides, padding)
    n, oh, ow, c, kh, kw = view.shape
    return np.ascontiguousarray(view.transpose(0, 1, 2, 4, 5, 3)).reshape(n * oh * ow, kh * kw * c)


def _col2im(cells, like_shape, ksize, strides, padding):
    """Add ``cells`` (N, OH, OW, kh, kw, C) back onto the pixels they came from."""
    (kh, kw), (sh, sw) = ksize, strides
    oh, ow, ph, pw = window_geometry(like_shape, ksize, strides, padding)
    n, h, w, c = like_shape
    out = np.zeros((n, h + sum(ph), w + sum(pw), c), dtype=cells.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += cells[:, :, :, i, j]
    return out[:, ph[0]:ph[0] + h, pw[0]:pw[0] + w]


def conv2d(xp, strides, padding):
    def run(x, w):
        kh, kw, c, co = w.shape
        cols = _im2col(x, (kh, kw), strides, padding)
        oh, ow = window_geometry(x.shape, (kh, kw), strides, padding)[:2]
        return (cols @ w.reshape(kh * kw * c, co)).reshape(x.shape[0], oh, ow, co)

    return run


def conv2d_backprop_input(xp, strides, padding):
    def run(g, w, x_like):
        kh, kw, c, co = w.shape
        n, oh, ow = g.shape[:3]
        cells = g.reshape(n * oh * ow, co) @ w.reshape(kh * kw * c, co).T
        return _col2im(cells.reshape(n, oh, ow, kh, kw, c), x_like.shape, (kh, kw), strides,
                       padding)

    return run


def conv2d_backprop_filter(xp, strides, padding):
    def run(x, g, w_like):
        kh, kw, c, co = w_like.shape
        cols = _im2col(x, (kh, kw), strides, padding)
        return (cols.T @ g.reshape(-1, co)).reshape(kh, kw, c, co)

    return run


LOWERINGS = {
    "conv2d": conv2d,
    "conv2d_backprop_input": conv2d_backprop_input,
    "conv2d_backprop_filter": conv2d_backprop_filter,
}
