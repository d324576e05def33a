"""The attention pass (gradflow/passes/attention.py): BERT's and GPT-2's attention, as
their TF1 code writes it, and its gradient become one ``attention_fwd``/``attention_bwd``
pair in the plan, with the unfused graph's numbers on every backend; what the pass must
leave alone stays unfused."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf
import gradflow.passes as passes
from gradflow.passes import optimize
from gradflow.passes.attention import fuse_attention

B, H, S, D = 2, 2, 5, 3


def _bert(dtype, dropout=0.0, s=S, bias_grad=False):
    """google-research/bert's attention_layer core over variables q, k, v."""
    rng = np.random.default_rng(0)
    q, k, v = (gf.Variable(rng.normal(size=(B, H, s, D)).astype(dtype), name=n)
               for n in "qkv")
    mask = gf.placeholder(dtype, [None, s], name="mask")
    adder = gf.expand_dims(gf.expand_dims((1.0 - mask) * -10000.0, 1), 1)
    if bias_grad:
        adder = adder * gf.Variable(np.ones((), dtype), name="bias_scale")
    scores = gf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(D)) + adder
    probs = gf.nn.softmax(scores)
    if dropout:
        probs = gf.nn.dropout(probs, rate=dropout)
    o = gf.matmul(probs, v)
    return o, [q, k, v], {mask: _mask(dtype, s)}, probs


def _gpt2_softmax(x, axis=-1):
    """GPT-2's own softmax (src/model.py), not tf.nn.softmax."""
    x = x - gf.reduce_max(x, axis=axis, keepdims=True)
    ex = gf.exp(x)
    return ex / gf.reduce_sum(ex, axis=axis, keepdims=True)


def _gpt2_own(dtype):
    return _gpt2(dtype, _gpt2_softmax)


def _gpt2(dtype, softmax=gf.nn.softmax):
    """GPT-2's attn core: w * rsqrt(d), w * b - 1e10 * (1 - b), softmax, product."""
    rng = np.random.default_rng(1)
    q, k, v = (gf.Variable(rng.normal(size=(B, H, S, D)).astype(dtype), name=n)
               for n in "qkv")
    w = gf.matmul(q, k, transpose_b=True)
    w = w * gf.rsqrt(gf.cast(D, w.dtype))
    i = gf.range(S)[:, None]
    j = gf.range(S)
    b = gf.reshape(gf.cast(i >= j - S + S, w.dtype), [1, 1, S, S])
    w = w * b - gf.cast(1e10, w.dtype) * (1 - b)
    return gf.matmul(softmax(w), v), [q, k, v], {}, None


def _mask(dtype, s):
    m = np.ones((B, s), dtype)
    m[:, -2:] = 0.0
    return m


def _run(backend, fetches, feed, fused):
    chosen = passes.PASSES if fused else [p for p in passes.PASSES if p is not fuse_attention]
    saved = passes.PASSES
    passes.PASSES = chosen
    try:
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            return sess.run(fetches, feed)
    finally:
        passes.PASSES = saved


def _ops(fetches, feed):
    graph = optimize(fetches, list(feed), passes=passes.PASSES[:-1])
    return [n.opdef.name for n in graph.nodes()]


def _step(build, dtype, **kw):
    gf.set_random_seed(5)
    o, wrt, feed, probs = build(dtype, **kw)
    loss = gf.reduce_sum(o * o * o)
    return [o] + gf.gradients(loss, wrt), feed, probs


