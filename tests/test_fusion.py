"""Elementwise fusion (gradflow.passes.fusion) and its NumPy kernels.

The plan graph before and after the pass; the same numbers with and without
the passes on every backend; on NumPy both lowerings (the generated numba
kernel and the ufunc sequence) against the unfused graph.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import numba_support
from gradflow.backends.numpy import fused as numpy_fused
from gradflow.passes import PlanGraph
from gradflow.passes.fusion import FUSED, FUSED_OUTPUT, fuse_elementwise

needs_numba = pytest.mark.skipif(numba_support.get_numba() is None,
                                 reason="numba is not installed (pip install numba)")


def _ops(graph):
    return [n.opdef.name for n in graph.nodes()]


def _fused_nodes(graph):
    return [n for n in graph.nodes() if n.opdef is FUSED]


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    """Generated kernels go to a fresh cache directory (compiled again: slower, but a
    test never depends on what another process left there)."""
    monkeypatch.setenv("GRADFLOW_CACHE", str(tmp_path))


def test_bias_and_relu_become_one_node():
    x = gf.placeholder(gf.float32, (None, 8))
    b = gf.Variable(np.ones(8, np.float32))
    w = gf.Variable(np.ones((8, 8), np.float32))
    y = gf.nn.relu(gf.matmul(x, w) + b)
    graph = PlanGraph([y], [x])
    assert _ops(graph).count("add") == 1 and "relu" in _ops(graph)
    fuse_elementwise(graph)
    ops = _ops(graph)
    assert "add" not in ops and "relu" not in ops and ops.count("fused") == 1
    (fused,) = _fused_nodes(graph)
    assert [m.opdef.name for m in fused.attrs["program"].members] == ["add", "relu"]
    assert graph.outputs == [fused]
    assert y.inputs[0].opdef.name == "add"  # the user's graph is untouched


def test_adam_update_is_one_kernel_with_three_outputs_per_variable():
    w = gf.Variable(np.ones((4, 3), np.float32))
    loss = gf.reduce_sum(gf.square(w))
    train = gf.train.AdamOptimizer(0.1).minimize(loss)
    graph = PlanGraph([train], [])
    fuse_elementwise(graph)
    updates = [n for n in _fused_nodes(graph) if tuple(n.shape) == (4, 3)
               and len(n.attrs["program"].outputs) == 3]
    assert len(updates) == 1
    outputs = [n for n in graph.nodes() if n.opdef is FUSED_OUTPUT and n.inputs[0] is updates[0]]
    assert sorted(o.attrs["index"] for o in outputs) == [0, 1, 2]
    assigned = {n.attrs["var"].name for n in graph.nodes() if n.opdef.name == "assign"
                and n.inputs[0] in outputs}
    assert assigned == {w.name, f"{w.name}/Adam", f"{w.name}/Adam_1"}


def test_a_fed_placeholder_with_default_leaves_the_fusion_after_it_alone():
    """A fed ``placeholder_with_default`` (dropout's keep_prob, a training switch) has an
    input outside the plan: the cycle check once counted everything after it as on a
    cycle and dissolved those groups, Adam's updates included."""
    x = gf.placeholder(gf.float32, (None, 6))
    keep = gf.placeholder_with_default(1.0, ())
    w = gf.Variable(np.ones((6, 4), np.float32))
    h = gf.nn.dropout(gf.nn.relu(gf.matmul(x, w)), keep_prob=keep)
    train = gf.train.AdamOptimizer(0.1).minimize(gf.reduce_sum(gf.square(h)))
    graph = PlanGraph([train], [x, keep], [(5, 6), ()])
    fuse_elementwise(graph)
    updates = [n for n in _fused_nodes(graph) if tuple(n.shape) == (6, 4)
               and len(n.attrs["program"].outputs) == 3]
    assert len(updates) == 1
    dropout = [n for n in _fused_nodes(graph) if "dropout" in n.attrs["program"].describe()]
    assert dropout


def test_a_consumer_outside_the_group_that_leads_back_splits_it():
    """``a`` feeds a reduction whose result feeds ``c``: fusing ``a`` into ``c``'s kernel
    would make that kernel wait for itself, so ``a`` stays out of it."""
    x = gf.placeholder(gf.float32, (5,))
    a = gf.exp(x) * 2.0
    c = gf.sqrt(a + gf.reduce_sum(a))
    graph = PlanGraph([c], [x])
    fuse_elementwise(graph)
    for fused in _fused_nodes(graph):
        members = set(fused.attrs["program"].members)
        assert not any(m.opdef.name == "multiply" for m in members) or not any(
            m.opdef.name == "sqrt" for m in members)
    value = np.arange(5, dtype=np.float32)
    expect = np.sqrt(np.exp(value) * 2 + (np.exp(value) * 2).sum())
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(c, {x: value}), expect, rtol=1e-6)


