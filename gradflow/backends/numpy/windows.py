"""NumPy fast paths for convolution and max pooling (lowerings of ``gradflow.prim.conv``).

A convolution is im2col and one matrix product, done one block of images at a
time: a block's columns (a few MB) are still in the cache when the product
reads them, and the whole batch's columns (tens of MB) are never held at once.
The columns are a copy of a strided view (``sliding_window_view``) of the block,
padded, in the filter's row layout, or, when the input has few channels (the
first layer of an image model), in the transposed layout, whose copy moves
whole image rows instead of runs of one or two values. The adjoint in the
input adds each row of the product back onto the pixels it came from (col2im).

float32 convolutions go to oneDNN where it is there (``onednn_conv``), except 3x3
stride-1 ones with 16 channels or more, which run Winograd's blocks on OpenMP's pool
(``numpy_conv_winograd.Pooled``: faster than oneDNN's direct kernels). Where numba
is installed, col2im and max pooling and its gradient are compiled loops
(``numpy_conv_numba``) and 3x3 stride-1 convolutions with 16 channels or more use
Winograd's F(2x2, 3x3) (``numpy.conv_winograd``); everywhere else, and
with ``GRADFLOW_NUMBA=0``, the same results come from NumPy calls on strided
views (``numpy.strided``). Every path matches the Array API form (``gradflow.prim.conv``) to float
tolerance (the tests compare them): max pooling sends the gradient to the first
maximum of each window, row-major, and a padding cell never wins.

Memory is what these ops spend most of their time on, so none allocates a large
array per call: each writes its result into the buffer the plan gives it
(``out=``, see ``executor``) where there is one, and keeps its blocks in scratch
buffers of its thread that later calls reuse.
"""

from __future__ import annotations

import functools
import threading

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gradflow.backends.cpu import openmp, threads
from gradflow.backends.cpu.numba_support import get_numba, on_team
from gradflow.backends.cpu.threads import uses_blas
from gradflow.backends.numpy import strided
from gradflow.backends.numpy.fused import PARALLEL_SIZE
from gradflow.backends.onednn import conv as onednn_conv
from gradflow.prim.conv import NCHW_FORMS, TO_NCHW, TO_NHWC, window_geometry

# Bytes of im2col columns per block: a few MB, so that a block stays in the cache
# between its copy and its product, and still gives the product enough rows.
BLOCK_BYTES = 4 << 20
# Inputs with fewer channels than this use the transposed column layout.
FEW_CHANNELS = 16
# Whether 3x3 stride-1 convolutions may take the Winograd path (where numba is).
WINOGRAD = True
# Whether float32 convolutions go through oneDNN where it is installed (``onednn_conv``).
ONEDNN = True
# NCHW <-> NHWC copies of this many elements or more go through oneDNN's reorder (2-3x
# NumPy's strided copy at 128 x 32 x 28 x 28; slower below a few thousand elements)
ONEDNN_PERMUTE_SIZE = 1 << 15
_COMPILED = (np.dtype(np.float32), np.dtype(np.float64))


@functools.lru_cache(maxsize=None)
def _numba_kernels():
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import conv_numba as numpy_conv_numba

    return numpy_conv_numba


def _kernels(dtype):
    """The compiled kernels for arrays of ``dtype``, or None (use NumPy)."""
    return _numba_kernels() if dtype in _COMPILED else None


# Scratch buffers up to this size are kept for the next call (a fresh large array
# costs page faults on every call); larger ones are allocated each time.
SCRATCH_KEEP = 64 << 20
# Scratch buffers start at a 2 MiB boundary and are at least 4 MiB, the size from
# which NumPy asks Linux for transparent huge pages: blocks then sit in physically
# contiguous memory. On 4 KiB pages, where a process's pages happened to land made
# the same Winograd block run at half speed in some processes.
_HUGE = 2 << 20
_local = threading.local()


