"""Probe cuDNN's fused attention (SDPA) through its Python frontend (``import cudnn``,
nvidia-cudnn-frontend 1.16) on CuPy arrays: what works, how exact, how fast.

(a) does ``import cudnn`` load libcudnn; (b) the SDPA forward graph on bf16 q/k/v of
[batch 16, heads 2, seq 128, dim 64] and [16, 12, 128, 64] (BERT-base), scale 1/sqrt(64),
with BERT's padding as an additive bias tensor, the same padding as ``use_padding_mask``
with sequence lengths, and causal masking: max abs error against softmax(q k^T scale +
mask) v in float32; (c) the backward graph (dq, dk, dv) against the float32 gradient
written out here; (d) forward + backward inside a CuPy stream capture, replayed on new
inputs and checked; (e) ms per forward + backward (CUDA events): cuDNN bf16 against the
unfused CuPy path (batched matmuls, softmax) in float32 and bf16 (else float16).

    python benchmarks/cudnn_sdpa_probe.py

Each section prints its own failure and the next one goes on; the script exits 0 whatever
is missing (no GPU, no CuPy, no cudnn frontend), saying why it measured nothing.
"""

from __future__ import annotations

import ctypes
import glob
import math
import os
import sys
import traceback

SHAPES = ((16, 2, 128, 64), (16, 12, 128, 64))
MASKS = ("bias", "padding", "causal")
VALID = 0.75  # the share of each row's keys not padded, as in benchmarks/transformer.py
TOLERANCE = 0.02  # max abs error / max |reference| that bf16 inputs and outputs allow


def section(title, fn, *args):  # one section; its exception printed, not raised
    print(f"\n== {title}", flush=True)
    try:
        return fn(*args)
    except Exception as err:
        print(f"FAILED: {type(err).__name__}: {err}", flush=True)
        traceback.print_exc(limit=3, file=sys.stdout)
        return None


def to_bf16(x, xp):
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even."""
    bits = xp.ascontiguousarray(x, dtype=xp.float32).view(xp.uint32)
    return ((bits + (xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1)))) >> 16).astype(xp.uint16)


def from_bf16(b, xp):
    return (b.astype(xp.uint32) << 16).view(xp.float32)


def additive_mask(mask, batch, seq, xp):
    """float32 [batch or 1, 1, seq, seq]: 0 where attention goes, -10000 where it does not."""
    keys = xp.arange(seq)
    if mask == "causal":
        return xp.where(keys[None, :] > keys[:, None], -10000.0, 0.0).astype(xp.float32)[None, None]
    padded = xp.broadcast_to(keys >= int(seq * VALID), (batch, 1, seq, seq))
    return xp.where(padded, -10000.0, 0.0).astype(xp.float32)


def attention(q, k, v, mask_add, scale, xp, d_o=None):
    """softmax(q k^T scale + mask) v unfused in q's dtype; with ``d_o`` also (dq, dk, dv)."""
    s = xp.matmul(q, xp.swapaxes(k, -1, -2)) * scale + mask_add
    p = xp.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    o = xp.matmul(p, v)
    if d_o is None:
        return o
    dv = xp.matmul(xp.swapaxes(p, -1, -2), d_o)
    ds = p * (xp.matmul(d_o, xp.swapaxes(v, -1, -2)) - (d_o * o).sum(axis=-1, keepdims=True))
    return o, xp.matmul(ds, k) * scale, xp.matmul(xp.swapaxes(ds, -1, -2), q) * scale, dv


def _strides(dims):  # row-major
    return [math.prod(dims[i + 1:]) for i in range(len(dims))]


def _tensor(g, name, dims, dtype):
    return g.tensor(name=name, dim=list(dims), stride=_strides(dims), data_type=dtype)


def load_cudnn():
    """(a): preload libcudnn.so.9 from an nvidia-cudnn wheel on sys.path (the frontend looks
    only in site-packages, not in a --target folder), then ``import cudnn``."""
    found = sorted({p for d in sys.path if d for p in glob.glob(
        os.path.join(d, "nvidia", "cudnn*", "lib", "libcudnn.so.9"))})
    for path in found[:1]:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    print(f"preloaded {found[0]}" if found else "no nvidia/cudnn*/lib/libcudnn.so.9 on sys.path")
    import cudnn

    print(f"cudnn frontend {getattr(cudnn, '__version__', '?')} from {cudnn.__file__}")
    print(f"backend_version() = {cudnn.backend_version()} ({cudnn.backend_version_string()})")
    return cudnn


