"""When a run's updates land: updates of a variable from its own value apply at the
run's commit, under the store lock; a closed session takes no more writes; concurrent
runs keep a bounded number of plan instances."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import numba_support
from gradflow.errors import FailedPreconditionError


def test_an_increment_inside_cond_applies_at_commit(backend):
    v = gf.Variable(0.0, name="v")
    p = gf.placeholder(gf.bool, (), name="p")
    op = gf.cond(p, lambda: gf.assign_add(v, 1.0), lambda: gf.identity(v))
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        assert [float(sess.run(op, {p: flag})) for flag in (True, False, True)] == [1, 1, 2]
        assert float(sess.run(v)) == 2.0


def test_a_run_reads_the_weights_of_its_start_and_updates_the_current_ones(backend):
    """A value computed from the variable in the same run sees the value at the
    start (TF1: the read happens before the update); the update lands on the
    value at commit."""
    v = gf.Variable(5.0, name="v")
    doubled = v * 2.0
    inc = gf.assign_add(v, 1.0)
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        got = sess.run([doubled, inc])
        assert [float(g) for g in got] == [10.0, 6.0]


def test_plain_assign_keeps_last_writer_wins(backend):
    v = gf.Variable(0.0, name="v")
    x = gf.placeholder(gf.float32, (), name="x")
    put = gf.assign(v, x)
    with gf.Session(backend=backend) as sess:
        sess.run(v.initializer)
        for value in (3.0, 1.0, 7.0):
            sess.run(put, {x: value})
        assert float(sess.run(v)) == 7.0


def test_a_run_in_flight_writes_nothing_into_a_closed_session():
    v = gf.Variable(np.zeros(4, np.float32), name="v")
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(10)
        return x

    slow_value = gf.py_func(slow, [v + 1.0], gf.float32)
    step = gf.assign_add(v, gf.reshape(slow_value, (4,)))
    sess = gf.Session()
    sess.run(v.initializer)
    errors = []

    def run():
        try:
            sess.run(step)
        except FailedPreconditionError as err:
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(10)
    sess.close()
    store = sess.run_state.store
    release.set()
    thread.join(10)
    assert len(errors) == 1 and "this Session is closed" in str(errors[0])
    assert dict(store) == {}
    with pytest.raises(FailedPreconditionError, match="this Session is closed"):
        sess.load_variable(v, np.ones(4, np.float32))
    with pytest.raises(FailedPreconditionError, match="this Session is closed"):
        sess.run(v)


def test_threads_feeding_many_shapes_keep_few_plan_instances():
    """Two threads feed a shapeless placeholder with ever new batch sizes: the plans
    and their instances stay bounded."""
    x = gf.placeholder(gf.float32, name="x")
    y = gf.reduce_sum(gf.tanh(x) * 2.0)
    with gf.Session() as sess:
        def work(k):
            for n in range(1, 200):
                sess.run(y, {x: np.ones((n + k * 1000, 3), np.float32)})

        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        plans = {id(p): p for p in sess._plans.values() if hasattr(p, "instances")}
        instances = sum(len(p.instances) for p in plans.values())
        assert len(plans) <= sess.MAX_SHAPE_PLANS + 1
        assert instances <= len(plans) * sess.MAX_PLAN_INSTANCES
        assert instances <= 2 * (sess.MAX_SHAPE_PLANS + 1)


def test_an_increment_is_written_over_the_variable_and_spares_held_arrays():
    """``assign_add`` of a fed delta is one ufunc at commit: it writes over the
    variable's own array while nothing else holds it, and never over an array a user
    fetched natively. (A compiled kernel's update, such as Adam's, writes into a second
    array instead: in place, its loop does not vectorize, measured 25% slower.)"""
    w = gf.Variable(np.zeros((300, 200), np.float32), name="w")
    delta = gf.placeholder(gf.float32, (300, 200), name="delta")
    step = gf.assign_add(w, delta)
    ones = np.ones((300, 200), np.float32)
    with gf.Session() as sess:
        sess.run(w.initializer)
        assert "'w' in place" in sess.describe_plan(step, {delta: ones})
        sess.run(step, {delta: ones})
        address = sess.run_state.store[w].ctypes.data  # (holding the array would forbid it)
        for _ in range(3):
            sess.run(step, {delta: ones})
            assert sess.run_state.store[w].ctypes.data == address
        held = sess.run(w, output="native")
        sess.run(step, {delta: ones})
        np.testing.assert_array_equal(held, 4.0)
        np.testing.assert_array_equal(sess.run(w), 5.0)


@pytest.mark.skipif(numba_support.get_numba() is None,
                    reason="numba is not installed: Adam's update is no single kernel")
def test_a_steady_adam_update_allocates_no_array():
    """Applying fed gradients with Adam, after the first runs: the update of the
    weights and both moments happens in their own arrays (tracemalloc sees NumPy's
    data buffers; one 300x200 float32 array is 240 KB)."""
    import tracemalloc

    w = gf.Variable(np.ones((300, 200), np.float32), name="w")
    g = gf.placeholder(gf.float32, (300, 200), name="g")
    step = gf.train.AdamOptimizer(0.01).apply_gradients([(g, w)])
    grad = np.full((300, 200), 0.5, np.float32)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(3):
            sess.run(step, {g: grad})
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            sess.run(step, {g: grad})
            peak = tracemalloc.get_traced_memory()[1] - start
        finally:
            tracemalloc.stop()
        assert peak < 16_000, f"a steady Adam step allocated {peak} bytes"
        np.testing.assert_allclose(sess.run(w), 1.0 - 4 * 0.01, rtol=1e-4)
