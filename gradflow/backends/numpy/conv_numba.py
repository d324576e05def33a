"""Compiled loops for the NumPy convolution and pooling lowerings (``numpy_windows``).

This module imports numba, so it is imported only once ``get_numba()`` has
found it. Every kernel is single-threaded: the matrix products between them
run on OpenBLAS's threads, which keep spinning for a while after each call,
and a second pool of threads fighting them for the cores made the kernels
slower than running alone. Where OpenBLAS and numba share OpenMP's pool
(``openmp.shared()``), the pooling kernels also run on a team (``*_team``: a
share of the images per thread, so the same bits). The im2col copy is not here: NumPy's copy of a
strided view is faster than a compiled loop.

The inner loops run over one channel vector (a 1-D view and a ``range``
index), the form LLVM vectorizes; the same loops over 2-D indices are not.
Results equal the NumPy versions in ``numpy_windows`` (the tests compare
them): the same sums, in an order that differs only in rounding.
"""

from __future__ import annotations

import functools

import numba
import numba.extending
import numpy as np

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")


@_jit
def col2im(cells, out, kh, kw, sh, sw, pt, pl, oh, ow):
    """The adjoint of im2col: ``out`` (images, H, W, C) is the sum of the rows of
    ``cells`` (images * OH * OW, kh * kw * C; columns ordered as an HWIO filter's
    rows) at the pixels they were read from."""
    images, h, w, c = out.shape
    out[...] = 0
    r = 0
    for n in range(images):
        for oy in range(oh):
            for ox in range(ow):
                row = cells[r]
                k = 0
                for i in range(kh):
                    iy = oy * sh + i - pt
                    for j in range(kw):
                        ix = ox * sw + j - pl
                        if 0 <= iy < h and 0 <= ix < w:
                            dst = out[n, iy, ix]
                            src = row[k:k + c]
                            for ch in range(c):
                                dst[ch] += src[ch]
                        k += c
                r += 1


@_jit
def col2im_planes(planes, out, kh, kw, sh, sw, pt, pl, oh, ow):
    """As ``col2im``, from the transposed layout: ``planes`` (kh * kw * C, images * OH *
    OW), a plane of one window cell and channel per row (inputs with few channels)."""
    images, h, w, c = out.shape
    out[...] = 0
    for i in range(kh):
        for j in range(kw):
            for ch in range(c):
                plane = planes[(i * kw + j) * c + ch]
                for n in range(images):
                    for oy in range(oh):
                        iy = oy * sh + i - pt
                        if iy < 0 or iy >= h:
                            continue
                        dst = out[n, iy]
                        src = plane[(n * oh + oy) * ow:(n * oh + oy + 1) * ow]
                        for ox in range(ow):
                            ix = ox * sw + j - pl
                            if 0 <= ix < w:
                                dst[ix, ch] += src[ox]


@_jit
def max_pool(x, out, kh, kw, sh, sw, pt, pl, n0, n1):
    """The max over each window of images ``n0:n1``; as ``np.maximum``, a NaN in a
    window wins."""
    oh, ow = out.shape[1], out.shape[2]
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                _window_max(x, n, oy, ox, out[n, oy, ox], kh, kw, sh, sw, pt, pl)


@numba.njit(inline="always", cache=True, nogil=True, error_model="numpy")
def _window_max(x, n, oy, ox, top, kh, kw, sh, sw, pt, pl):
    """``top`` = the maximum over the window at ``(oy, ox)`` of image ``n``, per channel
    (a NaN wins; padding cells are skipped)."""
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    for ch in range(c):
        top[ch] = -np.inf
    for i in range(kh):
        iy = oy * sh + i - pt
        if iy < 0 or iy >= h:
            continue
        for j in range(kw):
            ix = ox * sw + j - pl
            if ix < 0 or ix >= w:
                continue
            src = x[n, iy, ix]
            for ch in range(c):
                v = src[ch]
                t = top[ch]
                top[ch] = v if v > t or v != v else t