class Attention:
    """cuDNN SDPA forward and backward graphs of one shape and mask, their CuPy buffers
    and workspace; ``forward()`` runs the one, ``both()`` the two (on the handle's stream)."""

    def __init__(self, cudnn, cp, handle, shape, mask):
        b, h, s, d = shape
        self.cudnn, self.cp, self.handle, self.shape, self.mask = cudnn, cp, handle, shape, mask
        self.scale = 1.0 / math.sqrt(d)
        self.buf = {n: cp.empty(shape, cp.uint16) for n in "q k v o dO dq dk dv".split()}
        self.buf["stats"] = cp.empty((b, h, s, 1), cp.float32)
        self.buf["bias"] = to_bf16(additive_mask("bias", b, s, cp), cp)
        self.buf["seq_q"] = cp.full((b, 1, 1, 1), s, cp.int32)
        self.buf["seq_kv"] = cp.full((b, 1, 1, 1), int(s * VALID), cp.int32)
        self.refill(cp.random.default_rng(0))
        self.fwd, self.fwd_t = self._graph(forward=True)
        self.bwd, self.bwd_t = self._graph(forward=False)
        self.workspace = cp.empty(max(self.fwd.get_workspace_size(),
                                      self.bwd.get_workspace_size(), 1), cp.uint8)

    def refill(self, rng):
        for name in ("q", "k", "v", "dO"):
            x = rng.standard_normal(self.shape, dtype=self.cp.float32)
            self.buf[name][...] = to_bf16(x * (0.1 if name == "dO" else 1.0), self.cp)

    def _graph(self, forward):
        c, (b, h, s, _) = self.cudnn, self.shape
        g = c.pygraph(io_data_type=c.data_type.BFLOAT16, handle=self.handle,
                      intermediate_data_type=c.data_type.FLOAT,
                      compute_data_type=c.data_type.FLOAT)
        names = ("q", "k", "v") if forward else ("q", "k", "v", "o", "dO")
        t = {n: _tensor(g, n, self.shape, c.data_type.BFLOAT16) for n in names}
        kw = {"attn_scale": self.scale}
        if self.mask == "bias":
            t["bias"] = kw["bias"] = _tensor(g, "bias", (b, 1, s, s), c.data_type.BFLOAT16)
        elif self.mask == "padding":
            kw["use_padding_mask"] = True
            for n in ("seq_q", "seq_kv"):
                t[n] = _tensor(g, n, (b, 1, 1, 1), c.data_type.INT32)
            kw["seq_len_q"], kw["seq_len_kv"] = t["seq_q"], t["seq_kv"]
        else:
            kw["diagonal_alignment"] = c.diagonal_alignment.TOP_LEFT
            kw["diagonal_band_right_bound"] = 0
        if forward:
            t["o"], t["stats"] = g.sdpa(name="sdpa", q=t["q"], k=t["k"], v=t["v"],
                                        generate_stats=True, **kw)
            t["stats"].set_data_type(c.data_type.FLOAT)
            outputs = ("o", "stats")
        else:
            t["stats"] = _tensor(g, "stats", (b, h, s, 1), c.data_type.FLOAT)
            t["dq"], t["dk"], t["dv"] = g.sdpa_backward(
                name="sdpa_backward", q=t["q"], k=t["k"], v=t["v"], o=t["o"], dO=t["dO"],
                stats=t["stats"], **kw)
            outputs = ("dq", "dk", "dv")
        for n in outputs:
            dims = list(self.buf[n].shape)
            t[n].set_output(True).set_dim(dims).set_stride(_strides(dims))
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([c.heur_mode.A, c.heur_mode.FALLBACK])
        g.check_support()
        g.build_plans()
        return g, t

    def _run(self, g, tensors):
        pack = {t: self.buf[n].data.ptr for n, t in tensors.items()}  # uid -> device pointer
        g.execute(pack, self.workspace.data.ptr, handle=self.handle)

    def forward(self):
        self._run(self.fwd, self.fwd_t)

    def both(self):
        self.forward()
        self._run(self.bwd, self.bwd_t)

    def print_errors(self, names=("o", "dq", "dk", "dv")):
        """Max abs error of the outputs ``names`` against the float32 reference computed
        from the bf16 inputs now in the buffers."""
        cp, (b, _, s, _) = self.cp, self.shape
        q, k, v, d_o = (from_bf16(self.buf[n], cp) for n in ("q", "k", "v", "dO"))
        ref = attention(q, k, v, additive_mask(self.mask, b, s, cp), self.scale, cp, d_o)
        want, parts = dict(zip(("o", "dq", "dk", "dv"), ref, strict=True)), []
        for n in names:
            err, top = (float(abs(x).max()) for x in (from_bf16(self.buf[n], cp) - want[n],
                                                      want[n]))
            verdict = "ok" if err <= TOLERANCE * top else "MISMATCH"
            parts.append(f"{n}: max abs err {err:.2e} (max |ref| {top:.2f}) {verdict}")
        print(f"  {str(self.shape):<18} {self.mask:<8} " + "  ".join(parts), flush=True)


