"""The layer-norm pass (gradflow/passes/layer_norm.py): contrib's ``layer_norm`` (BERT's)
and GPT-2's own ``norm``, with their gradients, become one ``layer_norm_fwd`` /
``layer_norm_bwd`` pair in the plan, with the unfused graph's numbers on every backend;
what the pass must leave unfused; bad inputs named when the node is built."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
import gradflow.passes as passes
from gradflow.passes import optimize
from gradflow.passes.layer_norm import fuse_layer_norm

N = 16


def _gpt2_norm(x, scope, axis=-1, epsilon=1e-5):
    """GPT-2's ``norm`` (src/model.py), as written there."""
    with gf.variable_scope(scope):
        n_state = x.shape[-1]
        g = gf.get_variable("g", [n_state], initializer=gf.constant_initializer(1.3),
                            dtype=x.dtype)
        b = gf.get_variable("b", [n_state], initializer=gf.constant_initializer(0.2),
                            dtype=x.dtype)
        u = gf.reduce_mean(x, axis=axis, keepdims=True)
        s = gf.reduce_mean(gf.square(x - u), axis=axis, keepdims=True)
        x = (x - u) * gf.rsqrt(s + epsilon)
        return x * g + b


def _contrib(x, scope):
    return gf.contrib.layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1,
                                        scope=scope)


def _model(norm, dtype, rows=(6,), residual=False, static=True):
    """``norm(x @ w)`` (and, with ``residual``, GPT-2's ``h + mlp(norm(h))``), its loss and
    the gradients of the loss for the weights and the norm's parameters."""
    rng = np.random.default_rng(4)
    shape = list(rows) + [N]
    x = gf.placeholder(dtype, shape if static else [None] * len(rows) + [N], name="x")
    w = gf.Variable(rng.normal(size=(N, N)).astype(dtype), name="w")
    h = gf.tensordot(x, w, 1)
    y = norm(h, "ln")
    out = gf.tanh(y) * 1.7
    if residual:
        out = h + out
    loss = gf.reduce_sum(out * out)
    grads = gf.gradients(loss, [w] + [v for v in gf.trainable_variables() if v is not w])
    feed = {x: rng.normal(size=shape).astype(dtype)}
    return [loss, y] + grads, feed


def _run(backend, fetches, feed, fused):
    saved = passes.PASSES
    passes.PASSES = [p for p in saved if fused or p is not fuse_layer_norm]
    try:
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            return sess.run(fetches, feed)
    finally:
        passes.PASSES = saved


def _ops(fetches, feed, shapes=None):
    graph = optimize(fetches, list(feed), shapes, passes=passes.PASSES[:-1])
    return [n.opdef.name for n in graph.nodes()]


@pytest.mark.parametrize("residual", [False, True], ids=["alone", "residual"])
@pytest.mark.parametrize("norm", [_contrib, _gpt2_norm], ids=["contrib", "gpt2"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_layer_norm_and_its_gradient_fuse_with_the_unfused_numbers(backend, norm, dtype,
                                                                   residual):
    fetches, feed = _model(norm, dtype, rows=(2, 3), residual=residual)
    ops = _ops(fetches, feed)
    assert ops.count("layer_norm_fwd") == 1 and ops.count("layer_norm_bwd") == 1
    assert not {"sqrt", "broadcast_like", "unbroadcast"} & set(ops)
    assert ops.count("reduce_sum") == 1  # the loss's; the norm's and its gradient's are gone
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


@pytest.mark.parametrize("norm", [_contrib, _gpt2_norm], ids=["contrib", "gpt2"])
def test_unknown_leading_shapes_fuse_once_fed(backend, norm):
    fetches, feed = _model(norm, "float64", static=False)
    assert "layer_norm_bwd" in _ops(fetches, feed, [(6, N)])
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * np.abs(w).max())


@pytest.mark.parametrize("backend", ["numpy", "torch"])  # array_api_strict has no float16
def test_gpt2s_float16_norm_fuses_and_contribs_float32_moments_stay(backend):
    """GPT-2's norm in float16 fuses (half rows, float32 statistics); contrib's float16
    layer norm takes its moments in float32 between casts, a pattern the pass leaves."""
    fetches, feed = _model(_gpt2_norm, "float16", rows=(2, 3), residual=True)
    assert _ops(fetches, feed).count("layer_norm_bwd") == 1
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float16
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=3e-3,
                                   atol=3e-3 * np.abs(w.astype(np.float64)).max())
    gf.reset_default_graph()
    fetches, feed = _model(_contrib, "float16")
    assert "layer_norm_fwd" not in _ops(fetches, feed)


def test_the_statistics_and_the_epsilon_are_contribs():
    fetches, feed = _model(_contrib, "float32")
    graph = optimize(fetches, list(feed), passes=passes.PASSES[:-1])
    fwd = next(n for n in graph.nodes() if n.opdef.name == "layer_norm_fwd")
    assert fwd.attrs == {"eps": pytest.approx(1e-12), "form": "affine"}
    gf.reset_default_graph()
    fetches, feed = _model(_gpt2_norm, "float32")
    graph = optimize(fetches, list(feed), passes=passes.PASSES[:-1])
    fwd = next(n for n in graph.nodes() if n.opdef.name == "layer_norm_fwd")
    assert fwd.attrs == {"eps": pytest.approx(1e-5), "form": "centered"}


def test_a_forward_alone_fuses_and_a_fetched_intermediate_stays_unfused(backend):
    x = gf.placeholder(gf.float64, [4, N])
    y = _contrib(x, "ln")
    feed = {x: np.random.default_rng(0).normal(size=(4, N))}
    assert _ops([y], feed).count("layer_norm_fwd") == 1
    mean = gf.get_default_graph().get_tensor_by_name("ln/moments/mean:0")
    assert "layer_norm_fwd" not in _ops([y, mean], feed)
    got, want = (_run(backend, [y], feed, fused)[0] for fused in (True, False))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_norm_over_another_axis_or_without_gamma_stays_unfused():
    x = gf.placeholder(gf.float64, [4, N])
    y = gf.contrib.layers.layer_norm(x, begin_norm_axis=0, begin_params_axis=-1)
    assert "layer_norm_fwd" not in _ops([y], {x: None})
    y = gf.contrib.layers.layer_norm(x, begin_norm_axis=-1, scale=False)
    assert "layer_norm_fwd" not in _ops([y], {x: None})
    u = gf.reduce_mean(x, axis=-1, keepdims=True)
    z = (x - u) * gf.rsqrt(gf.reduce_mean(gf.square(x - u), -1, keepdims=True) + 1e-5)
    assert "layer_norm_fwd" not in _ops([z], {x: None})  # no gamma and beta: left as it is


def test_bad_parameters_are_refused_when_the_node_is_built_naming_them():
    from gradflow.prim.registry import apply

    x = gf.placeholder(gf.float32, [2, 5], name="rows")
    g = gf.placeholder(gf.float32, [4], name="scales")
    with pytest.raises(ValueError, match=r"(?s)gamma must be \[5\].*got \(4,\)"):
        apply("layer_norm", [x, g, g], eps=1e-5, form="affine")
    with pytest.raises(ValueError, match="form must be one of"):
        apply("layer_norm", [x, x, x], eps=1e-5, form="other")