@_jit
def max_pool_grad(g, x, out, kh, kw, sh, sw, pt, pl, positive, n0, n1):
    """``out`` (the shape of ``x``) = the sum over windows of each window's ``g`` at its
    first maximum (row-major; a padding cell, worth -inf, takes its turn and drops
    its share), for images ``n0:n1``; with ``positive``, only where that maximum is
    above zero (a ReLU's gradient after it, ``x`` being the ReLU's output)."""
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = g.shape[1], g.shape[2]
    out[n0:n1] = 0
    top = np.empty(c, x.dtype)
    open_ = np.empty(c, np.uint8)  # 1 until the window's maximum is found
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    open_[ch] = 1
                _window_max(x, n, oy, ox, top, kh, kw, sh, sw, pt, pl)
                grad = g[n, oy, ox]
                for i in range(kh):
                    iy = oy * sh + i - pt
                    for j in range(kw):
                        ix = ox * sw + j - pl
                        if iy < 0 or iy >= h or ix < 0 or ix >= w:
                            for ch in range(c):
                                open_[ch] = 0 if top[ch] == -np.inf else open_[ch]
                            continue
                        src = x[n, iy, ix]
                        dst = out[n, iy, ix]
                        for ch in range(c):
                            if open_[ch] and src[ch] == top[ch] and (not positive
                                                                     or top[ch] > 0):
                                dst[ch] += grad[ch]
                                open_[ch] = 0


@numba.njit(inline="always", cache=True, nogil=True, error_model="numpy")
def _span(o, s, p, k, size):
    """``(first, stop)``: the real cells of a window along one axis."""
    start = o * s - p
    return max(start, 0), min(start + k, size)


@_jit
def avg_pool(x, out, kh, kw, sh, sw, pt, pl, n0, n1):
    """The mean over the real (unpadded) cells of each window, summed row-major, for
    images ``n0:n1``."""
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    for n in range(n0, n1):
        for oy in range(oh):
            y0, y1 = _span(oy, sh, pt, kh, h)
            for ox in range(ow):
                x0, x1 = _span(ox, sw, pl, kw, w)
                dst = out[n, oy, ox]
                for ch in range(c):
                    dst[ch] = 0
                for iy in range(y0, y1):
                    for ix in range(x0, x1):
                        src = x[n, iy, ix]
                        for ch in range(c):
                            dst[ch] += src[ch]
                count = (y1 - y0) * (x1 - x0)
                for ch in range(c):
                    dst[ch] = dst[ch] / count


@_jit
def avg_pool_grad(g, out, kh, kw, sh, sw, pt, pl, n0, n1):
    """``out`` (the input's shape) = each window's ``g`` divided by its count of real
    cells, added onto those cells, for images ``n0:n1``."""
    h, w, c = out.shape[1], out.shape[2], out.shape[3]
    oh, ow = g.shape[1], g.shape[2]
    out[n0:n1] = 0
    for n in range(n0, n1):
        for oy in range(oh):
            y0, y1 = _span(oy, sh, pt, kh, h)
            for ox in range(ow):
                x0, x1 = _span(ox, sw, pl, kw, w)
                count = (y1 - y0) * (x1 - x0)
                src = g[n, oy, ox]
                for iy in range(y0, y1):
                    for ix in range(x0, x1):
                        dst = out[n, iy, ix]
                        for ch in range(c):
                            dst[ch] += src[ch] / count


@_jit
def _max4(a, b, c, d):
    """``np.maximum(np.maximum(np.maximum(a, b), c), d)``: NaN wins."""
    t = b if b > a or b != b else a
    t = c if c > t or c != c else t
    return d if d > t or d != d else t


@_jit
def max_pool_2x2(x, out, n0, n1):
    """``max_pool`` of 2x2 windows at stride 2 without padding, images ``n0:n1``."""
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                a, b = x[n, 2 * oy, 2 * ox], x[n, 2 * oy, 2 * ox + 1]
                p, q = x[n, 2 * oy + 1, 2 * ox], x[n, 2 * oy + 1, 2 * ox + 1]
                top = out[n, oy, ox]
                for ch in range(c):
                    top[ch] = _max4(a[ch], b[ch], p[ch], q[ch])


