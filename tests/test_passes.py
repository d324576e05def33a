"""The graph compiler's passes: common subexpressions, constant folding, algebraic rewrites.

Each pass is checked alone on a plan graph (the ops before and after it), and the
whole compiler against the graph as built: ``Session(optimize=False)`` must give
the same numbers, gradients and training steps on every backend.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError
from gradflow.passes import PlanGraph, PlanNode
from gradflow.passes.batch_matmuls import batch_matmuls
from gradflow.passes.constant_folding import fold_constants
from gradflow.passes.cse import eliminate_common_subexpressions
from gradflow.passes.layouts import sink_layouts
from gradflow.passes.rewrites import rewrite_algebra
from gradflow.passes.shape_noops import drop_shape_noops
from gradflow.prim.registry import apply


def _ops(graph):
    """``{op name: count}`` over the nodes a plan graph runs."""
    return collections.Counter(n.opdef.name for n in graph.nodes())


def _computed(graph, op):
    return [n for n in graph.nodes() if isinstance(n, PlanNode) and n.opdef.name == op]


def _both(backend, fetches, feed=None, steps=None):
    """The values of ``fetches`` from an optimizing session and from one running the graph
    as built (after ``steps`` runs of the op ``steps[0]`` with ``steps[1]`` as feed)."""
    results = []
    for optimize in (True, False):
        with gf.Session(backend=backend, optimize=optimize) as sess:
            sess.run(gf.global_variables_initializer())
            if steps is not None:
                train, train_feed, count = steps
                for _ in range(count):
                    sess.run(train, train_feed)
            results.append(sess.run(fetches, feed))
    return results


def _assert_same(got, want, rtol=1e-6, atol=1e-7):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


# -- common-subexpression elimination -------------------------------------------------


def test_cse_merges_equal_nodes_and_small_constants():
    x = gf.placeholder(gf.float32, (3,))
    a = gf.exp(x * 2.0)  # each ``2.0`` is a constant node of its own
    b = gf.exp(x * 2.0)
    y = a + b
    graph = PlanGraph([y], [x])
    before = _ops(graph)
    assert (before["exp"], before["multiply"], before["constant"]) == (2, 2, 2)
    eliminate_common_subexpressions(graph)
    after = _ops(graph)
    assert (after["exp"], after["multiply"], after["constant"]) == (1, 1, 1)
    (add,) = _computed(graph, "add")
    assert add.inputs[0] is add.inputs[1]


def test_cse_keeps_nodes_that_differ():
    x = gf.placeholder(gf.float32, (2, 3))
    sums = [gf.reduce_sum(x, 0), gf.reduce_sum(x, 1)]  # different attributes
    signed = [x + gf.constant(0.0), x + gf.constant(-0.0)]  # different bytes
    nan = [gf.nn.leaky_relu(x, alpha=float("nan")), gf.nn.leaky_relu(x, alpha=float("nan"))]
    # constants of 100 elements are compared by identity only
    big = [gf.constant(np.zeros(100, np.float32))[:3] for _ in range(2)]
    outs = [gf.reduce_sum(t) for t in sums + signed + nan + big]
    graph = PlanGraph([gf.add_n(outs)], [x])
    eliminate_common_subexpressions(graph)
    ops = _ops(graph)
    assert ops["leaky_relu"] == 2
    assert len([n for n in graph.nodes() if n.opdef.name == "constant"
                and n.attrs["value"].array.size == 100]) == 2
    adds = [n for n in _computed(graph, "add") if n.inputs[0] is x and n.shape == (2, 3)]
    assert len(adds) >= 2  # x + 0.0 and x + -0.0 stay apart


def test_cse_leaves_random_and_stateful_ops_alone():
    x = gf.placeholder(gf.float32, (4,))
    d1 = gf.nn.dropout(x, rate=0.5, seed=1)
    d2 = gf.nn.dropout(x, rate=0.5, seed=1)
    v = gf.Variable(np.zeros(4, np.float32))
    a1, a2 = gf.assign_add(v, x), gf.assign_add(v, x)
    graph = PlanGraph([d1 + d2, a1, a2], [x])
    kinds = collections.Counter(n.opdef.kind for n in graph.nodes())
    eliminate_common_subexpressions(graph)
    after = collections.Counter(n.opdef.kind for n in graph.nodes())
    assert after["random"] == kinds["random"] >= 2
    assert after["assign"] == 2


def test_cse_removes_pass_through_ops_unless_fetched_or_after_control_inputs():
    x = gf.placeholder(gf.float32, (3,))
    y = gf.exp(gf.identity(gf.stop_gradient(x)))
    graph = PlanGraph([y], [x])
    eliminate_common_subexpressions(graph)
    assert not _computed(graph, "identity") and not _computed(graph, "stop_gradient")
    assert _computed(graph, "exp")[0].inputs[0] is x

    i = gf.identity(x)
    graph = PlanGraph([i, gf.exp(i)], [x])
    eliminate_common_subexpressions(graph)
    assert len(_computed(graph, "identity")) == 1

    check = gf.Assert(gf.reduce_all(x > 0.0), [x])
    with gf.control_dependencies([check]):
        guarded = gf.identity(x)
    graph = PlanGraph([gf.exp(guarded)], [x])
    eliminate_common_subexpressions(graph)
    assert len(_computed(graph, "identity")) == 1


def test_cse_maps_duplicates_to_a_fetched_node(backend):
    x = gf.placeholder(gf.float32, (3,))
    a = x * 2.0  # not fetched
    b = x * 2.0  # fetched: a becomes b
    c = gf.exp(a) + b
    graph = PlanGraph([b, c], [x])
    eliminate_common_subexpressions(graph)
    (mul,) = _computed(graph, "multiply")
    assert mul is graph.outputs[0] and mul.origin is b
    feed = {x: np.array([0.5, -1.0, 2.0], np.float32)}
    got, want = _both(backend, [a, b, c], feed)  # both duplicates fetched: both stay
    _assert_same(got, want)
    np.testing.assert_allclose(got[0], 2 * feed[x])
    got2, want2 = _both(backend, [b, c], feed)
    _assert_same(got2, want2)
    _assert_same(got2, want[1:])


def test_fetched_duplicates_each_get_their_own_value():
    x = gf.placeholder(gf.float32, (2,))
    a, b = x + 1.0, x + 1.0
    with gf.Session(backend="numpy") as sess:
        va, vb = sess.run([a, b], {x: [1.0, 2.0]}, output="native")
    assert va is not vb
    va[0] = 100.0
    np.testing.assert_array_equal(vb, [2.0, 3.0])


def test_a_fed_duplicate_is_not_merged(backend):
    x = gf.placeholder(gf.float32, (2,))
    a, b = x * 3.0, x * 3.0
    y = a + b
    feed = {x: np.array([1.0, 2.0], np.float32), a: np.array([10.0, 20.0], np.float32)}
    got, want = _both(backend, [y, b], feed)
    _assert_same(got, want)
    np.testing.assert_allclose(got[0], [13.0, 26.0])


# -- constant folding -----------------------------------------------------------------


def test_constant_folding_replaces_constant_expressions():
    x = gf.placeholder(gf.float32, (None, 3))
    c = gf.constant([1.0, 2.0, 3.0]) * 2.0 + 1.0
    y = x + c
    graph = PlanGraph([y], [x], [(4, 3)])
    fold_constants(graph)
    ops = _ops(graph)
    assert ops["multiply"] == 0 and ops["add"] == 1
    (add,) = _computed(graph, "add")
    folded = add.inputs[1]
    assert isinstance(folded, PlanNode) and folded.opdef.name == "constant"
    assert folded.origin is None and folded.name == c.name and folded.dtype is gf.float32
    np.testing.assert_array_equal(folded.attrs["value"].array, [3.0, 5.0, 7.0])
    assert folded.attrs["value"].array.dtype == np.float32


def test_constant_folding_of_static_shapes():
    x = gf.placeholder(gf.float32, (None, 3))
    h = x * 2.0  # its static shape is specialized to the shape fed
    outs = [gf.cast(gf.shape(h), gf.float32), gf.cast(gf.size(h), gf.float32),
            gf.cast(gf.rank(h), gf.float32), gf.reduce_sum(gf.zeros_like(h))]
    y = x + gf.add_n([gf.reduce_sum(o) for o in outs])
    graph = PlanGraph([y], [x], [(5, 3)])
    fold_constants(graph)
    assert not any(_computed(graph, op) for op in ("shape", "size", "rank", "zeros_like"))
    (add,) = _computed(graph, "add")
    assert add.inputs[0] is x and add.inputs[1].opdef.name == "constant"
    assert float(add.inputs[1].attrs["value"].array) == 5 + 3 + 15 + 2 + 0
    general = PlanGraph([y], [x])  # the batch size unknown: only the rank folds
    fold_constants(general)
    assert _computed(general, "shape") and not _computed(general, "rank")


def test_shapes_computed_from_fed_shapes_become_static_shapes_of_what_they_shape():
    # BERT's reshape(x, get_shape_list(ids)[0:-1] + [width]) and tf.zeros(tf.shape(x)):
    # once the shape tensors fold, the reshaped values have static shapes, so the plan
    # can give them buffers of its own instead of new arrays on every run
    ids = gf.placeholder(gf.int32, (None, 4))
    table = gf.constant(np.ones((10, 3), np.float32))
    rows = gf.gather(table, gf.reshape(ids, [-1]))
    out = gf.reshape(rows, [gf.shape(ids)[0], 4, 3])
    flat = gf.reshape(out, [gf.shape(ids)[0], -1])
    zeros = gf.zeros([gf.shape(ids)[0], 5000])  # too large to fold into a constant
    y = gf.reduce_sum(flat * 2.0, 1) + gf.reduce_sum(zeros, 1)
    graph = PlanGraph([y], [ids], [(5, 4)])
    fold_constants(graph)
    shapes = {n.name: tuple(n.shape) for n in graph.nodes()
              if isinstance(n, PlanNode) and n.opdef.name == "reshape"}
    assert sorted(shapes.values()) == [(5, 4, 3), (5, 12), (20,)]
    assert [tuple(n.shape) for n in _computed(graph, "fill")] == [(5, 5000)]
    with gf.Session() as sess:
        plan = sess.describe_plan(y, {ids: np.zeros((5, 4), np.int32)})
        assert "None" not in plan.split("feed 'Placeholder'")[1].split("\n", 1)[1]
        got = sess.run(y, {ids: np.zeros((5, 4), np.int32)})
    np.testing.assert_array_equal(got, np.full(5, 24.0))


def test_a_constant_exponent_becomes_tf1s_multiplications(backend):
    # TF's graph optimizer rewrites pow(x, 2/3/0.5/-0.5/-1): BERT's GELU has pow(x, 3)
    x = gf.placeholder(gf.float64, (None,))
    b = gf.constant(3.0, gf.float64)
    cubes = [gf.pow(x, 3), x ** 3, gf.pow(x, b)]
    others = [gf.pow(x, e) for e in (2, 0.5, -0.5, -1, 2.5)]
    (db,) = gf.gradients(cubes[2], [b])  # the graph keeps pow: its gradient in b stays
    (dx,) = gf.gradients(gf.reduce_sum(cubes[0]), [x])  # pow(x, 3 - 1) in the plan
    graph = PlanGraph(cubes + others + [dx], [x], [(3,)])
    fold_constants(graph)
    rewrite_algebra(graph)
    assert [n.inputs[0].opdef.name if n.opdef.name == "pow" else n.opdef.name
            for n in graph.outputs[:-1]] == ["multiply"] * 3 + ["square", "sqrt", "divide",
                                                                "divide", "placeholder"]
    assert len(_computed(graph, "pow")) == 1  # only the power 2.5: dx's pow(x, 2) is gone
    xv = np.array([0.5, 1.5, 2.0])
    with gf.Session(backend=backend) as sess:
        got = sess.run(cubes + [db, others[2], dx], {x: xv})
    for value in got[:3]:
        np.testing.assert_allclose(value, xv ** 3, rtol=1e-15)
    np.testing.assert_allclose(got[3], np.sum(xv ** 3 * np.log(xv)), rtol=1e-12)
    np.testing.assert_allclose(got[4], 1 / np.sqrt(xv), rtol=1e-15)
    np.testing.assert_allclose(got[5], 3 * xv ** 2, rtol=1e-15)


def test_folded_values_keep_the_nodes_dtype(backend):
    c8 = gf.cumsum(gf.constant([1, 2, 3], gf.int8))  # NumPy's cumsum would give int64
    half = gf.reduce_mean(gf.constant(np.arange(6).reshape(2, 3), gf.float64), 0)
    outs = [c8 * 2, half + 1.0, gf.cast(gf.size(c8, out_type=gf.int64), gf.float32)]
    graph = PlanGraph(outs, [])
    fold_constants(graph)
    folded = [n for n in graph.nodes() if isinstance(n, PlanNode) and n.opdef.name == "constant"]
    assert {n.name for n in folded} >= {c8.name, half.name}
    for node in folded:
        assert node.attrs["value"].array.dtype == node.dtype.as_numpy_dtype
    got, want = _both(backend, outs)
    for g, w, out in zip(got, want, outs):
        assert g.dtype == w.dtype == out.dtype.as_numpy_dtype
        np.testing.assert_array_equal(g, w)


def test_a_fed_tensor_is_not_folded(backend):
    c = gf.constant(2.0) * 3.0
    y = c + 1.0
    graph = PlanGraph([y], [c])
    fold_constants(graph)
    assert _computed(graph, "add") and _computed(graph, "add")[0].inputs[0] is c
    got, want = _both(backend, [y], {c: 10.0})
    _assert_same(got, want)
    assert float(got[0]) == 11.0
    got, want = _both(backend, [y])
    assert float(got[0]) == float(want[0]) == 7.0


def test_folding_that_raises_leaves_the_node_to_the_run(backend):
    params = gf.constant([1.0, 2.0, 3.0])
    out = gf.gather(params, gf.constant([5]), name="bad_gather") * 2.0
    graph = PlanGraph([out], [])
    fold_constants(graph)
    assert _computed(graph, "gather")
    for optimize in (True, False):
        with gf.Session(backend=backend, optimize=optimize) as sess:
            with pytest.raises(InvalidArgumentError, match="gather 'bad_gather'"):
                sess.run(out)


def test_shape_folding_keeps_the_checks_upstream(backend):
    x = gf.placeholder(gf.float32, (3,))
    size = gf.size(x)
    for optimize in (True, False):  # the shape is known, but x must still be fed
        with gf.Session(backend=backend, optimize=optimize) as sess:
            with pytest.raises(InvalidArgumentError, match="must feed"):
                sess.run(size * 2)
            assert int(sess.run(size * 2, {x: [1.0, 2.0, 3.0]})) == 6
    u = gf.placeholder(gf.float32, None)
    claimed = gf.ensure_shape(u, (3,)) * 2.0
    for optimize in (True, False):  # a claimed shape is checked, not folded
        with gf.Session(backend=backend, optimize=optimize) as sess:
            with pytest.raises(InvalidArgumentError, match="expected"):
                sess.run(gf.shape(claimed) + 1, {u: np.zeros(4, np.float32)})
    labels = gf.placeholder(gf.int64, (2,))
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=gf.constant(np.zeros((2, 3), np.float32)))
    width = gf.size(loss) * 2  # the size is folded (a fetched node would not be)
    for optimize in (True, False):  # the label check runs though only a size is fetched
        with gf.Session(backend=backend, optimize=optimize) as sess:
            assert int(sess.run(width, {labels: [0, 2]})) == 4
            with pytest.raises(InvalidArgumentError, match="outside the valid range"):
                sess.run(width, {labels: [0, 7]})


# -- algebraic rewrites ---------------------------------------------------------------


def test_log_of_softmax_becomes_log_softmax(backend):
    x = gf.placeholder(gf.float32, (2, 4))
    y = gf.log(gf.nn.softmax(x))
    graph = PlanGraph([y], [x])
    rewrite_algebra(graph)
    ops = _ops(graph)
    assert (ops["log"], ops["softmax"], ops["log_softmax"]) == (0, 0, 1)
    assert graph.outputs[0].name == y.name and graph.outputs[0].origin is y
    value = np.array([[0.1, -2.0, 3.0, 0.5], [1.0, 1.0, 1.0, -1.0]], np.float32)
    (g,) = gf.gradients(gf.reduce_sum(y * y), [x])
    got, want = _both(backend, [y, g], {x: value})
    _assert_same(got, want, rtol=1e-5, atol=1e-6)
    far = np.array([[0.0, -200.0, 0.0, 0.0]] * 2, np.float32)  # softmax underflows to 0
    with gf.Session(backend=backend) as sess:
        assert np.isfinite(sess.run(y, {x: far})).all()


@pytest.mark.parametrize("window", [(2, 2, "VALID"), (3, 2, "SAME")])
def test_a_relu_gradient_after_a_max_pool_gradient_is_one_op(backend, window):
    """``relu_grad(max_pool_grad(g, h), h)`` becomes ``max_pool_relu_grad(g, h)``, with
    the same numbers as built: ties, zeros, negative maxima, a NaN, odd sizes."""
    k, s, padding = window
    x = gf.placeholder(gf.float32, (2, 7, 6, 3))
    h = gf.nn.relu(x)
    p = gf.nn.max_pool(h, [1, k, k, 1], [1, s, s, 1], padding)
    (dx,) = gf.gradients(gf.reduce_sum(p * p + p), [x])
    graph = PlanGraph([dx], [x])
    rewrite_algebra(graph)
    ops = _ops(graph)
    assert (ops["max_pool_relu_grad"], ops["relu_grad"], ops["max_pool_grad"]) == (1, 0, 0)
    rng = np.random.default_rng(0)
    value = rng.integers(-2, 3, (2, 7, 6, 3)).astype(np.float32)  # ties and zeros
    value[0, 0, 0, 0] = np.nan
    value[1, :2, :2, :] = -1.0  # windows whose maximum is negative
    got, want = _both(backend, [dx], {x: value})
    np.testing.assert_array_equal(got[0], want[0])


def test_a_relu_gradient_of_another_value_than_the_pools_stays():
    x = gf.placeholder(gf.float32, (1, 4, 4, 2))
    h = gf.nn.relu(x)
    p = gf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    (dh,) = gf.gradients(gf.reduce_sum(p), [h])  # max_pool_grad(g, h)
    mixed = apply("relu_grad", [dh, gf.nn.relu(x + 1.0)])
    graph = PlanGraph([mixed], [x])
    rewrite_algebra(graph)
    ops = _ops(graph)
    assert (ops["max_pool_relu_grad"], ops["relu_grad"], ops["max_pool_grad"]) == (0, 1, 1)


def test_transposes_fold_into_matmul(backend):
    rng = np.random.default_rng(0)
    a = gf.placeholder(gf.float32, (4, 3))
    b = gf.placeholder(gf.float32, (5, 3))
    c = gf.placeholder(gf.float32, (2, 3, 4))
    d = gf.placeholder(gf.float32, (2, 3, 5))
    t = gf.transpose(a)
    ab = gf.matmul(t, gf.transpose(b), transpose_a=True)  # a @ b^T
    batched = gf.matmul(gf.transpose(c, [0, 2, 1]), d)
    shared = t * 2.0  # t has another reader: it stays for it
    graph = PlanGraph([ab, batched, shared], [a, b, c, d])
    rewrite_algebra(graph)
    assert len(_computed(graph, "transpose")) == 1
    mm = {n.name: n for n in _computed(graph, "matmul")}
    first, second = mm[ab.name], mm[batched.name]
    assert first.inputs == (a, b) and not first.attrs["transpose_a"] \
        and first.attrs["transpose_b"]
    assert second.inputs == (c, d) and second.attrs["transpose_a"]
    feed = {p: rng.standard_normal(tuple(p.shape)).astype(np.float32) for p in (a, b, c, d)}
    grads = gf.gradients(gf.reduce_sum(ab) + gf.reduce_sum(batched * batched), [a, b, c, d])
    got, want = _both(backend, [ab, batched, shared] + grads, feed)
    _assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_identities_are_removed():
    x = gf.placeholder(gf.float32, (None, 3))
    y = gf.placeholder(gf.float32, (None, 3))
    one, zero = gf.constant([1.0, 1.0, 1.0]), gf.constant(0.0)
    removed = [x * one, one * x, x / 1.0, x + zero, zero + x, x - zero, gf.negative(-x)]
    graph = PlanGraph([gf.add_n([gf.exp(r) for r in removed])], [x, y])
    rewrite_algebra(graph)
    assert all(n.inputs[0] is x for n in _computed(graph, "exp"))
    ops = _ops(graph)
    assert ops["multiply"] == ops["divide"] == ops["negative"] == ops["subtract"] == 0

    plus, minus = x - gf.negative(y), x + gf.negative(y)
    graph = PlanGraph([plus * minus], [x, y])
    rewrite_algebra(graph)
    assert not _computed(graph, "negative")
    (add,), (sub,) = _computed(graph, "add"), _computed(graph, "subtract")
    assert add.inputs == (x, y) and sub.inputs == (x, y)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_an_nchw_pool_read_by_an_nchw_conv_skips_the_two_layout_copies(backend):
    """Each NCHW op runs its NHWC kernel between two layout copies; the pool's copy back
    to NCHW and the convolution's copy to NHWC cancel (in the gradient too)."""
    rng = np.random.default_rng(0)
    x = gf.placeholder(gf.float32, (2, 3, 8, 8))
    w = gf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    pooled = gf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")
    y = gf.nn.conv2d(pooled, w, [1, 1, 1, 1], "SAME", data_format="NCHW")
    loss = gf.reduce_sum(y * y)
    (gw, gx) = gf.gradients(loss, [w, x])
    graph = PlanGraph([y, gw, gx], [x])
    before = len(_computed(graph, "image_layout"))
    rewrite_algebra(graph)
    assert len(_computed(graph, "image_layout")) == before - 4
    (conv,) = _computed(graph, "conv2d")
    assert conv.inputs[0].opdef.name == "max_pool"
    feed = {x: rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    _assert_same(*_both(backend, [y, gw, gx], feed), rtol=1e-5, atol=1e-5)


def test_identities_that_would_change_shape_or_value_stay():
    x = gf.placeholder(gf.float32, (3,))
    u = gf.placeholder(gf.float32, (None,))  # its one dimension may be 1 at run time
    kept = [x * np.ones((2, 3), np.float32), u * np.ones(3, np.float32), x * 2.0,
            x * gf.constant([1.0, 1.0, 2.0]), x * 0.0]
    graph = PlanGraph([gf.exp(k) for k in kept], [x, u])
    rewrite_algebra(graph)
    assert len(_computed(graph, "multiply")) == len(kept)
    fetched = x * 1.0  # a fetched node keeps a value of its own
    graph = PlanGraph([fetched], [x])
    rewrite_algebra(graph)
    assert graph.outputs[0].opdef.name == "multiply"


def test_rewritten_identities_give_the_same_numbers(backend):
    x = gf.placeholder(gf.float32, (5,))
    y = gf.placeholder(gf.float32, (5,))
    exprs = [x * 1.0, 1.0 * x, x / 1.0, x + 0.0, x - 0.0, gf.negative(-x), x - (-y), x + (-y),
             (-y) + x, gf.log(gf.nn.softmax(x + y))]
    outs = [gf.identity(e + 0.0) for e in exprs]  # the rewritten nodes themselves unfetched
    feed = {x: np.array([np.nan, np.inf, -np.inf, -0.0, 2.0], np.float32),
            y: np.array([1.0, -1.0, 2.0, 0.0, 3.0], np.float32)}
    got, want = _both(backend, outs, feed)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_gradient_contributions_are_left_to_fusion():
    x = gf.placeholder(gf.float32, (3,))
    y = gf.exp(x) + gf.sin(x) + x * x  # three contributions to dy/dx
    (g,) = gf.gradients(y, [x])
    graph = PlanGraph([g], [x])
    before = len(_computed(graph, "add"))
    rewrite_algebra(graph)
    assert len(_computed(graph, "add")) == before >= 2


# -- the whole compiler against the graph as built ------------------------------------


def _mlp(rng, optimizer):
    x = gf.placeholder(gf.float32, (None, 6))
    labels = gf.placeholder(gf.int64, (None,))
    w1 = gf.Variable(rng.standard_normal((6, 8)).astype(np.float32) * 0.5)
    b1 = gf.Variable(np.zeros(8, np.float32))
    w2 = gf.Variable(rng.standard_normal((8, 3)).astype(np.float32) * 0.5)
    b2 = gf.Variable(np.zeros(3, np.float32))
    h = gf.nn.relu(gf.matmul(x, w1) + b1)
    logits = gf.matmul(h, w2) + b2
    probs = gf.log(gf.nn.softmax(logits))  # a rewrite, and duplicates for CSE below
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)) + 0.01 * gf.nn.l2_loss(w1) + 0.01 * gf.nn.l2_loss(w1)
    train = optimizer.minimize(loss)
    feed = {x: rng.standard_normal((5, 6)).astype(np.float32),
            labels: np.array([0, 2, 1, 1, 0])}
    return [w1, b1, w2, b2], probs, loss, train, feed


