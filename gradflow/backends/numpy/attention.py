"""NumPy lowerings of the fused attention pair (``attention_fwd``, ``attention_bwd``:
``gradflow/prim/attention.py``, made by ``gradflow/passes/attention.py``).

The forward is one batched product ``q k^T`` whose result becomes the probabilities in
place (scale, bias, causal fill, the softmax's max shift, ``exp``, sum and divide as
in-place ufuncs over it, NumPy's vectorized ``exp``: numba's scalar ``exp`` is 5x
slower, see ``numpy/fused.py``), the dropout's ``p / keep * mask`` into a kept array,
and one batched product with ``v``. The float32 batched products go to oneDNN's
``matmul`` primitive over the 4-D stacks where it is installed (``_product``: it reads
BERT's transposed heads in place; 0.67 against NumPy's 0.85 ms of CPU time for a
[16, 2, 128, 64] x [.., 64, 128] product on one thread, the busy 2-core VM). The
backward turns ``g v^T`` into the logits' gradient in place and multiplies it out.
The ufuncs are the unfused ops' own, in their order, so the numbers are the unfused
graph's (float32 products: oneDNN's sums, to float32 rounding). Scratch arrays are
kept between calls (``KeptArrays``): a steady step allocates only the outputs.

Other dtypes than float32 and float64, and saved statistics (``aux="stats"``, the
form for cuDNN), take the primitive's Array API implementation.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import KeptArrays
from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.cpu.threads import uses_blas
from gradflow.backends.onednn import library as onednn
from gradflow.backends.onednn import matmul as onednn_matmul
from gradflow.prim.attention import CAUSAL_FILL, split_extra
from gradflow.prim.registry import REGISTRY

FAST = (np.dtype(np.float32), np.dtype(np.float64))


def _product(a, b, out=None):
    """``a @ b`` over stacks of matrices into ``out`` (a new array when None): oneDNN's
    batched product for float32 where it has a ``brg`` kernel for these layouts, else
    NumPy's."""
    if out is None:
        out = np.empty(a.shape[:-1] + b.shape[-1:], np.result_type(a, b))
    api = onednn.api() if out.dtype == np.float32 and a.dtype == b.dtype == out.dtype \
        and out.flags.c_contiguous and a.size and b.size else None
    if api is not None:
        layouts = onednn_matmul.layout(a), onednn_matmul.layout(b), onednn_matmul.layout(out)
        key = layouts + (api.thread_count(),)
        found = None if None in layouts or key in _REFUSED else onednn_matmul.product(*key)
        if found is not None and found[1].startswith("brg"):
            try:
                return found[0](a, b, out)
            except onednn.OneDNNError:  # never tried again; NumPy writes all of out
                _REFUSED.add(key)
    return np.matmul(a, b, out=out)


_REFUSED = set()


def _buffers(out, count):
    """The plan's buffer of each output (None: the lowering allocates), C-ordered only."""
    out = out or (None,) * count
    return tuple(o if o is not None and o.flags.c_contiguous else None for o in out)


def _into(out, values):
    """The Array API function's values, copied into the plan's buffers where given."""
    return tuple(v if o is None else _copied(o, v) for o, v in zip(out or (None,) * 3, values))


def _copied(out, value):
    np.copyto(out, value)
    return out


def _writes_out(fn):
    """``fn`` writes its outputs into ``out=`` (a tuple, one buffer or None per output),
    never one of its inputs."""
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def _causal_fill(kept, s):
    """Set the logits above the (offset) diagonal to GPT-2's fill, in place."""
    sq, sk = s.shape[-2:]
    above = kept.get(("above", sq, sk))
    if above is None:
        above = kept[("above", sq, sk)] = \
            np.arange(sk)[None, :] > np.arange(sq)[:, None] + (sk - sq)
    np.copyto(s, s.dtype.type(CAUSAL_FILL), where=above)


def _probabilities_in_place(kept, s, b, scale, causal):
    if scale != 1.0:
        np.multiply(s, s.dtype.type(scale), out=s)
    if b is not None:
        np.add(s, b, out=s)
    if causal:
        _causal_fill(kept, s)
    rows = s.shape[:-1] + (1,)
    top = kept.get_array("top", rows, s.dtype)
    total = kept.get_array("total", rows, s.dtype)
    np.maximum.reduce(s, axis=-1, keepdims=True, out=top)
    np.subtract(s, top, out=s)
    np.exp(s, out=s)
    np.add.reduce(s, axis=-1, keepdims=True, out=total)
    return np.divide(s, total, out=s)