def _mlp_step(size, batch, optimizer=gf.train.AdamOptimizer, steps=3, seed=0, **session):
    """Losses and final weights of a few steps of a 2-layer MLP."""
    rng = np.random.default_rng(seed)
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, (None, size))
        y = gf.placeholder(gf.int64, (None,))
        w1 = gf.Variable(rng.normal(0, 0.1, (size, size)).astype(np.float32))
        b1 = gf.Variable(np.full(size, 0.1, np.float32))
        w2 = gf.Variable(rng.normal(0, 0.1, (size, 3)).astype(np.float32))
        h = gf.nn.sigmoid(gf.nn.relu(gf.matmul(x, w1) + b1) * 0.5 - 0.1)
        logits = gf.matmul(h, w2)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = optimizer(0.05).minimize(loss)
        init = gf.global_variables_initializer()
    xs = rng.standard_normal((batch, size)).astype(np.float32)
    ys = rng.integers(0, 3, batch)
    losses = []
    with gf.Session(graph=graph, **session) as sess:
        sess.run(init)
        for _ in range(steps):
            losses.append(sess.run([loss, train], {x: xs, y: ys})[0])
        return np.array(losses), sess.run([w1, b1, w2])


@pytest.mark.parametrize("optimizer", [gf.train.AdamOptimizer, gf.train.MomentumOptimizer,
                                       gf.train.RMSPropOptimizer])