@pytest.mark.parametrize("optimizer", ["adam", "momentum"])
def test_gradients_and_training_steps_match_the_graph_as_built(backend, optimizer):
    rng = np.random.default_rng(1)
    opt = gf.train.AdamOptimizer(0.05) if optimizer == "adam" else \
        gf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True)
    params, probs, loss, train, feed = _mlp(rng, opt)
    grads = gf.gradients(loss, params)
    got, want = _both(backend, [loss, probs] + grads, feed)
    _assert_same(got, want, rtol=1e-5, atol=1e-6)
    got, want = _both(backend, params + [loss], feed, steps=(train, feed, 3))
    _assert_same(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[0], _both(backend, params[:1])[0][0])  # it trained


def test_cse_merges_the_optimizer_work_shared_by_every_variable():
    rng = np.random.default_rng(2)
    params, _, _, train, feed = _mlp(rng, gf.train.AdamOptimizer(0.01))
    fed = list(feed)
    graph = PlanGraph([train], fed, [feed[t].shape for t in fed])
    scalar_sqrts = [n for n in _computed(graph, "sqrt") if n.shape == ()]
    assert len(scalar_sqrts) == len(params)  # Adam's step size, once per variable
    eliminate_common_subexpressions(graph)
    assert len([n for n in _computed(graph, "sqrt") if n.shape == ()]) == 1