def _dropped(kept, p, m, keep):
    if m is None:
        return p
    pd = kept.get_array("dropped", p.shape, p.dtype)
    np.divide(p, p.dtype.type(keep), out=pd)
    return np.multiply(pd, m, out=pd)


def lower_attention_fwd(xp, scale, causal, bias, keep, aux):
    impl = REGISTRY["attention_fwd"].impl
    attrs = {"scale": scale, "causal": causal, "bias": bias, "keep": keep, "aux": aux}
    kept = KeptArrays(np.empty)

    @uses_blas
    def attention_fwd(q, k, v, *extra, out=None):
        if aux != "probs" or q.dtype not in FAST:
            return _into(out, impl(np, q, k, v, *extra, **attrs))
        b, m = split_extra(extra, bias, keep)
        o_out, p_out = _buffers(out, 2)
        s = _product(q, np.swapaxes(k, -1, -2), p_out)
        p = _probabilities_in_place(kept, s, b, scale, causal)
        return _product(_dropped(kept, p, m, keep), v, o_out), p

    return _writes_out(attention_fwd)


def _softmax_grad(kept, t, p, m, keep, scale):
    """``t`` (``g v^T``) in place into the scaled logits' gradient: numba's one pass per
    row where it is there and the arrays are C-ordered, else the unfused ufuncs."""
    jit = _jit()
    if jit is not None and t.flags.c_contiguous and p.flags.c_contiguous \
            and (m is None or m.flags.c_contiguous and m.dtype == t.dtype) and t.size:
        cols = t.shape[-1]
        rows = t.size // cols
        jit.softmax_grad_rows(t.reshape(rows, cols), p.reshape(rows, cols),
                              t.reshape(rows, cols) if m is None else m.reshape(rows, cols),
                              t.dtype.type(0 if m is None else keep), t.dtype.type(scale))
        return t
    if m is not None:
        np.multiply(t, m, out=t)
        np.divide(t, t.dtype.type(keep), out=t)
    both = kept.get_array("both", p.shape, p.dtype)
    np.multiply(t, p, out=both)
    total = kept.get_array("total", p.shape[:-1] + (1,), p.dtype)
    np.add.reduce(both, axis=-1, keepdims=True, out=total)
    np.subtract(t, total, out=t)
    np.multiply(p, t, out=t)
    if scale != 1.0:
        np.multiply(t, t.dtype.type(scale), out=t)
    return t


def _jit():
    """The numba kernels (``numpy/attention_jit.py``), or None without numba."""
    if get_numba() is None:
        return None
    from gradflow.backends.numpy import attention_jit  # noqa: PLC0415 - only with numba

    return attention_jit


def lower_attention_bwd(xp, scale, causal, bias, keep, aux):
    impl = REGISTRY["attention_bwd"].impl
    attrs = {"scale": scale, "causal": causal, "bias": bias, "keep": keep, "aux": aux}
    kept = KeptArrays(np.empty)

    @uses_blas
    def attention_bwd(g, q, k, v, o, p, *extra, out=None):
        if aux != "probs" or q.dtype not in FAST:
            return _into(out, impl(np, g, q, k, v, o, p, *extra, **attrs))
        _, m = split_extra(extra, bias, keep)
        t = kept.get_array("ds", p.shape, p.dtype)
        _product(g, np.swapaxes(v, -1, -2), t)
        _softmax_grad(kept, t, p, m, keep, scale)
        dq_out, dk_out, dv_out = _buffers(out, 3)
        dq = _product(t, k, dq_out)
        dk = _product(np.swapaxes(t, -1, -2), q, dk_out)
        dv = _product(np.swapaxes(_dropped(kept, p, m, keep), -1, -2), g, dv_out)
        return dq, dk, dv

    return _writes_out(attention_bwd)


LOWERINGS = {"attention_fwd": lower_attention_fwd, "attention_bwd": lower_attention_bwd}
