"""Scaled dot-product attention as one primitive, its gradient, and the plan's fused pair.

``attention(q, k, v[, bias][, mask], scale, causal, bias, keep)`` over
``[batch, heads, seq, depth]`` arrays is, step for step, what google-research/bert's
``attention_layer`` and GPT-2's ``attn`` compute from separate ops::

    s = matmul(q, k^T) * scale          # [b, h, sq, sk]
    s = s + bias                        # bias=True: BERT's additive (1 - mask) * -10000
    s = where(j <= i, s, -1e10)         # causal=True: GPT-2's w * b - 1e10 * (1 - b)
    p = softmax(s) (the max shift, exp, sum and divide of ``prim/nn.py``'s softmax)
    p = p / keep * mask                 # keep given: dropout, mask the floor(keep + u) draw
    o = matmul(p, v)

in that order and with the same operations, so that the fused op gives the unfused
graph's numbers (float64 to the last bits BLAS leaves, float32 close).

Two layers of records:

- ``attention`` and ``attention_grad`` (one gradient per node, ``wrt`` naming the
  input) are ordinary primitives: differentiable user-graph ops with finite-difference
  checks (``tests/op_specs_attention.py``).
- ``attention_fwd`` (outputs ``o`` and what the backward reads: the probabilities,
  ``aux="probs"``, or the rows' log-sum-exp, ``aux="stats"``, the form cuDNN's fused
  attention saves) and ``attention_bwd`` (``dq, dk, dv``) are plan-only: the graph
  compiler's ``passes/attention.py`` makes them from the user's unfused pattern and its
  gradient ops, and backends lower them (``backends/numpy/attention.py``,
  ``backends/cupy/attention.py``).
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import register

CAUSAL_FILL = -1e10  # GPT-2's mask: w * b - 1e10 * (1 - b) is this where b is 0


def _extras(extra, bias, keep):
    """``(bias array or None, mask array or None)`` from the inputs after q, k, v."""
    extra = list(extra)
    b = extra.pop(0) if bias else None
    m = extra.pop(0) if keep is not None else None
    return b, m


def _logits(xp, q, k, b, scale, causal):
    s = xp.matmul(q, xp.matrix_transpose(k)) * scale
    if b is not None:
        s = s + b
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        dev = s.device
        rows = xp.reshape(xp.arange(sq, dtype=xp.int64, device=dev), (sq, 1))
        cols = xp.reshape(xp.arange(sk, dtype=xp.int64, device=dev), (1, sk))
        fill = xp.asarray(CAUSAL_FILL, dtype=s.dtype, device=dev)
        s = xp.where(cols <= rows + (sk - sq), s, fill)
    return s


def _softmax_rows(xp, s):
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def probabilities(xp, q, k, b, scale, causal):
    """The softmax of the scaled, biased, masked logits (before dropout)."""
    return _softmax_rows(xp, _logits(xp, q, k, b, scale, causal))


def _dropped(p, m, keep):
    return p if m is None else (p / keep) * m


def _attention_impl(xp, q, k, v, *extra, scale, causal, bias, keep):
    b, m = _extras(extra, bias, keep)
    return xp.matmul(_dropped(probabilities(xp, q, k, b, scale, causal), m, keep), v)


def backward(xp, g, q, k, v, p, m, keep, scale):
    """``(dq, dk, dv, ds)`` from the output's gradient ``g`` and the probabilities ``p``
    (``ds`` the logits' gradient before the scale: the bias's, unbroadcast), in the
    unfused gradient ops' order."""
    pd = _dropped(p, m, keep)
    dv = xp.matmul(xp.matrix_transpose(pd), g)
    dp = xp.matmul(g, xp.matrix_transpose(v))
    if m is not None:
        dp = (dp * m) / keep
    ds = p * (dp - xp.sum(dp * p, axis=-1, keepdims=True))
    dss = ds * scale
    return xp.matmul(dss, k), xp.matmul(xp.matrix_transpose(dss), q), dv, ds


_WRT = ("q", "k", "v", "bias")


def _attention_grad_impl(xp, g, q, k, v, *extra, scale, causal, bias, keep, wrt):
    b, m = _extras(extra, bias, keep)
    p = probabilities(xp, q, k, b, scale, causal)
    return backward(xp, g, q, k, v, p, m, keep, scale)[_WRT.index(wrt)]


def _dims(shape, what):
    if shape is None:
        return (None,) * 4
    if len(shape) != 4:
        raise ValueError(f"attention: {what} must be [batch, heads, seq, depth], got rank "
                         f"{len(shape)} ({tuple(shape)})")
    return tuple(shape)


def _agree(a, b, what):
    if a is not None and b is not None and a != b:
        raise ValueError(f"attention: {what} differ ({a} vs {b})")
    return a if a is not None else b


