"""float32 matrix products on the NumPy backend through oneDNN's ``matmul`` primitive,
where oneDNN is installed (``onednn``).

oneDNN's ``brg`` kernels beat OpenBLAS on the products of small-batch training
steps, most on one thread (what a core shared with another process leaves):
measured on the 2-core AVX-512 VM, the three products of a 3136 -> 1024 dense
layer at batch 50 took 11.8 ms against 14.6 on one thread (6.9 against 7.4 on
two), and the eight of the MNIST MLP (784-512-512-10) at batch 32 0.67 against
0.88 ms on two. oneDNN reads the operands where NumPy has them: a transposed view
is a layout with other strides, never a copy. The products run on OpenMP's pool,
the one oneDNN's convolutions and numba's kernels use, with gradflow's thread
count (``threads``).

Only the ``brg`` kernels (AVX-512) are used: below AVX-512 oneDNN has its ``gemm``
alone, which OpenBLAS beats and whose bits follow the thread count, so NumPy takes
those products (``multiply`` returns None; see there).

A product below ``MIN_WORK`` multiply-adds stays with NumPy: the ctypes calls
around oneDNN's cost more than such a product. So does anything oneDNN is not
there for (another dtype, more than two axes, an empty matrix); :func:`multiply`
then returns None.

Example::

    from gradflow.backends.onednn import matmul as onednn_matmul
    out = np.empty((64, 512), np.float32)
    onednn_matmul.multiply(x, w.T, out)   # None where NumPy should do it
"""

from __future__ import annotations

import ctypes
import functools
import logging

import numpy as np

from gradflow.backends.onednn import library as onednn
from gradflow.backends.onednn.library import ARG_DST, ARG_SCRATCHPAD, ARG_SRC, ARG_WEIGHTS, P

_log = logging.getLogger("gradflow.onednn")

# m * k * n below which NumPy's call is cheaper than oneDNN's: oneDNN's costs about 10
# us more from Python (measured on the 2-core VM: 32 x 512 x 192 took 43 us in NumPy
# and 50 through oneDNN; 32 x 512 x 512, 121 against 100)
MIN_WORK = 6 << 20


@functools.lru_cache(maxsize=512)
def product(a_layout, b_layout, out_layout, count):
    """The kept ``(Steps, implementation)`` of ``a @ b -> out`` for these layouts
    (``(shape, strides in elements)`` each) on ``count`` threads, or None where oneDNN
    is not there or has no implementation of it."""
    api = onednn.api()
    if api is None:
        return None
    attr = P()
    pd = P()
    try:
        with api.making(count):
            a, b, out = (api.memory_desc(shape, strides=strides)
                         for shape, strides in (a_layout, b_layout, out_layout))
            attr = api.user_scratchpad()
            api.check("dnnl_matmul_primitive_desc_create", ctypes.byref(pd), api.engine, a, b,
                      None, out, attr)
            primitive = api.primitive(pd)
            implementation, scratch = api.described(pd)
    except onednn.OneDNNError as e:
        _log.debug("oneDNN has no product of %s and %s: %s", a_layout, b_layout, e)
        return None
    finally:
        if pd:
            api.lib.dnnl_primitive_desc_destroy(pd)
        if attr:
            api.lib.dnnl_primitive_attr_destroy(attr)
    args = [(ARG_SRC, a, "a"), (ARG_WEIGHTS, b, "b"), (ARG_DST, out, "out")]
    buffers = {}
    if scratch:
        args.append((ARG_SCRATCHPAD, scratch, "scratch"))
        buffers["scratch"] = api.lib.dnnl_memory_desc_get_size(scratch)
    return onednn.Steps(api, [(primitive, args)], buffers, count), implementation


def layout(x):
    """``(shape, strides in elements)`` of a float32 matrix (or stack of matrices) that
    oneDNN can read in place (one axis of unit stride), else None."""
    return _layout_of(x.shape, x.strides)


@functools.lru_cache(maxsize=1024)
def _layout_of(shape, byte_strides):
    strides = tuple(s // 4 for s in byte_strides)
    if min(strides) != 1 or min(byte_strides) < 0 or any(s % 4 for s in byte_strides):
        return None
    return tuple(shape), strides


def multiply(a, b, out=None):
    """``a @ b`` for float32 matrices, written into ``out`` (C-ordered float32; a new
    array when None), or None (nothing written) where this path does not apply."""
    if a.ndim != 2 or b.ndim != 2 or a.dtype != np.float32 or b.dtype != np.float32 \
            or a.shape[0] * a.shape[1] * b.shape[1] < MIN_WORK or 0 in a.shape + b.shape:
        return None
    if out is not None and (out.dtype != np.float32 or not out.flags.c_contiguous):
        return None
    layouts = layout(a), layout(b)
    if None in layouts:
        return None
    api = onednn.api()
    if api is None:
        return None
    shape = (a.shape[0], b.shape[1])
    key = layouts + ((shape, (shape[1], 1)), api.thread_count())
    found = None if key in _dropped else product(*key)
    if found is None:
        return None
    if not found[1].startswith("brg"):
        # below AVX-512 (AVX2, SSE4.1) oneDNN has its ``gemm`` only, which OpenBLAS's
        # kernels beat (AVX2-capped MNIST MLP step, batch 32 / 128 / 1024: 1.52 / 3.49 /
        # 23.8 ms through it, 1.20 / 2.83 / 17.6 through NumPy; JAX jit 1.27 / 2.98 /
        # 18.2), and which splits the inner dimension between threads, so its bits
        # would follow the load (8 x 200,000 x 8: 62 of 64 sums differed on one thread
        # and two): NumPy takes the product
        return None
    try:
        return found[0](a, b, np.empty(shape, np.float32) if out is None else out)
    except onednn.OneDNNError as e:  # never trusted again; NumPy writes all of out
        _log.warning("product %s dropped: %s", key, e)
        _dropped.add(key)
        return None


# layouts without a (working) primitive
_dropped = set()