def test_training_gives_the_numbers_of_the_unfused_graph(backend, optimizer):
    if optimizer is gf.train.MomentumOptimizer:
        optimizer = lambda lr: gf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True)  # noqa
    plain = _mlp_step(6, 4, optimizer, backend=backend, optimize=False)
    fused = _mlp_step(6, 4, optimizer, backend=backend)
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-6)
    for a, b in zip(fused[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@needs_numba
def test_numba_kernels_and_ufunc_sequences_agree_with_the_unfused_graph(monkeypatch):
    """Sizes above MIN_KERNEL_SIZE take the generated kernels (bias rows, softmax
    columns, Adam's three outputs); the same without numba takes the ufunc sequences."""
    size, batch = 64, 48
    assert size * batch >= numpy_fused.MIN_KERNEL_SIZE
    plain = _mlp_step(size, batch, optimize=False)
    calls = []
    original = numpy_fused._kernel_caller
    monkeypatch.setattr(numpy_fused, "_kernel_caller",
                        lambda *a: calls.append(a) or original(*a))
    compiled = _mlp_step(size, batch)
    assert len(calls) >= 2  # the forward bias+activation and the Adam update at least
    monkeypatch.setattr(numpy_fused, "get_numba", lambda: None)
    sequences = _mlp_step(size, batch)
    for got in (compiled, sequences):
        np.testing.assert_allclose(got[0], plain[0], rtol=1e-5)
        for a, b in zip(got[1], plain[1]):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_broadcast_patterns(dtype):
    """Whole, row (trailing dims), column (leading dims) and scalar inputs of a 3-D output,
    comparisons, where, casts and NaN propagation."""
    rng = np.random.default_rng(3)
    shape = (6, 20, 30)
    values = {
        "x": rng.standard_normal(shape).astype(dtype),
        "row": rng.standard_normal((20, 30)).astype(dtype),
        "col": rng.standard_normal((6, 1, 1)).astype(dtype),
        "s": np.asarray(0.25, dtype),
    }
    values["x"][0, 0, :3] = [np.nan, np.inf, -np.inf]
    gdt = gf.as_dtype(np.dtype(dtype).name)
    ph = {k: gf.placeholder(gdt, v.shape) for k, v in values.items()}
    x, row, col, s = ph["x"], ph["row"], ph["col"], ph["s"]
    mask = gf.cast(gf.greater(x, row), gdt)
    y = gf.where(gf.less(x, col), gf.maximum(x * s, row) - mask,
                 gf.sqrt(gf.abs(gf.minimum(x, col))) + gf.nn.relu(x - s))
    feed = {ph[k]: v for k, v in values.items()}
    with gf.Session(optimize=False) as sess:
        expect = sess.run(y, feed)
    calls = []
    original = numpy_fused._kernel_caller
    with gf.Session() as sess, pytest.MonkeyPatch.context() as patch:
        patch.setattr(numpy_fused, "_kernel_caller", lambda *a: calls.append(a) or original(*a))
        got = sess.run(y, feed)
        fused = [n for p in sess._plans.values() for n in getattr(p, "line_nodes", {}).values()
                 if n.opdef is FUSED]
    assert fused and calls, "the expression was not fused into a kernel"
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expect, rtol=tol, atol=tol, equal_nan=True)


@needs_numba
@pytest.mark.parametrize("shape", [(4, 8, 10, 12), (16, 32, 20, 20)])
def test_kernel_reads_an_nchw_bias_that_repeats_along_the_rows(shape):
    """An NCHW bias (C, 1, 1) repeats along the rows (N*C) of the kernel's (rows, cols)
    view: read as element ``r % C``. The larger shape runs the parallel kernel too."""
    rng = np.random.default_rng(4)
    n, c, h, w = shape
    values = {"x": rng.standard_normal(shape).astype(np.float32),
              "b": rng.standard_normal(c).astype(np.float32),
              "row": rng.standard_normal((h, w)).astype(np.float32)}
    ph = {k: gf.placeholder(gf.float32, v.shape) for k, v in values.items()}
    y = gf.nn.relu(gf.nn.bias_add(ph["x"], ph["b"], data_format="NCHW") * 0.5 - ph["row"])
    feed = {ph[k]: v for k, v in values.items()}
    expect = np.maximum((values["x"] + values["b"][:, None, None]) * 0.5 - values["row"], 0)
    calls = []
    original = numpy_fused._kernel_caller
    with gf.Session() as sess, pytest.MonkeyPatch.context() as patch:
        patch.setattr(numpy_fused, "_kernel_caller", lambda *a: calls.append(a) or original(*a))
        got = sess.run(y, feed)
    assert calls and "cycle" in calls[0][2], "the bias was not read by a kernel"
    np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-6)


@needs_numba
def test_kernel_reads_a_non_contiguous_feed():
    base = np.arange(64 * 80, dtype=np.float32).reshape(64, 80) / 1000
    x = gf.placeholder(gf.float32, (80, 64))
    y = gf.sqrt(x) * 2.0 + 1.0
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: base.T}), np.sqrt(base.T) * 2 + 1, rtol=1e-6)


@needs_numba
def test_transcendental_programs_take_numpys_vectorized_ufuncs(monkeypatch):
    """numba evaluates exp, log and the like one scalar C call per element, several
    times slower than NumPy's vectorized ufuncs: such programs are ufunc sequences.
    float32 tanh is a kernel (the LSTM kernels' rational tanh, within 4e-7 of NumPy's);
    float64 tanh is not (NumPy's own tanh, exactly)."""
    calls = []
    original = numpy_fused._kernel_caller
    monkeypatch.setattr(numpy_fused, "_kernel_caller",
                        lambda *a: calls.append(a) or original(*a))
    value = np.linspace(-6, 6, 64 * 80, dtype=np.float32).reshape(64, 80)
    for dtype in (np.float32, np.float64):
        x = gf.placeholder(gf.as_dtype(dtype), (64, 80))
        for op, ref in ((gf.exp, np.exp), (gf.tanh, np.tanh), (gf.nn.sigmoid,
                                                              lambda v: 1 / (1 + np.exp(-v)))):
            calls.clear()
            y = op(x * 0.5) * 2.0 - x
            with gf.Session() as sess:
                got = sess.run(y, {x: value.astype(dtype)})
            want = ref(value.astype(np.float64) * 0.5) * 2 - value
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=2e-6 if dtype == np.float32 else 1e-12)
            fast = dtype == np.float32 and op is gf.tanh
            assert len(calls) == fast, (dtype, op)
    calls.clear()
    with gf.Session() as sess:  # the same chain with sqrt is one kernel
        sess.run(gf.sqrt(gf.abs(x) * 0.5) * 2.0 - x, {x: value.astype(np.float64)})
    assert len(calls) == 1