def _snapshot(graph):
    return [(n, n.inputs, n.control_inputs, n.attrs, [(k, id(v)) for k, v in n.attrs.items()],
             n.shape, n.dtype, n.name) for n in graph.nodes]


def test_the_users_graph_is_never_changed(backend):
    rng = np.random.default_rng(3)
    params, probs, loss, train, feed = _mlp(rng, gf.train.AdamOptimizer(0.01))
    graph = gf.get_default_graph()
    x = next(iter(feed))
    extra = gf.reduce_sum(gf.shape(x)) + gf.cast(gf.size(x), gf.int32)
    before = _snapshot(graph)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        sess.run([train, loss], feed)
        sess.run([probs, extra] + gf.gradients(loss, params[:1]), feed)
        sess.run(train, {t: v[:2] for t, v in feed.items()})  # another batch size
    with gf.Session(backend=backend, optimize=False) as sess:
        sess.run(train, feed)
    after = _snapshot(graph)
    assert len(after) > len(before)  # the gradients built in between
    for old, new in zip(before, after):
        assert old[0] is new[0]
        assert old[1] == new[1] and old[2] == new[2], f"{old[0].name}: inputs changed"
        assert old[3] is new[3] and old[4] == new[4], f"{old[0].name}: attributes changed"
        assert old[5:] == new[5:], f"{old[0].name}: shape, dtype or name changed"


