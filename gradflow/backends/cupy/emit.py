"""How the CuPy backend runs a schedule: ops writing into the plan's buffers, fused
groups as generated CUDA kernels, matmuls as planned cuBLASLt products, the whole run
captured as one CUDA graph.

- **Buffers.** CuPy's ufuncs write into ``out=`` as NumPy's do, so the executor plans
  the same arena on the device (``CupyBackend.accepts_out``/``empty``).
- **Fused groups** become one ``cupy.ElementwiseKernel`` each, printed from the
  members' scalar expressions (``gradflow.backends.cuda.kernels``, whose text the
  tests compile with the host C++ compiler); a group the printer declines calls its
  members in turn.
- **Draws and row sums inside fused kernels.** The backend's ``kernel_passes`` make a
  uniform draw that only a fused node reads (dropout's), and a last-axis sum that only
  a fused node reads (the softmax cross-entropy's gradient), members of that node; it
  is then one ``RawKernel`` that draws from the draw's Philox stream
  (``cuda_kernels.print_draw_kernel``) or sums each row and writes it
  (``print_row_kernel``). Where the printer declines, the members run in turn.
- **LSTM steps** are one kernel each way, the recurrent product inside
  (``gradflow.backends.cupy.rnn``), and **max pooling** and its
  gradients one kernel each (``gradflow.backends.cuda.pool``; one thread per window
  where the windows tile the images).
- **Bias gradients** (``unbroadcast`` over leading axes) are column sums, one kernel
  per pass (``gradflow.backends.cuda.columns``): CuPy's ``sum`` took most of the CNN.
- **log_softmax** over rows of up to 4,096 values: one row kernel (``cuda_rows``).
- **Matmuls** (``gradflow.backends.cupy.matmul``) of float32/float64 matrices, or
  batches of one shape, are planned nvmath-python products, FP32 unless the session
  allows TF32.
  **Convolutions** are im2col into kept buffers and one such product each
  (``gradflow.backends.cupy.im2col_conv``; CuPy 14 has no cuDNN), the column matrix and
  the column gradient's sum onto the pixels one kernel each (``CudaWindows``), with
  32-bit indices where the arrays allow (``cuda_im2col.index_kind``), as pooling.
  CuPy 14 refuses cuBLAS calls during stream capture, so without nvmath-python
  matmuls go through ``cupy.matmul`` and plans run uncaptured.
- **Capture** (``CudaGraphCapturer``): the run is captured on the session's stream;
  the memory the capture allocates comes from CuPy's allocator (where the warm runs
  had theirs) and is kept with the graph: a value that is not in the arena keeps its
  address on every replay. Host work inside a run (an id check reading a value back)
  fails the capture; the plan runs uncaptured, saying why (``gradflow.capture``).
  What the GPU runs found: ``docs/guide/performance.md``.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from gradflow.backends.capture import NotCapturable
from gradflow.backends.cuda import columns as cuda_columns
from gradflow.backends.cuda import device_random
from gradflow.backends.cuda import im2col as cuda_im2col
from gradflow.backends.cuda import pool as cuda_pool
from gradflow.backends.cuda import rows as cuda_rows
from gradflow.backends.cuda.kernels import (
    OPTIONS,
    print_draw_kernel,
    print_kernel,
    print_row_kernel,
)
from gradflow.backends.cupy import im2col_conv
from gradflow.backends.cupy.matmul import planned_matmul
from gradflow.backends.cupy.nvmath_matmul import unavailable_reason as nvmath_missing
from gradflow.backends.cupy.random import THREADS
from gradflow.backends.kernel_text import program_inputs
from gradflow.prim.registry import REGISTRY

_log = logging.getLogger("gradflow.cupy")


def fused_kernel(program, fns, cupy, in_turn):
    """The callable of a fused node: one generated ElementwiseKernel (a ``RawKernel`` that
    draws, where the program has random members), or its members' functions ``fns`` in
    turn (``in_turn``) where the printer declines."""
    shape = program.members[program.outputs[-1]].shape
    known = shape is not None and None not in tuple(shape)
    if any(m.opdef.kind == "random" for m in program.members):
        drawn = print_draw_kernel(program, shape) if known else None
        if drawn is None:
            return in_turn(program, fns)
        stream = fns[drawn.draws[0]].stream
        return raw_kernel(drawn, program, cupy, device_random.grid_for(drawn.size, THREADS),
                          THREADS, (stream.seed, stream.state), lambda: in_turn(program, fns))
    if any(m.opdef.name == "reduce_sum" for m in program.members):
        rows = print_row_kernel(program, shape) if known else None
        if rows is None:
            return in_turn(program, fns)
        count = rows.size // rows.columns
        return raw_kernel(rows, program, cupy, max(1, min(1024, (count + 127) // 128)), 128,
                          (), lambda: in_turn(program, fns))
    printed = print_kernel(program, shape) if known else None
    if printed is None:
        return in_turn(program, fns)
    kernel = cupy.ElementwiseKernel(printed.in_params, printed.out_params, printed.operation,
                                    printed.name, preamble=printed.preamble,
                                    options=printed.options)
    count = len(program.outputs)

    def run(*inputs, out=None):
        outs = (out,) if count == 1 else (out or (None,) * count)
        if any(o is None for o in outs):
            made = kernel(*inputs)
            made = (made,) if count == 1 else made
            for dest, value in zip(outs, made):
                if dest is not None:
                    cupy.copyto(dest, value)
            made = tuple(v if d is None else d for d, v in zip(outs, made))
            return made[0] if count == 1 else made
        kernel(*inputs, *outs)  # each thread reads its elements before writing them
        return out

    run.accepts_out = True
    run.elementwise_out = True
    return run


def raw_kernel(printed, program, cupy, blocks, threads, lead, fallback):
    """The callable of a fused node printed as one ``RawKernel`` (a ``DrawKernel`` or a
    ``RowKernel``): arguments ``(*lead, n, C, x..., y...)``, into ``out``. Compiled
    here, when the plan is; text NVRTC rejects (no GPU has run these kernels yet) says
    why once and gives ``fallback()``, the members in turn."""
    kernel = cupy.RawKernel(printed.source, printed.name, options=printed.options)
    try:
        getattr(kernel, "compile", lambda: kernel.kernel)()  # .kernel compiles it too
    except Exception as err:  # noqa: BLE001 (NVRTC's and the driver's errors alike)
        _log.warning("fused kernel %s did not compile, its ops run in turn: %s (%s)",
                     printed.name, err, program.describe())
        return fallback()
    outputs = [program.members[k] for k in program.outputs]
    inputs = program_inputs(program)
    shape = tuple(outputs[-1].shape)
    sizes = (np.int64(printed.size), np.int64(printed.columns))

    def run(*values, out=None):
        outs = (out,) if len(outputs) == 1 else (out or (None,) * len(outputs))
        outs = tuple(cupy.empty(shape, o.dtype.as_numpy_dtype) if d is None else d
                     for d, o in zip(outs, outputs))
        args = [cupy.ascontiguousarray(cupy.asarray(v, dtype=i.dtype.as_numpy_dtype))
                for v, i in zip(values, inputs)]  # indexed as flat arrays by kind
        kernel((blocks,), (threads,), (*lead, *sizes, *args, *outs))
        return outs[0] if len(outputs) == 1 else outs

    run.accepts_out = True
    run.elementwise_out = True
    return run


def lower_log_softmax(xp, axis):
    """``log_softmax`` on CuPy: one row kernel (``gradflow.backends.cuda.rows``) over the
    last axis of C-ordered float32/float64 rows of at most ``MAX_COLUMNS``, into
    ``out``; anything else through the op's own CuPy functions."""
    import cupy

    impl = REGISTRY["log_softmax"].impl
    kernels = {}

    def log_softmax(x, out=None):
        cols = x.shape[-1] if x.ndim else 0
        kernel = None
        if axis in (-1, x.ndim - 1) and x.size and 0 < cols <= cuda_rows.MAX_COLUMNS \
                and x.flags.c_contiguous and (out is None or out.flags.c_contiguous):
            kernel = kernels.get(x.dtype.name)
            if kernel is None:
                printed = cuda_rows.log_softmax_source(x.dtype.name)
                kernel = kernels[x.dtype.name] = False if printed is None else \
                    cupy.RawKernel(printed[0], printed[1], options=OPTIONS)
        if not kernel:
            y = impl(xp, x, axis)
            if out is None:
                return y
            cupy.copyto(out, y)
            return out
        y = cupy.empty_like(x) if out is None else out
        rows = x.size // cols
        kernel((max(1, min(1024, (rows + 127) // 128)),), (128,),
               (x, y, np.int64(rows), np.int64(cols)))
        return y

    log_softmax.accepts_out = True  # as the NumPy lowering: out may be x (row by row)
    log_softmax.reads_whole_inputs = False
    log_softmax.elementwise_out = False
    return log_softmax


def lower_concat(xp, axis):
    """``concat`` on CuPy: one copy into ``out`` per part. CuPy's own concatenation of
    many parts sends their addresses from the host, which a capture refuses (an
    LSTM's outputs, concatenated, stopped its step's capture on an H100)."""
    def concat(*parts, out=None):
        at = axis % parts[0].ndim
        if out is None:
            shape = list(parts[0].shape)
            shape[at] = sum(p.shape[at] for p in parts)
            out = xp.empty(tuple(shape), dtype=xp.result_type(*parts))
        start, lead = 0, (slice(None),) * at
        for part in parts:
            stop = start + part.shape[at]
            out[lead + (slice(start, stop),)] = part
            start = stop
        return out

    concat.accepts_out = True
    concat.reads_whole_inputs = True  # out is never one of the parts
    return concat


class _Compiled:
    """The kernels ``sources(dtype name)`` prints (``{kind: (text, name)}``, or None),
    compiled by NVRTC on first use per dtype, or per dtype and sizes where ``get`` is
    given ``fixed`` (``sources(dtype name, fixed)``: text specialized to them).
    ``get`` is None for a dtype they do not take, or text NVRTC rejects (said on
    ``gradflow.cupy``, with ``instead``: what runs in their place)."""

    def __init__(self, sources, instead):
        self.sources, self.instead, self.made = sources, instead, {}

    def get(self, dtype, fixed=None):
        import cupy

        name = np.dtype(dtype).name
        key = name if fixed is None else (name, tuple(int(v) for v in fixed))
        if key not in self.made:
            printed = self.sources(name) if fixed is None else self.sources(name, key[1])
            kernels = None
            if printed is not None:
                try:
                    kernels = {k: cupy.RawKernel(text, entry, options=OPTIONS)
                               for k, (text, entry) in printed.items()}
                    for kernel in kernels.values():
                        getattr(kernel, "compile", lambda k=kernel: k.kernel)()
                except Exception as err:  # noqa: BLE001 (NVRTC's and the driver's errors)
                    _log.warning("kernels did not compile, %s: %s", self.instead, err)
                    kernels = None
            self.made[key] = kernels
        return self.made[key]


_POOL_KERNELS = _Compiled(cuda_pool.pool_sources, "max pooling runs cell by cell")
_WINDOW_KERNELS = _Compiled(cuda_im2col.window_sources, "convolutions copy tap by tap")
_COLUMN_KERNELS = _Compiled(cuda_columns.column_sum_source,
                            "gradients are summed to their inputs' shapes by CuPy's sum")


def _grid(total):
    return (max(1, min(65535, -(-total // THREADS))),), (THREADS,)


def _outputs(out, shapes, dtype):
    import cupy

    out = out or (None,) * len(shapes)
    return tuple(cupy.empty(s, dtype) if o is None else o for o, s in zip(out, shapes))


def _contiguous(arrays):
    return all(x.flags.c_contiguous for x in arrays)


def _into(out, values):
    """The values of a multi-output op computed without a kernel, copied into ``out``'s
    arrays where it gives them (a tuple, one array or None per output)."""
    return tuple(v if o is None else _copied(o, v) for o, v in zip(out or (None,) * len(values),
                                                                   values))


def _copied(out, value):
    import cupy

    cupy.copyto(out, value)
    return out


class CudaWindows:
    """The window copies of ``im2col_conv`` as one kernel each
    (``gradflow.backends.cuda.im2col``); a dtype they do not take, or kernels that did
    not compile, decline (False) and the lowering copies tap by tap."""

    def _launch(self, kind, source, result, geo):
        import cupy

        kernels = _WINDOW_KERNELS.get(source.dtype, geo.sizes()[1:])
        if kernels is None or not result.flags.c_contiguous:
            return False
        kernel = kernels[kind + cuda_im2col.index_kind(source, result)]
        kernel(*_grid(result.size), (cupy.ascontiguousarray(source), result,
                                     *(np.int64(v) for v in geo.sizes())))
        return True

    def columns(self, x, cols, geo):
        return self._launch("columns", x, cols, geo)

    def pixels(self, cells, out, geo):
        return self._launch("pixels", cells, out, geo)


def _pool_lowering(name, grad):
    impl = REGISTRY[name].impl

    def lower(xp, ksize, strides, padding):
        relu = np.int64(name == "max_pool_relu_grad")

        def run(*inputs, out=None):
            x = inputs[-1]
            geo = im2col_conv.geometry(tuple(x.shape), ksize, strides, padding) \
                if x.ndim == 4 else None
            kernels = _POOL_KERNELS.get(x.dtype, geo.sizes()[1:]) if geo else None
            if kernels is None or any(v.dtype != x.dtype or v.ndim != 4 for v in inputs) \
                    or (out is not None and not out.flags.c_contiguous):
                value = impl(xp, *inputs, ksize, strides, padding)
                return value if out is None else _copied(out, value)
            shape = tuple(x.shape) if grad else (geo.n, geo.oh, geo.ow, geo.c)
            if out is None:
                out = xp.empty(shape, dtype=x.dtype)
            ninf = x.dtype.type(-np.inf)
            sizes = tuple(np.int64(v) for v in geo.sizes())
            args = [a if a.flags.c_contiguous else a.copy() for a in inputs]
            extra = (ninf, relu) if grad else (ninf,)
            # a tiled gradient runs over the windows (g), the others over their output
            tiled = grad and cuda_pool.tiles(geo)
            kind = ("grad_tiled" if tiled else "grad" if grad else "pool") \
                + cuda_im2col.index_kind(*args, out)
            kernels[kind](*_grid(args[0].size if tiled else out.size),
                          (*args, out, *sizes, *extra))
            return out

        run.accepts_out = True
        run.reads_whole_inputs = True
        return run

    return lower


def lower_unbroadcast(xp):
    """``unbroadcast`` (a gradient summed to its input's shape: a bias gradient) on CuPy:
    where only leading axes are summed away, column sums by one kernel per pass
    (``gradflow.backends.cuda.columns``); else the op's Array API function."""
    impl = REGISTRY["unbroadcast"].impl

    def unbroadcast(g, x, out=None):
        kept = tuple(x.shape)
        while kept and kept[0] == 1:
            kept = kept[1:]
        cols = math.prod(kept)
        kernels = _COLUMN_KERNELS.get(g.dtype)
        if kernels is None or tuple(g.shape[g.ndim - len(kept):]) != kept or g.ndim == 0 \
                or g.size == cols or cols == 0 or not g.flags.c_contiguous \
                or (out is not None and not out.flags.c_contiguous):
            value = impl(xp, g, x)
            return value if out is None else _copied(out, value)
        if out is None:
            out = xp.empty(tuple(x.shape), dtype=g.dtype)
        counts = cuda_columns.passes(g.size // cols)
        source = g
        for rows, parts in zip(counts, counts[1:]):
            target = out if parts == 1 else xp.empty((parts, cols), dtype=g.dtype)
            kernels["sum"](*_grid(parts * cols), (source, target, np.int64(rows),
                                                  np.int64(cols),
                                                  np.int64(cuda_columns.PART_ROWS)))
            source = target
        return out

    unbroadcast.accepts_out = True
    unbroadcast.reads_whole_inputs = True
    return unbroadcast


lower_max_pool = _pool_lowering("max_pool", grad=False)
lower_max_pool_grad = _pool_lowering("max_pool_grad", grad=True)
lower_max_pool_relu_grad = _pool_lowering("max_pool_relu_grad", grad=True)


def conv_lowerings(backend):
    """``conv2d`` and its gradients on CuPy: im2col into kept buffers by one kernel
    (``CudaWindows``), products through ``planned_matmul``
    (``gradflow.backends.cupy.im2col_conv``), each node its own plans."""
    windows = CudaWindows()

    def of(op):
        def lower(xp, **attrs):
            return im2col_conv.conv_lowerings(backend.empty, planned_matmul(backend),
                                              windows)[op](xp, **attrs)
        return lower

    return {op: of(op) for op in im2col_conv.OPS}


class CudaGraphCapturer:
    """Captures a plan's run on ``stream`` as one CUDA graph (``gradflow.capture``)."""

    executes = False
    checks_feeds_first = True

    def __init__(self, stream):
        self.stream = stream

    def check(self, schedule):
        if not schedule.capturable:
            raise NotCapturable(schedule.replay_blocker)
        missing = nvmath_missing()
        if missing is not None and any(n.opdef.name == "matmul" for n in schedule.order):
            raise NotCapturable(f"its matmuls need nvmath-python under capture ({missing})")

    def capture(self, plan, run):
        import cupy

        # What the run allocates comes from the usual allocator, so that a value the warm
        # runs placed at some address is placed there again (a matmul is planned on its
        # buffers' addresses), and is kept with the graph, never handed out again.
        allocate, kept = cupy.cuda.get_allocator(), []

        def malloc(size):
            memory = allocate(size)
            kept.append(memory)
            return memory

        stream = self.stream
        with stream, cupy.cuda.using_allocator(malloc):
            stream.begin_capture()
            try:
                values = run()
            except BaseException:
                try:  # an invalidated capture still has to end; its error is not the cause
                    stream.end_capture()
                except Exception:
                    pass
                raise
            graph = stream.end_capture()

        def replay():
            graph.launch(stream)
            return values

        replay.keep = (graph, kept, values)
        return values, replay, False