def test_runtime_error_in_a_fused_node_names_the_users_ops():
    x = gf.placeholder(gf.float32, (None, 3))
    y = gf.placeholder(gf.float32, (None, 3))
    z = gf.exp(x) * 2.0 + y
    with gf.Session() as sess:
        sess.MAX_SHAPE_PLANS = 0  # the general plan, whose shapes keep None: one group
        with pytest.raises(gf.errors.InvalidArgumentError) as info:
            sess.run(z, {x: np.ones((2, 3)), y: np.ones((4, 3))})
    message = str(info.value)
    assert message.startswith("fused 'add' failed at run time")
    assert "exp 'exp" in message.lower() and "add 'add' at " + __file__ in message


def test_fetching_a_member_keeps_its_own_value():
    """A fetched intermediate becomes one more output of the kernel."""
    x = gf.placeholder(gf.float32, (50, 50))
    a = gf.exp(x)
    b = a * 3.0 + 1.0
    value = np.linspace(-1, 1, 2500, dtype=np.float32).reshape(50, 50)
    with gf.Session() as sess:
        got_a, got_b = sess.run([a, b], {x: value})
    np.testing.assert_allclose(got_a, np.exp(value), rtol=1e-6)
    np.testing.assert_allclose(got_b, np.exp(value) * 3 + 1, rtol=1e-6)


def test_threads_share_a_session_with_fused_kernels():
    x = gf.placeholder(gf.float32, (None, 64))
    w = gf.Variable(np.eye(64, dtype=np.float32))
    y = gf.nn.relu(gf.matmul(x, w) * 2.0 - 1.0) + 0.5
    sess = gf.Session()
    sess.run(gf.global_variables_initializer())
    errors = []

    def work(k):
        value = np.full((40, 64), k, np.float32)
        for _ in range(30):
            got = sess.run(y, {x: value})
            if not np.allclose(got, np.maximum(2 * k - 1, 0) + 0.5):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_optimize_false_runs_the_graph_as_built():
    x = gf.placeholder(gf.float32, (4,))
    y = gf.nn.relu(x * 2.0 + 1.0)
    with gf.Session(optimize=False) as sess:
        sess.run(y, {x: np.zeros(4)})
        nodes = [n for p in sess._plans.values() for n in p.line_nodes.values()]
    assert {n.opdef.name for n in nodes} >= {"multiply", "add", "relu"}
    assert not any(n.opdef is FUSED for n in nodes)


def test_forward_kernel_writes_only_the_activation_the_gradient_reads():
    """relu's gradient reads relu(x) > 0, not x > 0: the bias add and relu of the forward
    pass are one kernel with one output, and the value before relu is never stored."""
    x = gf.placeholder(gf.float32, (4, 3))
    w = gf.Variable(np.ones((3, 3), np.float32))
    b = gf.Variable(np.ones(3, np.float32))
    h = gf.nn.relu(gf.matmul(x, w) + b)
    (grad,) = gf.gradients(gf.reduce_sum(gf.matmul(h, w)), [w])
    graph = PlanGraph([grad], [x])
    fuse_elementwise(graph)
    forward = [n for n in _fused_nodes(graph)
               if [m.opdef.name for m in n.attrs["program"].members] == ["add", "relu"]]
    assert len(forward) == 1 and len(forward[0].attrs["program"].outputs) == 1


