"""Large float32 matrix products through oneDNN while its OpenMP pool is in use.

A CNN step runs its convolutions on oneDNN's OpenMP threads (``onednn_conv``), and
``threads`` then keeps OpenBLAS to one thread, so that two pools do not spin
against each other on the same cores. Its dense layers would then multiply on one
core: at batch 128 the deep-MNIST network's 3136 x 1024 layer took 25 of its 74 ms.
So while OpenMP is in use, a product of at least ``MIN_MACS`` multiply-adds goes
to oneDNN's matmul on the same pool instead; otherwise (an MLP, float64, a batch of
matrices) NumPy and OpenBLAS do it, as before.

Example::

    from gradflow.backends import onednn_matmul
    onednn_matmul.product(a, b.T, out)   # out = a @ b.T, or None: use np.matmul
"""

from __future__ import annotations

import ctypes
import functools
import logging

import numpy as np

from gradflow.backends import onednn, threads
from gradflow.backends.onednn import ARG_DST, ARG_SCRATCHPAD, ARG_SRC, ARG_WEIGHTS, P

_log = logging.getLogger("gradflow.onednn")

# Products smaller than this stay with OpenBLAS: oneDNN's call costs ~10 us.
MIN_MACS = 1 << 21


@functools.lru_cache(maxsize=256)
def matmul_steps(a_shape, a_strides, b_shape, b_strides, count):
    """The kept ``onednn.Steps`` of ``a @ b`` into a C-ordered result on ``count``
    threads, for operands of these shapes and strides (in elements), or None where
    oneDNN is not there or has no implementation."""
    api = onednn.api()
    if api is None:
        return None
    m, n = a_shape[0], b_shape[1]
    src = api.memory_desc(a_shape, strides=a_strides)
    weights = api.memory_desc(b_shape, strides=b_strides)
    dst = api.memory_desc((m, n), strides=(n, 1))
    attr, pd = api.user_scratchpad(), P()
    try:
        with api.making(count):
            api.check("dnnl_matmul_primitive_desc_create", ctypes.byref(pd), api.engine, src,
                      weights, None, dst, attr)
            primitive = api.primitive(pd)
        _, scratch = api.described(pd)
    except onednn.OneDNNError as e:
        _log.debug("oneDNN has no matmul for %s @ %s: %s", a_shape, b_shape, e)
        return None
    finally:
        if pd:
            api.lib.dnnl_primitive_desc_destroy(pd)
        api.lib.dnnl_primitive_attr_destroy(attr)
    args = [(ARG_SRC, src, "a"), (ARG_WEIGHTS, weights, "b"), (ARG_DST, dst, "out")]
    buffers = {}
    if scratch:
        args.append((ARG_SCRATCHPAD, scratch, "scratch"))
        buffers["scratch"] = api.lib.dnnl_memory_desc_get_size(scratch)
    # products follow the convolutions' use of the pool, never keep it in use themselves
    return onednn.Steps(api, [(primitive, args)], buffers, count, marks_openmp=False)


def _plain(x):
    """Whether 2-D ``x`` has one axis of unit stride (a C- or F-ordered matrix, or a
    slice of one along its other axis)."""
    return x.itemsize in x.strides and all(s > 0 for s in x.strides)


def product(a, b, out=None):
    """``a @ b`` written into ``out`` (or a new array) through oneDNN, or None (nothing
    written) unless OpenMP is in use and the product is large, float32 and 2-D."""
    if not threads.openmp_in_use() or a.ndim != 2 or b.ndim != 2 \
            or a.dtype != np.float32 or b.dtype != np.float32:
        return None
    (m, k), n = a.shape, b.shape[1]
    if m * k * n < MIN_MACS or b.shape[0] != k or not (_plain(a) and _plain(b)):
        return None
    if out is None:
        out = np.empty((m, n), np.float32)
    elif out.shape != (m, n) or out.dtype != np.float32 or not out.flags.c_contiguous \
            or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    api = onednn.api()
    if api is None:
        return None
    key = (a.shape, tuple(s // 4 for s in a.strides), b.shape, tuple(s // 4 for s in b.strides),
           api.thread_count())
    steps = None if key in _dropped else matmul_steps(*key)
    if steps is None:
        return None
    try:
        return steps(a, b, out)
    except onednn.OneDNNError as e:  # never trusted again; NumPy writes all of out
        _log.warning("matmul %s dropped: %s", key, e)
        _dropped.add(key)
        return None


# operand layouts whose primitives misbehaved (``product``)
_dropped = set()
