"""The CuPy lowering of the fused attention pair through cuDNN's fused attention (SDPA).

``attention_fwd``/``attention_bwd`` (``gradflow/prim/attention.py``, made by
``gradflow/passes/attention.py``) of float16 (and bfloat16, where the dtype exists)
inputs run as one cuDNN SDPA graph each way, through the Python frontend
(``import cudnn``, nvidia-cudnn-frontend 1.16; the calls that worked on the H200 are
``benchmarks/cudnn_sdpa_probe.py``'s). The forward saves the rows' log-sum-exp
(``aux="stats"``, float32 [b, h, sq, 1]), which the backward reads with q, k, v, o
and the output's gradient. Other dtypes (float32, float64: the pass saves the
probabilities there) run the primitive's Array API function on CuPy: batched
products and the softmax, the unfused path's own operations.

What this module does around the cuDNN call, and what ``tests/test_cupy_attention_on_numpy``
checks on NumPy with the call replaced by ``ReferenceSdpa`` (the unfused formulas reading
the same memory through the same dims and strides):

- **layouts**: q, k, v, o and the gradients are passed as they lie, [b, h, s, d] dims with
  their own strides in elements (BERT's heads are a transposed view, [b, s, h, d] in
  memory: cuDNN reads it in place); an operand whose last axis is not unit-stride is
  copied into a kept array first;
- **the bias** (BERT's [b, 1, 1, sk] adder) is broadcast into a kept [b, 1, sq, sk]
  array (cuDNN broadcasts the batch and head axes of a bias, not its rows);
- **scale**, **causal** (GPT-2's mask: top-left diagonal alignment where sq == sk,
  bottom-right otherwise), and **dropout** as cuDNN's custom mask form ``(mask,
  scale)`` forward and ``(mask, scale, scale_inv)`` backward: the plan's own mask
  (``floor(keep + u)``), ``1 / keep`` and ``keep`` in kept device arrays, so the same
  draw is used (the rounding of ``p * mask / keep`` differs
  from the unfused ``p / keep * mask`` in the last bit of the half type);
- **one graph per layout**, built on the first call (a plan's first run, before any
  capture), with its workspace allocated once; every later call, captured or not,
  only executes it with the arrays' addresses on the current stream. Outputs go into
  the plan's buffers (``out``) where it gives them, so a captured replay writes where
  the capture did. A graph cuDNN refuses (a shape or mask it does not support) is said
  once on the ``gradflow.cupy`` logger and that node runs the Array API function.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
import sys
import threading
from dataclasses import dataclass

from gradflow.prim.attention import backward, log_sum_exp, split_extra
from gradflow.prim.registry import REGISTRY

_log = logging.getLogger("gradflow.cupy")

# cuDNN's data type of each half dtype the fused graphs take
HALF = {"float16": "HALF", "bfloat16": "BFLOAT16"}
FORWARD_READS = ("q", "k", "v")
BACKWARD_READS = ("q", "k", "v", "o", "dO", "stats")


@dataclass(frozen=True)
class SdpaSpec:
    """One cuDNN SDPA graph: ``kind`` ("forward" or "backward"), the io dtype's name,
    ``tensors`` as ``(name, dims, strides in elements, dtype name)`` for every tensor it
    reads and writes, the scale, the causal flag, and the dropout's presence."""

    kind: str
    dtype: str
    tensors: tuple
    scale: float
    causal: bool
    dropout: bool

    def tensor(self, name):
        return next(t for t in self.tensors if t[0] == name)


