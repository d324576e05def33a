"""float32 convolutions on the NumPy backend through oneDNN (``onednn``), where it is
installed.

On AVX-512 oneDNN's ``brgconv`` kernels run a 5x5 NHWC convolution at about 245
GFLOP/s on the 2-core VM (all three passes), where im2col plus OpenBLAS reaches
140. Data stays where NumPy has it (NHWC images, HWIO filters, the plan's ``out=``
buffers); oneDNN's scratch memory is a buffer of the calling thread, so a steady
step allocates nothing here. Each (pass, geometry) gets its primitives once
(``convolution``), for the threads gradflow lets it use then (``threads``: fewer
when other processes hold cores). The forward pass and the input gradient give the
same bits on any count. oneDNN's threaded filter gradient does not (it sums the
images in one part per thread), so gradflow splits the batch itself into fixed
parts, one per core the process may use, computes each part on one thread, and
adds the parts in order (``BatchParts``): the parts run as one OpenMP team as
large as the load allows, and the bits never depend on the load. A few-channel
input gradient through a GEMM runs in more parts than cores, taken in turn by a
team of every allowed core, so that a core another process holds slows it by its
share only (``PARTED_PER_CORE``). Without llvmlite (which compiles the teams) the
filter gradient runs oneDNN's own threads on every allowed core instead. Anything
oneDNN is not there for (float64, a geometry without an implementation) returns
None and the caller takes the im2col path, which is also the reference the tests
compare against.

Example::

    from gradflow.backends.onednn import conv as onednn_conv
    out = np.empty((8, 14, 14, 64), np.float32)
    onednn_conv.convolve("forward", x, w, out, x.shape, w.shape, (14, 14), (1, 1),
                         (2, 2), (2, 2))
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading

import numpy as np

from gradflow.backends.cpu import threads
from gradflow.backends.onednn import library as onednn
from gradflow.backends.onednn.library import (
    ARG_DIFF_DST,
    ARG_DIFF_SRC,
    ARG_DIFF_WEIGHTS,
    ARG_DST,
    ARG_SCRATCHPAD,
    ARG_SRC,
    ARG_WEIGHTS,
    Dims,
    P,
)

_log = logging.getLogger("gradflow.onednn")

# The filter gradient's parts of the batch per core the process may use (fixed: the
# bits depend on the parts, never on the threads that take them). Measured with one
# busy process beside the 2-core VM: 4 parts per core made LeNet-5's step (b50) 5.6-5.9
# ms against 4.5-4.8 with 1, and a team of every allowed core (not just the free ones)
# 12.5-17 ms: its threads wait at the team's end for the one the scheduler holds back.
PARTS_PER_CORE = 1
# A few-channel input gradient that oneDNN computes through im2col and a GEMM
# (``input_gradient_kernel``) runs in PARTED_PER_CORE parts of the batch per core, each
# on one thread, taken in turn by a team of every core the process may use: where
# another process holds a core, the other thread takes the parts the held one would
# have done. Measured on the 2-core VM against oneDNN's own threads (quiet: both
# cores; beside one busy process: the free one), batch 128, ms: 5x5 1 -> 32, 5.1 -> 4.3
# quiet and 26.6 -> 8.0 loaded; 3x3 1 -> 32, 4.3 -> 2.7 and 18.6 -> 4.0.
# Other large passes gain as much alone (5x5 32 -> 64 at batch 128 beside a busy
# process: 18-27% faster, the same quiet), but not in a network: after a team of two,
# GNU OpenMP's idle thread spins on for a while beside the one-thread ops that follow
# and the busy process, and deep-MNIST's step at batch 128 came out 0.3% faster to 5%
# slower (1.3-4% faster with GOMP_SPINCOUNT=10000, which made the MNIST CNN's step 5-8%
# slower on a quiet machine).
PARTED_PER_CORE = 4
_TAG_NCHW = 5  # logical (N, C, H, W) dims laid out as they are
_TAG_NHWC = 22  # logical (N, C, H, W) dims laid out as N, H, W, C
_TAG_HWIO = 28  # logical (O, I, H, W) dims laid out as H, W, I, O
_FORWARD_TRAINING = 64
_DIRECT = 1


def convolution_steps(api, kind, x_shape, w_shape, out_hw, strides, pad_l, pad_r, count,
                      layout="NHWC"):
    """``(Steps, implementation name)`` of one pass of one convolution geometry on
    ``count`` threads (made in ``Api.making(count)``).

    ``kind`` is ``"forward"`` (reads the images ``a`` and the filter ``b``, writes the
    output), ``"input"`` (reads the output gradient and the filter, writes the
    images' gradient) or ``"filter"`` (reads the images and the output gradient,
    writes the filter's gradient); shapes are NHWC and HWIO. The filter array is HWIO;
    the image arrays are laid out as ``layout`` says (``"NHWC"`` or ``"NCHW"``: see
    ``nchw_native`` for how NCHW runs).

    Every pass lets oneDNN lay the filter out as its kernels want (blocked
    channels). With an HWIO filter the gradients fall back to im2col and a GEMM,
    about half as fast (measured: 5x5 32 -> 64, batch 128: 19.2 against 10.3 ms), and
    a forward pass with few input channels takes ``brgconv`` where its ``jit`` kernel
    is faster (5x5 1 -> 6 at 28x28, batch 128, two threads: 0.59 against 0.37 ms; 7x7
    3 -> 64 stride 2, batch 32: 3.5 against 3.1; with many channels both choose
    ``brgconv``, within 2%). The filter is then reordered into a buffer of the thread
    before the pass (``"forward"``, ``"input"``) or its gradient out of one after it
    (``"filter"``): 51,200 values for that filter.
    """
    n, h, w, c = x_shape
    kh, kw, _, co = w_shape
    tag = _TAG_NHWC if layout == "NHWC" else _TAG_NCHW
    user_src = api.memory_desc((n, c, h, w), tag)
    user_dst = api.memory_desc((n, co) + tuple(out_hw), tag)
    # NCHW but where oneDNN's own NCHW kernels are the faster: its choice of layout
    theirs = layout == "NCHW" and not nchw_native(kind, c, (kh, kw))
    src = api.memory_desc((n, c, h, w), onednn.TAG_ANY) if theirs else user_src
    dst = api.memory_desc((n, co) + tuple(out_hw), onednn.TAG_ANY) if theirs else user_dst
    hwio = api.memory_desc((co, c, kh, kw), _TAG_HWIO)
    weights = api.memory_desc((co, c, kh, kw), onednn.TAG_ANY)
    geometry = (Dims(*strides), Dims(0, 0), Dims(*pad_l), Dims(*pad_r))
    kernel = None
    if kind == "input" and layout != "NCHW":
        valid = tuple(pad_l) == tuple(pad_r) == (0, 0) and (kh, kw) != (1, 1) \
            and tuple(strides) == (1, 1)
        kernel = input_gradient_kernel(c, co, valid)
    primitive, implementation, scratch, (chosen, src, dst) = _described_pass(
        api, kind, (src, weights, dst), geometry, kernel, theirs)
    reorders = _Reorders(api)
    filter_role = reorders.placed(chosen, hwio, "out" if kind == "filter" else "b", "internal",
                                  kind != "filter")
    src_role = reorders.placed(src, user_src, "out" if kind == "input" else "a", "src",
                               kind != "input")
    dst_role = reorders.placed(dst, user_dst, {"forward": "out", "input": "a", "filter": "b"}[kind],
                               "dst", kind != "forward")
    args = {"forward": [(ARG_SRC, src, src_role), (ARG_WEIGHTS, chosen, filter_role),
                        (ARG_DST, dst, dst_role)],
            "input": [(ARG_DIFF_DST, dst, dst_role), (ARG_WEIGHTS, chosen, filter_role),
                      (ARG_DIFF_SRC, src, src_role)],
            "filter": [(ARG_SRC, src, src_role), (ARG_DIFF_DST, dst, dst_role),
                       (ARG_DIFF_WEIGHTS, chosen, filter_role)]}[kind]
    if scratch:
        args.append((ARG_SCRATCHPAD, scratch, "scratch"))
        reorders.buffers["scratch"] = api.lib.dnnl_memory_desc_get_size(scratch)
    steps = reorders.before + [(primitive, args)] + reorders.after
    return onednn.Steps(api, steps, reorders.buffers, count), implementation


def _described_pass(api, kind, descs, geometry, kernel, theirs):
    """``(primitive, implementation name, scratchpad desc, (filter, src, dst descs))`` of
    the ``kind`` pass over the memory descs ``(src, weights, dst)``: the filter's desc as
    oneDNN chose it, and the images' too where ``theirs``. The input gradient takes the
    implementation named by ``kernel`` where there is one (``_preferred``)."""
    src, weights, dst = descs
    attr = api.user_scratchpad()
    forward, pd = P(), P()
    try:
        api.check("dnnl_convolution_forward_primitive_desc_create", ctypes.byref(forward),
                  api.engine, _FORWARD_TRAINING, _DIRECT, src, weights, None, dst, *geometry,
                  attr)
        if kind == "forward":
            pd, forward = forward, P()
        elif kind == "input":
            def backward_data():
                made = P()
                api.check("dnnl_convolution_backward_data_primitive_desc_create",
                          ctypes.byref(made), api.engine, _DIRECT, src, weights, dst, *geometry,
                          forward, attr)
                return made

            pd = _preferred(api, backward_data, kernel)
        else:
            api.check("dnnl_convolution_backward_weights_primitive_desc_create",
                      ctypes.byref(pd), api.engine, _DIRECT, src, weights, None, dst,
                      *geometry, forward, attr)
        primitive = api.primitive(pd)
        implementation, scratch = api.described(pd)

        def chosen_md(arg):
            return api.clone(api.lib.dnnl_primitive_desc_query_md(
                pd, onednn.QUERY_EXEC_ARG_MD, arg))

        chosen = chosen_md(ARG_DIFF_WEIGHTS if kind == "filter" else ARG_WEIGHTS)
        if theirs:
            src = chosen_md(ARG_DIFF_SRC if kind == "input" else ARG_SRC)
            dst = chosen_md(ARG_DST if kind == "forward" else ARG_DIFF_DST)
    finally:
        for desc in (forward, pd):
            if desc:
                api.lib.dnnl_primitive_desc_destroy(desc)
        api.lib.dnnl_primitive_attr_destroy(attr)
    return primitive, implementation, scratch, (chosen, src, dst)


class _Reorders:
    """The reorders around a pass, and the buffers of the thread they fill."""

    def __init__(self, api):
        self.api = api
        self.before, self.after, self.buffers = [], [], {}

    def placed(self, desc, user, role, internal, read):
        """The role ``desc``'s argument takes: the call's array where ``desc`` is its
        layout ``user``, else a buffer of the thread (``internal``) that a reorder
        fills from it before the pass (``read``) or copies into it after."""
        api = self.api
        if api.lib.dnnl_memory_desc_equal(desc, user):
            return role
        self.buffers[internal] = api.lib.dnnl_memory_desc_get_size(desc)
        if read:
            self.before.append((api.reorder(user, desc), [(ARG_SRC, user, role),
                                                          (ARG_DST, desc, internal)]))
        else:
            self.after.append((api.reorder(desc, user), [(ARG_SRC, desc, internal),
                                                         (ARG_DST, user, role)]))
        return internal


def nchw_native(kind, c, ksize):
    """Whether a pass over NCHW images runs on them as they are (``x64:gemm:jit``, a
    GEMM per image) rather than in oneDNN's own (blocked) layout, reordered into it
    and out of it as torch runs NCHW. Measured on the 2-core AVX-512 VM against
    today's NHWC path between two NHWC <-> NCHW reorders, two threads, ms ratio for
    (forward, input gradient, filter gradient):

    - 1x1 64 -> 128, 16x16, batch 64: as they are 0.51 0.54 0.62; blocked 0.79 0.84 0.73
    - 5x5 1 -> 32, 28x28, batch 128: as they are 0.41 0.29 2.17; blocked 0.30 2.04 0.75
    - 3x3 3 -> 64, 32x32, batch 64: 0.64 0.42 1.14; blocked 0.75 1.17 0.38
    - 7x7 3 -> 64 stride 2, batch 32: 1.37 0.65 2.23; blocked 0.96 2.23 0.73
    - 5x5 32 -> 64, 3x3 64 -> 64 and 64 -> 128 stride 2: as they are 1.04-1.90;
      blocked 0.77-0.97

    So: 1x1 filters, and the input gradient of few input channels (a forward pass
    that writes them, which the blocked kernels vectorize over) run as they are."""
    return tuple(ksize) == (1, 1) or (kind == "input" and c < 16)


def input_gradient_kernel(c, co, valid=False):
    """The oneDNN implementation (a part of its name) the input gradient of a
    convolution from ``c`` to ``co`` channels takes (``valid``: unpadded, stride 1, a
    filter larger than 1x1), or None for oneDNN's first choice.

    oneDNN's first choice (``brg_fwd``, a forward convolution over the output gradient)
    vectorizes over the ``c`` channels it writes: with few of them, its ``jit`` kernel,
    or im2col and a GEMM (``gemm``, where the output gradient has many channels) is
    faster. Measured on the 2-core AVX-512 VM, batch 128, one thread: 6 -> 16 channels,
    5x5 (LeNet-5's second layer), 2.9 ms against 1.6 (``jit``); 12 -> 16, 2.1 against
    1.4; 1 -> 32, 23.0 against 9.4 (``gemm``); 3 -> 64, 3x3 (batch 64), 12.6 against
    5.6; 8 -> 64, 12.5 against 10.4. With 16 channels or more they are within 5%; with
    16 or fewer in the output gradient, ``gemm`` is the slowest. A VALID convolution's
    input gradient is a forward pass over the output gradient padded by the filter's
    size less one: there too ``jit`` is faster, 0.72-0.97 of ``brg_fwd``'s time (5x5
    32 -> 64 at 14x14, batch 128: 6.55 against 7.15 ms; 3x3 64 -> 64, 16 -> 32, 64 ->
    128 alike), and slower with SAME padding (10.9 against 10.1) or stride 2 (1.00-1.03
    of its time). A fixed rule, not a timing, so that the bits of a pass never depend
    on the machine's load.
    """
    if c >= 16:
        return "jit:" if valid else None
    return "gemm" if co >= 32 else "jit:"


def _preferred(api, make, kernel):
    """A primitive descriptor from ``make()`` moved on to the first implementation whose
    name contains ``kernel``; oneDNN's first choice where none does (or ``kernel`` is
    None)."""
    pd = make()
    try:
        while kernel is not None and kernel not in api.implementation(pd):
            if api.lib.dnnl_primitive_desc_next_impl(pd) != onednn.OK:
                api.lib.dnnl_primitive_desc_destroy(pd)
                return make()  # walked past the end: back to the first choice
        return pd
    except BaseException:
        api.lib.dnnl_primitive_desc_destroy(pd)
        raise


@functools.lru_cache(maxsize=256)
def convolution(kind, x_shape, w_shape, out_hw, strides, pad_l, pad_r, count, layout="NHWC"):
    """The kept ``(Steps, implementation)`` of this pass and geometry on ``count``
    threads with images in ``layout`` (``convolution_steps``), or None where oneDNN is
    not there or has no implementation of it."""
    api = onednn.api()
    if api is None:
        return None
    try:
        with api.making(count):
            return convolution_steps(api, kind, x_shape, w_shape, out_hw, strides, pad_l,
                                     pad_r, count, layout)
    except onednn.OneDNNError as e:
        _log.debug("oneDNN has no %s convolution for %s * %s: %s", kind, x_shape, w_shape, e)
        return None


def convolve(kind, a, b, out, x_shape, w_shape, out_hw, strides, pad_l, pad_r, layout="NHWC"):
    """``out`` after the ``kind`` pass (``convolution_steps``) of float32 ``a`` and
    ``b``, or None (nothing written) where this path does not apply. ``x_shape`` is
    NHWC whatever the arrays' ``layout``."""
    if out.dtype != np.float32 or a.dtype != np.float32 or b.dtype != np.float32 \
            or 0 in x_shape or 0 in w_shape:
        return None
    api = onednn.api()
    if api is None:
        return None
    if tuple(w_shape[:2]) == (1, 1) and tuple(strides) != (1, 1):
        if tuple(pad_l) != (0, 0) or tuple(pad_r) != (0, 0):
            return None
        return _strided_1x1(kind, a, b, out, x_shape, w_shape, out_hw, strides, layout)
    geometry = (tuple(x_shape), tuple(w_shape), tuple(out_hw), tuple(strides), tuple(pad_l),
                tuple(pad_r))
    cores = threads.cores()
    if _parted(kind, x_shape, w_shape, cores):
        # the bits of the whole pass on any team: each image is computed on its own
        key = ("parts", kind) + geometry + (PARTED_PER_CORE * cores, layout)
        found = None if key in _dropped else batch_parts(*key[1:])
        run = None if found is None else lambda x, g, o: found(x, g, o, cores)
    elif kind == "filter" and x_shape[0] >= cores > 1 and onednn.parts_available():
        # fixed parts of the batch, as many as the cores the process may use, each on
        # one thread, by a team as large as the load allows: the same bits on any team
        # (a smaller batch takes oneDNN's threads below: a part per image would leave
        # cores idle)
        parts = cores * PARTS_PER_CORE
        key, count = ("parts", "filter") + geometry + (parts, layout), api.thread_count()
        found = None if key in _dropped else batch_parts(*key[1:])
        run = None if found is None else lambda x, g, o: found(x, g, o, count)
    else:
        # oneDNN's own threaded filter gradient sums the images in one part per thread:
        # its bits depend on the count, so it takes the cores the process may use
        count = cores if kind == "filter" else api.thread_count()
        key = (kind,) + geometry + (count, layout)
        found = None if key in _dropped else convolution(*key)
        run = None if found is None else found[0]
    if run is None:
        return None
    try:
        return run(np.ascontiguousarray(a), np.ascontiguousarray(b), out)
    except onednn.OneDNNError as e:  # never trusted again; im2col writes all of out
        _log.warning("%s convolution %s dropped: %s", kind, key[1:], e)
        _dropped.add(key)
        return None


