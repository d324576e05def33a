"""The NumPy forms of the window ops (``windows``) as NumPy calls on strided views.

They give the results of the compiled loops (``conv_numba``) where numba is not
there, or is off (``GRADFLOW_NUMBA=0``), or for dtypes it is not compiled for:
col2im (the adjoint of im2col), max pooling and its gradient, average pooling and
its gradient. Each takes the op's ``windows._Geometry`` and writes into ``out``,
the array its caller gives (the plan's buffer, or a new one).

Example::

    geo = windows._Geometry(x.shape, (2, 2), (2, 2), "VALID")
    strided.max_pool(x, geo, np.empty((geo.n, geo.oh, geo.ow, x.shape[3]), x.dtype))
"""

from __future__ import annotations

import numpy as np

# -- col2im -------------------------------------------------------------------------------


def col2im(cells, out, geo):
    """``out`` (images, H, W, C) = the rows of ``cells`` (images * OH * OW, kh * kw * C)
    added onto the pixels they were read from (the adjoint of im2col)."""
    (kh, kw), (sh, sw), (oh, ow) = geo.ksize, geo.strides, (geo.oh, geo.ow)
    images, c = out.shape[0], out.shape[3]
    cells = cells.reshape(images, oh, ow, kh, kw, c)
    target = geo.padded_target(out)
    disjoint = kh <= sh and kw <= sw  # no pixel in two windows: assign, don't add
    if (kh, kw) != (sh, sw) or (oh * sh, ow * sw) != target.shape[1:3]:
        target[...] = 0  # some pixels are in no window, or in several
    for i in range(kh):
        for j in range(kw):
            dst = target[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
            if disjoint:
                dst[...] = cells[:, :, :, i, j]
            else:
                dst += cells[:, :, :, i, j]
    geo.crop_into(target, out)


def col2im_planes(planes, out, geo):
    """As ``col2im``, from the transposed layout (kh * kw * C, images * OH * OW)."""
    (kh, kw), (sh, sw), (oh, ow) = geo.ksize, geo.strides, (geo.oh, geo.ow)
    target = geo.padded_target(out)
    target[...] = 0
    planes = planes.reshape(kh, kw, out.shape[3], out.shape[0], oh, ow)
    for i in range(kh):
        for j in range(kw):
            dst = target[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
            for ch in range(out.shape[3]):
                dst[..., ch] += planes[i, j, ch]
    geo.crop_into(target, out)


# -- max pooling --------------------------------------------------------------------------


def pool_cells(x, geo, value=-np.inf):
    """The ``kh * kw`` cells of every window as strided views (N, OH, OW, C), row-major,
    of ``x`` padded with ``value`` (-inf never wins a window that holds a real cell)."""
    x = geo.pad_input(x, value)
    (kh, kw), (sh, sw), (oh, ow) = geo.ksize, geo.strides, (geo.oh, geo.ow)
    return [x[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
            for i in range(kh) for j in range(kw)]


def maximum(cells, out):
    """``out`` = the elementwise maximum of the arrays ``cells`` (NaN wins)."""
    if len(cells) == 1:
        np.copyto(out, cells[0])
        return out
    np.maximum(cells[0], cells[1], out=out)
    for cell in cells[2:]:
        np.maximum(out, cell, out=out)
    return out


def max_pool(x, geo, out):
    """``out`` = the max over each window of NHWC ``x``; as ``np.maximum``, a NaN wins."""
    return maximum(pool_cells(x, geo), out)


def max_pool_grad(g, x, geo, out):
    """``out`` = the gradient of ``max_pool``: ``g`` of each window at its first maximum
    (row-major), a padding cell never winning."""
    cells = pool_cells(x, geo)
    top = maximum(cells, np.empty(cells[0].shape, x.dtype))
    (kh, kw), (sh, sw), (oh, ow) = geo.ksize, geo.strides, (geo.oh, geo.ow)
    n, h, w, c = x.shape
    target = out
    if geo.padded:
        target = np.empty((n, h + sum(geo.pad[0]), w + sum(geo.pad[1]), c), out.dtype)
    disjoint = kh <= sh and kw <= sw  # each pixel in one window at most: assign
    if (kh, kw) != (sh, sw) or (oh * sh, ow * sw) != target.shape[1:3]:
        target[...] = 0  # some pixels are in no window, or in several
    taken = np.empty(top.shape, bool)
    hit = np.empty(top.shape, bool)
    share = None if disjoint else np.empty(top.shape, out.dtype)
    for k, cell in enumerate(cells):
        np.equal(cell, top, out=hit)
        if k:
            np.greater(hit, taken, out=hit)  # a maximum, and the window's first
        if k == 0:
            np.copyto(taken, hit)
        elif k + 1 < len(cells):
            np.logical_or(taken, hit, out=taken)
        i, j = divmod(k, kw)
        dst = target[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
        if disjoint:
            np.multiply(g, hit, out=dst)
        else:
            dst += np.multiply(g, hit, out=share)
    geo.crop_into(target, out)
    return out


# -- average pooling ----------------------------------------------------------------------


def avg_pool(x, geo, counts, out):
    """``out`` = the sum over the real cells of each window of ``x`` over ``counts``, the
    number of real cells of each window."""
    cells = pool_cells(x, geo, 0.0)
    np.copyto(out, cells[0])
    for cell in cells[1:]:
        np.add(out, cell, out=out)
    np.divide(out, counts, out=out)
    return out


def avg_pool_grad(share, geo, out):
    """``out`` = the gradient of ``avg_pool``: ``share`` (each window's gradient over its
    count) added onto every cell of its window."""
    (kh, kw), (sh, sw), (oh, ow) = geo.ksize, geo.strides, (geo.oh, geo.ow)
    target = geo.padded_target(out)
    target[...] = 0
    for i in range(kh):
        for j in range(kw):
            target[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += share
    geo.crop_into(target, out)
    return out
