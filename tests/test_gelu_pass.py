"""The GELU pass (gradflow/passes/gelu.py): GPT-2's tanh-form ``gelu`` (benchmarks/
transformer.py's) and its gradient become ``gelu_tanh``/``gelu_tanh_grad`` in the plan,
with the unfused graph's numbers on every backend; the fused forward kernel then saves
only its input for the backward; what the pass leaves as it is."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_host import GXX
from test_cuda_kernels import _reference, _run_both_forms

import gradflow as gf
import gradflow.passes as passes
from gradflow.backends.cuda import kernels as cuda_kernels
from gradflow.backends.kernel_text import program_inputs
from gradflow.passes import optimize
from gradflow.passes.gelu import fuse_gelu


def gelu(x):
    """GPT-2's ``gelu`` (src/model.py), as written there."""
    return 0.5 * x * (1 + gf.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * gf.pow(x, 3))))


def bert_gelu(x):
    """google-research/bert's ``gelu`` (modeling.py), as written there."""
    cdf = 0.5 * (1.0 + gf.tanh((np.sqrt(2 / np.pi) * (x + 0.044715 * gf.pow(x, 3)))))
    return x * cdf


def _model(dtype, act=gelu, residual=False, shape=(64, 32)):
    """A dense layer with ``act`` (and, with ``residual``, ``h + act(h)``), the loss and
    the gradients of the weights and biases."""
    rng = np.random.default_rng(2)
    x = gf.placeholder(dtype, [None, shape[1]], name="x")
    w = gf.Variable((rng.normal(size=(shape[1], shape[1])) * 0.5).astype(dtype))
    b = gf.Variable(rng.normal(size=shape[1]).astype(dtype))
    h = gf.matmul(x, w) + b
    y = act(h)
    out = h + y if residual else y
    loss = gf.reduce_sum(gf.sin(out))
    feed = {x: rng.normal(size=shape).astype(dtype)}
    return [loss, y] + gf.gradients(loss, [w, b]), feed


def _run(backend, fetches, feed, fused):
    saved = passes.PASSES
    passes.PASSES = [p for p in saved if fused or p is not fuse_gelu]
    try:
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            return sess.run(fetches, feed)
    finally:
        passes.PASSES = saved


def _ops(fetches, feed, shapes=((64, 32),)):
    graph = optimize(fetches, list(feed), list(shapes), passes=passes.PASSES[:-1])
    return [n.opdef.name for n in graph.nodes()]


@pytest.mark.parametrize("residual", [False, True], ids=["alone", "residual"])
@pytest.mark.parametrize("act", [gelu, bert_gelu], ids=["gpt2", "bert"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gelu_and_its_gradient_fuse_with_the_unfused_numbers(backend, dtype, act, residual):
    fetches, feed = _model(dtype, act=act, residual=residual)
    ops = _ops(fetches, feed)
    assert ops.count("gelu_tanh") == 1 and ops.count("gelu_tanh_grad") == 1
    assert "tanh" not in ops
    got = _run(backend, fetches, feed, True)
    want = _run(backend, fetches, feed, False)
    rtol = 1e-12 if dtype == "float64" else 1e-5
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


def _fused(fetches, feed, fused):
    """``[(members, inputs, outputs)]`` of the plan's fused nodes."""
    saved = passes.PASSES
    passes.PASSES = [p for p in saved if fused or p is not fuse_gelu]
    try:
        graph = optimize(fetches, list(feed), [(64, 32)])
    finally:
        passes.PASSES = saved
    return [([m.type for m in n.attrs["program"].members], n.attrs["program"].num_inputs,
             len(n.attrs["program"].outputs)) for n in graph.nodes() if n.opdef.name == "fused"]


def test_the_forward_kernel_saves_only_the_input():
    """The fused forward (bias add, GELU, the loss's sin) writes ``h``, ``y`` and
    ``sin(y)`` where the unfused ops' kernel writes six arrays; the backward kernel reads
    ``dy``'s input and ``h`` where the unfused one reads ten arrays."""
    fetches, feed = _model("float32")
    fetches = fetches[:1] + fetches[2:]  # y itself not fetched
    assert _fused(fetches, feed, True) == [(["add", "gelu_tanh", "sin"], 2, 3),
                                           (["cos", "gelu_tanh_grad"], 2, 1)]
    (_, _, outputs), (_, inputs, _) = _fused(fetches, feed, False)
    assert (outputs, inputs) == (6, 10)


def test_a_forward_alone_fuses_and_a_fetched_intermediate_stays_unfused():
    x = gf.placeholder(gf.float64, [None, 8])
    y = gelu(x)
    feed = {x: None}
    assert _ops([y], feed, [(4, 8)]).count("gelu_tanh") == 1
    t_names = [op for op in gf.get_default_graph().get_operations() if op.type == "tanh"]
    assert "gelu_tanh" not in _ops([y, t_names[0]], feed, [(4, 8)])


@pytest.mark.parametrize("act,form", [(gelu, "gpt2"), (bert_gelu, "bert")])
def test_each_form_keeps_its_order(act, form):
    """GPT-2's ``(0.5 * x) * (1 + t)`` and google-research/bert's ``x * (0.5 * (1 + t))``
    keep their own order of operations (``form``), so each gives its unfused numbers."""
    fetches, feed = _model("float64", act=act)
    graph = optimize(fetches, list(feed), [(64, 32)], passes=passes.PASSES[:-1])
    found = [n for n in graph.nodes() if n.opdef.name.startswith("gelu_tanh")]
    assert [n.attrs["form"] for n in found] == [form, form]
    assert found[0].attrs["c"] == pytest.approx(math.sqrt(2 / math.pi), rel=1e-15)


def test_other_constants_are_not_gelu():
    x = gf.placeholder(gf.float64, [None, 8])
    y = 0.5 * x * (1 + gf.tanh(0.7 * (x + 0.044715 * gf.pow(x, 3))))
    assert "gelu_tanh" not in _ops([y], {x: None}, [(4, 8)])
    y = 0.5 * x * (1 + gf.tanh(math.sqrt(2 / math.pi) * (x + 0.05 * gf.pow(x, 3))))
    assert "gelu_tanh" not in _ops([y], {x: None}, [(4, 8)])


@pytest.mark.skipif(GXX is None, reason="g++ is not installed: the CUDA C text is compiled "
                                        "on the host with it")
@pytest.mark.parametrize("act", [gelu, bert_gelu], ids=["gpt2", "bert"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_fused_kernels_print_as_cuda_c_with_the_same_numbers(dtype, act, tmp_path):
    """What the CuPy backend compiles: the fused forward and backward kernels printed from
    ``gelu_tanh``'s and ``gelu_tanh_grad``'s scalar expressions, run by g++, against each
    member's Array API function (tanh's last bits may differ: a few ulps)."""
    fetches, feed = _model(dtype, act=act)
    fetches = fetches[:1] + fetches[2:]
    graph = optimize(fetches, list(feed), [(64, 32)])
    nodes = [n for n in graph.nodes() if n.opdef.name == "fused"]
    assert len(nodes) == 2
    rng = np.random.default_rng(5)
    for node in nodes:
        program = node.attrs["program"]
        kernel = cuda_kernels.print_kernel(program, (64, 32))
        assert kernel is not None and "tanh" in kernel.operation
        arrays = [rng.normal(size=tuple(i.shape)).astype(dtype) * 2
                  for i in program_inputs(program)]
        want = _reference(program, arrays)
        for got in _run_both_forms(program, kernel, arrays, tmp_path):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-12 if dtype == "float64" else 1e-5,
                                           atol=1e-12 if dtype == "float64" else 1e-5)