def _strided_1x1(kind, a, b, out, x_shape, w_shape, out_hw, strides, layout):
    """A 1x1 convolution at ``strides`` (no padding: a 1x1 window never pads) as the
    unit-stride one of the images taken at those strides, which gradflow takes itself.
    oneDNN 3.2's own way with a strided 1x1 filter copies the images at the stride
    into its scratch (its "reduce to unit stride" driver), and on AVX2 its filter
    gradient wrote past that scratch: a wrong gradient at batch 1 on two threads
    (1x1 4 -> 6, 10x10, stride 2: off by 15.5 of 99.8) and a corrupted heap at batch 2.
    Never asking oneDNN for a strided 1x1 pass keeps that path out on every CPU. The
    input gradient is zero off the strided positions."""
    n, _, _, c = x_shape
    sh, sw = strides
    nhwc = layout == "NHWC"
    at = (slice(None), slice(None, None, sh), slice(None, None, sw))
    at = at if nhwc else (at[0], slice(None)) + at[1:]
    unit = (n,) + tuple(out_hw) + (c,)
    args = ((1, 1), (0, 0), (0, 0))
    if kind != "input":  # the images are ``a``
        taken = np.ascontiguousarray(a[at])
        return convolve(kind, taken, b, out, unit, w_shape, out_hw, *args, layout=layout)
    part = np.empty(out[at].shape, np.float32)
    if convolve(kind, a, b, part, unit, w_shape, out_hw, *args, layout=layout) is None:
        return None
    out[...] = 0
    out[at] = part
    return out