def _scratch(slot, size, dtype):
    """``size`` values of ``dtype`` from this thread's scratch buffer ``slot``, reused
    by later calls: valid until the next request for the same slot, and never part
    of a result."""
    buffers = _local.__dict__.setdefault("buffers", {})
    nbytes = size * np.dtype(dtype).itemsize
    buf = buffers.get(slot)
    if buf is None or buf.size < nbytes:
        raw = np.empty(max(nbytes, 2 * _HUGE) + _HUGE, np.uint8)
        start = -raw.ctypes.data % _HUGE
        buf = raw[start:start + max(nbytes, 2 * _HUGE)]
        if nbytes <= SCRATCH_KEEP:
            buffers[slot] = buf
    return buf[:nbytes].view(dtype)


def _expect(op, what, shape, want):
    """Raise unless ``shape`` is ``want``: the compiled loops trust the shapes they get."""
    if tuple(shape) != tuple(want):
        raise ValueError(f"{op}: the {what} has shape {tuple(shape)}, expected {tuple(want)}")


def _output(out, shape, dtype, *inputs):
    """``out`` when the plan gave a buffer that fits (and holds none of ``inputs``),
    else a new array."""
    if out is not None and out.shape == tuple(shape) and out.dtype == dtype \
            and out.flags.c_contiguous and not any(np.may_share_memory(out, a) for a in inputs):
        return out
    return np.empty(shape, dtype)


