"""Op specs of fused attention (gradflow/prim/attention.py): ``attention`` with and without
an additive bias, GPT-2's causal mask and a dropout mask, and ``attention_grad`` (one
gradient per node), against NumPy written out with ``einsum``. The plan-only pair
``attention_fwd``/``attention_bwd`` that the graph compiler makes is checked in
tests/test_attention.py (against the unfused graph's numbers).
"""

from __future__ import annotations

import numpy as np
from op_specs import EXEMPT, spec, uniform

from gradflow.prim.registry import apply

EXEMPT.update({
    "attention_fwd": "plan-only: made by passes/attention.py from the unfused ops "
                     "(tests/test_attention.py checks its numbers against them)",
    "attention_bwd": "plan-only: made by passes/attention.py from the unfused gradient ops "
                     "(tests/test_attention.py)",
})


def np_probs(q, k, bias, scale, causal):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    if bias is not None:
        s = s + bias
    if causal:
        sq, sk = s.shape[-2:]
        keep = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
        s = np.where(keep, s, -1e10)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_attention(q, k, v, bias=None, mask=None, *, scale, causal=False, keep=None):
    p = np_probs(q, k, bias, scale, causal)
    if mask is not None:
        p = p / keep * mask
    return np.einsum("bhqk,bhkd->bhqd", p, v).astype(q.dtype)


def np_attention_grad_q(g, q, k, v, *, scale):
    p = np_probs(q, k, None, scale, False)
    dp = np.einsum("bhqd,bhkd->bhqk", g, v)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return (np.einsum("bhqk,bhkd->bhqd", ds, k) * scale).astype(q.dtype)


def _op(*inputs, scale, causal=False, bias=False, keep=None):
    return apply("attention", list(inputs), scale=scale, causal=causal, bias=bias, keep=keep)


def _mask(*shape):
    return lambda rng: (rng.uniform(0, 1, shape) < 0.7).astype(np.float64)


_QKV = [uniform(1, 2, 3, 2), uniform(1, 2, 4, 2), uniform(1, 2, 4, 3)]
_ATOL = {"float32": (1e-5, 1e-6), "float16": (2e-2, 2e-2)}

spec("attention", "attention", lambda q, k, v: _op(q, k, v, scale=0.6), _QKV,
     lambda q, k, v: np_attention(q, k, v, scale=0.6), tol=_ATOL, second_order=False)
spec("attention_bias", "attention",
     lambda q, k, v, b: _op(q, k, v, b, scale=0.5, bias=True),
     _QKV + [uniform(1, 1, 1, 4)],
     lambda q, k, v, b: np_attention(q, k, v, b, scale=0.5), tol=_ATOL, second_order=False)
spec("attention_causal", "attention",
     lambda q, k, v: _op(q, k, v, scale=0.7, causal=True), _QKV,
     lambda q, k, v: np_attention(q, k, v, scale=0.7, causal=True), tol=_ATOL, second_order=False)
spec("attention_dropout", "attention",
     lambda q, k, v, b, m: _op(q, k, v, b, m, scale=0.5, bias=True, keep=0.75),
     _QKV + [uniform(1, 2, 3, 4), _mask(1, 2, 3, 4)],
     lambda q, k, v, b, m: np_attention(q, k, v, b, m, scale=0.5, keep=0.75),
     grad=(0, 1, 2, 3), tol=_ATOL, second_order=False)
spec("attention_grad", "attention_grad",
     lambda g, q, k, v: apply("attention_grad", [g, q, k, v], scale=0.6, causal=False,
                              bias=False, keep=None, wrt="q"),
     [uniform(1, 2, 3, 3)] + _QKV,
     lambda g, q, k, v: np_attention_grad_q(g, q, k, v, scale=0.6), grad=(), tol=_ATOL,
     second_order=False)