@pytest.mark.parametrize("model", ["bert", "bert_dropout", "gpt2", "gpt2_own_softmax"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_attention_and_its_gradient_fuse_with_the_unfused_numbers(backend, model, dtype):
    """GPT-2's own softmax's gradient (reduce_max's branch included) is the fused one's
    to rounding: its max branch adds a sum that is zero up to rounding."""
    build = {"gpt2": _gpt2, "gpt2_own_softmax": _gpt2_own}.get(model, _bert)
    kw = {"dropout": 0.25} if model == "bert_dropout" else {}
    fetches, feed, _ = _step(build, dtype, **kw)
    ops = _ops(fetches, feed)
    assert ops.count("attention_fwd") == 1 and ops.count("attention_bwd") == 1
    assert not {"softmax", "exp", "reduce_max"} & set(ops) and ops.count("matmul") == 0
    if model == "bert_dropout":
        assert "floor" in ops  # the dropout mask is still drawn, and read by the pair
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


def test_the_fused_pair_saves_probabilities_for_full_precision():
    fetches, feed, _ = _step(_bert, "float32")
    graph = optimize(fetches, list(feed), passes=passes.PASSES[:-1])
    fwd = next(n for n in graph.nodes() if n.opdef.name == "attention_fwd")
    assert fwd.attrs["aux"] == "probs" and fwd.attrs["bias"] and not fwd.attrs["causal"]
    assert fwd.attrs["scale"] == pytest.approx(1 / math.sqrt(D)) and fwd.attrs["keep"] is None


def test_a_forward_alone_fuses_and_a_fetched_intermediate_stays_unfused():
    o, _, feed, probs = _bert("float64")
    assert "attention_fwd" in _ops([o], feed)
    assert "attention_fwd" not in _ops([o, probs], feed)  # probs fetched: left as it is


def test_a_differentiable_bias_leaves_the_pattern_unfused():
    """The pair has no bias gradient: a graph that needs one keeps the unfused ops."""
    gf.set_random_seed(5)
    o, wrt, feed, _ = _bert("float64", bias_grad=True)
    bias_scale = [v for v in gf.global_variables() if v.name.startswith("bias_scale")]
    fetches = [o] + gf.gradients(gf.reduce_sum(o * o), wrt + bias_scale)
    ops = _ops(fetches, feed)
    assert "attention_fwd" not in ops and "attention_bwd" not in ops
    assert "softmax" in ops


def test_a_softmax_over_another_axis_is_not_attention():
    rng = np.random.default_rng(0)
    q, k, v = (gf.constant(rng.normal(size=(B, H, S, S))) for _ in range(3))
    o = gf.matmul(gf.nn.softmax(gf.matmul(q, k, transpose_b=True), axis=2), v)
    assert "attention_fwd" not in _ops([o], {})


def test_dropout_drawn_in_the_fed_batchs_shape_keeps_its_numbers(backend):
    """BERT's heads come from a fed batch (``shape(x)[0]``): dropout's draw takes the
    probabilities' shape at run time, and the fused plan draws the same numbers."""
    gf.set_random_seed(7)
    x = gf.placeholder(gf.float64, [None, S, H * D])
    n = gf.shape(x)[0]
    w = gf.Variable(np.random.default_rng(2).normal(size=(H * D, H * D)))

    def heads(t):
        return gf.transpose(gf.reshape(t, [n, S, H, D]), [0, 2, 1, 3])

    q = heads(gf.reshape(gf.matmul(gf.reshape(x, [-1, H * D]), w), [n, S, H * D]))
    probs = gf.nn.dropout(gf.nn.softmax(gf.matmul(q, q, transpose_b=True) * 0.5), rate=0.3)
    o = gf.matmul(probs, q)
    fetches = [o] + gf.gradients(gf.reduce_sum(o * o), [w])
    feed = {x: np.random.default_rng(3).normal(size=(B, S, H * D))}
    graph = optimize(fetches, [x], [(B, S, H * D)], passes=passes.PASSES[:-1])
    assert "attention_bwd" in [node.opdef.name for node in graph.nodes()]
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=1e-12, atol=1e-12 * np.abs(w_).max())


def test_bad_shapes_are_refused_when_the_node_is_built_naming_the_tensors():
    from gradflow.prim.registry import apply

    q = gf.placeholder(gf.float32, [2, 3, 4, 5], name="queries")
    k = gf.placeholder(gf.float32, [2, 3, 4, 6], name="keys")
    with pytest.raises(ValueError, match=r"(?s)depths of q and k differ \(5 vs 6\).*queries"):
        apply("attention", [q, k, k], scale=1.0, causal=False, bias=False, keep=None)
    v = gf.placeholder(gf.float32, [2, 3, 7, 5], name="values")
    with pytest.raises(ValueError, match="sequence lengths of k and v differ"):
        apply("attention", [q, q, v], scale=1.0, causal=False, bias=False, keep=None)
    flat = gf.placeholder(gf.float32, [2, 4, 5], name="flat")
    with pytest.raises(ValueError, match=r"q must be \[batch, heads, seq, depth\], got rank 3"):
        apply("attention", [flat, q, q], scale=1.0, causal=False, bias=False, keep=None)