@_jit
def max_pool_grad_2x2(g, x, out, positive, n0, n1):
    """``max_pool_grad`` of 2x2 windows at stride 2 without padding (``positive`` as
    there), images ``n0:n1``; writes every cell of every window (the rows and columns
    no window covers are left alone)."""
    oh, ow, c = g.shape[1], g.shape[2], g.shape[3]
    first = np.empty(c, np.int8)  # which cell of the window is its first maximum
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                y, z = 2 * oy, 2 * ox
                a, b, p, q = x[n, y, z], x[n, y, z + 1], x[n, y + 1, z], x[n, y + 1, z + 1]
                for ch in range(c):
                    va, vb, vp, vq = a[ch], b[ch], p[ch], q[ch]
                    t = _max4(va, vb, vp, vq)
                    first[ch] = 0 if va == t else 1 if vb == t else 2 if vp == t else \
                        3 if vq == t else 4
                    if positive and not t > 0:
                        first[ch] = 4
                grad = g[n, oy, ox]
                for k, dst in enumerate((out[n, y, z], out[n, y, z + 1], out[n, y + 1, z],
                                         out[n, y + 1, z + 1])):
                    for ch in range(c):
                        dst[ch] = grad[ch] if first[ch] == k else 0


@_jit
def avg_pool_2x2(x, out, n0, n1):
    """``avg_pool`` of 2x2 windows at stride 2 without padding, images ``n0:n1``: the
    sums of ``avg_pool``, in its order."""
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                a, b = x[n, 2 * oy, 2 * ox], x[n, 2 * oy, 2 * ox + 1]
                p, q = x[n, 2 * oy + 1, 2 * ox], x[n, 2 * oy + 1, 2 * ox + 1]
                mean = out[n, oy, ox]
                for ch in range(c):
                    mean[ch] = (a[ch] + b[ch] + p[ch] + q[ch]) / 4


@_jit
def avg_pool_grad_2x2(g, out, n0, n1):
    """``avg_pool_grad`` of 2x2 windows at stride 2 without padding, images ``n0:n1``;
    writes every cell of every window (the rows and columns no window covers are left
    alone)."""
    oh, ow, c = g.shape[1], g.shape[2], g.shape[3]
    for n in range(n0, n1):
        for oy in range(oh):
            for ox in range(ow):
                y, z = 2 * oy, 2 * ox
                da, db = out[n, y, z], out[n, y, z + 1]
                dp, dq = out[n, y + 1, z], out[n, y + 1, z + 1]
                grad = g[n, oy, ox]
                for ch in range(c):
                    v = grad[ch] / 4
                    da[ch] = v
                    db[ch] = v
                    dp[ch] = v
                    dq[ch] = v


# -- the pooling kernels on a team of threads (OpenMP's shared pool: ``numpy_windows``):
# part p of `parts` takes its share of the images; each image is one thread's, so the
# bits are those of one thread.

_team_jit = numba.njit(cache=True, nogil=True, error_model="numpy", parallel=True)


