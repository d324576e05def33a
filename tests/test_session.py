"""TF1 semantics of graphs and sessions: fetches, feeds, assignment timing, defaults, scopes."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from conftest import draws_reference

import gradflow as gf


def test_fetch_structures(backend):
    a = gf.constant(1.0)
    b = gf.constant([2.0, 3.0])
    noop = gf.no_op()
    Pair = collections.namedtuple("Pair", "first second")
    with gf.Session(backend=backend) as sess:
        assert sess.run(a) == 1.0
        out = sess.run({"a": a, "rest": [b, (a, noop)], "pair": Pair(a, b)})
    assert out["a"] == 1.0
    np.testing.assert_array_equal(out["rest"][0], [2.0, 3.0])
    assert isinstance(out["rest"][1], tuple) and out["rest"][1][1] is None
    assert isinstance(out["pair"], Pair) and out["pair"].first == 1.0


def test_run_returns_numpy_copies_and_native_on_request(backend):
    v = gf.Variable([1.0, 2.0])
    with gf.Session(backend=backend) as sess:
        got = sess.run(v)
        assert isinstance(got, np.ndarray)
        got[0] = 100.0  # must not reach the session's variable
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        native = sess.run(v, output="native")
        assert not isinstance(native, np.ndarray) or sess.backend.name == "numpy"


def test_variables_initialize_on_first_use_without_initializer(backend):
    w = gf.Variable([[1.0, 0.0], [0.0, -1.0]])
    b = gf.Variable([1.0, 1.0])
    x = gf.placeholder()
    y = gf.add(gf.matmul(w, x), b)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0]}), [2.0, -1.0])


def test_assignments_take_effect_after_the_run(backend):
    v = gf.Variable(1.0)
    read_before = v * 1.0
    inc = gf.assign_add(v, 10.0)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        old, new = sess.run([read_before, inc])
        assert (old, new) == (1.0, 11.0)
        assert sess.run(v) == 11.0


def test_swap_in_one_run_reads_old_values(backend):
    a, b = gf.Variable(1.0), gf.Variable(2.0)
    swap = gf.group(gf.assign(a, b), gf.assign(b, a))
    with gf.Session(backend=backend) as sess:
        assert sess.run(swap) is None
        assert sess.run([a, b]) == [2.0, 1.0]


def test_initializer_resets_variables(backend):
    v = gf.Variable(5.0)
    with gf.Session(backend=backend) as sess:
        sess.run(v.assign(7.0))
        assert sess.run(v) == 7.0
        sess.run(gf.global_variables_initializer())
        assert sess.run(v) == 5.0


def test_two_sessions_keep_separate_state():
    v = gf.Variable(0.0)
    inc = v.assign_add(1.0)
    with gf.Session() as s1, gf.Session(backend="array_api_strict") as s2:
        s1.run(inc)
        s1.run(inc)
        s2.run(inc)
        assert s1.run(v) == 2.0 and s2.run(v) == 1.0


def test_plans_are_cached_per_fetch_and_feed_signature():
    x = gf.placeholder(gf.float32, (None,))
    y = x * 2.0
    sess = gf.Session(optimize=False)
    sess.run(y, {x: [1.0]})
    sess.run(y, {x: [1.0, 2.0, 3.0]})
    assert len(sess._plans) == 1
    sess.run([y, x], {x: [1.0]})
    assert len(sess._plans) == 2


def test_optimized_plans_are_specialized_per_fed_shape_up_to_a_limit():
    """With the passes on, each fed shape gets a plan of its own with static shapes,
    until MAX_SHAPE_PLANS; later shapes share one general plan."""
    x = gf.placeholder(gf.float32, (None,))
    y = x * 2.0 + 1.0
    sess = gf.Session()
    for n in (1, 3, 1):
        np.testing.assert_allclose(sess.run(y, {x: np.ones(n, np.float32)}), np.full(n, 3.0))
    specialized = [p for p in sess._plans.values() if getattr(p, "specialized", False)]
    assert len(specialized) == 2
    for n in range(4, 4 + sess.MAX_SHAPE_PLANS + 3):
        np.testing.assert_allclose(sess.run(y, {x: np.ones(n, np.float32)}), np.full(n, 3.0))
    specialized = [p for p in sess._plans.values() if getattr(p, "specialized", False)]
    assert len(specialized) == sess.MAX_SHAPE_PLANS
    general = [p for p in sess._plans.values() if getattr(p, "specialized", True) is False]
    assert len(general) == 1


def test_intermediate_values_are_freed():
    x = gf.placeholder(gf.float32, (3,))
    y = gf.exp(gf.exp(gf.exp(x)))
    sess = gf.Session(optimize=False)  # unfused, so that there are values to free
    sess.run(y, {x: np.zeros(3, np.float32)})
    plan = next(iter(sess._plans.values()))
    import inspect

    source = inspect.getsource(plan.fn)
    assert source.count("del ") >= 2


def test_feed_any_tensor_and_placeholder_with_default(backend):
    x = gf.placeholder(gf.float32, (2,))
    h = x * 2.0
    y = h + 1.0
    training = gf.placeholder_with_default(True, shape=())
    out = gf.where(training, y, -y)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {h: [10.0, 20.0]}), [11.0, 21.0])
        np.testing.assert_allclose(sess.run(out, {x: [1.0, 2.0]}), [3.0, 5.0])
        np.testing.assert_allclose(sess.run(out, {x: [1.0, 2.0], training: False}), [-3, -5])


def test_default_graph_and_as_default_without_with():
    g = gf.Graph()
    assert g.as_default() is g
    try:
        assert gf.get_default_graph() is g
        c = gf.constant(1.0)
        assert c.graph is g
    finally:
        g.__exit__(None, None, None)
    with gf.Graph().as_default() as g2:
        assert gf.get_default_graph() is g2
    assert gf.get_default_graph() is not g2


def test_default_session_eval_and_run():
    x = gf.constant(3.0)
    op = gf.no_op()
    with gf.Session() as sess:
        assert gf.get_default_session() is sess
        assert x.eval() == 3.0
        assert op.run() is None
    assert gf.get_default_session() is None
    with pytest.raises(ValueError, match="no default session"):
        x.eval()
    inter = gf.InteractiveSession()
    assert x.eval() == 3.0
    inter.close()


def test_name_scopes_and_unique_names():
    with gf.name_scope("layer"):
        a = gf.constant(1.0, name="c")
        b = gf.constant(1.0, name="c")
        with gf.name_scope("inner"):
            c = gf.add(a, b)
    assert a.name == "layer/c" and b.name == "layer/c_1"
    assert c.name == "layer/inner/add"
    with gf.name_scope("layer"):
        d = gf.constant(1.0, name="c")
    assert d.name == "layer_1/c"
    assert gf.get_default_graph().get_tensor_by_name("layer/c:0") is a


def test_variable_scope_and_get_variable_reuse():
    with gf.variable_scope("model"):
        w = gf.get_variable("w", (2, 3))
    with gf.variable_scope("model", reuse=True):
        assert gf.get_variable("w", (2, 3)) is w
    with gf.variable_scope("model", reuse=gf.AUTO_REUSE):
        assert gf.get_variable("w") is w
        fresh = gf.get_variable("v", (1,), initializer=gf.zeros_initializer())
    assert w.name == "model/w" and fresh.name == "model/v"
    with pytest.raises(ValueError, match="already exists"):
        with gf.variable_scope("model"):
            gf.get_variable("w", (2, 3))
    with pytest.raises(ValueError, match="does not exist"):
        with gf.variable_scope("other", reuse=True):
            gf.get_variable("w", (2, 3))


def test_collections_and_trainable():
    a = gf.Variable(1.0, name="a")
    b = gf.Variable(2.0, name="b", trainable=False)
    assert gf.global_variables() == [a, b]
    assert gf.trainable_variables() == [a]


def test_same_seed_same_numbers_on_every_backend(backend):
    gf.set_random_seed(42)
    w = gf.Variable(gf.random_normal((3, 4)))
    u = gf.random_uniform((5,), seed=7)
    with gf.Session(backend=backend) as sess:
        got_w, got_u = sess.run([w, u])
    gf.reset_default_graph()
    gf.set_random_seed(42)
    w2 = gf.Variable(gf.random_normal((3, 4)))
    u2 = gf.random_uniform((5,), seed=7)
    with gf.Session(backend=draws_reference(backend)) as sess:
        np.testing.assert_array_equal(sess.run(w2), got_w)
        np.testing.assert_array_equal(sess.run(u2), got_u)


def test_random_ops_draw_new_numbers_each_run():
    r = gf.random_normal((4,), seed=1)
    with gf.Session() as sess:
        assert not np.array_equal(sess.run(r), sess.run(r))


def test_truncated_normal_stays_within_two_stddevs():
    r = gf.truncated_normal((2000,), mean=1.0, stddev=0.5, seed=3)
    with gf.Session() as sess:
        values = sess.run(r)
    assert values.min() >= 0.0 and values.max() <= 2.0


def test_second_derivative_runs_on_every_backend(backend):
    x = gf.placeholder(gf.float64, (3,))
    y = gf.reduce_sum(x ** 3.0)
    (g,) = gf.gradients(y, [x])
    (h,) = gf.gradients(gf.reduce_sum(g), [x])
    with gf.Session(backend=backend) as sess:
        got_g, got_h = sess.run([g, h], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got_g, [3.0, 12.0, 27.0])
    np.testing.assert_allclose(got_h, [6.0, 12.0, 18.0])


def test_gradients_sum_consumers_undo_broadcast_and_stop():
    x = gf.placeholder(gf.float64, (2, 3))
    b = gf.Variable(np.zeros(3))
    y = gf.reduce_sum((x + b) * x) + gf.reduce_sum(gf.stop_gradient(b) * 5.0)
    gx, gb = gf.gradients(y, [x, b])
    assert gb.shape == (3,)
    xv = np.arange(6.0).reshape(2, 3)
    with gf.Session() as sess:
        got_x, got_b = sess.run([gx, gb], {x: xv})
    np.testing.assert_allclose(got_x, 2 * xv)
    np.testing.assert_allclose(got_b, xv.sum(0))


def test_gradients_of_unrelated_and_integer_paths_are_none():
    x = gf.Variable(1.0)
    unrelated = gf.Variable(2.0)
    k = gf.Variable(3)
    y = x * gf.cast(k, gf.float32)
    assert gf.gradients(y, [x, unrelated, k])[1:] == [None, None]


def test_an_x_that_feeds_another_x_gets_its_whole_gradient():
    """TF1: ``gradients(y, [h, x])`` with ``h = f(x)`` differentiates through ``h``:
    the xs are not where the gradient stops (``stop_gradients`` are)."""
    x = gf.placeholder(gf.float64, (3,))
    h = x * x
    y = gf.reduce_sum(gf.nn.relu(h) * 2.0) + gf.reduce_sum(x)
    gh, gx = gf.gradients(y, [h, x])
    gx_alone, = gf.gradients(y, [x])
    gh_stopped, gx_stopped = gf.gradients(y, [h, x], stop_gradients=[h])
    xv = np.array([1.0, -2.0, 3.0])
    with gf.Session() as sess:
        got = sess.run([gh, gx, gx_alone, gh_stopped, gx_stopped], {x: xv})
    np.testing.assert_allclose(got[0], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(got[1], 4.0 * xv + 1.0)
    np.testing.assert_allclose(got[2], got[1])
    np.testing.assert_allclose(got[3], [2.0, 2.0, 2.0])
    np.testing.assert_allclose(got[4], [1.0, 1.0, 1.0])


def test_register_gradient_override():
    @gf.RegisterGradient("TestDoubleSquareGrad")
    def _grad(node, g):
        return [g * 4.0 * node.inputs[0]]

    g = gf.get_default_graph()
    x = gf.constant(3.0)
    with g.gradient_override_map({"square": "TestDoubleSquareGrad"}):
        y = gf.square(x)
    (dx,) = gf.gradients(y, [x])
    with gf.Session() as sess:
        assert sess.run(dx) == 12.0


def _plan_source(sess):
    import linecache

    (plan,) = sess._plans.values()
    return "".join(linecache.getlines(plan.filename))


def test_numpy_elementwise_chains_reuse_dead_buffers():
    """On numpy a chain of elementwise ops writes into its dead inputs (``out=``)."""
    x = gf.placeholder(gf.float32, (3, 4))
    y = gf.sqrt(gf.square(x * 2.0 + 1.0) + 1.0) - 0.5
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    with gf.Session(backend="numpy", optimize=False) as sess:  # unfused: one op per line
        out = sess.run(y, {x: value})
        assert _plan_source(sess).count("out=") >= 3
    np.testing.assert_allclose(out, np.sqrt((value * 2 + 1) ** 2 + 1) - 0.5, rtol=1e-6)
    assert value[1, 1] == 5  # a fed array is never written into


def test_buffer_reuse_never_overwrites_live_values(backend):
    """Fetched values, views of a value, and assigned values survive later in-place ops."""
    x = gf.placeholder(gf.float32, (2, 3))
    v = gf.Variable(np.ones((2, 3), np.float32))
    a = x * 2.0                  # fetched, and read again below
    b = x + 1.0
    b_view = gf.reshape(b, (3, 2))  # a view of b is fetched: b may not be reused
    c = v * 3.0
    update = gf.assign(v, c)     # c is written to the store at the end of the run
    d = (a + 1.0) * (b + 1.0) + c
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with gf.Session(backend=backend) as sess:
        a_out, view_out, d_out, _ = sess.run([a, b_view, d, update], {x: value})
        v_out = sess.run(v)
    np.testing.assert_array_equal(a_out, value * 2)
    np.testing.assert_array_equal(view_out, (value + 1).reshape(3, 2))
    np.testing.assert_array_equal(d_out, (value * 2 + 1) * (value + 2) + 3)
    np.testing.assert_array_equal(v_out, np.full((2, 3), 3, np.float32))


def test_recycled_variable_buffers_never_touch_arrays_held_elsewhere():
    """An update writes into the array a variable held two runs ago only when nothing
    else holds it: a natively fetched value keeps its numbers."""
    v = gf.Variable(np.zeros(5, np.float32))
    step = gf.assign(v, v + 1.0)
    with gf.Session(backend="numpy") as sess:
        held = []
        for _ in range(6):
            held.append(sess.run(v, output="native"))
            sess.run(step)
        assert [float(h[0]) for h in held] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        del held
        for _ in range(4):  # with nothing held, the two arrays alternate
            sess.run(step)
        np.testing.assert_array_equal(sess.run(v), np.full(5, 10.0, np.float32))
        assert any(b is not None for b in sess.spare_buffers.values())


def test_plan_buffers_give_the_same_numbers_run_after_run():
    x = gf.placeholder(gf.float64, (3, 4))
    w = gf.Variable(np.linspace(-1.0, 1.0, 12).reshape(3, 4))
    loss = gf.reduce_sum(gf.square(gf.exp(x * w) - w * 2.0 + 1.0))
    train = gf.train.AdamOptimizer(0.1).minimize(loss)
    values = [np.random.default_rng(k).standard_normal((3, 4)) for k in range(5)]
    results = {}
    for name in ("numpy", "array_api_strict"):  # strict: no out=, no plan buffers
        with gf.Session(backend=name) as sess:
            results[name] = [sess.run([loss, train], {x: v})[0] for v in values * 2] \
                + [sess.run(w)]
    for a, b in zip(results["numpy"], results["array_api_strict"]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_integer_division_is_true_division_in_float(backend):
    """TF1's ``/`` on integers divides as float64, and the static dtype says so."""
    a = gf.placeholder(gf.int32, (2,))
    b = gf.placeholder(gf.int64, (2,))
    half = (a + 1) / 2
    ratio = b / b
    assert (half.dtype, ratio.dtype) == (gf.float64, gf.float64)
    with gf.Session(backend=backend) as sess:
        h, r = sess.run([half * 2.0, ratio], {a: np.array([4, 9], np.int32),
                                              b: np.array([3, 5], np.int64)})
    np.testing.assert_array_equal(h, [5.0, 10.0])
    np.testing.assert_array_equal(r, [1.0, 1.0])


