"""``GRUCell`` runs its step as the fused ``gru_rh``/``gru_h`` nodes
(``gradflow/prim/gru.py``), their gradients joined per step by
``passes/gru_steps.py``; the numbers are those of the same cell built from
elementary ops (an activation other than ``tanh`` itself takes that path), in
float64 to 1e-12 and in float32, forward and gradients, static and run-time shapes."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.passes import PlanNode
from gradflow.passes import optimize as optimize_plan

STEPS, BATCH, FEATURES, UNITS = 4, 3, 2, 5


def _count(graph, op):
    return sum(1 for n in graph.nodes() if isinstance(n, PlanNode) and n.opdef.name == op)


def _plain_tanh(x):
    return gf.tanh(x)  # not ``gf.tanh`` itself: the cell takes its elementary-op path


def _gru_graph(dtype, activation, batch=None, dynamic=False):
    gf.reset_default_graph()
    gf.set_random_seed(7)
    x = gf.placeholder(dtype, (batch, STEPS, FEATURES))
    cell = gf.nn.rnn_cell.GRUCell(UNITS, activation=activation)
    if dynamic:
        outputs, state = gf.nn.dynamic_rnn(cell, x, dtype=dtype)
        outputs = [outputs]
    else:
        outputs, state = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=dtype)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0))) + gf.reduce_sum(gf.sin(state))
    fetches = [loss] + gf.gradients(loss, cell.trainable_variables + [x])
    return x, fetches


def _numbers(backend, dtype, activation, batch=None, dynamic=False, optimize=True):
    x, fetches = _gru_graph(dtype, activation, batch, dynamic)
    feed = {x: np.random.default_rng(3).standard_normal((BATCH, STEPS, FEATURES))
            .astype(dtype.as_numpy_dtype)}
    with gf.Session(backend=backend, optimize=optimize) as sess:
        sess.run(gf.global_variables_initializer())
        return [np.asarray(v) for v in sess.run(fetches, feed)]


def test_a_gru_step_is_two_fused_nodes_each_way():
    x, fetches = _gru_graph(gf.float32, None)
    ops = {n.type for n in gf.get_default_graph().get_operations()}
    assert {"gru_rh", "gru_h", "gru_rh_grad", "gru_h_grad"} <= ops
    plan = optimize_plan(fetches, [x], [(BATCH, STEPS, FEATURES)])
    for op in ("gru_gates_step", "gru_h_step", "gru_h_grads", "gru_gates_grad"):
        assert _count(plan, op) == STEPS, op
    for op in ("gru_rh", "gru_h", "gru_rh_grad", "gru_h_grad", "gru_rh_grads", "sigmoid"):
        assert _count(plan, op) == 0, op
    # the step's output gradient is summed inside gru_h_grads: no add node is left
    # between the products of a step (the plan's adds sum the input gradients)
    terms = [len(n.inputs) - 3 for n in plan.nodes()
             if isinstance(n, PlanNode) and n.opdef.name == "gru_h_grads"]
    assert sorted(terms) == [2] + [4] * (STEPS - 1)  # the last step: its output, the state


@pytest.mark.parametrize("batch", [None, BATCH])
@pytest.mark.parametrize("dynamic", [False, True])
def test_fused_gru_gives_the_elementary_ops_numbers_in_float64(backend, batch, dynamic):
    fused = _numbers(backend, gf.float64, None, batch, dynamic)
    plain = _numbers(backend, gf.float64, _plain_tanh, batch, dynamic)
    for got, want in zip(fused, plain):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_fused_gru_in_float32_with_and_without_the_plan_passes(backend):
    want = _numbers(backend, gf.float32, _plain_tanh, optimize=False)
    for optimize in (True, False):
        got = _numbers(backend, gf.float32, None, optimize=optimize)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=3e-5, atol=3e-6)


def test_another_activation_takes_the_elementary_ops():
    _gru_graph(gf.float32, gf.nn.relu)
    ops = {n.type for n in gf.get_default_graph().get_operations()}
    assert not ops & {"gru_rh", "gru_h"}


def test_a_step_whose_gates_are_read_elsewhere_keeps_the_unfused_gradient(backend):
    """The loss also reads each step's gates: their gradient is then a sum of three, not
    the pattern ``gru_gates_grad`` stands for; the plan keeps those nodes, and the
    numbers stay the elementary-op cell's."""
    def numbers(activation, dtype=gf.float64):
        gf.reset_default_graph()
        gf.set_random_seed(7)
        x = gf.placeholder(dtype, (None, STEPS, FEATURES))
        cell = gf.nn.rnn_cell.GRUCell(UNITS, activation=activation)
        outputs, _ = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=dtype)
        gates = [op for op in gf.get_default_graph().get_operations() if op.type == "sigmoid"]
        loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0))) + \
            gf.add_n([gf.reduce_sum(gf.square(g)) for g in gates])
        fetches = [loss] + gf.gradients(loss, cell.trainable_variables + [x])
        if activation is None:
            plan = optimize_plan(fetches, [x], [(BATCH, STEPS, FEATURES)])
            assert _count(plan, "gru_gates_grad") == 0
            assert _count(plan, "gru_gates_step") == _count(plan, "gru_h_step") == STEPS
        feed = {x: np.random.default_rng(5).standard_normal((BATCH, STEPS, FEATURES))}
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            return [np.asarray(v) for v in sess.run(fetches, feed)]

    for got, want in zip(numbers(None), numbers(_plain_tanh)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