def test_every_node_of_a_loss_and_its_second_order_gradient_keeps_its_value():
    """Fetching every node makes most members outputs of their kernels; groups that
    would then read each other are split (test_ops' shape-rule test of this loss hit
    that cycle before ``_break_cycles``)."""
    logits = gf.placeholder(gf.float32, (3, 4))
    labels = gf.constant(np.eye(4, dtype=np.float32)[[0, 2, 3]])
    loss = gf.reduce_mean(gf.nn.softmax_cross_entropy_with_logits(labels=labels,
                                                                  logits=logits))
    (grad,) = gf.gradients(loss, [logits])
    (second,) = gf.gradients(gf.reduce_sum(grad * grad), [logits])
    nodes = [n for n in gf.get_default_graph().nodes if n.opdef.kind == "compute"]
    value = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    with gf.Session(optimize=False) as sess:
        expect = sess.run(nodes + [second], {logits: value})
    with gf.Session() as sess:
        got = sess.run(nodes + [second], {logits: value})
    for a, b in zip(got, expect):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_shape_ops_that_do_nothing_at_the_fed_shape_are_dropped():
    from gradflow.passes.shape_noops import drop_shape_noops

    x = gf.placeholder(gf.float32, (None, 5))
    b = gf.Variable(np.zeros(5, np.float32))
    y = gf.reduce_sum(gf.square(x + b))
    gx, gb = gf.gradients(y, [x, b])
    general = PlanGraph([gx, gb], [x])
    drop_shape_noops(general)  # batch unknown: the unbroadcast to x may still sum
    assert "unbroadcast" in [n.opdef.name for n in general.nodes()
                             if n.shape is not None and tuple(n.shape) == (None, 5)]
    special = PlanGraph([gx, gb], [x], [(7, 5)])
    drop_shape_noops(special)
    kept = [n for n in special.nodes() if n.opdef.name == "unbroadcast"
            and n not in special.outputs]  # a fetched node keeps its own value
    assert all(tuple(n.shape) != tuple(n.inputs[0].shape) for n in kept)
    assert special.outputs[1].opdef.name == "unbroadcast"  # the bias gradient sums rows
    value = np.arange(35, dtype=np.float32).reshape(7, 5)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        got_x, got_b = sess.run([gx, gb], {x: value})
    np.testing.assert_allclose(got_x, 2 * value)
    np.testing.assert_allclose(got_b, 2 * value.sum(0))


@pytest.fixture
def cube_op():
    """An elementwise op added the way any op is: one ``register`` call with its scalar
    expression, and nothing else; taken out of the registry again afterwards."""
    from gradflow.prim.registry import REGISTRY, apply, register

    name = "test_only_cube"
    register(name, lambda xp, x: x * x * x, lambda s, d: (s[0], d[0]),
             grad=lambda n, g: [g * 3.0 * n.inputs[0] * n.inputs[0]],
             scalar=lambda args, node: f"({args[0]} * {args[0]} * {args[0]})")
    try:
        yield lambda x: apply(name, [x])
    finally:
        del REGISTRY[name]


def _cube_graph(cube):
    x = gf.placeholder(gf.float32, (64, 48))
    return x, gf.nn.relu(cube(x) + 1.0)


def test_a_registered_op_with_a_scalar_expression_is_fused(cube_op):
    from gradflow.prim.registry import REGISTRY

    assert REGISTRY["test_only_cube"].scalar is not None  # what every printer reads
    x, y = _cube_graph(cube_op)
    graph = PlanGraph([y], [x])
    fuse_elementwise(graph)
    (fused,) = _fused_nodes(graph)
    assert [m.opdef.name for m in fused.attrs["program"].members] == \
        ["test_only_cube", "add", "relu"]
    value = np.linspace(-2, 2, 64 * 48, dtype=np.float32).reshape(64, 48)
    with gf.Session() as sess:
        got = sess.run(y, {x: value})
    np.testing.assert_allclose(got, np.maximum(value ** 3 + 1.0, 0), rtol=1e-6, atol=1e-6)