class _Geometry:
    """Where the windows of a convolution or pooling lie, for one input shape."""

    def __init__(self, x_shape, ksize, strides, padding):
        self.n, self.h, self.w = x_shape[:3]
        self.ksize, self.strides = tuple(ksize), tuple(strides)
        self.oh, self.ow, ph, pw = window_geometry(x_shape, ksize, strides, padding)
        self.pad = (ph, pw)
        self.pt, self.pl = ph[0], pw[0]
        self.padded = any(ph) or any(pw)

    @property
    def args(self):
        """``(kh, kw, sh, sw, top, left)``, as the compiled kernels take them."""
        return self.ksize + self.strides + (self.pt, self.pl)

    def blocks(self, bytes_per_image):
        """``(first, stop)`` image ranges of at most ``BLOCK_BYTES`` of columns each."""
        step = max(1, BLOCK_BYTES // max(1, bytes_per_image))
        return ((i, min(i + step, self.n)) for i in range(0, self.n, step))  # lazily

    def pad_input(self, x, value=0.0):
        """``x`` with the padding of the windows (``value``), in a scratch buffer."""
        if not self.padded:
            return x
        (pt, pb), (pl, pr) = self.pad
        n, h, w, c = x.shape
        out = _scratch("pad", n * (h + pt + pb) * (w + pl + pr) * c, x.dtype)
        out = out.reshape(n, h + pt + pb, w + pl + pr, c)
        out[:, :pt] = value
        out[:, pt + h:] = value
        out[:, pt:pt + h, :pl] = value
        out[:, pt:pt + h, pl + w:] = value
        out[:, pt:pt + h, pl:pl + w] = x
        return out

    def padded_target(self, out):
        """Where an adjoint adds its windows: ``out`` (images, H, W, C) itself, or with
        padding a scratch buffer of the padded size (``crop_into`` then copies its
        inside to ``out``)."""
        if not self.padded:
            return out
        (pt, pb), (pl, pr) = self.pad
        n, h, w, c = out.shape
        size = n * (h + pt + pb) * (w + pl + pr) * c
        return _scratch("pad", size, out.dtype).reshape(n, h + pt + pb, w + pl + pr, c)

    def crop_into(self, target, out):
        """Copy the inside of ``padded_target(out)`` to ``out`` (nothing to do without
        padding)."""
        if target is not out:
            h, w = out.shape[1:3]
            out[...] = target[:, self.pt:self.pt + h, self.pl:self.pl + w]

    def cells(self, x):
        """``x`` (padded as needed) viewed as (N, OH, OW, C, kh, kw): every window."""
        (sh, sw), (oh, ow) = self.strides, (self.oh, self.ow)
        view = sliding_window_view(self.pad_input(x), self.ksize, axis=(1, 2))
        return view[:, :(oh - 1) * sh + 1:sh, :(ow - 1) * sw + 1:sw]


# -- im2col ------------------------------------------------------------------------------


class _Columns:
    """im2col of one input, block by block.

    ``block(first, stop)`` is the windows of those images as a matrix, rows
    ``(n, oy, ox)`` and columns ``(i, j, c)`` like an HWIO filter reshaped to 2-D:
    a C-ordered (rows, K) array, or for inputs with few channels the transpose
    of a C-ordered (K, rows) array. Blocks share scratch buffers: each is valid
    until the next is taken.
    """

    def __init__(self, x, geo):
        self.x, self.geo = x, geo
        kh, kw = geo.ksize
        c = x.shape[3]
        self.rows_per_image = geo.oh * geo.ow
        self.k = kh * kw * c
        self.planes = c < FEW_CHANNELS
        self.bytes_per_image = self.rows_per_image * self.k * x.dtype.itemsize

    def rows(self, first, stop):
        """The rows of the images ``first .. stop``, as a slice."""
        return slice(first * self.rows_per_image, stop * self.rows_per_image)

    def block(self, first, stop):
        view = self.geo.cells(self.x[first:stop])  # padded block by block, in the cache
        rows = (stop - first) * self.rows_per_image
        flat = _scratch("columns", rows * self.k, self.x.dtype)
        if self.planes:  # (kh, kw, C, n, OH, OW): the copy moves runs of OW values
            np.copyto(flat.reshape(view.shape[4:] + view.shape[3:4] + view.shape[:3]),
                      view.transpose(4, 5, 3, 0, 1, 2))
            return flat.reshape(self.k, rows).T
        np.copyto(flat.reshape(view.shape[:3] + view.shape[4:] + view.shape[3:4]),
                  view.transpose(0, 1, 2, 4, 5, 3))
        return flat.reshape(rows, self.k)


# -- the convolution and its two adjoints -------------------------------------------------


def _point_conv(x, geo):
    """The pixels a 1x1 unpadded convolution reads, as a (rows, C) matrix."""
    sh, sw = geo.strides
    if (sh, sw) != (1, 1):
        x = x[:, :(geo.oh - 1) * sh + 1:sh, :(geo.ow - 1) * sw + 1:sw]
    return np.ascontiguousarray(x).reshape(-1, x.shape[3])


def _onednn(kind, a, b, out, geo, x_shape, w_shape, layout="NHWC"):
    """``out`` after oneDNN's ``kind`` pass (``onednn_conv``) over images in ``layout``
    (``x_shape`` NHWC all the same), or None where it does not apply (then nothing was
    written)."""
    if not ONEDNN:
        return None
    return onednn_conv.convolve(kind, a, b, out, x_shape, w_shape, (geo.oh, geo.ow),
                                geo.strides, (geo.pt, geo.pl), (geo.pad[0][1], geo.pad[1][1]),
                                layout)


def conv_forward(x, w, strides, padding, out=None):
    """``conv2d`` of NHWC ``x`` and HWIO ``w``: im2col and a product, per block
    (written into ``out`` where that fits)."""
    kh, kw, c, co = w.shape
    geo = _Geometry(x.shape, (kh, kw), strides, padding)
    _expect("conv2d", "input", x.shape, x.shape[:3] + (c,))
    dtype = np.result_type(x, w)
    x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
    out = _output(out, (geo.n, geo.oh, geo.ow, co), dtype, x, w)
    if _pooled_winograd("forward", x, w, out, geo, c, co) is not None:
        return out
    if _onednn("forward", x, w, out, geo, x.shape, (kh, kw, c, co)) is not None:
        return out
    wino = _winograd(geo, dtype, c, co)
    if wino is not None:
        return wino.forward(x, w, geo, out, _scratch)
    w2 = w.reshape(kh * kw * c, co)
    out2 = out.reshape(-1, co)
    if (kh, kw) == (1, 1) and not geo.padded:
        np.matmul(_point_conv(x, geo), w2, out=out2)
        return out
    cols = _Columns(x, geo)
    for first, stop in geo.blocks(cols.bytes_per_image):
        np.matmul(cols.block(first, stop), w2, out=out2[cols.rows(first, stop)])
    return out


def conv_backprop_filter(x, g, w_shape, strides, padding, out=None):
    """The gradient of ``conv2d`` in its filter: im2col(x)^T g, summed over blocks."""
    kh, kw, c, co = w_shape
    geo = _Geometry(x.shape, (kh, kw), strides, padding)
    _expect("conv2d_backprop_filter", "input", x.shape, x.shape[:3] + (c,))
    _expect("conv2d_backprop_filter", "gradient", g.shape, (geo.n, geo.oh, geo.ow, co))
    dtype = np.result_type(x, g)
    x, g = x.astype(dtype, copy=False), g.astype(dtype, copy=False)
    out = _output(out, w_shape, dtype, x, g)
    if _pooled_winograd("backprop_filter", x, g, out, geo, c, co) is not None:
        return out
    if _onednn("filter", x, g, out, geo, x.shape, w_shape) is not None:
        return out
    wino = _winograd(geo, dtype, c, co)
    if wino is not None:
        return wino.backprop_filter(x, g, geo, out, _scratch)
    g2 = g.reshape(-1, co)
    total = out.reshape(kh * kw * c, co)
    if (kh, kw) == (1, 1) and not geo.padded:
        np.matmul(_point_conv(x, geo).T, g2, out=total)
        return out
    part = _scratch("part", total.size, dtype).reshape(total.shape)
    cols = _Columns(x, geo)
    for k, (first, stop) in enumerate(geo.blocks(cols.bytes_per_image)):
        block = cols.block(first, stop).T
        np.matmul(block, g2[cols.rows(first, stop)], out=part if k else total)
        if k:
            total += part
    if geo.n == 0:
        total[...] = 0
    return out


def conv_backprop_input(g, w, x_shape, strides, padding, out=None):
    """The gradient of ``conv2d`` in its input: col2im(g w^T), per block."""
    kh, kw, c, co = w.shape
    geo = _Geometry(tuple(x_shape), (kh, kw), strides, padding)
    _expect("conv2d_backprop_input", "gradient", g.shape, (geo.n, geo.oh, geo.ow, co))
    _expect("conv2d_backprop_input", "input", x_shape, tuple(x_shape[:3]) + (c,))
    dtype = np.result_type(g, w)
    g, w = g.astype(dtype, copy=False), w.astype(dtype, copy=False)
    out = _output(out, tuple(x_shape), dtype, g, w)
    if _pooled_winograd("backprop_input", g, w, out, geo, c, co) is not None:
        return out
    if _onednn("input", g, w, out, geo, x_shape, w.shape) is not None:
        return out
    wino = _winograd(geo, dtype, c, co)
    if wino is not None:
        return wino.backprop_input(g, w, geo, out, _scratch)
    w2t = w.reshape(kh * kw * c, co).T
    g2 = np.ascontiguousarray(g).reshape(-1, co)
    if (kh, kw) == (1, 1) and not geo.padded and geo.strides == (1, 1):
        np.matmul(g2, w2t, out=out.reshape(-1, c))
        return out
    kernels = _kernels(dtype)
    rows_per_image = geo.oh * geo.ow
    k = kh * kw * c
    for first, stop in geo.blocks(rows_per_image * k * dtype.itemsize):
        rows = (stop - first) * rows_per_image
        g_rows = g2[first * rows_per_image:stop * rows_per_image]
        if c < FEW_CHANNELS:  # a plane per (i, j, c): each added as a whole strided image
            planes = np.matmul(w2t.T, g_rows.T,
                               out=_scratch("columns", rows * k, dtype).reshape(k, rows))
            if kernels is not None:
                kernels.col2im_planes(planes, out[first:stop], *geo.args, geo.oh, geo.ow)
            else:
                strided.col2im_planes(planes, out[first:stop], geo)
            continue
        cells = np.matmul(g_rows, w2t, out=_scratch("columns", rows * k, dtype).reshape(rows, k))
        if kernels is not None:
            kernels.col2im(cells, out[first:stop], *geo.args, geo.oh, geo.ow)
        else:
            strided.col2im(cells, out[first:stop], geo)
    return out


def _pooled_winograd(pass_, a, b, out, geo, c, co):
    """``out`` after the Winograd module's ``pass_`` as blocks on OpenMP's pool, where
    they serve this float32 convolution (``numpy_conv_winograd.pooled``), else None."""
    wino = _winograd(geo, out.dtype, c, co)
    if wino is None or not wino.pooled(geo, out.dtype, c, co):
        return None
    return getattr(wino, pass_)(a, b, geo, out, _scratch, pooled=True)


def _winograd(geo, dtype, c, co):
    """The Winograd module when it serves this convolution, else None."""
    if not WINOGRAD or geo.ksize != (3, 3) or geo.strides != (1, 1) \
            or _kernels(dtype) is None:
        return None
    from gradflow.backends.numpy import conv_winograd as numpy_conv_winograd

    return numpy_conv_winograd if numpy_conv_winograd.suits(geo, c, co) else None


# -- max pooling ------------------------------------------------------------------------


def _is_2x2(geo):
    return geo.ksize == (2, 2) and geo.strides == (2, 2) and not geo.padded


def _pool(kernels, name, size, *args):
    """Run pooling kernel ``name`` of ``kernels`` over all images of ``args`` (the
    first array's batch): on a team of the free cores where OpenMP's pool is shared
    and the images hold ``PARALLEL_SIZE`` values or more, else on this thread."""
    team = threads.team() if size >= PARALLEL_SIZE and openmp.shared() else 1
    if team > 1:
        on_team(getattr(kernels, name + "_team"), team, team, *args)
    else:
        getattr(kernels, name)(*args, 0, args[0].shape[0])


def max_pool_forward(x, ksize, strides, padding, out=None):
    """The max over each window of NHWC ``x``; as ``np.maximum``, a NaN wins."""
    geo = _Geometry(x.shape, ksize, strides, padding)
    out = _output(out, (geo.n, geo.oh, geo.ow, x.shape[3]), x.dtype, x)
    kernels = _kernels(x.dtype)
    if kernels is None:
        return strided.max_pool(x, geo, out)
    x = np.ascontiguousarray(x)
    if _is_2x2(geo):
        _pool(kernels, "max_pool_2x2", x.size, x, out)
    else:
        _pool(kernels, "max_pool", x.size, x, out, *geo.args)
    return out


def max_pool_backprop(g, x, ksize, strides, padding, out=None, positive=False):
    """The gradient of ``max_pool``: ``g`` of each window at its first maximum; with
    ``positive``, only where that maximum is above zero (``max_pool_relu_grad``: the
    ReLU's gradient before the pool, ``x`` being the ReLU's output), in the same pass."""
    geo = _Geometry(x.shape, ksize, strides, padding)
    _expect("max_pool_grad", "gradient", g.shape, (geo.n, geo.oh, geo.ow, x.shape[3]))
    dtype = np.result_type(g, x)
    out = _output(out, x.shape, dtype, g, x)
    kernels = _kernels(dtype)
    if kernels is None:
        strided.max_pool_grad(g, x, geo, out)
        if positive:
            np.copyto(out, 0, where=~(x > 0))
        return out
    x = np.ascontiguousarray(x, dtype)
    g = np.ascontiguousarray(g, dtype)
    if _is_2x2(geo):
        _pool(kernels, "max_pool_grad_2x2", x.size, g, x, out, positive)
        out[:, 2 * geo.oh:] = 0  # the odd last row and column no window covers
        out[:, :, 2 * geo.ow:] = 0
    else:
        _pool(kernels, "max_pool_grad", x.size, g, x, out, *geo.args, positive)
    return out


# -- average pooling --------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _avg_counts(x_shape, ksize, strides, padding, dtype):
    """How many real cells each window covers, (1, OH, OW, 1) of ``dtype`` (read-only)."""
    geo = _Geometry(x_shape, ksize, strides, padding)
    rows, cols = ([min(o * s - p + k, size) - max(o * s - p, 0) for o in range(count)]
                  for count, s, p, k, size in ((geo.oh, strides[0], geo.pt, ksize[0], geo.h),
                                               (geo.ow, strides[1], geo.pl, ksize[1], geo.w)))
    counts = np.multiply.outer(np.array(rows), np.array(cols)).astype(dtype)[None, :, :, None]
    counts.flags.writeable = False
    return counts


def avg_pool_forward(x, ksize, strides, padding, out=None):
    """The mean over the real cells of each window of NHWC ``x`` (TF1's ``avg_pool``)."""
    geo = _Geometry(x.shape, ksize, strides, padding)
    out = _output(out, (geo.n, geo.oh, geo.ow, x.shape[3]), x.dtype, x)
    kernels = _kernels(x.dtype)
    if kernels is not None and _is_2x2(geo):
        _pool(kernels, "avg_pool_2x2", x.size, np.ascontiguousarray(x), out)
        return out
    if kernels is not None:
        _pool(kernels, "avg_pool", x.size, np.ascontiguousarray(x), out, *geo.args)
        return out
    counts = _avg_counts(x.shape, geo.ksize, geo.strides, padding, x.dtype)
    return strided.avg_pool(x, geo, counts, out)


def avg_pool_backprop(g, x_shape, ksize, strides, padding, out=None):
    """The gradient of ``avg_pool``: each window's ``g`` over its count, spread over it."""
    geo = _Geometry(tuple(x_shape), ksize, strides, padding)
    _expect("avg_pool_grad", "gradient", g.shape, (geo.n, geo.oh, geo.ow, x_shape[3]))
    out = _output(out, tuple(x_shape), g.dtype, g)
    kernels = _kernels(g.dtype)
    if kernels is not None and _is_2x2(geo):
        _pool(kernels, "avg_pool_grad_2x2", out.size, np.ascontiguousarray(g), out)
        out[:, 2 * geo.oh:] = 0  # the odd last row and column no window covers
        out[:, :, 2 * geo.ow:] = 0
        return out
    if kernels is not None:
        _pool(kernels, "avg_pool_grad", out.size, np.ascontiguousarray(g), out, *geo.args)
        return out
    share = _scratch("share", g.size, g.dtype).reshape(g.shape)
    np.divide(g, _avg_counts(tuple(x_shape), geo.ksize, geo.strides, padding, g.dtype),
              out=share)
    return strided.avg_pool_grad(share, geo, out)


# -- the lowerings ------------------------------------------------------------------------


def _writes_out(fn):
    """Mark a lowering as one that can write into a buffer of the plan (``out=``) and
    reads more of each input than the element it writes (never in place); it sets the
    BLAS thread count to the free cores first (``threads``)."""
    fn = uses_blas(fn)
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def conv2d(xp, strides, padding):
    return _writes_out(lambda x, w, out=None: conv_forward(x, w, strides, padding, out))


def conv2d_backprop_input(xp, strides, padding):
    return _writes_out(lambda g, w, x_like, out=None: conv_backprop_input(
        g, w, x_like.shape, strides, padding, out))


def conv2d_backprop_filter(xp, strides, padding):
    return _writes_out(lambda x, g, w_like, out=None: conv_backprop_filter(
        x, g, w_like.shape, strides, padding, out))


def max_pool(xp, ksize, strides, padding):
    return _writes_out(lambda x, out=None: max_pool_forward(x, ksize, strides, padding, out))


def max_pool_grad(xp, ksize, strides, padding):
    return _writes_out(lambda g, x, out=None: max_pool_backprop(
        g, x, ksize, strides, padding, out))


def max_pool_relu_grad(xp, ksize, strides, padding):
    return _writes_out(lambda g, x, out=None: max_pool_backprop(
        g, x, ksize, strides, padding, out, positive=True))


def avg_pool(xp, ksize, strides, padding):
    return _writes_out(lambda x, out=None: avg_pool_forward(x, ksize, strides, padding, out))


def avg_pool_grad(xp, ksize, strides, padding):
    return _writes_out(lambda g, x_like, out=None: avg_pool_backprop(
        g, x_like.shape, ksize, strides, padding, out))


def image_layout(xp, perm):
    """NCHW <-> NHWC as a copy into the plan's buffer: the kernels around it then see
    contiguous arrays (a transposed view would be copied by each of them, or slow
    them down)."""
    def run(x, out=None):
        view = x.transpose(perm)
        out = _output(out, view.shape, x.dtype, x)
        if not ONEDNN or x.size < ONEDNN_PERMUTE_SIZE or \
                onednn_conv.permute(x, perm, out) is None:
            np.copyto(out, view)
        return out

    run.accepts_out = run.reads_whole_inputs = True
    return run


def _nchw_form(kind, nhwc_lower, images, image_out):
    """The lowering of an NCHW convolution pass (``gradflow.prim.conv.NCHW_FORMS``): oneDNN on
    the NCHW arrays as they are, else the NHWC lowering between copies."""
    def lower(xp, strides, padding):
        nhwc = nhwc_lower(xp, strides, padding)

        def run(*arrays, out=None):
            seen = [a.transpose(TO_NHWC) if k in images else a for k, a in enumerate(arrays)]
            x_shape = seen[2 if kind == "input" else 0].shape
            w_shape = arrays[2 if kind == "filter" else 1].shape
            a, b = arrays[:2]
            if x_shape[3] == w_shape[2] and a.dtype == b.dtype == np.float32:
                geo = _Geometry(x_shape, w_shape[:2], strides, padding)
                image = (geo.n, w_shape[3], geo.oh, geo.ow)
                if kind != "forward":  # the compiled passes trust the shapes they get
                    g = arrays[0 if kind == "input" else 1]
                    _expect(f"conv2d_backprop_{kind}", "gradient", g.shape, image)
                shape = w_shape if kind == "filter" else image if kind == "forward" \
                    else arrays[2].shape
                target = _output(out, shape, a.dtype, a, b)
                if _onednn(kind, a, b, target, geo, x_shape, w_shape, "NCHW") is not None:
                    return target
            result = nhwc(*seen)  # checks the shapes
            result = result.transpose(TO_NCHW) if image_out else result
            if out is None or out.shape != result.shape:
                return np.ascontiguousarray(result)
            np.copyto(out, result)
            return out

        return _writes_out(run)

    return lower


_NCHW_LOWERINGS = {
    form: _nchw_form(kind, nhwc, images, image_out)
    for kind, nhwc, (form, images, image_out) in (
        ("forward", conv2d, NCHW_FORMS["conv2d"]),
        ("input", conv2d_backprop_input, NCHW_FORMS["conv2d_backprop_input"]),
        ("filter", conv2d_backprop_filter, NCHW_FORMS["conv2d_backprop_filter"]))}

LOWERINGS = {
    **_NCHW_LOWERINGS,
    "conv2d": conv2d,
    "conv2d_backprop_input": conv2d_backprop_input,
    "conv2d_backprop_filter": conv2d_backprop_filter,
    "max_pool": max_pool,
    "max_pool_grad": max_pool_grad,
    "max_pool_relu_grad": max_pool_relu_grad,
    "avg_pool": avg_pool,
    "avg_pool_grad": avg_pool_grad,
    "image_layout": image_layout,
}