def _stack_graph():
    """Four steps whose results are stacked by a row concat, read by a GEMM, through a
    reshape (which may return a view of the stack), and by a later step."""
    xs = [gf.placeholder(gf.float32, (2, 3)) for _ in range(4)]
    w = gf.Variable(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4))
    parts = [gf.tanh(x * 2.0 + float(k)) for k, x in enumerate(xs)]
    stacked = gf.concat(parts, 0)
    product = gf.matmul(stacked, w)
    flat = gf.reduce_sum(gf.reshape(stacked, (4, 6)) * 3.0, axis=0)
    late = gf.exp(parts[0]) + product[:2, :3]
    return xs, parts, stacked, [product, flat, late]


def _stack_values(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]


def test_row_stacks_take_their_parts_in_place(backend):
    """On numpy the parts of a row concat are written straight into its rows (the concat
    copies nothing); every backend gives the same numbers, run after run."""
    xs, _, _, fetches = _stack_graph()
    results = {}
    for name in (backend, "array_api_strict"):
        with gf.Session(backend=name) as sess:
            sess.run(gf.global_variables_initializer())
            results[name] = [sess.run(fetches, dict(zip(xs, _stack_values(k))))
                             for k in (0, 1, 0, 2)]
            if name == "numpy" and backend == "numpy":
                source = _plan_source_of(sess, fetches)
                assert source.count("out=P") == 4, source
    for got, want in zip(results[backend], results["array_api_strict"]):
        _assert_all_close(got, want)