def _out_shape(shapes, bias, keep):
    q, k, v = (_dims(s, w) for s, w in zip(shapes[:3], ("q", "k", "v")))
    batch = _agree(_agree(q[0], k[0], "the batch sizes of q and k"), v[0],
                   "the batch sizes of k and v")
    heads = _agree(_agree(q[1], k[1], "the heads of q and k"), v[1], "the heads of k and v")
    _agree(q[3], k[3], "the depths of q and k")
    sk = _agree(k[2], v[2], "the sequence lengths of k and v")
    logits = (batch, heads, q[2], sk)
    extra = list(shapes[3:])
    if bias:
        b = extra.pop(0)
        if b is not None:
            if len(b) > 4:
                raise ValueError(f"attention: the bias has rank {len(b)}, more than the "
                                 f"logits' [batch, heads, sq, sk]")
            rules.broadcast_shapes(tuple(b), logits)
    if keep is not None:
        mask = extra.pop(0)
        if mask is not None:
            for i, (a, want) in enumerate(zip(_dims(mask, "the dropout mask"), logits)):
                _agree(a, want, f"the dropout mask's dimension {i} and the logits'")
    return (batch, heads, q[2], v[3]), logits


def _attention_infer(shapes, in_dtypes, scale, causal, bias, keep):
    rules.require_floating(in_dtypes[0], "q")
    dtype = rules.same_dtype(in_dtypes)
    return _out_shape(shapes, bias, keep)[0], dtype


def _attention_grad_infer(shapes, in_dtypes, scale, causal, bias, keep, wrt):
    dtype = rules.same_dtype(in_dtypes)
    out, logits = _out_shape(shapes[1:], bias, keep)
    if wrt == "bias":
        return logits, dtype
    return (shapes[1 + _WRT.index(wrt)] or (None,) * 4), dtype


def _attention_grad(node, g):
    q, k, v, *extra = node.inputs
    attrs = dict(node.attrs)
    grads = [call.attention_grad(g, q, k, v, *extra, wrt=w, **attrs) for w in ("q", "k", "v")]
    if attrs["bias"]:
        grads.append(call.attention_grad(g, q, k, v, *extra, wrt="bias", **attrs))
    if attrs["keep"] is not None:
        grads.append(None)  # the dropout mask is a draw: no gradient
    return grads


register("attention", _attention_impl, _attention_infer, grad=_attention_grad)
# Its gradient recomputes the probabilities per node (one per input); plans never run it:
# the pass makes the fused pair below, whose backward reads what the forward saved.
register("attention_grad", _attention_grad_impl, _attention_grad_infer, grad=None)


# -- the plan's fused pair (passes/attention.py) --


def log_sum_exp(xp, s):
    """The rows' log-sum-exp of the logits ``s`` (keepdims): cuDNN's saved statistics."""
    top = xp.max(s, axis=-1, keepdims=True)
    return top + xp.log(xp.sum(xp.exp(s - top), axis=-1, keepdims=True))


def _attention_fwd_impl(xp, q, k, v, *extra, scale, causal, bias, keep, aux):
    b, m = _extras(extra, bias, keep)
    s = _logits(xp, q, k, b, scale, causal)
    p = _softmax_rows(xp, s)
    o = xp.matmul(_dropped(p, m, keep), v)
    if aux == "probs":
        return o, p
    return o, xp.astype(log_sum_exp(xp, s), stats_dtype(xp, q.dtype))


def stats_dtype(xp, dtype):
    """The statistics' dtype: float32 for half inputs (as cuDNN keeps them), else theirs."""
    return dtype if dtype in (xp.float32, xp.float64) else xp.float32


def _attention_fwd_infer(shapes, in_dtypes, scale, causal, bias, keep, aux):
    out, logits = _out_shape(shapes, bias, keep)
    dtype = rules.same_dtype(in_dtypes)
    return out, dtype  # the first output's; fused_output nodes carry each output's own


def _attention_bwd_impl(xp, g, q, k, v, o, aux_value, *extra, scale, causal, bias, keep, aux):
    b, m = _extras(extra, bias, keep)
    if aux == "probs":
        p = aux_value
    else:  # recompute the probabilities from the saved log-sum-exp, as cuDNN does
        s = _logits(xp, q, k, b, scale, causal)
        p = xp.exp(s - xp.astype(aux_value, s.dtype))
    return backward(xp, g, q, k, v, p, m, keep, scale)[:3]


def _attention_bwd_infer(shapes, in_dtypes, scale, causal, bias, keep, aux):
    return shapes[1], in_dtypes[1]


ATTENTION_FWD = register("attention_fwd", _attention_fwd_impl, _attention_fwd_infer,
                         grad=None, outputs=2, plan_only=True)
ATTENTION_BWD = register("attention_bwd", _attention_bwd_impl, _attention_bwd_infer,
                         grad=None, outputs=3, plan_only=True)


def split_extra(extra, bias, keep):
    """``(bias or None, dropout mask or None)`` from the fused pair's inputs after q, k, v
    (``bias``: whether a bias is there; ``keep``: the dropout's keep probability or None)."""
    extra = list(extra)
    b = extra.pop(0) if bias else None
    m = extra.pop(0) if keep is not None else None
    return b, m
