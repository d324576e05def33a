"""Cells beyond the plain LSTM run as the LSTM's fused ops: an ``LSTMCell`` with a
projection (no peepholes, no cell clip) computes its cell with ``lstm_gates``,
``lstm_c`` and ``lstm_h`` and projects ``h`` after them, so the plan fuses each of its
steps (``lstm_step`` / ``lstm_step_grad``) as it does the plain cell's; the numbers are
the graph's as built (TF1's own values for this cell: ``test_rnn_tf1.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.passes import PlanNode
from gradflow.passes import optimize as optimize_plan

STEPS, BATCH, FEATURES, UNITS = 4, 3, 2, 5


def _count(graph, op):
    return sum(1 for n in graph.nodes() if isinstance(n, PlanNode) and n.opdef.name == op)


@pytest.mark.parametrize("proj_clip", [None, 0.3])
def test_a_projected_lstm_cell_runs_as_fused_steps(backend, proj_clip):
    gf.reset_default_graph()
    gf.set_random_seed(4)
    x = gf.placeholder(gf.float32, (None, STEPS, FEATURES))
    cell = gf.nn.rnn_cell.LSTMCell(UNITS, num_proj=3, proj_clip=proj_clip)
    outputs, state = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=gf.float32)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0))) + gf.reduce_sum(state.c)
    fetches = [loss] + gf.gradients(loss, cell.trainable_variables + [x])
    plan = optimize_plan(fetches, [x], [(BATCH, STEPS, FEATURES)])
    assert _count(plan, "lstm_step") == STEPS
    assert _count(plan, "lstm_step_grad") >= STEPS - 1
    feed = {x: np.random.default_rng(2).standard_normal((BATCH, STEPS, FEATURES))
            .astype(np.float32)}
    results = []
    for optimize in (True, False):
        with gf.Session(backend=backend, optimize=optimize) as sess:
            sess.run(gf.global_variables_initializer())
            results.append(sess.run(fetches, feed))
    for got, want in zip(*results):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)


def test_the_numpy_plan_multiplies_by_one_row_major_copy_of_the_recurrent_kernel():
    """``contiguous_recurrent_transposes`` (the NumPy backend's kernel pass): the backward
    products ``dz_t @ w^T`` of every step read one ``transposed_copy`` of ``w``; the
    numbers are the graph's as built."""
    from gradflow import backends
    from gradflow.passes.lstm_steps import contiguous_recurrent_transposes

    gf.reset_default_graph()
    gf.set_random_seed(5)
    x = gf.placeholder(gf.float32, (None, STEPS, FEATURES))
    cell = gf.nn.rnn_cell.LSTMCell(UNITS)
    outputs, _ = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=gf.float32)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0)))
    fetches = [loss] + gf.gradients(loss, cell.trainable_variables + [x])
    plan = optimize_plan(fetches, [x], [(BATCH, STEPS, FEATURES)])
    products = [n for n in plan.nodes() if isinstance(n, PlanNode)
                and n.opdef.name == "matmul" and n.attrs["transpose_b"]]
    assert len(products) >= STEPS - 1
    contiguous_recurrent_transposes(plan)
    assert _count(plan, "transposed_copy") == 1
    assert contiguous_recurrent_transposes in backends.get("numpy").kernel_passes
    feed = {x: np.random.default_rng(3).standard_normal((BATCH, STEPS, FEATURES))
            .astype(np.float32)}
    results = []
    for optimize in (True, False):
        with gf.Session(backend="numpy", optimize=optimize) as sess:
            sess.run(gf.global_variables_initializer())
            results.append(sess.run(fetches, feed))
    for got, want in zip(*results):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)