def test_fetched_stacks_and_parts_keep_their_values_after_the_next_run():
    xs, parts, stacked, fetches = _stack_graph()
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        first = sess.run([stacked, parts[1]] + fetches, dict(zip(xs, _stack_values(0))))
        kept = [np.array(v, copy=True) for v in first]
        sess.run([stacked, parts[1]] + fetches, dict(zip(xs, _stack_values(1))))
        for got, want in zip(first, kept):
            np.testing.assert_array_equal(got, want)
        source = _plan_source_of(sess, [stacked, parts[1]] + fetches)
        assert "out=P" not in source  # a fetched stack is a value of its own


def _plan_source_of(sess, fetches):
    import linecache

    sources = ["".join(linecache.getlines(plan.filename)) for plan in sess._plans.values()
               if hasattr(plan, "filename")]
    return "\n".join(sources)


def _assert_all_close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [3, 64])
def test_an_op_is_not_written_over_an_input_another_input_views(backend, n):
    """``tanh(y) * 0.5 + transpose(y)``: y dies there, but the sum must not be written
    into y's buffer while it reads y's transpose (torch refused the aliasing; a kernel
    that does not check would read elements it had already overwritten)."""
    x = gf.placeholder(gf.float32, [n, n])
    y = gf.matmul(x, x)
    z = gf.matmul(gf.tanh(y) * 0.5 + gf.transpose(y), x)
    xv = (np.arange(n * n).reshape(n, n) % 7 / 10).astype(np.float32)
    with gf.Session(backend=backend) as sess:
        out = sess.run(z, {x: xv})
    yv = xv @ xv
    np.testing.assert_allclose(out, (np.tanh(yv) * 0.5 + yv.T) @ xv, rtol=2e-5)
