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

The images go in blocks that keep their transforms in the cache. float32 with oneDNN
and OpenMP's shared pool runs the blocks as a team (``Pooled``): each block's
transforms and its product (a oneDNN primitive made for one thread) on one thread,
so the bits never depend on the team. Elsewhere the blocks run in turn, the products
on the BLAS's threads.
"""

from __future__ import annotations

import ctypes
import functools
import threading

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
    from gradflow.backends.numpy import conv_numba as numpy_conv_numba

    return numpy_conv_numba


def _transform_filter(w, scratch):
    """(16, C, Co): G w G^T of the HWIO filter ``w``, per channel pair, in a scratch
    buffer."""
    c, co = w.shape[2], w.shape[3]
    return _filter_transform_into(w, scratch("filter", 16 * c * co, w.dtype).reshape(16, c, co),
                                  scratch)


def _filter_transform_into(w, u, scratch):
    """``u`` (16, C, Co) = G w G^T of the HWIO filter ``w``: G over the rows, then over
    the columns, as two small products (a three-operand einsum took 170 us for 3x3
    32 -> 64, about 15% of the pass at batch 32)."""
    c, co = w.shape[2], w.shape[3]
    g = _G_BY_DTYPE.setdefault(w.dtype, _G.astype(w.dtype))
    rows = scratch("filter rows", 12 * c * co, w.dtype).reshape(4, 3, c * co)
    np.matmul(g, np.ascontiguousarray(w).reshape(3, 3 * c * co), out=rows.reshape(4, -1))
    np.matmul(g, rows, out=u.reshape(4, 4, c * co))
    return u


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


def _convolve(x, w, top, left, out, scratch, pooled=False):
    """``out`` = the 3x3 stride-1 convolution of ``x`` padded by ``top``/``left`` with
    the HWIO filter ``w``; with ``pooled``, as ``Pooled`` blocks (None where oneDNN has
    no product for them: nothing written)."""
    c, co = w.shape[2], w.shape[3]
    if pooled:
        blocks = _pooled_pass("convolve", x.shape[0], out.shape[1:3], c, co)
        if blocks is None:
            return None
        _filter_transform_into(w, blocks.u, scratch)
        blocks.run(x, out, top, left)
        return out
    kernels = _kernels()
    u = _transform_filter(w, scratch)
    tiles = _Tiles(x.shape[0], out.shape[1:3])
    for first, stop in tiles.blocks(c + co, x.dtype.itemsize):
        count = (stop - first) * tiles.per_image
        v = scratch("columns", 16 * count * c, x.dtype).reshape(16, count, c)
        m = scratch("products", 16 * count * co, x.dtype).reshape(16, count, co)
        kernels.winograd_input(x, v, first, tiles.th, tiles.tw, top, left)
        np.matmul(v, u, out=m)
        kernels.winograd_output(m, out, first, tiles.th, tiles.tw)
    return out


def forward(x, w, geo, out, scratch, pooled=False):
    """``conv2d`` of ``x`` and the 3x3 filter ``w`` (stride 1) into ``out``; ``pooled``
    as in ``_convolve``."""
    return _convolve(np.ascontiguousarray(x), w, geo.pt, geo.pl, out, scratch, pooled)


def backprop_input(g, w, geo, out, scratch, pooled=False):
    """The gradient in the input: ``g`` convolved with ``w`` rotated 180 degrees, its
    channel axes swapped, padded so that every output reads its whole window."""
    rotated = w[::-1, ::-1].transpose(0, 1, 3, 2)
    return _convolve(np.ascontiguousarray(g), rotated, 2 - geo.pt, 2 - geo.pl, out, scratch,
                     pooled)


def backprop_filter(x, g, geo, out, scratch, pooled=False):
    """The gradient in the filter: G^T (sum over tiles of V^T M) G, where V are the input
    tiles' transforms and M the output gradient's (A y A^T); with ``pooled``, the sum
    from ``Pooled`` blocks (None where oneDNN has no product for them)."""
    kernels = _kernels()
    c, co = x.shape[3], g.shape[3]
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    if pooled:
        blocks = _pooled_pass("filter", geo.n, (geo.oh, geo.ow), c, co)
        if blocks is None:
            return None
        blocks.run(x, g, geo.pt, geo.pl)
        return _filter_from_total(blocks.total, c, co, out, scratch)
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
    return _filter_from_total(total, c, co, out, scratch)


def _filter_from_total(total, c, co, out, scratch):
    """``out`` (HWIO) = G^T total G, ``total`` the (16, Co, C) sum over the tiles."""
    gt = _G_BY_DTYPE.setdefault(total.dtype, _G.astype(total.dtype)).T
    # G^T over a, then over b, as matrix products into scratch (an einsum of the three
    # buffers its reduction); then (3, 3, Co, C) -> HWIO
    half = scratch("columns", 12 * co * c, total.dtype).reshape(3, 4, co * c)
    np.matmul(gt, total.reshape(4, 4 * co * c), out=half.reshape(3, 4 * co * c))
    dw = scratch("part", 9 * co * c, total.dtype).reshape(3, 3, co * c)
    np.matmul(gt, half, out=dw)
    np.copyto(out, dw.reshape(3, 3, co, c).transpose(0, 1, 3, 2))
    return out


# -- the blocks on OpenMP's pool --------------------------------------------------------
# oneDNN's direct 3x3 kernels (onednn_conv) beat the blocks above on two threads, whose
# transforms run on one thread between threaded products. Run as a team over the
# blocks instead, each block's transforms and its product on one thread (an OpenMP
# team, on the pool oneDNN and OpenBLAS use, calling a numba-compiled C function per
# block; the product a oneDNN primitive made for one thread, called from it), they beat
# oneDNN's direct kernels.
# Measured on the 2-core VM, 3x3 32 -> 64 at 14x14, batch 128, ms (forward, input
# gradient, filter gradient): two threads 3.54 3.52 3.84 against 4.46 4.10 4.09; one
# thread 6.64 6.57 7.63 against about 8.6-9.5. The same blocks on threads of the
# process (not OpenMP's) were slower on a quiet machine: OpenMP's workers spin after
# each team, beside them.


# Fewer blocks than this stay with oneDNN's direct kernels. The MNIST CNN's step
# (benchmarks/mnist_cnn.py, 3x3 32 -> 64 at 14x14: 6 images a block), Pooled / oneDNN
# in one process: batch 32 (6 blocks) 1.02-1.09 quiet in four runs of five, 0.96
# beside a busy process; batch 50 (9) 0.90 and 0.92; 64 (11) 0.99; 128 (22) 0.93 and
# 0.90.
MIN_POOLED_BLOCKS = 8


def pooled(geo, dtype, c, co):
    """Whether this convolution runs as ``Pooled`` blocks: float32 where oneDNN is
    there and OpenMP's pool is shared (``openmp.shared()``: the team runs on it),
    with ``MIN_POOLED_BLOCKS`` blocks or more (a fixed rule: the bits never depend on
    the load)."""
    from gradflow.backends.cpu import openmp
    from gradflow.backends.onednn import library as onednn

    return dtype == np.float32 and onednn.api() is not None and openmp.shared() \
        and len(_Tiles(geo.n, (geo.oh, geo.ow)).blocks(c + co, 4)) >= MIN_POOLED_BLOCKS


class Pooled:
    """One pass of one geometry as blocks on OpenMP's pool, for one calling thread: its
    buffers (each team thread's transforms, the filter's transform, the filter
    gradient's parts) and each block's product."""

    def __init__(self, kind, n, tiles, c, co):
        from gradflow.backends.onednn import library as onednn
        from gradflow.backends.onednn import matmul as onednn_matmul

        self.kind, self.api = kind, onednn.api()
        self.tiles = tiles
        # the blocks' arguments (``numpy_conv_numba.BLOCK_ARGS``), kept: the arrays of a
        # call and the buffers are set where they change, the rest below
        names = _kernels().BLOCK_ARGS
        self.args = np.zeros(len(names), np.int64)
        self._at = {name: i for i, name in enumerate(names)}
        self._per_call = [self._at[name] for name in _PER_CALL]
        # as many blocks as above, of (nearly) equal sizes: the team's threads take
        # equal shares of them
        count = len(tiles.blocks(c + co, 4))
        bounds = [n * k // count for k in range(count + 1)]
        blocks = list(zip(bounds, bounds[1:]))
        self.firsts = np.array([first for first, _ in blocks], np.int64)
        self.counts = np.array([(stop - first) * tiles.per_image for first, stop in blocks],
                               np.int64)
        most = int(self.counts.max())
        self.vstride, self.mstride = 16 * most * c, 16 * most * co
        self._buffers(1)
        self.u = np.empty((16, c, co), np.float32)
        self.parts = np.empty((len(blocks), 16, co, c), np.float32)
        self.total = np.empty((16, co, c), np.float32)  # the parts' sum
        self.states, self.streams = [], []
        self.table = np.empty((len(blocks), 6), np.int64)
        for k, count in enumerate(self.counts.tolist()):
            v = self.vbuf[:16 * count * c].reshape(16, count, c)
            m = self.mbuf[:16 * count * co].reshape(16, count, co)
            # the roles of v and m in the product: moved per block by the team
            if kind == "filter":
                a, b, out, roles = m.transpose(0, 2, 1), v, self.parts[k], ("b", "a")
            else:
                a, b, out, roles = v, self.u, m, ("a", "out")
            found = onednn_matmul.product(*(onednn_matmul.layout(t) for t in (a, b, out)), 1)
            if found is None:
                raise onednn.OneDNNError("oneDNN has no one-thread product for a block")
            steps = found[0]
            state = steps.state()
            steps.bind(state, a, b, out)
            memory = {role: mem for mem, role in state.memories}
            ((primitive, args),) = state.args
            stream = self.api.new_stream()
            self.table[k] = (primitive.value, stream.value, len(args), ctypes.addressof(args),
                             memory[roles[0]].value, memory[roles[1]].value)
            self.states.append((steps, state))
            self.streams.append(stream)
        self.status = np.zeros((len(blocks), 3), np.int32)
        self._set(vstride=self.vstride, mstride=self.mstride, firsts=self.firsts.ctypes.data,
                  counts=self.counts.ctypes.data, tiles_h=tiles.th, tiles_w=tiles.tw,
                  table=self.table.ctypes.data, status=self.status.ctypes.data,
                  filter=int(kind == "filter"), **_calls())

    def _set(self, **fields):
        for name, value in fields.items():
            self.args[self._at[name]] = value

    def _buffers(self, team):
        """Room for the transforms of a block on each of ``team`` threads (the products'
        memory objects are pointed at them block by block)."""
        self.vbuf = np.empty(team * self.vstride, np.float32)
        self.mbuf = np.empty(team * self.mstride, np.float32)
        self._set(vbuf=self.vbuf.ctypes.data, mbuf=self.mbuf.ctypes.data)

    def run(self, x, second, top, left):
        """The blocks of C-ordered ``x`` (forward, input gradient: ``second`` is ``out``;
        filter gradient: ``second`` is the output gradient) on a team of the free
        cores (``openmp.run_blocks`` of ``numpy_conv_numba.winograd_block``)."""
        from gradflow.backends.cpu import openmp, threads
        from gradflow.backends.onednn import library as onednn

        kernels = _kernels()
        team = threads.team()
        if team > self.vbuf.size // self.vstride:
            self._buffers(team)
        target = second if self.kind == "filter" or second.flags.c_contiguous \
            else np.empty(second.shape, np.float32)
        self.args[self._per_call] = (x.ctypes.data, *x.shape, target.ctypes.data,
                                     *target.shape, top, left)
        self.status[...] = 0
        self.api.pool_in_use()
        openmp.run_blocks(kernels.winograd_block(), self.args.ctypes.data, len(self.firsts),
                          team)
        if self.status.any():
            raise onednn.OneDNNError(f"oneDNN: a block's calls returned {self.status.max()}")
        for steps, state in self.states:
            steps.check_buffers(state)
        if self.kind == "filter":
            kernels.sum_parts(self.parts, self.total)
        elif target is not second:
            np.copyto(second, target)


@functools.lru_cache(maxsize=None)
def _calls():
    """The addresses of oneDNN's dnnl_primitive_execute, dnnl_stream_wait and
    dnnl_memory_set_data_handle, which each block calls."""
    from gradflow.backends.onednn import library as onednn

    lib = onednn.api().lib
    return {key: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
            for key, name in (("execute", "dnnl_primitive_execute"),
                              ("wait", "dnnl_stream_wait"),
                              ("point", "dnnl_memory_set_data_handle"))}


# the blocks' arguments that come with each call, in the order ``Pooled.run`` gives them
_PER_CALL = ("x", "n", "h", "w", "c", "second", "n2", "h2", "w2", "co", "top", "left")

_local = threading.local()


def _pooled_pass(kind, n, out_hw, c, co):
    """This thread's kept ``Pooled`` for the pass and geometry, or None where oneDNN has
    no product for its blocks (then the caller takes another path)."""
    from gradflow.backends.onednn import library as onednn

    kept = _local.__dict__.setdefault("pooled", {})
    key = (kind, n, tuple(out_hw), c, co)
    if key not in kept:
        try:
            kept[key] = Pooled(kind, n, _Tiles(n, out_hw), c, co)
        except onednn.OneDNNError:
            kept[key] = None
    return kept[key]