# -- batching matmuls that share a right operand ----------------------------------------


def test_independent_matmuls_of_one_weight_become_one_gemm(backend):
    rng = np.random.default_rng(4)
    w = gf.Variable(rng.standard_normal((3, 5)).astype(np.float32))
    xs = [gf.placeholder(gf.float32, (2, 3)) for _ in range(4)]
    products = [gf.matmul(x, w) for x in xs]
    chained = gf.matmul(gf.tanh(products[0][:, :3]), w)  # reads a member: waits for it
    out = gf.add_n(products[1:]) + chained[:, :5] * 2.0
    feed = {x: rng.standard_normal((2, 3)).astype(np.float32) for x in xs}
    graph = PlanGraph([out], xs, [(2, 3)] * 4)
    batch_matmuls(graph)
    matmuls = _computed(graph, "matmul")
    assert len(matmuls) == 2  # the batch of four, and the chained one
    batched = next(m for m in matmuls if m.shape == (8, 5))
    assert batched.inputs[0].opdef.name == "concat" and batched.inputs[1] is w
    assert sum(1 for n in _computed(graph, "getitem") if n.inputs[0] is batched) == 4
    grads = gf.gradients(out, xs + [w])
    got, want = _both(backend, [out] + grads, feed)
    _assert_same(got, want, rtol=1e-5, atol=1e-5)