def _parted(kind, x_shape, w_shape, cores):
    """Whether a pass runs in ``PARTED_PER_CORE`` parts per core (see there)."""
    return kind == "input" and input_gradient_kernel(x_shape[3], w_shape[3]) == "gemm" \
        and cores > 1 and x_shape[0] >= PARTED_PER_CORE * cores and onednn.parts_available()


class BatchParts:
    """One pass over fixed parts of the batch (``bounds``), each part on one thread
    (``onednn.Parts``), whatever the team that takes them. The forward pass and the
    input gradient write their parts' rows of ``out``: the bits of the whole. The
    filter gradient (``summed``) adds the parts' gradients in order: the bits depend
    on the parts, never on the team. Part 0 writes into ``out``, the others into
    arrays of the calling thread."""

    def __init__(self, api, bounds, parts, summed):
        self.bounds, self.team, self.summed = bounds, onednn.Parts(api, parts), summed
        self.local = threading.local()

    def __call__(self, a, b, out, threads_):
        spans = list(zip(self.bounds, self.bounds[1:]))
        if not self.summed:
            self.team([(a[lo:hi], b, out[lo:hi]) for lo, hi in spans],
                      min(threads_, len(spans)))
            return out
        sums = getattr(self.local, "sums", None)
        if sums is None:  # out's shape is the geometry's filter shape
            sums = self.local.sums = [np.empty(out.shape, np.float32)
                                      for _ in self.bounds[2:]]
        outs = [out] + sums
        self.team([(a[lo:hi], b[lo:hi], o) for (lo, hi), o in zip(spans, outs)],
                  min(threads_, len(outs)))
        for part in sums:
            np.add(out, part, out=out)
        return out