@needs_numba
def test_a_registered_op_with_a_scalar_expression_joins_a_numba_kernel(cube_op, monkeypatch):
    x, y = _cube_graph(cube_op)
    calls = []
    original = numpy_fused._kernel_caller
    monkeypatch.setattr(numpy_fused, "_kernel_caller",
                        lambda program, *a: calls.append(program) or original(program, *a))
    value = np.linspace(-2, 2, 64 * 48, dtype=np.float32).reshape(64, 48)
    with gf.Session(backend="numpy") as sess:
        got = sess.run(y, {x: value})
    assert [[m.opdef.name for m in p.members] for p in calls] == \
        [["test_only_cube", "add", "relu"]]
    np.testing.assert_allclose(got, np.maximum(value ** 3 + 1.0, 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("batch", [4, None])
def test_a_short_vector_broadcast_in_the_ufunc_sequence_runs_over_longer_rows(batch):
    """Programs with a transcendental member take the ufunc sequence; a member there
    that broadcasts a few channels over a large array computes on longer rows
    (``numpy_fused._tiled``), with the numbers of NumPy's broadcast, the vector on
    either side, with static and unknown batch sizes, and into the plan's buffers."""
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 28, 28, 6)).astype(np.float32)
    bv = rng.standard_normal(6).astype(np.float32)
    x = gf.placeholder(gf.float32, (batch, 28, 28, 6))
    b = gf.constant(bv)
    outs = [gf.exp(gf.nn.bias_add(x, b) * 0.5), gf.exp(b - x), gf.log1p(gf.abs(x * b)),
            gf.expm1(x / (b * b + 1.0))]
    want = [np.exp((xv + bv) * 0.5), np.exp(bv - xv), np.log1p(np.abs(xv * bv)),
            np.expm1(xv / (bv * bv + 1))]
    made = []
    real = numpy_fused._tiled

    def spy(member, fn):
        found = real(member, fn)
        made.append(found is not fn)
        return found

    numpy_fused._tiled, keep = spy, numpy_fused.TILE_MIN_SIZE
    numpy_fused.TILE_MIN_SIZE = 4096
    try:
        with gf.Session() as sess:
            for _ in range(2):  # the second run writes into the buffers of the first
                got = sess.run(outs, {x: xv})
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
    finally:
        numpy_fused._tiled, numpy_fused.TILE_MIN_SIZE = real, keep
    assert sum(made) == 4


def test_a_broadcast_over_many_channels_or_a_small_array_stays_a_broadcast():
    fn = np.add

    class Member:
        def __init__(self, shape, inputs):
            self.shape, self.inputs = shape, inputs

    def member(full, vector):
        return Member(full, [Member(full, []), Member(vector, [])])

    assert numpy_fused._tiled(member((64, 28, 28, 6), (6,)), fn) is not fn
    assert numpy_fused._tiled(member((64, 28, 28, 64), (64,)), fn) is fn
    assert numpy_fused._tiled(member((64, 28, 28, 6), (28, 6)), fn) is fn
    assert numpy_fused._tiled(member((), ()), fn) is fn
    tiled = numpy_fused._tiled(member((None, 4, 6), (6,)), fn)
    small = np.ones((2, 4, 6), np.float32)
    assert tiled(small, np.arange(6, dtype=np.float32))[1, 3, 5] == 6  # NumPy's own call
    big = np.ones((4096, 4, 6), np.float32)
    out = np.empty_like(big)
    assert tiled(big, np.arange(6, dtype=np.float32), out=out) is out
    np.testing.assert_array_equal(out, big + np.arange(6, dtype=np.float32))
    strided = np.ones((4096, 4, 12), np.float32)[..., ::2]
    np.testing.assert_array_equal(tiled(strided, np.arange(6, dtype=np.float32)),
                                  strided + np.arange(6, dtype=np.float32))