def test_matmuls_that_cannot_be_batched_stay():
    w = gf.placeholder(gf.float32, (3, 5))
    xs = [gf.placeholder(gf.float32, (2, 3)) for _ in range(4)]
    big = gf.placeholder(gf.float32, (300, 3))
    fetched = gf.matmul(xs[0], w)
    others = [gf.matmul(x, w) for x in xs[1:3]] + [gf.matmul(big, w)]
    graph = PlanGraph([fetched] + others, xs + [w, big])
    batch_matmuls(graph)  # one fetched, one too large: two left, fewer than MIN_BATCH
    assert len(_computed(graph, "matmul")) == 4 and not _computed(graph, "concat")


def test_a_row_concat_of_all_slices_is_the_batched_result(backend):
    rng = np.random.default_rng(5)
    w = gf.placeholder(gf.float32, (4, 3))
    gs = [gf.placeholder(gf.float32, (2, 4)) for _ in range(3)]
    stacked = gf.concat([gf.matmul(g, w) for g in gs], 0) * 1.5
    feed = {p: rng.standard_normal(tuple(p.shape)).astype(np.float32) for p in gs + [w]}
    graph = PlanGraph([stacked], gs + [w], [(2, 4)] * 3 + [(4, 3)])
    batch_matmuls(graph)
    (mul,) = _computed(graph, "multiply")
    assert mul.inputs[0].opdef.name == "matmul" and mul.inputs[0].shape == (6, 3)
    assert not _computed(graph, "getitem")
    got, want = _both(backend, [stacked], feed)
    _assert_same(got, want, rtol=1e-5, atol=1e-5)