def layout(x):
    """``(dims, strides in elements)`` of the array ``x``."""
    return tuple(int(d) for d in x.shape), tuple(int(s) // x.itemsize for s in x.strides)


def _dtype_name(x):
    return getattr(x.dtype, "name", str(x.dtype))


def spec_of(kind, arrays, scale, causal):
    """The ``SdpaSpec`` of a call reading and writing ``arrays`` (name -> array)."""
    tensors = tuple((name,) + layout(x) + (_dtype_name(x),) for name, x in arrays.items())
    return SdpaSpec(kind, _dtype_name(arrays["q"]), tensors, float(scale), bool(causal),
                    "mask" in arrays)


# -- the two runners: cuDNN's graph, and the reference the NumPy tests put in its place --


class ReferenceSdpa:
    """What the cuDNN graph of ``spec`` computes, written out with the primitive's own
    formulas in float32 (cuDNN's compute type): it reads and writes the arrays through
    the spec's dims and strides (``as_strided``), as cuDNN reads the addresses it is
    given, so a wrong layout gives wrong numbers here too."""

    def __init__(self, spec, xp):
        self.spec, self.xp = spec, xp

    def _view(self, name, array):
        _, dims, strides, _ = self.spec.tensor(name)
        strided = _library(array).lib.stride_tricks.as_strided
        return strided(array, dims, tuple(s * array.itemsize for s in strides))

    def execute(self, arrays):
        xp, spec = self.xp, self.spec
        f32 = {n: self._view(n, a).astype(xp.float32) for n, a in arrays.items()
               if spec.kind == "forward" or n not in ("dq", "dk", "dv")}
        q, k, v = f32["q"], f32["k"], f32["v"]
        s = xp.matmul(q, xp.matrix_transpose(k)) * spec.scale
        if "bias" in f32:
            s = s + f32["bias"]
        if spec.causal:
            sq, sk = s.shape[-2:]
            above = xp.arange(sk)[None, :] > xp.arange(sq)[:, None] + (sk - sq)
            s = xp.where(above, xp.asarray(-xp.inf, dtype=s.dtype), s)
        mask = f32.get("mask")
        keep = None if mask is None else 1.0 / float(f32["dropout_scale"].reshape(()))
        if spec.kind == "forward":
            stats = log_sum_exp(xp, s)
            p = xp.exp(s - stats)
            pd = p if mask is None else p * mask / keep
            self._write(arrays, {"o": xp.matmul(pd, v), "stats": stats})
            return
        p = xp.exp(s - f32["stats"])
        dq, dk, dv, _ = backward(xp, f32["dO"], q, k, v, p, mask, keep, spec.scale)
        self._write(arrays, {"dq": dq, "dk": dk, "dv": dv})

    def _write(self, arrays, values):
        for name, value in values.items():
            view = self._view(name, arrays[name])
            view[...] = value.astype(view.dtype)


def _library(array):
    """NumPy or CuPy: the module of ``array``'s own type (for ``as_strided``)."""
    return sys.modules[type(array).__module__.split(".")[0]]


@functools.lru_cache(maxsize=None)
def load_cudnn():
    """``(cudnn module, None)``, or ``(None, why not)``. libcudnn.so.9 is preloaded from an
    nvidia-cudnn wheel on ``sys.path`` first (the frontend looks for it in site-packages
    only, not in a ``--target`` folder: ``benchmarks/cudnn_sdpa_probe.py``)."""
    found = sorted({p for d in sys.path if d for p in glob.glob(
        os.path.join(d, "nvidia", "cudnn*", "lib", "libcudnn.so.9"))})
    try:
        for path in found[:1]:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        import cudnn  # noqa: PLC0415 - optional, and only on a GPU: imported when first needed
    except Exception as err:  # ImportError, or an OSError of a broken libcudnn
        return None, (f"cuDNN's Python frontend did not load ({type(err).__name__}: {err}): "
                      "pip install nvidia-cudnn-frontend nvidia-cudnn-cu12 (or -cu13)")
    return cudnn, None


_handles = threading.local()


def _handle(cudnn, device):
    handles = getattr(_handles, "by_device", None)
    if handles is None:
        handles = _handles.by_device = {}
    if device not in handles:
        handles[device] = cudnn.create_handle()
    return handles[device]


class CudnnSdpa:
    """The cuDNN SDPA graph of one ``SdpaSpec``, built once (with its workspace), then
    executed on the current CuPy stream with the arrays' addresses. ``built`` counts
    the graphs built in this process (the GPU tests check that cuDNN ran)."""

    built = 0

    def __init__(self, spec, xp):
        import cupy  # noqa: PLC0415 - this runner exists on the CuPy backend only

        cudnn, why = load_cudnn()
        if cudnn is None:
            raise RuntimeError(why)
        self.cudnn, self.cupy = cudnn, cupy
        self.handle = _handle(cudnn, cupy.cuda.Device().id)
        dt = cudnn.data_type
        graph = cudnn.pygraph(io_data_type=getattr(dt, HALF[spec.dtype]), handle=self.handle,
                              intermediate_data_type=dt.FLOAT, compute_data_type=dt.FLOAT)
        types = dict({n: getattr(dt, HALF[n]) for n in HALF}, float32=dt.FLOAT)
        written = ("o", "stats") if spec.kind == "forward" else ("dq", "dk", "dv")
        made = {name: graph.tensor(name=name, dim=list(dims), stride=list(strides),
                                   data_type=types[dtype])
                for name, dims, strides, dtype in spec.tensors if name not in written}
        outputs = _sdpa(cudnn, graph, spec, made)
        for name, tensor in outputs.items():
            _, dims, strides, dtype = spec.tensor(name)
            tensor.set_output(True).set_dim(list(dims)).set_stride(list(strides))
            tensor.set_data_type(types[dtype])
        made.update(outputs)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        self.graph, self.tensors = graph, made
        self.workspace = cupy.empty(max(graph.get_workspace_size(), 1), cupy.uint8)
        CudnnSdpa.built += 1

    def execute(self, arrays):
        pack = {t: arrays[name].data.ptr for name, t in self.tensors.items()}
        stream = self.cupy.cuda.get_current_stream()
        self.cudnn.set_stream(handle=self.handle, stream=stream.ptr)
        self.graph.execute(pack, self.workspace.data.ptr, handle=self.handle)


def _sdpa(cudnn, graph, spec, t):
    """The SDPA node of ``graph`` over the tensors ``t``; its outputs by name."""
    kw = {"attn_scale": spec.scale}
    if "bias" in t:
        kw["bias"] = t["bias"]
    if spec.dropout and spec.kind == "forward":
        kw["dropout"] = (t["mask"], t["dropout_scale"])
    if spec.causal:
        sq, sk = spec.tensor("q")[1][2], spec.tensor("k")[1][2]
        kw["diagonal_alignment"] = cudnn.diagonal_alignment.TOP_LEFT if sq == sk \
            else cudnn.diagonal_alignment.BOTTOM_RIGHT
        kw["diagonal_band_right_bound"] = 0
    if spec.kind == "forward":
        o, stats = graph.sdpa(name="sdpa", q=t["q"], k=t["k"], v=t["v"], generate_stats=True,
                              **kw)
        return {"o": o, "stats": stats}
    args = {"name": "sdpa_backward", "q": t["q"], "k": t["k"], "v": t["v"], "o": t["o"],
            "dO": t["dO"], "stats": t["stats"]}
    if not spec.dropout:
        dq, dk, dv = graph.sdpa_backward(**args, **kw)
        return {"dq": dq, "dk": dk, "dv": dv}
    # the backward's custom dropout is (mask, scale, scale_inv) in cuDNN's C++ API; a
    # frontend that takes the forward's pair instead refuses the triple with a TypeError
    try:
        dq, dk, dv = graph.sdpa_backward(**args, **kw, dropout=(
            t["mask"], t["dropout_scale"], t["dropout_scale_inv"]))
    except TypeError:
        dq, dk, dv = graph.sdpa_backward(**args, **kw, dropout=(t["mask"], t["dropout_scale"]))
    return {"dq": dq, "dk": dk, "dv": dv}


# -- the lowerings --


class _Plumbing:
    """What one fused node keeps between calls: arrays (a broadcast bias, operand copies,
    the dropout scale) at fixed addresses, and one runner per spec (None: refused)."""

    def __init__(self, xp, runner):
        self.xp, self.runner = xp, runner
        self.kept, self.runners = {}, {}

    def _array(self, role, shape, dtype):
        key = (role, tuple(shape), dtype)
        if key not in self.kept:
            self.kept[key] = self.xp.empty(tuple(shape), dtype=dtype)
        return self.kept[key]

    def operand(self, name, x):
        """``x`` itself where cuDNN reads it in place (unit stride on its last axis, no
        negative or zero strides), else its copy in a kept array."""
        if x.strides[-1] == x.itemsize and all(s > 0 for s in x.strides[:-1]):
            return x
        copy = self._array(name, x.shape, x.dtype)
        copy[...] = x
        return copy

    def bias(self, b, logits):
        """The bias as a [b or 1, h or 1, sq, sk] array cuDNN reads (see the module doc)."""
        shape = (1,) * (4 - b.ndim) + tuple(b.shape)
        b = self.xp.reshape(b, shape)
        target = (shape[0], shape[1]) + tuple(logits[2:])
        if shape == target:
            return self.operand("bias", b)
        full = self._array("bias", target, b.dtype)
        full[...] = self.xp.broadcast_to(b, target)
        return full

    def scalar(self, role, value):
        """A kept float32 [1, 1, 1, 1] device array holding ``value`` (written once)."""
        key = (role, (1, 1, 1, 1), "float32")
        if key not in self.kept:
            self.kept[key] = self.xp.full((1, 1, 1, 1), value, dtype=self.xp.float32)
        return self.kept[key]

    def inputs(self, q, k, v, b, m, keep, backward=False):
        """The arrays cuDNN's graph reads, by name (the backward's ``scale_inv`` too)."""
        arrays = {"q": self.operand("q", q), "k": self.operand("k", k),
                  "v": self.operand("v", v)}
        if b is not None:
            arrays["bias"] = self.bias(b, q.shape[:3] + (k.shape[2],))
        if m is not None:
            arrays["mask"] = self.operand("mask", m)
            arrays["dropout_scale"] = self.scalar("dropout_scale", 1.0 / keep)
            if backward:
                arrays["dropout_scale_inv"] = self.scalar("dropout_scale_inv", keep)
        return arrays

    def run(self, kind, arrays, scale, causal):
        """Run the graph of these arrays; False where cuDNN refused it (said once)."""
        spec = spec_of(kind, arrays, scale, causal)
        if spec not in self.runners:
            try:
                self.runners[spec] = self.runner(spec, self.xp)
            except Exception as err:  # noqa: BLE001 - any refusal: the Array API path runs
                self.runners[spec] = None
                _log.warning("cuDNN's fused attention refused the %s of %s (%s: %s); that "
                             "node runs the unfused operations", kind, spec.tensors,
                             type(err).__name__, err)
        runner = self.runners[spec]
        if runner is None:
            return False
        runner.execute(arrays)
        return True


def _outputs(xp, out, shapes):
    out = out or (None,) * len(shapes)
    return tuple(xp.empty(s, dtype=d) if o is None else o for o, (s, d) in zip(out, shapes))


def _into(out, values):
    """The Array API function's values, copied into ``out``'s arrays where it gives them."""
    results = []
    for o, v in zip(out or (None,) * len(values), values):
        if o is not None:
            o[...] = v
        results.append(v if o is None else o)
    return tuple(results)


def _marked(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def lower_attention_fwd(xp, scale, causal, bias, keep, aux, runner=CudnnSdpa):
    """``attention_fwd``: cuDNN's forward for half inputs saving statistics, else the
    primitive's Array API function (``runner`` replaces cuDNN's graph in tests)."""
    impl = REGISTRY["attention_fwd"].impl
    attrs = {"scale": scale, "causal": causal, "bias": bias, "keep": keep, "aux": aux}
    plumbing = _Plumbing(xp, runner)

    def attention_fwd(q, k, v, *extra, out=None):
        if aux == "stats" and _dtype_name(q) in HALF:
            b, m = split_extra(extra, bias, keep)
            rows = tuple(q.shape[:3])
            o, stats = _outputs(xp, out, ((rows + (v.shape[3],), q.dtype),
                                          (rows + (1,), xp.float32)))
            arrays = dict(plumbing.inputs(q, k, v, b, m, keep), o=o, stats=stats)
            if plumbing.run("forward", arrays, scale, causal):
                return o, stats
        return _into(out, impl(xp, q, k, v, *extra, **attrs))

    return _marked(attention_fwd)


def lower_attention_bwd(xp, scale, causal, bias, keep, aux, runner=CudnnSdpa):
    """``attention_bwd``: cuDNN's backward where the forward saved statistics of half
    inputs, else the primitive's Array API function."""
    impl = REGISTRY["attention_bwd"].impl
    attrs = {"scale": scale, "causal": causal, "bias": bias, "keep": keep, "aux": aux}
    plumbing = _Plumbing(xp, runner)

    def attention_bwd(g, q, k, v, o, stats, *extra, out=None):
        if aux == "stats" and _dtype_name(q) in HALF:
            b, m = split_extra(extra, bias, keep)
            dq, dk, dv = _outputs(xp, out, tuple((tuple(x.shape), q.dtype) for x in (q, k, v)))
            arrays = dict(plumbing.inputs(q, k, v, b, m, keep, backward=True),
                          o=plumbing.operand("o", o),
                          dO=plumbing.operand("dO", g), stats=plumbing.operand("stats", stats),
                          dq=dq, dk=dk, dv=dv)
            if plumbing.run("backward", arrays, scale, causal):
                return dq, dk, dv
        return _into(out, impl(xp, g, q, k, v, o, stats, *extra, **attrs))

    return _marked(attention_bwd)


LOWERINGS = {"attention_fwd": lower_attention_fwd, "attention_bwd": lower_attention_bwd}
