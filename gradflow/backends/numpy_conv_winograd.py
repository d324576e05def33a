"""Winograd F(2x2, 3x3) convolutions for the NumPy backend (where numba is installed).

A 3x3 stride-1 convolution computes each 2x2 block of outputs from the 4x4
input tile under it with 16 products per channel pair instead of 36: the
tiles and the filter go through small fixed linear maps (B^T d B, G w G^T),
each of the 16 entries is one matrix product over the channels, and A^T m A
maps the products back to 2x2 outputs. Its two adjoints have the same shape:
the input gradient is a convolution of the output gradient with the filter
rotated 180 degrees, and the filter gradient is the sum over tiles of the
input tiles' transform times the output gradient's transform (A y A^T),
mapped back by G^T. The matrix products are 2.25 times smaller than im2col's;
the tile transforms are compiled loops (``numpy_conv_numba``).

The sums are those of the direct convolution, regrouped: results differ from
im2col's by rounding only (a few units in the last place of float32).
"""

from __future__ import annotations

import numpy as np

# G of F(2x2, 3x3): U = G w G^T maps a 3x3 filter to its 4x4 transform
_G = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])
# Bytes of transformed tiles (input and product, or input and output gradient) per
# block of images. Measured on the MNIST CNN's second layer (2 cores, 1 MB of L2
# each): 6 MB blocks were 10% faster on a quiet machine, and twice as slow while
# other work shared the L3 cache; 2 MB blocks stay fast in both.
BLOCK_BYTES = 2 << 20
# Fewer channels than this (the first layer of an image model) make products too
# thin to gain from being smaller: im2col serves them.
MIN_CHANNELS = 16


def suits(geo, c, co):
    """Whether Winograd serves this 3x3 stride-1 convolution of ``c`` to ``co`` channels."""
    return min(c, co) >= MIN_CHANNELS and geo.oh >= 2 and geo.ow >= 2


def _kernels():
    from gradflow.backends import numpy_conv_numba

    return numpy_conv_numba


def _transform_filter(w, scratch):
    """(16, C, Co): G w G^T of the HWIO filter ``w``, per channel pair, in a scratch
    buffer (an einsum without intermediates: nothing allocated per call)."""
    c, co = w.shape[2], w.shape[3]
    u = scratch("filter", 16 * c * co, w.dtype).reshape(4, 4, c, co)
    g = _G_BY_DTYPE.setdefault(w.dtype, _G.astype(w.dtype))
    np.einsum("ai,ijcd,bj->abcd", g, w, g, out=u)
    return u.reshape(16, c, co)


_G_BY_DTYPE = {}


class _Tiles:
    """The 2x2 output tiles of a 3x3 convolution of ``n`` images to ``out_hw`` outputs."""

    def __init__(self, n, out_hw):
        self.n = n
        self.th, self.tw = -(-out_hw[0] // 2), -(-out_hw[1] // 2)
        self.per_image = self.th * self.tw

    def blocks(self, channels, itemsize):
        """``(first, stop)`` image ranges whose transformed tiles (16 per tile and
        channel of ``channels``) take at most ``BLOCK_BYTES``."""
        step = max(1, BLOCK_BYTES // (16 * self.per_image * channels * itemsize))
        return [(i, min(i + step, self.n)) for i in range(0, self.n, step)]


def _convolve(x, u, top, left, out, scratch):
    """``out`` = the 3x3 stride-1 convolution of ``x`` padded by ``top``/``left`` with
    the transformed filter ``u`` (16, C, Co)."""
    kernels = _kernels()
    c, co = u.shape[1:]
    tiles = _Tiles(x.shape[0], out.shape[1:3])
    for first, stop in tiles.blocks(c + co, x.dtype.itemsize):
        count = (stop - first) * tiles.per_image
        v = scratch("columns", 16 * count * c, x.dtype).reshape(16, count, c)
        m = scratch("products", 16 * count * co, x.dtype).reshape(16, count, co)
        kernels.winograd_input(x, v, first, tiles.th, tiles.tw, top, left)
        np.matmul(v, u, out=m)
        kernels.winograd_output(m, out, first, tiles.th, tiles.tw)
    return out


def forward(x, w, geo, out, scratch):
    """``conv2d`` of ``x`` and the 3x3 filter ``w`` (stride 1) into ``out``."""
    return _convolve(np.ascontiguousarray(x), _transform_filter(w, scratch), geo.pt, geo.pl,
                     out, scratch)


def backprop_input(g, w, geo, out, scratch):
    """The gradient in the input: ``g`` convolved with ``w`` rotated 180 degrees, its
    channel axes swapped, padded so that every output reads its whole window."""
    rotated = w[::-1, ::-1].transpose(0, 1, 3, 2)
    return _convolve(np.ascontiguousarray(g), _transform_filter(rotated, scratch), 2 - geo.pt,
                     2 - geo.pl, out, scratch)


def backprop_filter(x, g, geo, out, scratch):
    """The gradient in the filter: G^T (sum over tiles of V^T M) G, where V are the input
    tiles' transforms and M the output gradient's (A y A^T)."""
    kernels = _kernels()
    c, co = x.shape[3], g.shape[3]
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    tiles = _Tiles(x.shape[0], g.shape[1:3])
    # (16, Co, C): M^T V, which OpenBLAS runs faster than V^T M
    total = scratch("total", 16 * c * co, x.dtype).reshape(16, co, c)
    part = scratch("part", 16 * c * co, x.dtype).reshape(16, co, c)
    total[...] = 0
    for first, stop in tiles.blocks(c + co, x.dtype.itemsize):
        count = (stop - first) * tiles.per_image
        v = scratch("columns", 16 * count * c, x.dtype).reshape(16, count, c)
        m = scratch("products", 16 * count * co, x.dtype).reshape(16, count, co)
        kernels.winograd_input(x, v, first, tiles.th, tiles.tw, geo.pt, geo.pl)
        kernels.winograd_grad_output(g, m, first, tiles.th, tiles.tw)
        np.matmul(m.transpose(0, 2, 1), v, out=part)
        total += part
    gt = _G_BY_DTYPE.setdefault(x.dtype, _G.astype(x.dtype)).T
    # G^T over a, then over b, as matrix products into scratch (an einsum of the three
    # buffers its reduction); then (3, 3, Co, C) -> HWIO
    half = scratch("columns", 12 * co * c, x.dtype).reshape(3, 4, co * c)
    np.matmul(gt, total.reshape(4, 4 * co * c), out=half.reshape(3, 4 * co * c))
    dw = part.reshape(-1)[:9 * co * c].reshape(3, 3, co * c)
    np.matmul(gt, half, out=dw)
    np.copyto(out, dw.reshape(3, 3, co, c).transpose(0, 1, 3, 2))
    return out