# -- RNNs: the zero state, the kernel's two blocks, the gate gradient --------------------


def _lstm(steps=4, batch=3, units=5, features=2):
    rng = np.random.default_rng(6)
    gf.set_random_seed(6)  # both sessions of _both draw the same initial kernel
    x = gf.placeholder(gf.float32, (None, steps, features))
    cell = gf.nn.rnn_cell.LSTMCell(units)
    outputs, _ = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=gf.float32)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0)))
    feed = {x: rng.standard_normal((batch, steps, features)).astype(np.float32)}
    return x, cell, loss, feed


def test_an_lstm_plan_batches_its_input_products_and_fuses_its_gates(backend):
    from gradflow.passes import optimize

    x, cell, loss, feed = _lstm()
    kernel, bias = cell.trainable_variables
    grads = gf.gradients(loss, [kernel, bias, x])
    graph = optimize(grads, [x], [(3, 4, 2)])
    ops = _ops(graph)
    assert ops["lstm_step"] == 4 and ops["fused_output"] >= 3 * 4 - 1
    assert ops["lstm_gates_sum"] == ops["lstm_gates"] == ops["lstm_c"] == ops["lstm_h"] == 0
    # backward: one node per step, except the last, whose cell gradient has one term
    assert ops["lstm_step_grad"] == 3 and ops["lstm_cell_grad"] == 1
    assert ops["lstm_gates_grad"] == 0
    assert ops["split_like"] == 0  # static slices instead
    # per step one state product forward and one backward (the first state is zeros, so
    # its products are one more member of each batch), plus the two batches and the two
    # kernel-gradient GEMMs
    assert ops["matmul"] <= 2 * 4 + 4
    assert all(n.shape is not None and n.shape.is_fully_defined()
               for n in graph.nodes() if isinstance(n, PlanNode))  # zero state folded
    got, want = _both(backend, grads + [loss], feed)
    _assert_same(got, want, rtol=1e-4, atol=1e-5)