@functools.lru_cache(maxsize=256)
def batch_parts(kind, x_shape, w_shape, out_hw, strides, pad_l, pad_r, parts, layout="NHWC"):
    """The kept ``BatchParts`` of this pass and geometry (images in ``layout``) in
    ``parts`` parts (fewer for a smaller batch), or None where oneDNN has no one-thread
    primitive for a part."""
    n = x_shape[0]
    parts = max(1, min(parts, n))
    bounds = [n * k // parts for k in range(parts + 1)]
    steps = []
    for lo, hi in zip(bounds, bounds[1:]):
        found = convolution(kind, (hi - lo,) + tuple(x_shape[1:]), w_shape, out_hw,
                            strides, pad_l, pad_r, 1, layout)
        if found is None:
            return None
        steps.append(found[0])
    return BatchParts(onednn.api(), bounds, steps, summed=kind == "filter")


# geometries whose primitives misbehaved (``convolve``)
_dropped = set()


@functools.lru_cache(maxsize=64)
def permutation(shape, perm, count):
    """The kept ``Steps`` copying a C-ordered float32 array of ``shape`` into the
    C-ordered ``out`` of ``shape`` permuted by ``perm`` (oneDNN's reorder: about 5x
    NumPy's strided copy for NCHW <-> NHWC), or None where oneDNN is not there."""
    api = onednn.api()
    if api is None:
        return None
    src_strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    out_shape = [shape[p] for p in perm]
    out_strides = [int(np.prod(out_shape[k + 1:])) for k in range(len(shape))]
    dst_strides = [0] * len(shape)
    for k, p in enumerate(perm):
        dst_strides[p] = out_strides[k]
    try:
        with api.making(count):
            src = api.memory_desc(shape, strides=src_strides)
            dst = api.memory_desc(shape, strides=dst_strides)
            steps = [(api.reorder(src, dst), [(ARG_SRC, src, "a"), (ARG_DST, dst, "out")])]
            return onednn.Steps(api, steps, {}, count)
    except onednn.OneDNNError as e:
        _log.debug("oneDNN has no reorder for %s by %s: %s", shape, perm, e)
        return None


def permute(a, perm, out):
    """``out`` (C-ordered) holding ``a.transpose(perm)``, or None (nothing written)
    where this path does not apply. A copy: the same bits on any thread count."""
    if a.dtype != np.float32 or out.dtype != np.float32 or a.size == 0 \
            or not a.flags.c_contiguous or not out.flags.c_contiguous:
        return None
    api = onednn.api()
    if api is None:
        return None
    steps = permutation(tuple(a.shape), tuple(perm), api.thread_count())
    return None if steps is None else steps(a, a, out)