@_team_jit
def max_pool_team(parts, x, out, kh, kw, sh, sw, pt, pl):
    n = x.shape[0]
    for p in numba.prange(parts):
        max_pool(x, out, kh, kw, sh, sw, pt, pl, n * p // parts, n * (p + 1) // parts)


@_team_jit
def max_pool_grad_team(parts, g, x, out, kh, kw, sh, sw, pt, pl, positive):
    n = x.shape[0]
    for p in numba.prange(parts):
        max_pool_grad(g, x, out, kh, kw, sh, sw, pt, pl, positive, n * p // parts,
                      n * (p + 1) // parts)


@_team_jit
def avg_pool_team(parts, x, out, kh, kw, sh, sw, pt, pl):
    n = x.shape[0]
    for p in numba.prange(parts):
        avg_pool(x, out, kh, kw, sh, sw, pt, pl, n * p // parts, n * (p + 1) // parts)


@_team_jit
def avg_pool_grad_team(parts, g, out, kh, kw, sh, sw, pt, pl):
    n = out.shape[0]
    for p in numba.prange(parts):
        avg_pool_grad(g, out, kh, kw, sh, sw, pt, pl, n * p // parts, n * (p + 1) // parts)


@_team_jit
def max_pool_2x2_team(parts, x, out):
    n = x.shape[0]
    for p in numba.prange(parts):
        max_pool_2x2(x, out, n * p // parts, n * (p + 1) // parts)


@_team_jit
def max_pool_grad_2x2_team(parts, g, x, out, positive):
    n = x.shape[0]
    for p in numba.prange(parts):
        max_pool_grad_2x2(g, x, out, positive, n * p // parts, n * (p + 1) // parts)


@_team_jit
def avg_pool_2x2_team(parts, x, out):
    n = x.shape[0]
    for p in numba.prange(parts):
        avg_pool_2x2(x, out, n * p // parts, n * (p + 1) // parts)


@_team_jit
def avg_pool_grad_2x2_team(parts, g, out):
    n = out.shape[0]
    for p in numba.prange(parts):
        avg_pool_grad_2x2(g, out, n * p // parts, n * (p + 1) // parts)


# -- Winograd F(2x2, 3x3) transforms (``numpy_conv_winograd``) ---------------------------
# A tile is 4x4 input pixels of a zero-padded image and the 2x2 outputs they give;
# tiles are numbered image by image, row-major. Index k = 4 * a + b of the 16 arrays
# is the (a, b) entry of a transformed tile. Each transform runs in two stages, first
# along a whole row of tiles at once (long loops), then tile by tile over channels.


@_jit
def winograd_input(x, v, n0, tiles_h, tiles_w, top, left):
    """``v[k, t]`` = (B^T d B)[k] of the input tiles ``d`` of images ``n0 ..`` of NHWC
    ``x`` padded with zeros by ``top`` rows and ``left`` columns (and at the far
    edges as the tiles need)."""
    h, w, c = x.shape[1], x.shape[2], x.shape[3]
    width = 2 * tiles_w + 2
    cols = max(0, min(w, width - left))  # the columns of x that some tile reads
    tile_rows = np.zeros((4, width, c), x.dtype)  # the 4 padded input rows of a tile row
    rows = np.empty((4, width, c), x.dtype)  # B^T over them
    r0, r1, r2, r3 = rows[0].reshape(-1), rows[1].reshape(-1), rows[2].reshape(-1), \
        rows[3].reshape(-1)
    d0, d1, d2, d3 = tile_rows[0].reshape(-1), tile_rows[1].reshape(-1), \
        tile_rows[2].reshape(-1), tile_rows[3].reshape(-1)
    t = 0
    for n in range(n0, n0 + v.shape[1] // (tiles_h * tiles_w)):
        for ty in range(tiles_h):
            for r in range(4):
                iy = 2 * ty + r - top
                dst = tile_rows[r, left:left + cols].reshape(-1)
                if 0 <= iy < h:
                    src = x[n, iy, :cols].reshape(-1)
                    for i in range(dst.size):
                        dst[i] = src[i]
                else:
                    for i in range(dst.size):
                        dst[i] = 0
            for i in range(r0.size):
                r0[i] = d0[i] - d2[i]
            for i in range(r0.size):
                r1[i] = d1[i] + d2[i]
            for i in range(r0.size):
                r2[i] = d2[i] - d1[i]
            for i in range(r0.size):
                r3[i] = d1[i] - d3[i]
            for a in range(4):  # then B over the 4 columns of each tile
                e = rows[a]
                v0, v1, v2, v3 = v[4 * a], v[4 * a + 1], v[4 * a + 2], v[4 * a + 3]
                for tx in range(tiles_w):
                    e0, e1, e2, e3 = e[2 * tx], e[2 * tx + 1], e[2 * tx + 2], e[2 * tx + 3]
                    o = v0[t + tx]
                    for ch in range(c):
                        o[ch] = e0[ch] - e2[ch]
                    o = v1[t + tx]
                    for ch in range(c):
                        o[ch] = e1[ch] + e2[ch]
                    o = v2[t + tx]
                    for ch in range(c):
                        o[ch] = e2[ch] - e1[ch]
                    o = v3[t + tx]
                    for ch in range(c):
                        o[ch] = e1[ch] - e3[ch]
            t += tiles_w


@_jit
def winograd_output(m, out, n0, tiles_h, tiles_w):
    """The 2x2 outputs (A^T m A) of the tiles ``m[:, t]`` into images ``n0 ..`` of
    NHWC ``out``; the parts of edge tiles beyond ``out`` are dropped."""
    oh, ow, co = out.shape[1], out.shape[2], out.shape[3]
    half = np.empty((2, 4, tiles_w * co), m.dtype)  # A^T over the rows of a tile row
    t = 0
    for n in range(n0, n0 + m.shape[1] // (tiles_h * tiles_w)):
        for ty in range(tiles_h):
            for b in range(4):
                m0 = m[b, t:t + tiles_w].reshape(-1)
                m1 = m[4 + b, t:t + tiles_w].reshape(-1)
                m2 = m[8 + b, t:t + tiles_w].reshape(-1)
                m3 = m[12 + b, t:t + tiles_w].reshape(-1)
                s0, s1 = half[0, b], half[1, b]
                for i in range(s0.size):
                    s0[i] = m0[i] + m1[i] + m2[i]
                for i in range(s0.size):
                    s1[i] = m1[i] - m2[i] - m3[i]
            for r in range(min(2, oh - 2 * ty)):  # then A over the columns
                dst = out[n, 2 * ty + r]
                s0, s1, s2, s3 = half[r, 0], half[r, 1], half[r, 2], half[r, 3]
                for tx in range(tiles_w):
                    o = dst[2 * tx]
                    k = tx * co
                    for ch in range(co):
                        o[ch] = s0[k + ch] + s1[k + ch] + s2[k + ch]
                    if 2 * tx + 1 < ow:
                        o = dst[2 * tx + 1]
                        for ch in range(co):
                            o[ch] = s1[k + ch] - s2[k + ch] - s3[k + ch]
            t += tiles_w


@_jit
def winograd_grad_output(g, m, n0, tiles_h, tiles_w):
    """``m[k, t]`` = (A y A^T)[k] of the 2x2 tiles ``y`` of images ``n0 ..`` of NHWC
    ``g`` (0 beyond its edges): the adjoint of ``winograd_output``."""
    oh, ow, co = g.shape[1], g.shape[2], g.shape[3]
    rows = np.zeros((4, 2 * tiles_w, co), g.dtype)  # A over the 2 rows of a tile row
    q0, q1, q2, q3 = rows[0].reshape(-1), rows[1].reshape(-1), rows[2].reshape(-1), \
        rows[3].reshape(-1)
    width = ow * co  # a column past an odd width stays 0
    t = 0
    for n in range(n0, n0 + m.shape[1] // (tiles_h * tiles_w)):
        for ty in range(tiles_h):
            y0 = g[n, 2 * ty].reshape(-1)
            if 2 * ty + 1 < oh:
                y1 = g[n, 2 * ty + 1].reshape(-1)
                for i in range(width):
                    q0[i] = y0[i]
                for i in range(width):
                    q1[i] = y0[i] + y1[i]
                for i in range(width):
                    q2[i] = y0[i] - y1[i]
                for i in range(width):
                    q3[i] = -y1[i]
            else:
                for i in range(width):
                    q0[i] = y0[i]
                for i in range(width):
                    q1[i] = y0[i]
                for i in range(width):
                    q2[i] = y0[i]
                for i in range(width):
                    q3[i] = 0
            for a in range(4):  # then A^T over the columns
                q = rows[a]
                v0, v1, v2, v3 = m[4 * a], m[4 * a + 1], m[4 * a + 2], m[4 * a + 3]
                for tx in range(tiles_w):
                    e0, e1 = q[2 * tx], q[2 * tx + 1]
                    o = v0[t + tx]
                    for ch in range(co):
                        o[ch] = e0[ch]
                    o = v1[t + tx]
                    for ch in range(co):
                        o[ch] = e0[ch] + e1[ch]
                    o = v2[t + tx]
                    for ch in range(co):
                        o[ch] = e0[ch] - e1[ch]
                    o = v3[t + tx]
                    for ch in range(co):
                        o[ch] = -e1[ch]
            t += tiles_w


# -- Winograd blocks on OpenMP's pool (``numpy_conv_winograd.Pooled``) ---------------------
# One block is one call of ``winograd_block``, a C function that an OpenMP team
# (``openmp.run_blocks``: each thread takes the next block not yet taken) calls as
# ``(block, thread, arguments)``. A numba prange over the blocks did the same but took
# numba about 18 s to compile (its parfor passes over this body); a C function of the
# body compiles as any other loop. Block k: images firsts[k] .. (counts[k] tiles). Its
# transforms go to the buffers of the thread that takes it (vbuf / mbuf at thread *
# stride: they stay in its cache), and its product is a oneDNN primitive made for one
# thread, run through dnnl_primitive_execute and dnnl_stream_wait with table[k] =
# (primitive, stream, argument count, arguments, memory of v, memory of m), after
# dnnl_memory_set_data_handle moved those two onto the thread's buffers. Each block runs
# on one thread: the bits of any team. The arguments are one int64 array, ``BLOCK_ARGS``
# names its entries.

BLOCK_ARGS = ("x", "n", "h", "w", "c", "second", "n2", "h2", "w2", "co", "vbuf", "mbuf",
              "vstride", "mstride", "firsts", "counts", "tiles_h", "tiles_w", "top", "left",
              "table", "status", "execute", "wait", "point", "filter")
(_X, _N, _H, _W, _C, _SECOND, _N2, _H2, _W2, _CO, _VBUF, _MBUF, _VSTRIDE, _MSTRIDE,
 _FIRSTS, _COUNTS, _TILES_H, _TILES_W, _TOP, _LEFT, _TABLE, _STATUS, _EXECUTE, _WAIT,
 _POINT, _FILTER) = range(len(BLOCK_ARGS))


def _pointer_intrinsic(item):
    @numba.extending.intrinsic
    def pointer(typingctx, address):
        sig = numba.types.CPointer(item)(numba.types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    return pointer


_f32_at = _pointer_intrinsic(numba.types.float32)
_i64_at = _pointer_intrinsic(numba.types.int64)
_i32_at = _pointer_intrinsic(numba.types.int32)


@numba.extending.intrinsic
def _call(typingctx, address, args):
    """``_call(function address, (int64, ...)) -> int32``: a C function whose arguments
    are pointers, sizes and ints, called through its address (integer and pointer
    arguments pass alike in the C calling conventions numba targets)."""
    from llvmlite import ir

    if not (isinstance(args, numba.types.UniTuple) and args.dtype == numba.types.int64):
        return None
    sig = numba.types.int32(numba.types.int64, args)

    def codegen(context, builder, signature, values):
        fn = ir.FunctionType(ir.IntType(32), [ir.IntType(64)] * len(args))
        items = [builder.extract_value(values[1], i) for i in range(len(args))]
        return builder.call(builder.inttoptr(values[0], fn.as_pointer()), items)

    return sig, codegen


def _winograd_block(k, thread, a):
    """Block ``k`` of a pooled pass on team thread ``thread``: the forward pass (or the
    input gradient) writes its images of ``second``; the filter gradient
    (``a[_FILTER]``) writes its part of the sum over the tiles through its product."""
    c, co = a[_C], a[_CO]
    x = numba.carray(_f32_at(a[_X]), (a[_N], a[_H], a[_W], c))
    second = numba.carray(_f32_at(a[_SECOND]), (a[_N2], a[_H2], a[_W2], co))
    first, count = _i64_at(a[_FIRSTS])[k], _i64_at(a[_COUNTS])[k]
    v_at = a[_VBUF] + 4 * thread * a[_VSTRIDE]
    m_at = a[_MBUF] + 4 * thread * a[_MSTRIDE]
    v = numba.carray(_f32_at(v_at), (16, count, c))
    m = numba.carray(_f32_at(m_at), (16, count, co))
    winograd_input(x, v, first, a[_TILES_H], a[_TILES_W], a[_TOP], a[_LEFT])
    if a[_FILTER]:
        winograd_grad_output(second, m, first, a[_TILES_H], a[_TILES_W])
    row, status = _i64_at(a[_TABLE] + 48 * k), _i32_at(a[_STATUS] + 12 * k)
    status[0] = _call(a[_POINT], (row[4], v_at)) | _call(a[_POINT], (row[5], m_at))
    status[1] = _call(a[_EXECUTE], (row[0], row[1], row[2], row[3]))
    status[2] = _call(a[_WAIT], (row[1],))
    if not a[_FILTER]:
        winograd_output(m, second, first, a[_TILES_H], a[_TILES_W])


@functools.lru_cache(maxsize=None)
def winograd_block():
    """The address of ``_winograd_block`` compiled as a C function
    ``void(int64 block, int64 thread, int64 *arguments)`` (compiled on first use)."""
    signature = numba.types.void(numba.types.int64, numba.types.int64,
                                 numba.types.CPointer(numba.types.int64))
    return numba.cfunc(signature, cache=True, nopython=True,
                       error_model="numpy")(_winograd_block).address


@_jit
def sum_parts(parts, total):
    """``total`` = the sum of ``parts`` (the filter gradient's blocks), in their order."""
    flat, first = total.reshape(-1), parts[0].reshape(-1)
    for i in range(flat.size):
        flat[i] = first[i]
    for k in range(1, parts.shape[0]):
        part = parts[k].reshape(-1)
        for i in range(flat.size):
            flat[i] += part[i]