def test_the_kernel_gradient_of_an_rnn_is_two_stacked_gemms():
    x, cell, loss, feed = _lstm(steps=6)
    kernel, _ = cell.trainable_variables
    (g,) = gf.gradients(loss, [kernel])
    assert g.opdef.name == "concat"  # the input block and the state block, joined
    for block in g.inputs:
        assert block.opdef.name == "matmul" and block.attrs["transpose_a"]
        assert block.inputs[0].opdef.name == "concat" and len(block.inputs[0].inputs) == 6


def test_a_row_concat_of_lookups_in_one_table_is_one_lookup(backend):
    rng = np.random.default_rng(7)
    table = gf.Variable(rng.standard_normal((9, 3)).astype(np.float32))
    ids = gf.placeholder(gf.int32, (2, 4))
    rows = [gf.nn.embedding_lookup(table, ids[:, t]) for t in range(4)]
    stacked = gf.concat(rows, 0)
    table2 = gf.Variable(rng.standard_normal((9, 3)).astype(np.float32))
    other = gf.concat([rows[0], gf.nn.embedding_lookup(table2, ids[:, 0])], 0)  # two tables
    graph = PlanGraph([stacked * 2.0, other], [ids])
    rewrite_algebra(graph)
    joined = [n for n in _computed(graph, "gather") if n.shape == (8, 3)]
    # the ids of the four steps are the columns of ``ids``: its transpose, reshaped
    assert len(joined) == 1 and joined[0].inputs[1].opdef.name == "reshape"
    assert len(_computed(graph, "concat")) == 1  # `other` as it was
    feed = {ids: rng.integers(0, 9, (2, 4)).astype(np.int32)}
    got, want = _both(backend, [stacked * 2.0, other], feed)
    _assert_same(got, want)


def test_an_embedding_lstm_reads_one_lookup_for_both_of_its_batches(backend):
    """The forward batch of the input products and the kernel gradient share one stack of
    the inputs, which is one gather of all the steps' ids."""
    from gradflow.passes import optimize

    rng = np.random.default_rng(8)
    gf.set_random_seed(8)
    # 12 rows for 10 ids: the lookup stays one of the table's rows (with fewer rows than
    # ids, passes/embedding_product.py makes it one of the rows of the table's product)
    table = gf.Variable(rng.standard_normal((12, 3)).astype(np.float32))
    ids = gf.placeholder(gf.int32, (None, 5))
    inputs = [gf.nn.embedding_lookup(table, ids[:, t]) for t in range(5)]
    cell = gf.nn.rnn_cell.LSTMCell(4)
    outputs, _ = gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0)))
    grads = gf.gradients(loss, [table] + cell.trainable_variables)
    graph = optimize(grads + [loss], [ids], [(2, 5)])
    gathers = _computed(graph, "gather")
    assert len(gathers) == 1 and gathers[0].shape == (10, 3)
    forward = optimize([loss], [ids], [(2, 5)])  # no gradient stack: the batch makes one
    gathers = _computed(forward, "gather")
    assert len(gathers) == 1 and gathers[0].shape == (10, 3)
    feed = {ids: rng.integers(0, 7, (2, 5)).astype(np.int32)}
    got, want = _both(backend, [loss], feed)  # forward only: the gates are no output
    _assert_same(got, want, rtol=1e-5, atol=1e-6)
    got, want = _both(backend, grads + [loss], feed)
    _assert_same(got, want, rtol=1e-4, atol=1e-5)