def _forward(cp, cudnn, handle, shape, mask, built):
    att = built[(shape, mask)] = Attention(cudnn, cp, handle, shape, mask)
    att.forward()
    att.print_errors(("o",))


def check_forward_backward(cp, cudnn, handle):
    """(b) and (c); the SDPA objects built, by (shape, mask)."""
    built = {}
    for shape in SHAPES:
        for mask in MASKS:
            section(f"(b) forward {shape} {mask}", _forward, cp, cudnn, handle, shape, mask,
                    built)
    for att in built.values():
        section(f"(c) backward {att.shape} {att.mask}", lambda a=att: (a.both(), a.print_errors()))
    return built


def check_capture(cp, att, stream):
    """(d): capture forward + backward on ``stream`` (the handle's), replay on new inputs."""
    if att is None:
        raise RuntimeError("no SDPA graph was built, nothing to capture")
    print(f"  {att.shape} {att.mask}")
    att.both()
    stream.synchronize()
    stream.begin_capture()
    try:
        att.both()
    finally:
        graph = stream.end_capture()
    att.refill(cp.random.default_rng(7))
    for n in ("o", "dq", "dk", "dv"):
        att.buf[n].fill(0)
    graph.launch(stream)
    print("captured forward + backward replayed on new inputs:")
    att.print_errors()
    print(f"  replay: {time_ms(cp, lambda: graph.launch(stream), stream):.3f} ms, eager: "
          f"{time_ms(cp, att.both, stream):.3f} ms per call")


def time_ms(cp, fn, stream, n=20):
    """GPU ms per call of ``fn`` on ``stream`` between two CUDA events, after 3 warm-ups."""
    for _ in range(3):
        fn()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    for _ in range(n):
        fn()
    end.record(stream)
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / n


def half_dtype(cp):
    """CuPy's bfloat16 (via ml_dtypes) if the unfused attention runs in it, else float16
    (on the H200 CuPy 14 took bf16 for a matmul, exp and sum, not for all of it)."""
    try:
        import ml_dtypes
        x = cp.ones((1, 1, 4, 8), ml_dtypes.bfloat16)
        attention(x, x, x, cp.zeros((1, 1, 4, 4), ml_dtypes.bfloat16), 0.5, cp, x)
        return ml_dtypes.bfloat16, "bf16"
    except Exception as err:
        print(f"  (unfused half path in float16: no bf16 in CuPy: {type(err).__name__}: {err})")
        return cp.float16, "fp16"


def timings(cp, built, stream):
    """(e): cuDNN forward + backward against the unfused CuPy path, per shape, bias mask."""
    half, half_name = half_dtype(cp)
    for shape in SHAPES:
        att = built.get((shape, "bias"))
        row = [f"  {str(shape):<18}"]
        if att is not None:
            ms = time_ms(cp, att.both, stream)
            row.append(f"cuDNN bf16 {ms:8.3f} ms")
        for dtype, name in ((cp.float32, "fp32"), (half, half_name)):
            q, k, v, d_o = (cp.random.standard_normal(shape, dtype=cp.float32).astype(dtype)
                            for _ in range(4))
            add = additive_mask("bias", shape[0], shape[2], cp).astype(dtype)
            ms = time_ms(cp, lambda q=q, k=k, v=v, d=d_o, a=add: attention(
                q, k, v, a, 1.0 / math.sqrt(shape[3]), cp, d), stream)
            row.append(f"unfused {name} {ms:8.3f} ms")
        print("  ".join(row), flush=True)


def main():
    cudnn = section("(a) import cudnn", load_cudnn)
    try:
        import cupy as cp

        reason = None if cp.cuda.runtime.getDeviceCount() > 0 else "CuPy sees no CUDA device"
    except Exception as err:
        reason = f"no usable CuPy/CUDA: {type(err).__name__}: {err}"
    if reason is not None or cudnn is None:
        print("\ncudnn_sdpa_probe: nothing measured: "
              f"{reason or 'the cudnn frontend did not load (see (a))'}")
        return 0
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    print(f"\nGPU: {getattr(name, 'decode', lambda: name)()}, CuPy {cp.__version__}, CUDA runtime "
          f"{cp.cuda.runtime.runtimeGetVersion()}")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        handle = cudnn.create_handle()
        cudnn.set_stream(handle=handle, stream=stream.ptr)
        built = check_forward_backward(cp, cudnn, handle)
        first = built.get((SHAPES[0], "bias")) or next(iter(built.values()), None)
        section("(d) stream capture", check_capture, cp, first, stream)
        section("(e) ms per forward + backward (bias mask)", timings, cp, built, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