def test_row_sums_join_the_one_fused_node_that_reads_them_and_nothing_else():
    """``absorb_row_sums`` (CuPy's kernel pass): a last-axis sum with keepdims read by one
    fused node joins it, with the elementwise op it sums when nothing else reads that;
    a fetched sum, one read by two nodes, one over another axis or without keepdims
    stays where it is."""
    from gradflow.passes import optimize
    from gradflow.passes.fusion import absorb_row_sums

    def widened(make):
        with gf.Graph().as_default():
            x = gf.placeholder(gf.float32, (4, 6))
            fetches = make(x)
            graph = optimize(fetches, [x])
            absorb_row_sums(graph)
            return [[m.opdef.name for m in n.attrs["program"].members]
                    for n in _fused_nodes(graph)]

    def joined(x):
        return [2.0 * x - gf.reduce_sum(gf.exp(x), -1, keepdims=True)]

    assert ["exp", "reduce_sum", "multiply", "subtract"] in widened(joined)

    def fetched(x):
        s = gf.reduce_sum(gf.exp(x), -1, keepdims=True)
        return [2.0 * x - s, s]

    def shared(x):
        s = gf.reduce_sum(x, -1, keepdims=True)
        return [2.0 * x - s, gf.sqrt(x) * s]

    def other_axis(x):
        return [2.0 * x - gf.reduce_sum(x, 0, keepdims=True)]

    def dropped_axis(x):
        return [2.0 * x - gf.expand_dims(gf.reduce_sum(x, -1), -1)]

    for make in (fetched, shared, other_axis, dropped_axis):
        assert all("reduce_sum" not in members for members in widened(make)), make.__name__


def test_a_draw_joins_the_one_fused_node_that_reads_it():
    """``absorb_draws``: a uniform draw of the fused node's shape read by it alone joins
    it; a fetched draw, one read twice or one the backend does not draw stays."""
    from gradflow.passes import optimize
    from gradflow.passes.fusion import absorb_draws

    def widened(make, draws_here=True):
        with gf.Graph().as_default():
            x = gf.placeholder(gf.float32, (4, 6))
            graph = optimize(make(x), [x])
            absorb_draws(graph, lambda node: draws_here)
            return [[m.opdef.name for m in n.attrs["program"].members]
                    for n in _fused_nodes(graph)]

    def dropout(x):
        return [gf.nn.dropout(x, 0.5)]

    assert widened(dropout) == [["random", "divide", "add", "floor", "multiply"]]
    assert widened(dropout, draws_here=False) == [["divide", "add", "floor", "multiply"]]

    def fetched(x):
        u = gf.random_uniform((4, 6))
        return [x * u + 1.0, u]

    def twice(x):
        u = gf.random_uniform((4, 6))
        return [x * u + 1.0, gf.sqrt(x) - u]

    for make in (fetched, twice):
        assert all("random" not in members for members in widened(make)), make.__name__


@pytest.mark.parametrize("rows", [512, 509])  # blocks of 64 rows; 509 rows: no block size
def test_a_large_ufunc_sequence_runs_a_block_of_rows_at_a_time_with_the_same_bits(
        rows, monkeypatch):
    """A transcendental program over a large output (BERT's GELU) runs its ufuncs on
    blocks of rows that stay in the cache: the same ufuncs on the same elements, so the
    same bits, for a full input, a bias along the rows, a value per row and a scalar,
    with two outputs; rows with no block size run whole."""
    rng = np.random.default_rng(11)
    x = gf.placeholder(gf.float32, (rows, 512))
    bias = gf.constant(rng.standard_normal(512).astype(np.float32))
    per_row = gf.placeholder(gf.float32, (rows, 1))
    inner = (x + bias) * per_row
    y = 0.5 * inner * (1.0 + gf.tanh(0.79788456 * (inner + 0.044715 * inner * inner * inner)))
    fetches = [y, gf.exp(inner * 0.1) - inner]  # two fused outputs of one program
    feed = {x: rng.standard_normal((rows, 512)).astype(np.float32),
            per_row: rng.standard_normal((rows, 1)).astype(np.float32)}
    blocks = []
    original = numpy_fused._blocked
    monkeypatch.setattr(numpy_fused, "_blocked",
                        lambda *a: blocks.append(original(*a)) or blocks[-1])

    def run():
        with gf.Session() as sess:
            return [sess.run(fetches, feed) for _ in range(2)]  # the second into buffers

    got = run()
    monkeypatch.setattr(numpy_fused, "BLOCKED_MIN", 1 << 40)
    want = run()
    assert any(b is not None for b in blocks) == (rows == 512), blocks
    for g_run, w_run in zip(got, want):
        for g, w in zip(g_run, w_run):
            np.testing.assert_array_equal(g, w)