def _nchw_block(rng, pool=True):
    """conv -> bias -> ReLU -> (max pool) -> conv, all NCHW, with its loss."""
    x = gf.placeholder(gf.float32, (2, 3, 8, 8))
    w1 = gf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    b1 = gf.Variable(rng.standard_normal(4).astype(np.float32))
    w2 = gf.Variable(rng.standard_normal((3, 3, 4, 5)).astype(np.float32))
    h = gf.nn.conv2d(x, w1, [1, 1, 1, 1], "SAME", data_format="NCHW")
    h = gf.nn.relu(gf.nn.bias_add(h, b1, data_format="NCHW") * 0.5)
    if pool:
        h = gf.nn.max_pool(h, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")
    y = gf.nn.conv2d(h, w2, [1, 1, 1, 1], "SAME", data_format="NCHW")
    loss = gf.reduce_sum(y * y)
    return x, y, gf.gradients(loss, [w1, b1, w2, x])


@pytest.mark.parametrize("pool", [True, False])
def test_layout_copies_sink_past_the_bias_and_relu_between_nchw_layers(backend, pool):
    """The bias add, scaling and ReLU between two NCHW layers run in NHWC: the copies
    around them cancel, forward and backward, and the numbers stay."""
    rng = np.random.default_rng(1)
    x, y, grads = _nchw_block(rng, pool)
    graph = PlanGraph([y] + grads, [x])
    drop_shape_noops(graph)
    before = len(_computed(graph, "image_layout"))
    rewrite_algebra(graph)
    unsunk = len(_computed(graph, "image_layout"))
    sink_layouts(graph)
    rewrite_algebra(graph)
    after = len(_computed(graph, "image_layout"))
    # what is left: x to NHWC, the fetched y to NCHW, y's gradient back to NHWC (y * y
    # reads the fetched y: it stays NCHW), and the gradient in x to NCHW
    assert after == 4 < unsunk <= before
    for relu in _computed(graph, "relu"):
        assert tuple(relu.shape) == (2, 8, 8, 4)  # NHWC
    feed = {x: rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    _assert_same(*_both(backend, [y] + grads, feed), rtol=1e-5, atol=1e-4)


def test_a_forward_op_and_its_gradient_reading_one_copy_move_together(backend):
    """``x * scale`` (batch norm at inference) and its gradient in ``scale``, ``g * x``,
    both read the conv's copy; the gradient's ``g`` becomes a copy only once the forward
    ops have moved. Both move, and the copies are those of the block without them."""
    rng = np.random.default_rng(3)
    x = gf.placeholder(gf.float32, (2, 3, 8, 8))
    w = gf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    scale = gf.Variable(rng.standard_normal((1, 4, 1, 1)).astype(np.float32))
    h = gf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW")
    h = gf.nn.relu(h * scale + 0.25)
    y = gf.nn.max_pool(h, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")
    grads = gf.gradients(gf.reduce_sum(y), [w, scale])
    graph = PlanGraph(grads, [x])
    drop_shape_noops(graph)
    rewrite_algebra(graph)
    unsunk = len(_computed(graph, "image_layout"))
    sink_layouts(graph)
    rewrite_algebra(graph)
    # left: x to NHWC, the pool's output to NCHW for the sum, and the sum's gradient
    # back (one sweep that moves an op only with its readers left all 7)
    assert len(_computed(graph, "image_layout")) == 3 < unsunk == 7
    feed = {x: rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    _assert_same(*_both(backend, grads, feed), rtol=1e-5, atol=1e-4)


def test_nchw_batch_norm_in_training_keeps_no_copy_of_its_own(backend):
    """Batch norm in training (moments summed over N, H and W, its gradient broadcasting
    channel values, every gradient op after the moving averages' updates): the block
    keeps the big copies of the same block without batch norm, and the numbers stay."""
    rng = np.random.default_rng(4)

    def block(norm):
        gf.set_random_seed(4)  # the same initial weights in both sessions of _both
        x = gf.placeholder(gf.float32, (2, 3, 8, 8))
        h = gf.layers.conv2d(x, 4, 3, padding="same", data_format="channels_first")
        if norm:
            h = gf.layers.batch_normalization(h, axis=1, training=True)
        h = gf.layers.max_pooling2d(gf.nn.relu(h), 2, 2, data_format="channels_first")
        with gf.control_dependencies(gf.get_collection(gf.GraphKeys.UPDATE_OPS)):
            grads = gf.gradients(gf.reduce_sum(h * h), gf.trainable_variables() + [x])
        graph = PlanGraph(grads, [x])
        drop_shape_noops(graph)
        sink_layouts(graph)
        rewrite_algebra(graph)
        big = [n for n in _computed(graph, "image_layout") if math.prod(n.shape) > 4]
        return x, grads, len(big)

    _, _, plain = block(False)
    gf.reset_default_graph()
    x, grads, normed = block(True)
    assert normed == plain
    feed = {x: rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    _assert_same(*_both(backend, grads, feed), rtol=1e-4, atol=1e-4)


def test_layout_copies_stay_where_an_input_broadcasts_along_two_axes():
    x = gf.placeholder(gf.float32, (2, 3, 4, 4))
    w = gf.Variable(np.ones((1, 1, 3, 3), np.float32))
    h = gf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW")
    y = gf.nn.relu(h + np.ones((3, 4, 1), np.float32))  # channels and rows: not moved
    graph = PlanGraph([y], [x])
    sink_layouts(graph)
    (add,) = _computed(graph, "add")
    assert add.inputs[0].opdef.name == "image_layout"


def test_an_nchw_output_flattened_in_nhwc_order_skips_both_copies(backend):
    """``transpose(nchw, [0, 2, 3, 1])`` of an NCHW pool's output (a dense layer's input
    in NHWC order) is the pool's NHWC value; its gradient's copy back cancels too."""
    rng = np.random.default_rng(2)
    x = gf.placeholder(gf.float32, (2, 3, 8, 8))
    w = gf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
    d = gf.Variable(rng.standard_normal((64, 2)).astype(np.float32))
    h = gf.nn.relu(gf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", data_format="NCHW"))
    h = gf.nn.avg_pool(h, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")
    y = gf.matmul(gf.reshape(gf.transpose(h, [0, 2, 3, 1]), [-1, 64]), d)
    grads = gf.gradients(gf.reduce_sum(y * y), [w, x])
    graph = PlanGraph([y] + grads, [x])
    sink_layouts(graph)
    rewrite_algebra(graph)
    (reshape,) = [n for n in _computed(graph, "reshape") if n.inputs[0].opdef.name != "variable"]
    assert reshape.inputs[0].opdef.name == "avg_pool"
    assert not _computed(graph, "transpose")
    assert len(_computed(graph, "image_layout")) == 2  # x in, its gradient out
    feed = {x: rng.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    _assert_same(*_both(backend, [y] + grads, feed), rtol=1e-5, atol=1e-4)
