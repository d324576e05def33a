"""Control flow and debugging ops: cond, while_loop, control_dependencies, tuple,
identity, Print/print, check_numerics, Assert and assert_*, py_func.

Numbers are checked against NumPy and gradients against float64 central
differences, on every CPU backend (the ``backend`` fixture). The specs
cond_*/while_loop in op_specs.py run the same ops through test_ops.py's checks.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf
from gradflow.errors import InvalidArgumentError

# -- helpers ------------------------------------------------------------------------


class Calls:
    """A py_func body that records how often it ran."""

    def __init__(self, fn=lambda a: a):
        self.count = 0
        self.fn = fn

    def __call__(self, *arrays):
        self.count += 1
        return self.fn(*arrays)


# -- control_dependencies, identity, tuple ------------------------------------------


def test_identity_under_control_dependencies_reads_the_assigned_value(backend):
    v = gf.Variable(1.0, dtype=gf.float64)
    with gf.control_dependencies([v.assign(v + 10.0)]):
        new = gf.identity(v)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(new) == 11.0
        # a read outside the block sees the value before the run (assignments land at its end)
        assert sess.run([new, v]) == [21.0, 11.0]
        assert sess.run(v) == 21.0


def test_identity_looks_through_groups_and_nested_blocks(backend):
    v = gf.Variable(np.zeros(2), dtype=gf.float64)
    w = gf.Variable(np.ones(2), dtype=gf.float64)
    update = gf.group(v.assign([1.0, 2.0]), w.assign([5.0, 6.0]))
    with gf.control_dependencies([update]):
        with gf.control_dependencies([gf.no_op()]):
            both = gf.identity(v) + gf.identity(w)
        with gf.control_dependencies(None):
            cleared = gf.identity(v)
    assert both.control_inputs and not cleared.control_inputs
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(both), [6.0, 8.0])
        np.testing.assert_array_equal(sess.run(cleared), [1.0, 2.0])


def test_control_dependencies_use_the_graph_of_their_inputs():
    g = gf.Graph()
    with g.as_default():
        a = gf.constant(1.0)
    with gf.control_dependencies([a]):  # the default graph is another one
        with g.as_default():
            b = gf.constant(2.0) + 1.0
    assert a in b.control_inputs
    with pytest.raises(TypeError, match="not a tensor"):
        with gf.control_dependencies([3.0]):
            pass


def test_control_inputs_run_before_the_node(backend):
    calls = Calls()
    x = gf.constant(np.arange(3.0))
    side = gf.py_func(calls, [x], gf.float64)
    with gf.control_dependencies([side]):
        y = gf.identity(x * 2.0)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(y), [0.0, 2.0, 4.0])
    assert calls.count == 1


def test_tuple_outputs_wait_for_all(backend):
    calls = Calls()
    x = gf.constant(np.arange(3.0))
    v = gf.Variable(0.0, dtype=gf.float64)
    a, b, c, none = gf.tuple([x + 1.0, gf.py_func(calls, [x], gf.float64), v, None],
                             control_inputs=[v.assign(4.0)])
    assert none is None
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(a), [1.0, 2.0, 3.0])
        assert calls.count == 1
        assert sess.run(c) == 4.0  # reads v after the assignment among the control inputs
    op = gf.no_op()
    (out,) = gf.tuple([op])
    assert isinstance(out, gf.Operation)


# -- cond ---------------------------------------------------------------------------


def test_cond_runs_only_the_taken_branch(backend):
    true_calls, false_calls = Calls(), Calls()
    x = gf.placeholder(gf.float64, (3,))
    p = gf.placeholder(gf.bool, ())
    y = gf.cond(p, lambda: gf.py_func(true_calls, [x], gf.float64) * 2.0,
                lambda: gf.py_func(false_calls, [x], gf.float64) - 1.0)
    value = np.array([1.0, 2.0, 3.0])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {x: value, p: True}), value * 2)
        assert (true_calls.count, false_calls.count) == (1, 0)
        np.testing.assert_allclose(sess.run(y, {x: value, p: False}), value - 1)
        assert (true_calls.count, false_calls.count) == (1, 1)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_cond_untaken_branch_with_a_failing_check_does_not_run(backend):
    x = gf.placeholder(gf.float64, (2,))
    y = gf.cond(gf.reduce_min(x) > 0.0,
                lambda: gf.log(x),
                lambda: gf.check_numerics(gf.log(x), "log of a non-positive value"))
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, np.e]}), [0.0, 1.0])
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y, {x: [-1.0, 2.0]})
    message = str(info.value)
    assert "false branch of cond" in message and "log of a non-positive value" in message
    assert "NaN" in message


def test_cond_matches_numpy_and_merges_static_shapes(backend):
    x = gf.placeholder(gf.float32, (2, 3))
    p = gf.placeholder(gf.bool, ())
    out = gf.cond(p, lambda: {"a": x * 2.0, "b": (gf.reduce_sum(x, 1), gf.constant(1))},
                  lambda: {"a": -x, "b": (gf.reduce_max(x, 0)[:2], gf.constant(7))})
    assert out["a"].shape == (2, 3) and out["a"].dtype is gf.float32
    assert out["b"][0].shape == (2,) and out["b"][1].dtype is gf.int32
    merged = gf.cond(p, lambda: x, lambda: gf.reshape(x, (3, 2)))
    assert merged.shape == (None, None)
    value = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with gf.Session(backend=backend) as sess:
        got = sess.run(out, {x: value, p: True})
        np.testing.assert_allclose(got["a"], value * 2)
        np.testing.assert_allclose(got["b"][0], value.sum(1))
        assert got["b"][1] == 1
        got = sess.run(out, {x: value, p: False})
        np.testing.assert_allclose(got["a"], -value)
        np.testing.assert_allclose(got["b"][0], value.max(0)[:2])
        assert got["b"][1] == 7
        assert sess.run(merged, {x: value, p: False}).shape == (3, 2)


def test_cond_python_bool_and_old_argument_names(backend):
    x = gf.constant([1.0, 2.0])
    y = gf.cond(True, lambda: x * 3.0, lambda: x)
    z = gf.cond(gf.constant(False), fn1=lambda: x, fn2=lambda: [x + 1.0])  # singleton unpacked
    s = gf.cond(gf.constant(False), lambda: [x], lambda: [x + 1.0], strict=True)
    assert isinstance(s, list) and len(s) == 1
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y), [3.0, 6.0])
        np.testing.assert_allclose(sess.run(z), [2.0, 3.0])


def test_cond_operations_and_none(backend):
    v = gf.Variable(0.0, dtype=gf.float64)
    p = gf.placeholder(gf.bool, ())
    op, nothing = gf.cond(p, lambda: (gf.group(v.assign(1.0)), None),
                          lambda: (gf.group(v.assign(-1.0)), None))
    assert isinstance(op, gf.Operation) and nothing is None
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        assert sess.run(op, {p: True}) is None
        assert sess.run(v) == 1.0
        sess.run(op, {p: False})
        assert sess.run(v) == -1.0


def test_cond_assignments_land_at_the_end_of_the_run(backend):
    v = gf.Variable(1.0, dtype=gf.float64)
    p = gf.placeholder(gf.bool, ())
    y = gf.cond(p, lambda: v.assign(v * 10.0), lambda: gf.identity(v) + 0.5)
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        assert sess.run(y, {p: True}) == 10.0
        assert sess.run(v) == 10.0
        assert sess.run(y, {p: False}) == 10.5  # the false branch assigns nothing
        assert sess.run(v) == 10.0
        assert sess.run([y, v * 1.0], {p: True}) == [100.0, 10.0]  # reads before the write
        assert sess.run(v) == 100.0


def test_cond_errors_name_what_is_wrong():
    x = gf.constant([1.0, 2.0])
    with pytest.raises(TypeError, match=r"output 0 is float32 in the true branch .* float64"):
        gf.cond(gf.constant(True), lambda: x, lambda: gf.cast(x, gf.float64))
    with pytest.raises(ValueError, match="returns 2 values, the false branch 1"):
        gf.cond(gf.constant(True), lambda: (x, x), lambda: (x,))
    with pytest.raises(TypeError, match="the tensor .* but the operation"):
        gf.cond(gf.constant(True), lambda: x, lambda: gf.no_op())
    with pytest.raises(TypeError, match="pred must be a bool tensor"):
        gf.cond(x[0], lambda: x, lambda: x)
    with pytest.raises(ValueError, match="pred must be a scalar"):
        gf.cond(x > 0.0, lambda: x, lambda: x)
    with pytest.raises(TypeError, match="callables"):
        gf.cond(gf.constant(True), x, x)


def test_cond_gradient_matches_finite_differences(backend):
    x = gf.placeholder(gf.float64, (2, 3))
    w = gf.placeholder(gf.float64, (3,))
    p = gf.placeholder(gf.bool, ())
    y = gf.cond(p, lambda: gf.exp(x) * w + gf.square(w), lambda: gf.tanh(x * w) * w)
    loss = gf.reduce_sum(y * gf.constant(np.linspace(-1.0, 2.0, 6).reshape(2, 3)))
    gx, gw = gf.gradients(loss, [x, w])
    rng = np.random.default_rng(0)
    xv, wv = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, 3)
    with gf.Session(backend=backend) as sess:
        for pv in (True, False):
            feed = {x: xv, w: wv, p: pv}
            ax, aw = sess.run([gx, gw], feed)
            np.testing.assert_allclose(ax, numeric_grad(sess, loss, x, xv, feed), rtol=1e-6,
                                       atol=1e-8)
            np.testing.assert_allclose(aw, numeric_grad(sess, loss, w, wv, feed), rtol=1e-6,
                                       atol=1e-8)


def test_cond_second_order_gradient(backend):
    x = gf.placeholder(gf.float64, (3,))
    p = gf.placeholder(gf.bool, ())
    y = gf.cond(p, lambda: gf.exp(x) * x, lambda: x * x * x)
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    (h,) = gf.gradients(gf.reduce_sum(g), [x])
    xv = np.array([0.5, -1.0, 2.0])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(h, {x: xv, p: True}), np.exp(xv) * (xv + 2))
        np.testing.assert_allclose(sess.run(h, {x: xv, p: False}), 6 * xv)


def test_cond_gradient_reuses_forward_values_and_skips_the_other_branch(backend):
    taken, other = Calls(), Calls()
    x = gf.placeholder(gf.float64, (3,))
    p = gf.placeholder(gf.bool, ())
    y = gf.cond(p, lambda: gf.py_func(taken, [x], gf.float64) * x,
                lambda: gf.py_func(other, [x], gf.float64) + x)
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    xv = np.array([1.0, 2.0, 3.0])
    with gf.Session(backend=backend) as sess:
        yv, gv = sess.run([y, g], {x: xv, p: True})
    np.testing.assert_allclose(yv, xv * xv)
    np.testing.assert_allclose(gv, xv)  # py_func has no gradient: d(p(x) * x)/dx = p(x)
    assert (taken.count, other.count) == (1, 0)


def test_cond_gradient_sees_the_forward_dropout_mask(backend):
    x = gf.placeholder(gf.float64, (50,))
    training = gf.placeholder(gf.bool, ())
    y = gf.cond(training, lambda: gf.nn.dropout(x, keep_prob=0.5), lambda: x)
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    xv = np.linspace(1.0, 2.0, 50)
    with gf.Session(backend=backend, seed=3) as sess:
        for _ in range(3):
            yv, gv = sess.run([y, g], {x: xv, training: True})
            assert 0 < np.count_nonzero(yv) < 50
            np.testing.assert_allclose(yv, gv * xv)
        yv, gv = sess.run([y, g], {x: xv, training: False})
    np.testing.assert_allclose(yv, xv)
    np.testing.assert_allclose(gv, np.ones(50))


def test_nested_cond_and_its_gradient(backend):
    x = gf.placeholder(gf.float64, ())
    a = gf.placeholder(gf.bool, ())
    b = gf.placeholder(gf.bool, ())
    y = gf.cond(a, lambda: gf.cond(b, lambda: x * x, lambda: gf.exp(x)) * 3.0,
                lambda: -x)
    (g,) = gf.gradients(y, [x])
    (h,) = gf.gradients(g, [x])
    with gf.Session(backend=backend) as sess:
        assert np.isclose(sess.run(y, {x: 2.0, a: True, b: True}), 12.0)
        assert np.isclose(sess.run(g, {x: 2.0, a: True, b: True}), 12.0)
        assert np.isclose(sess.run(h, {x: 2.0, a: True, b: True}), 6.0)
        assert np.isclose(sess.run(g, {x: 2.0, a: True, b: False}), 3 * np.exp(2.0))
        assert np.isclose(sess.run(h, {x: 2.0, a: True, b: False}), 3 * np.exp(2.0))
        assert sess.run([y, g, h], {x: 2.0, a: False, b: True}) == [-2.0, -1.0, 0.0]


def test_cond_trains_a_variable(backend):
    w = gf.Variable([1.0, -2.0], dtype=gf.float64)
    p = gf.placeholder(gf.bool, ())
    loss = gf.cond(p, lambda: gf.reduce_sum(gf.square(w - 3.0)), lambda: gf.reduce_sum(w))
    step = gf.train.GradientDescentOptimizer(0.25).minimize(loss)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(step, {p: True})
        np.testing.assert_allclose(sess.run(w), [2.0, 0.5])
        sess.run(step, {p: False})
        np.testing.assert_allclose(sess.run(w), [1.75, 0.25])


def test_branch_values_used_outside_are_computed_outside(backend):
    inner = []
    x = gf.placeholder(gf.float64, ())
    p = gf.placeholder(gf.bool, ())

    def true_fn():
        inner.append(x * 2.0)
        return inner[0] + 1.0

    y = gf.cond(p, true_fn, lambda: x)
    with gf.Session(backend=backend) as sess:
        assert sess.run([y, inner[0]], {x: 3.0, p: False}) == [3.0, 6.0]


def test_cond_and_while_loop_with_session_check_numerics(backend):
    x = gf.placeholder(gf.float64, ())
    y = gf.cond(x > 0.0, lambda: gf.log(x), lambda: x)
    z = gf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0 + gf.log(x), [x])
    (g,) = gf.gradients(y + z, [x])
    with gf.Session(backend=backend, check_numerics=True) as sess:
        assert np.isfinite(sess.run([y, z, g], {x: 1.5})).all()
        assert sess.run(y, {x: -1.0}) == -1.0


# -- while_loop ---------------------------------------------------------------------


def test_counted_while_loop_and_its_gradient(backend):
    x0 = gf.placeholder(gf.float64, ())
    w = gf.placeholder(gf.float64, ())
    i, x = gf.while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x * w), (0, x0))
    dw, dx0 = gf.gradients(x, [w, x0])
    with gf.Session(backend=backend) as sess:
        iv, xv, dwv, dx0v = sess.run([i, x, dw, dx0], {x0: 1.5, w: 0.8})
        assert iv == 5
        np.testing.assert_allclose(xv, 1.5 * 0.8 ** 5)
        np.testing.assert_allclose(dwv, 5 * 1.5 * 0.8 ** 4)
        np.testing.assert_allclose(dx0v, 0.8 ** 5)
        np.testing.assert_allclose(dwv, numeric_grad(sess, x, w, 0.8, {x0: 1.5}), rtol=1e-7)
        np.testing.assert_allclose(dx0v, numeric_grad(sess, x, x0, 1.5, {w: 0.8}), rtol=1e-7)


def test_while_loop_gradient_of_vectors_matches_finite_differences(backend):
    x0 = gf.placeholder(gf.float64, (2, 3))
    w = gf.placeholder(gf.float64, (3,))
    n = gf.placeholder(gf.int32, ())

    def body(i, h, acc):
        h = gf.tanh(h * w + 0.1 * gf.cast(i, gf.float64))
        return i + 1, h, acc + gf.reduce_sum(h * h)

    _, h, acc = gf.while_loop(lambda i, h, acc: i < n, body,
                              [gf.constant(0), x0, gf.constant(0.0, gf.float64)])
    loss = acc + gf.reduce_sum(h * gf.constant(np.arange(6.0).reshape(2, 3)))
    gx, gw = gf.gradients(loss, [x0, w])
    rng = np.random.default_rng(1)
    xv, wv = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, 3)

    def ref(steps):
        hv, total = xv, 0.0
        for i in range(steps):
            hv = np.tanh(hv * wv + 0.1 * i)
            total += (hv * hv).sum()
        return total + (hv * np.arange(6.0).reshape(2, 3)).sum()

    with gf.Session(backend=backend) as sess:
        for steps in (0, 1, 4):
            feed = {x0: xv, w: wv, n: steps}
            np.testing.assert_allclose(sess.run(loss, feed), ref(steps))
            ax, aw = sess.run([gx, gw], feed)
            np.testing.assert_allclose(ax, numeric_grad(sess, loss, x0, xv, feed),
                                       rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(aw, numeric_grad(sess, loss, w, wv, feed),
                                       rtol=1e-6, atol=1e-8)


def test_while_loop_structures_and_single_variables(backend):
    out = gf.while_loop(lambda s: s["n"] < 10.0,
                        lambda s: {"n": s["n"] * 2.0, "k": (s["k"][0] + 1,)},
                        [{"n": gf.constant(1.0), "k": (gf.constant(0),)}])
    assert isinstance(out, dict)
    same = gf.while_loop(lambda v: v < 100, lambda v: v * 3, [gf.constant(1)],
                         return_same_structure=True)
    single = gf.while_loop(lambda v: v < 100, lambda v: v * 3, gf.constant(1))
    with gf.Session(backend=backend) as sess:
        got = sess.run(out)
        assert got["n"] == 16.0 and got["k"][0] == 4
        assert isinstance(same, list) and sess.run(same) == [243]
        assert sess.run(single) == 243


def test_while_loop_shape_invariants(backend):
    x0 = gf.constant([1.0])
    body = lambda i, x: (i + 1, gf.concat([x, x * 2.0], 0))
    with pytest.raises(ValueError, match="shape_invariants"):
        gf.while_loop(lambda i, x: i < 3, body, (0, x0))
    i, x = gf.while_loop(lambda i, x: i < 3, body, (0, x0),
                         shape_invariants=(gf.TensorShape(()), gf.TensorShape((None,))))
    assert x.shape == (None,)
    (g,) = gf.gradients(gf.reduce_sum(x), [x0])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(x), [1, 2, 2, 4, 2, 4, 4, 8])
        np.testing.assert_allclose(sess.run(g), [27.0])


def test_while_loop_maximum_iterations_and_back_prop(backend):
    x0 = gf.placeholder(gf.float64, ())
    cap = gf.placeholder(gf.int32, ())
    forever = lambda x: x < 1e9
    a = gf.while_loop(forever, lambda x: x * 2.0, [x0], maximum_iterations=3)
    b = gf.while_loop(forever, lambda x: x * 2.0, [x0], maximum_iterations=cap)
    c = gf.while_loop(forever, lambda x: x * 2.0, [x0], maximum_iterations=3, back_prop=False)
    assert gf.gradients(c, [x0]) == [None]
    (ga,) = gf.gradients(a, [x0])
    with gf.Session(backend=backend) as sess:
        assert sess.run([a, ga], {x0: 1.5}) == [12.0, 8.0]
        assert sess.run(b, {x0: 1.0, cap: 5}) == 32.0
        assert sess.run(c, {x0: 1.0}) == 8.0


def test_while_loop_random_values_agree_with_the_gradient(backend):
    x0 = gf.placeholder(gf.float64, (4,))
    _, x = gf.while_loop(lambda i, x: i < 3,
                         lambda i, x: (i + 1, x * gf.random_uniform((4,), 0.5, 1.5,
                                                                    dtype=gf.float64)),
                         (0, x0))
    (g,) = gf.gradients(gf.reduce_sum(x), [x0])
    xv = np.array([1.0, 2.0, -1.0, 0.5])
    with gf.Session(backend=backend, seed=5) as sess:
        first = sess.run([x, g], {x0: xv})
        second = sess.run([x, g], {x0: xv})
    for xv_out, gv in (first, second):
        np.testing.assert_allclose(xv_out, gv * xv)  # d(x0 * prod u)/dx0 = prod u
    assert not np.allclose(first[0], second[0])


def test_cond_inside_while_and_while_inside_cond(backend):
    x0 = gf.placeholder(gf.float64, ())
    w = gf.placeholder(gf.float64, ())
    p = gf.placeholder(gf.bool, ())

    def body(i, x):
        return i + 1, gf.cond(gf.equal(i // 2 * 2, i), lambda: x * w, lambda: x + w)

    _, x = gf.while_loop(lambda i, x: i < 4, body, (0, x0))
    y = gf.cond(p, lambda: gf.while_loop(lambda v: v < 10.0, lambda v: v * w, [x0]),
                lambda: x0 * 0.5)
    gx, gw = gf.gradients(x, [x0, w])
    gy = gf.gradients(y, [x0, w])

    def ref(x0v, wv):
        v = x0v
        for i in range(4):
            v = v * wv if i % 2 == 0 else v + wv
        return v

    with gf.Session(backend=backend) as sess:
        feed = {x0: 1.5, w: 1.7, p: True}
        np.testing.assert_allclose(sess.run(x, feed), ref(1.5, 1.7))
        np.testing.assert_allclose(sess.run(gx, feed), numeric_grad(sess, x, x0, 1.5, feed),
                                   rtol=1e-6)
        np.testing.assert_allclose(sess.run(gw, feed), numeric_grad(sess, x, w, 1.7, feed),
                                   rtol=1e-6)
        np.testing.assert_allclose(sess.run(y, feed), 1.5 * 1.7 ** 4)  # 1.5 * 1.7**4 > 10
        for k, t in enumerate([x0, w]):
            np.testing.assert_allclose(sess.run(gy[k], feed),
                                       numeric_grad(sess, y, t, feed[t], feed), rtol=1e-6)
        feed[p] = False
        assert sess.run(gy, feed) == [0.5, 0.0]


def test_nested_while_loops_with_gradient(backend):
    x0 = gf.placeholder(gf.float64, ())

    def outer(i, x):
        _, inner = gf.while_loop(lambda j, y: j < i, lambda j, y: (j + 1, y * 1.1 + x),
                                 (0, x))
        return i + 1, gf.tanh(inner)

    _, x = gf.while_loop(lambda i, x: i < 3, outer, (0, x0))
    (g,) = gf.gradients(x, [x0])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(g, {x0: 0.3}), numeric_grad(sess, x, x0, 0.3),
                                   rtol=1e-6)


def test_while_loop_errors():
    x = gf.constant(1.0)
    v = gf.Variable(0.0)
    with pytest.raises(ValueError, match=r"assigns variable .* inside the loop body"):
        gf.while_loop(lambda i: i < 3, lambda i: i + gf.cast(v.assign(1.0), gf.int32),
                      [gf.constant(0)])
    with pytest.raises(TypeError, match="loop variable 0 is float32 but the body returns "
                                        "float64"):
        gf.while_loop(lambda a: a < 3.0, lambda a: gf.cast(a, gf.float64), [x])
    with pytest.raises(TypeError, match="cond must return a scalar bool"):
        gf.while_loop(lambda a: a + 1.0, lambda a: a, [x])
    with pytest.raises(ValueError, match="the body returns 2 values for 1"):
        gf.while_loop(lambda a: a < 3.0, lambda a: (a, a), [x])
    with pytest.raises(ValueError, match="no loop variables"):
        gf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="maximum_iterations must be a scalar int"):
        gf.while_loop(lambda a: a < 3.0, lambda a: a, [x], maximum_iterations=x)


def test_while_loop_second_order_is_refused():
    x0 = gf.placeholder(gf.float64, ())
    x = gf.while_loop(lambda x: x < 10.0, lambda x: x * x, [x0])
    (g,) = gf.gradients(x, [x0])
    with pytest.raises(NotImplementedError, match="second-order gradients through while_loop"):
        gf.gradients(g, [x0])


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_while_loop_error_in_body_names_the_node(backend):
    x = gf.placeholder(gf.float64, ())
    y = gf.while_loop(lambda a: a < 20.0,
                      lambda a: gf.check_numerics(gf.log(a - 2.0), "bad log") + a + 5.0, [x])
    want = 3.0
    while want < 20.0:
        want = np.log(want - 2.0) + want + 5.0
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {x: 3.0}), want)
        with pytest.raises(InvalidArgumentError, match=r"body of while_loop .*bad log"):
            sess.run(y, {x: 1.0})


def test_while_loop_internal_nodes_are_not_scheduled_outside(backend):
    calls = Calls(lambda a: a + 1.0)
    x = gf.placeholder(gf.float64, ())
    y = gf.while_loop(lambda a: a < 3.5,
                      lambda a: gf.reshape(gf.py_func(calls, [a], gf.float64), ()), [x])
    with gf.Session(backend=backend) as sess:
        assert sess.run(y, {x: 0.5}) == 3.5
    assert calls.count == 3


# -- Print, print -------------------------------------------------------------------


def test_Print_prints_and_passes_the_value(backend, capfd):
    x = gf.constant([1.0, 2.0, 3.0, 4.0])
    y = gf.Print(x, [x, gf.constant(5)], "values: ", first_n=2)
    (g,) = gf.gradients(gf.reduce_sum(y * 2.0), [x])
    with gf.Session(backend=backend) as sess:
        for _ in range(3):
            np.testing.assert_allclose(sess.run(y), [1, 2, 3, 4])
        np.testing.assert_allclose(sess.run(g), [2, 2, 2, 2])
    err = capfd.readouterr().err
    assert err.count("values: [1 2 3...][5]") == 2


def test_print_is_an_operation(backend, capfd):
    lines = []
    x = gf.constant([[1, 2], [3, 4]])
    op = gf.print("x is", x, {"k": 1}, output_stream=lines.append)
    to_stderr = gf.print("sum:", gf.reduce_sum(x), sep="=", end="!\n")
    with gf.control_dependencies([to_stderr]):
        y = gf.identity(x)
    assert isinstance(op, gf.Operation)
    with gf.Session(backend=backend) as sess:
        assert sess.run(op) is None
        sess.run(y)
    assert lines == ["x is [[1 2]\n [3 4]] {'k': 1}"]  # a callable gets no line end
    assert "sum:=10!\n" in capfd.readouterr().err


def test_print_to_a_logger_and_a_file(backend, tmp_path, caplog):
    path = tmp_path / "out.txt"
    x = gf.constant(np.arange(10))
    a = gf.print(x, output_stream=f"file://{path}", summarize=2)
    b = gf.print("logged", output_stream=logging.getLogger("cf-test").warning)
    with gf.Session(backend=backend) as sess, caplog.at_level(logging.WARNING):
        sess.run([a, b])
    assert path.read_text() == "[0 1 ... 8 9]\n"
    assert "logged" in caplog.text


# -- check_numerics -----------------------------------------------------------------


def test_check_numerics(backend):
    x = gf.placeholder(gf.float64, (3,))
    y = gf.check_numerics(x, "input check")
    z = gf.verify_tensor_all_finite(x * 2.0, "doubled")
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run([y, z, g], {x: [1.0, 2.0, 3.0]}),
                                   [[1, 2, 3], [2, 4, 6], [1, 1, 1]])
        with pytest.raises(InvalidArgumentError, match="input check : Tensor had NaN values"):
            sess.run(y, {x: [1.0, np.nan, 3.0]})
        with pytest.raises(InvalidArgumentError, match=r"doubled : Tensor had Inf .*'mul"):
            sess.run(z, {x: [1.0, np.inf, 3.0]})
    with pytest.raises(TypeError, match="floating"):
        gf.check_numerics(gf.constant([1, 2]), "ints")


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_add_check_numerics_ops(backend):
    x = gf.placeholder(gf.float64, (2,))
    gf.placeholder(gf.float64, (2,))  # not fed: left out
    y = gf.log(x) * 2.0
    z = gf.cond(gf.constant(True), lambda: x + 1.0, lambda: gf.log(x - 100.0))  # never taken
    check = gf.add_check_numerics_ops()
    with gf.Session(backend=backend) as sess:
        sess.run([y, z, check], {x: [1.0, 2.0]})
        with pytest.raises(InvalidArgumentError, match="Tensor had NaN values"):
            sess.run([y, check], {x: [-1.0, 2.0]})


# -- assertions -----------------------------------------------------------------------


def test_Assert_with_control_dependencies(backend):
    x = gf.placeholder(gf.float64, (3,))
    check = gf.Assert(gf.reduce_all(x > 0.0), ["x must be positive:", x], summarize=2)
    with gf.control_dependencies([check]):
        y = gf.log(x)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 1.0, 1.0]}), [0, 0, 0])
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(y, {x: [1.0, -2.0, 3.0]})
    assert "assertion failed: [x must be positive:] [[1 -2...]]" in str(info.value)


@pytest.mark.parametrize("fn,good,bad,text", [
    (gf.assert_equal, ([1, 2], [1, 2]), ([1, 2], [1, 3]), "x == y"),
    (gf.assert_none_equal, ([1, 2], [2, 1]), ([1, 2], [1, 3]), "x != y"),
    (gf.assert_less, ([1, 2], [2, 3]), ([1, 2], [2, 2]), "x < y"),
    (gf.assert_less_equal, ([1, 2], [1, 3]), ([1, 4], [2, 3]), "x <= y"),
    (gf.assert_greater, ([2, 3], [1, 2]), ([2, 3], [1, 3]), "x > y"),
    (gf.assert_greater_equal, ([2, 3], [2, 3]), ([2, 3], [3, 2]), "x >= y"),
])
def test_assert_comparisons(fn, good, bad, text, backend):
    a = gf.placeholder(gf.int32, (2,), name="a")
    b = gf.placeholder(gf.int32, (2,), name="b")
    op = fn(a, b, message="custom")
    with gf.Session(backend=backend) as sess:
        sess.run(op, {a: good[0], b: good[1]})
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(op, {a: bad[0], b: bad[1]})
    message = str(info.value)
    assert "[custom]" in message and text in message and "x (a:0) = ] [" in message


@pytest.mark.parametrize("fn,good,bad", [
    (gf.assert_positive, [1.0, 2.0], [1.0, 0.0]),
    (gf.assert_negative, [-1.0, -2.0], [-1.0, 0.0]),
    (gf.assert_non_negative, [0.0, 2.0], [-1.0, 2.0]),
])
def test_assert_signs(fn, good, bad, backend):
    x = gf.placeholder(gf.float32, (2,))
    op = fn(x)
    with gf.Session(backend=backend) as sess:
        sess.run(op, {x: good})
        with pytest.raises(InvalidArgumentError, match="did not hold element-wise"):
            sess.run(op, {x: bad})


def test_assert_rank_and_type(backend):
    x = gf.placeholder(gf.float32, (2, 3))
    assert isinstance(gf.assert_rank(x, 2), gf.Operation)
    with pytest.raises(ValueError, match="must have rank 3. Received rank 2"):
        gf.assert_rank(x, 3)
    loose = gf.placeholder(gf.float32)
    op = gf.assert_rank(loose, 1)
    with gf.Session(backend=backend) as sess:
        sess.run(op, {loose: [1.0]})
        with pytest.raises(InvalidArgumentError, match="must have rank 1"):
            sess.run(op, {loose: [[1.0]]})
    gf.assert_type(x, gf.float32)
    with pytest.raises(TypeError, match="must be of type int32; got float32"):
        gf.assert_type(x, gf.int32)
    with pytest.raises(TypeError, match="is int32 but"):
        gf.assert_equal(gf.constant([1]), gf.constant([1.0]))


def test_assert_inside_a_cond_branch_runs_only_there(backend):
    x = gf.placeholder(gf.float64, ())

    def checked():
        with gf.control_dependencies([gf.assert_positive(x)]):
            return gf.sqrt(x)

    y = gf.cond(x > 0.0, checked, lambda: gf.zeros_like(x))
    with gf.Session(backend=backend) as sess:
        assert sess.run(y, {x: 4.0}) == 2.0
        assert sess.run(y, {x: -4.0}) == 0.0


# -- py_func --------------------------------------------------------------------------


def test_py_func_single_and_multiple_results(backend):
    x = gf.placeholder(gf.float32, (3,))
    doubled = gf.py_func(lambda a: a * 2, [x], gf.float32)
    assert doubled.shape is None and doubled.dtype is gf.float32
    s, n = gf.py_func(lambda a: (a.sum(), np.int64(a.size)), [x], [gf.float64, gf.int32])
    (one,) = gf.numpy_function(lambda a: a + 1, [x], [gf.float32])
    with gf.Session(backend=backend) as sess:
        got = sess.run([doubled, s, n, one], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(got[0], [2, 4, 6])
    assert got[1] == 6.0 and got[1].dtype == np.float64
    assert got[2] == 3 and got[2].dtype == np.int32
    np.testing.assert_allclose(got[3], [2, 3, 4])


def test_py_func_gets_copies_and_reports_errors(backend):
    x = gf.constant([1.0, 2.0])

    def mutate(a):
        a[0] = 100.0
        return a

    y = gf.py_func(mutate, [x], gf.float32)
    bad_count = gf.py_func(lambda a: (a, a), [x], [gf.float32])
    failing = gf.py_func(lambda a: 1 / 0, [x], gf.float32)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run([y, x]), [[100.0, 2.0], [1.0, 2.0]])
        with pytest.raises(InvalidArgumentError, match="returned 2 values, Tout names 1"):
            sess.run(bad_count)
        with pytest.raises(InvalidArgumentError, match="division by zero"):
            sess.run(failing)


@gf.RegisterGradient("CFTestSquareGrad")
def _square_grad(op, grad):
    return [grad * 2.0 * op.inputs[0]]


def test_py_func_gradient(backend):
    x = gf.placeholder(gf.float64, (3,))
    plain = gf.py_func(np.square, [x], gf.float64)
    assert gf.gradients(gf.reduce_sum(plain), [x]) == [None]
    with gf.get_default_graph().gradient_override_map({"PyFunc": "CFTestSquareGrad"}):
        y = gf.py_func(np.square, [x], gf.float64)
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    with gf.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(g, {x: [1.0, -2.0, 3.0]}), [2.0, -4.0, 6.0])


def test_py_func_with_no_results_is_an_operation(backend):
    seen = []
    op = gf.py_func(lambda a: seen.append(a.tolist()), [gf.constant([1, 2])], [])
    assert isinstance(op, gf.Operation)
    with gf.Session(backend=backend) as sess:
        sess.run(op)
    assert seen == [[1, 2]]
