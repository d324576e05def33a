"""NCHW convolution passes as one op each (``gradflow.passes.conv_layouts``, the NumPy
backend's kernel pass where oneDNN is there): which passes fold, the numbers of the
folded ops against the passes between copies, and the NCHW ops' own forward on every
backend."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow import backends
from gradflow.backends.onednn import library as onednn
from gradflow.passes import PlanGraph, optimize
from gradflow.passes.conv_layouts import fold_conv_layouts
from gradflow.prim.conv import NCHW_FORMS
from gradflow.prim.registry import REGISTRY

FORMS = [form for form, _, _ in NCHW_FORMS.values()]


def _ops(graph):
    return sorted(n.opdef.name for n in graph.nodes()
                  if n.opdef.kind == "compute" and n.opdef.name != "variable")


def _lone_conv(rng, shape, ksize, co, strides, padding, dtype=gf.float32):
    """One NCHW convolution, its result fed a gradient: ``(x, g, y, dx, dw)``."""
    np_dtype = np.float32 if dtype == gf.float32 else np.float64
    n, c, h, w = shape
    x = gf.placeholder(dtype, shape)
    wv = gf.Variable(rng.standard_normal(ksize + (c, co)).astype(np_dtype))
    y = gf.nn.conv2d(x, wv, [1, 1] + list(strides), padding, data_format="NCHW")
    g = gf.placeholder(dtype, tuple(y.shape))
    dx, dw = gf.gradients(y, [x, wv], grad_ys=g)
    return x, g, y, dx, dw


def test_each_pass_of_a_lone_nchw_convolution_is_one_op():
    rng = np.random.default_rng(0)
    x, g, y, dx, dw = _lone_conv(rng, (2, 3, 9, 9), (3, 3), 4, (1, 1), "SAME")
    graph = optimize([y, dx, dw], [x, g])
    assert _ops(graph).count("image_layout") == 4  # x and g in, y and dx out
    fold_conv_layouts(graph)
    assert _ops(graph) == sorted(FORMS)  # no copy left
    (forward,) = [n for n in graph.nodes() if n.opdef.name == "nchw_conv2d"]
    assert tuple(forward.shape) == (2, 4, 9, 9) and forward.inputs[0] is x


def test_a_pass_with_an_nhwc_image_keeps_its_copies():
    """Between NCHW layers the layout pass leaves the images NHWC: a pass with one NHWC
    image does not fold, and the copy of x it shares with it stays for the forward pass
    too (folding that alone would leave the copy computed for the others)."""
    rng = np.random.default_rng(1)
    x = gf.placeholder(gf.float32, (2, 3, 8, 8))
    w1 = gf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    w2 = gf.Variable(rng.standard_normal((3, 3, 4, 5)).astype(np.float32))
    h = gf.nn.relu(gf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME", data_format="NCHW"))
    y = gf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME", data_format="NCHW")
    grads = gf.gradients(gf.reduce_sum(y * y), [w1, w2, x])
    graph = optimize(grads, [x])
    before = _ops(graph)
    fold_conv_layouts(graph)
    assert _ops(graph) == before


def test_a_fetched_copy_is_kept():
    rng = np.random.default_rng(2)
    x, g, y, dx, dw = _lone_conv(rng, (2, 3, 9, 9), (3, 3), 4, (1, 1), "SAME")
    copy = y.op.inputs[0].op.inputs[0]  # the conv's NHWC input: x's copy
    assert copy.op.type == "image_layout"
    graph = PlanGraph([y, copy], [x])
    fold_conv_layouts(graph)
    assert "nchw_conv2d" not in _ops(graph)


def test_float64_is_left_to_the_nhwc_kernels():
    rng = np.random.default_rng(3)
    x, g, y, dx, dw = _lone_conv(rng, (2, 3, 9, 9), (3, 3), 4, (1, 1), "SAME", gf.float64)
    graph = optimize([y, dx, dw], [x, g])
    before = _ops(graph)
    fold_conv_layouts(graph)
    assert _ops(graph) == before


CASES = [((2, 32, 14, 14), (5, 5), 64, (1, 1), "SAME"),      # blocked layout
         ((9, 1, 12, 12), (5, 5), 32, (1, 1), "SAME"),       # few channels: parts, GEMMs
         ((3, 6, 14, 14), (5, 5), 16, (1, 1), "VALID"),
         ((2, 3, 13, 11), (3, 3), 8, (2, 2), "VALID"),
         ((2, 16, 9, 9), (1, 1), 24, (1, 1), "SAME"),        # 1x1: as they are
         ((2, 8, 10, 10), (1, 1), 6, (2, 2), "SAME"),
         ((2, 3, 16, 16), (7, 7), 16, (2, 2), "SAME")]


@pytest.mark.skipif(not onednn.available(), reason="oneDNN (onednn-cpu-gomp) is not installed")
@pytest.mark.parametrize("shape,ksize,co,strides,padding", CASES)
def test_the_folded_passes_give_the_numbers_of_the_passes_between_copies(
        shape, ksize, co, strides, padding):
    """Session(backend="numpy") folds them (oneDNN reading NCHW itself); against the
    graph as built (the NHWC kernels between copies) and the float64 reference."""
    rng = np.random.default_rng(4)
    x, g, y, dx, dw = _lone_conv(rng, shape, ksize, co, strides, padding)
    feed = {x: rng.standard_normal(shape).astype(np.float32),
            g: rng.standard_normal(tuple(g.shape)).astype(np.float32)}
    results = {}
    for optimize_ in (True, False):
        with gf.Session(backend="numpy", optimize=optimize_) as sess:
            sess.run(gf.global_variables_initializer())
            results[optimize_] = sess.run([y, dx, dw], feed)
            if optimize_:
                plan_ops = {n.opdef.name for plan in sess._plans.values()
                            if hasattr(plan, "line_nodes") for n in plan.line_nodes.values()}
    assert set(FORMS) <= plan_ops
    for name, got, want in zip(("forward", "input", "filter"), *results.values()):
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, rtol=0, atol=3e-6 * scale, err_msg=name)


@pytest.mark.parametrize("form", FORMS)
def test_the_nchw_ops_forward_is_the_nhwc_op_between_copies(backend, form):
    """The ops' own forward (any backend where no lowering takes them), float64."""
    rng = np.random.default_rng(5)
    b = backends.get(backend) if isinstance(backend, str) else backend
    xp = b.xp
    n, c, h, w, co = 2, 3, 7, 6, 4
    x = rng.standard_normal((n, c, h, w))
    f = rng.standard_normal((3, 3, c, co))
    gy = rng.standard_normal((n, co, 4, 3))
    attrs = {"strides": (2, 2), "padding": "SAME"}
    to_nhwc, to_nchw = (0, 2, 3, 1), (0, 3, 1, 2)
    nhwc_name = next(k for k, (v, _, _) in NCHW_FORMS.items() if v == form)
    nhwc_inputs = {"conv2d": [x.transpose(to_nhwc), f],
                   "conv2d_backprop_input": [gy.transpose(to_nhwc), f, x.transpose(to_nhwc)],
                   "conv2d_backprop_filter": [x.transpose(to_nhwc), gy.transpose(to_nhwc), f]}
    nchw_inputs = {"conv2d": [x, f], "conv2d_backprop_input": [gy, f, x],
                   "conv2d_backprop_filter": [x, gy, f]}
    want = REGISTRY[nhwc_name].impl(np, *[np.ascontiguousarray(a)
                                          for a in nhwc_inputs[nhwc_name]], **attrs)
    if NCHW_FORMS[nhwc_name][2]:
        want = want.transpose(to_nchw)
    got = REGISTRY[form].impl(xp, *[b.asarray(a) for a in nchw_inputs[nhwc_name]], **attrs)
    np.testing.assert_allclose(b.to_numpy(got), want, rtol=1e-12, atol=1e-12)
    shapes = [a.shape for a in nchw_inputs[nhwc_name]]
    assert REGISTRY[form].infer(shapes, [gf.float64] * len(shapes), **attrs)[0] == want.shape


@pytest.mark.skipif(not onednn.available(), reason="oneDNN (onednn-cpu-gomp) is not installed")
def test_several_threads_on_one_session_get_each_their_own_numbers():
    """Each thread's oneDNN memory objects and reorder buffers are its own: four threads
    running the folded passes at once, each on its own input, get what one thread gets."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(6)
    x, g, y, dx, dw = _lone_conv(rng, (9, 16, 10, 10), (3, 3), 32, (1, 1), "SAME")
    feeds = [{x: rng.standard_normal((9, 16, 10, 10)).astype(np.float32),
              g: rng.standard_normal(tuple(g.shape)).astype(np.float32)} for _ in range(4)]
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        want = [sess.run([y, dx, dw], feed) for feed in feeds]

        def work(k):  # the last of ten runs; an error is raised again by map
            return [sess.run([y, dx, dw], feeds[k]) for _ in range(10)][-1]

        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(work, range(4)))
    for mine, theirs in zip(got, want):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)
