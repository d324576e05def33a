"""A Session hands its run state (``gradflow.run_state.RunState``) to what its runs call:
the plan compiler, the capture and every call op, which never see the Session."""

from __future__ import annotations

import dataclasses

import numpy as np

import gradflow as gf
from gradflow.prim.registry import REGISTRY
from gradflow.run_state import RunState

# what call ops and data pipelines read from the object they are handed
OFFERED = ("backend", "graph", "seed", "optimize", "check_numerics", "capture", "gate",
           "running", "store", "store_lock", "spare_buffers", "resources", "closed",
           "compile_subplan", "new_store", "constant_value", "host_rng")


def test_a_call_op_gets_the_run_state_not_the_session(monkeypatch):
    opdef = REGISTRY["py_func"]
    handed = []

    def spy(run, node, impl=opdef.impl):
        handed.append(run)
        return impl(run, node)

    monkeypatch.setitem(REGISTRY, "py_func", dataclasses.replace(opdef, impl=spy))
    x = gf.placeholder(gf.float32, shape=(3,))
    y = gf.py_func(lambda a: a * 2, [x], gf.float32)
    with gf.Session(backend="numpy", seed=5) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])
        assert handed and all(run is sess.run_state for run in handed)
        assert isinstance(sess.run_state, RunState)
        missing = [name for name in OFFERED if not hasattr(sess.run_state, name)]
        assert not missing, f"the run state lacks {missing}"


def test_the_session_reads_its_state_through_the_run_state():
    v = gf.Variable(np.arange(3, dtype=np.float32), name="v")
    bump = gf.assign_add(v, [1.0, 1.0, 1.0])
    with gf.Session(backend="numpy", seed=3, optimize=False) as sess:
        state = sess.run_state
        assert (sess.graph, sess.backend, sess.seed) == (state.graph, state.backend, 3)
        assert sess.resources is state.resources and sess.store_lock is state.store_lock
        assert sess.spare_buffers is state.spare_buffers
        assert not sess.optimize and not state.optimize
        sess.check_numerics = True  # a flag set on the Session reaches new plans
        assert state.check_numerics
        sess.run(bump)
        np.testing.assert_allclose(state.store[v], [1.0, 2.0, 3.0])
    assert state.closed and not state.store and not state.resources


def test_a_branch_compiles_its_sub_plans_from_the_run_state():
    x = gf.placeholder(gf.float32, shape=())
    v = gf.Variable(1.0)
    out = gf.cond(x > 0, lambda: v * x, lambda: v - x)
    i = gf.constant(0)
    loop = gf.while_loop(lambda k, s: k < 4, lambda k, s: (k + 1, s + x), (i, 0.0))[1]
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run([out, loop], {x: 2.0}) == [2.0, 8.0]
        assert sess.run(out, {x: -2.0}) == 3.0
