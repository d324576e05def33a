"""The CuPy lowering of the fused attention pair (gradflow/backends/cupy/attention.py), run
on NumPy with cuDNN's SDPA graph replaced by ``ReferenceSdpa``, which computes the fused
attention from the same memory through the dims and strides the lowering hands cuDNN: the
layouts (BERT's heads as a transposed view, read in place), the bias broadcast to
[b, 1, sq, sk], the scale, the causal flag, the dropout's mask and scale, the saved
statistics the backward reads, and the outputs written into the plan's buffers. The
cuDNN graph itself runs in tests/test_attention_gpu.py (GPU only)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from gradflow.backends.cupy import attention as cupy_attention
from gradflow.prim.attention import _attention_bwd_impl, _attention_fwd_impl

B, H, SQ, SK, D = 2, 3, 5, 7, 4


class Recording(cupy_attention.ReferenceSdpa):
    """The reference runner, recording each spec it was built for."""

    built: list = []

    def __init__(self, spec, xp):
        super().__init__(spec, xp)
        Recording.built.append(spec)


def _heads(rng, s):
    """[b, h, s, d] as BERT's split_heads makes it: a transposed view of [b, s, h, d]."""
    return rng.normal(size=(B, s, H, D)).astype(np.float16).transpose(0, 2, 1, 3)


def _inputs(rng, causal, dropout):
    q, k, v = _heads(rng, SQ), _heads(rng, SK), _heads(rng, SK)
    extra, attrs = [], {"scale": 0.5, "causal": causal, "bias": not causal,
                        "keep": 0.75 if dropout else None, "aux": "stats"}
    if not causal:
        pad = np.zeros((B, SK), np.float16)
        pad[:, -2:] = -10000.0
        extra.append(pad[:, None, None, :])  # BERT's adder: [b, 1, 1, sk]
    if dropout:
        extra.append((rng.uniform(size=(B, H, SQ, SK)) < 0.75).astype(np.float16))
    return q, k, v, extra, attrs


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout", [False, True])
def test_forward_and_backward_plumbing_give_the_fused_ops_numbers(causal, dropout):
    rng = np.random.default_rng(0)
    q, k, v, extra, attrs = _inputs(rng, causal and SQ <= SK, dropout)
    Recording.built = []
    fwd = cupy_attention.lower_attention_fwd(np, runner=Recording, **attrs)
    bwd = cupy_attention.lower_attention_bwd(np, runner=Recording, **attrs)
    out = (np.full((B, H, SQ, D), np.nan, np.float16), np.full((B, H, SQ, 1), np.nan, np.float32))
    o, stats = fwd(q, k, v, *extra, out=out)
    assert o is out[0] and stats is out[1]  # written into the plan's buffers
    g = rng.normal(size=o.shape).astype(np.float16)
    dq, dk, dv = bwd(g, q, k, v, o, stats, *extra)
    wide = [x.astype(np.float64) for x in (q, k, v, *extra)]
    want_o, want_stats = _attention_fwd_impl(np, *wide, **attrs)
    want = _attention_bwd_impl(np, g.astype(np.float64), *wide[:3], want_o, want_stats,
                               *wide[3:], **attrs)
    np.testing.assert_allclose(stats[..., 0], want_stats[..., 0], rtol=2e-3, atol=2e-3)
    for got, ref in zip((o, dq, dk, dv), (want_o,) + tuple(want)):
        assert got.dtype == np.float16 and got.shape == ref.shape
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=2e-2,
                                   atol=2e-2 * np.abs(ref).max())
    forward, backward = Recording.built
    _check_specs(forward, backward, q, causal and SQ <= SK, dropout)


def _check_specs(forward, backward, q, causal, dropout):
    names = {"q", "k", "v"} | ({"mask", "dropout_scale"} if dropout else set()) \
        | (set() if causal else {"bias"})
    assert {t[0] for t in forward.tensors} == names | {"o", "stats"}
    assert {t[0] for t in backward.tensors} == names | {"o", "dO", "stats", "dq", "dk", "dv"} \
        | ({"dropout_scale_inv"} if dropout else set())
    assert forward.scale == backward.scale == 0.5 and forward.causal == causal
    assert forward.dtype == "float16" and forward.dropout == dropout
    # the heads are read in place: the transposed view's strides, in elements
    assert forward.tensor("q")[1:3] == ((B, H, SQ, D), (SQ * H * D, D, H * D, 1))
    assert forward.tensor("stats")[1:] == ((B, H, SQ, 1), (H * SQ, SQ, 1, 1), "float32")
    if not causal:  # BERT's [b, 1, 1, sk] adder broadcast over the rows, not the heads
        assert forward.tensor("bias")[1:3] == ((B, 1, SQ, SK), (SQ * SK, SQ * SK, SK, 1))
    if dropout:
        assert forward.tensor("dropout_scale")[1:] == ((1, 1, 1, 1), (1, 1, 1, 1), "float32")
        assert backward.tensor("dropout_scale_inv")[1:] == forward.tensor("dropout_scale")[1:]


def test_a_graph_is_built_once_per_layout_and_reused():
    rng = np.random.default_rng(1)
    q, k, v, extra, attrs = _inputs(rng, False, False)
    Recording.built = []
    fwd = cupy_attention.lower_attention_fwd(np, runner=Recording, **attrs)
    for _ in range(3):
        fwd(q, k, v, *extra)
    fwd(np.ascontiguousarray(q), k, v, *extra)  # another layout: a graph of its own
    assert len(Recording.built) == 2


def test_a_refused_graph_runs_the_array_api_function(caplog):
    def refuse(spec, xp):
        raise RuntimeError("not supported")

    rng = np.random.default_rng(2)
    q, k, v, extra, attrs = _inputs(rng, False, True)
    fwd = cupy_attention.lower_attention_fwd(np, runner=refuse, **attrs)
    with caplog.at_level(logging.WARNING, logger="gradflow.cupy"):
        o, stats = fwd(q, k, v, *extra)
        fwd(q, k, v, *extra)
    want_o, want_stats = _attention_fwd_impl(np, q, k, v, *extra, **attrs)
    np.testing.assert_array_equal(o, want_o)
    np.testing.assert_array_equal(stats, want_stats)
    assert len([r for r in caplog.records if "refused" in r.message]) == 1


def test_full_precision_runs_the_array_api_function():
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(B, H, SQ, D)) for _ in range(3))
    attrs = {"scale": 0.5, "causal": False, "bias": False, "keep": None, "aux": "probs"}
    Recording.built = []
    fwd = cupy_attention.lower_attention_fwd(np, runner=Recording, **attrs)
    o, p = fwd(q, k, v)
    np.testing.assert_array_equal(o, _attention_fwd_impl(np, q, k, v, **attrs)[0])
    assert not Recording.built
