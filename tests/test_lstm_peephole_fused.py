"""``LSTMCell(use_peepholes=True)`` and ``cell_clip`` run their cell as the fused
``lstm_peep_c``/``lstm_peep_h`` nodes (``gradflow/prim/lstm_peephole.py``), each node's
gradients joined into one by ``passes/gru_steps.py``; the numbers are those of the same
cell built from elementary ops (an activation other than ``tanh`` itself takes that
path), float64 to 1e-12, forward and gradients, static and run-time shapes."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.passes import PlanNode
from gradflow.passes import optimize as optimize_plan

STEPS, BATCH, FEATURES, UNITS = 4, 3, 2, 5
OPTIONS = [dict(use_peepholes=True), dict(use_peepholes=True, cell_clip=0.5),
           dict(cell_clip=0.5), dict(use_peepholes=True, num_proj=3)]


def _count(graph, op):
    return sum(1 for n in graph.nodes() if isinstance(n, PlanNode) and n.opdef.name == op)


def _graph(dtype, options, activation=None, batch=None, dynamic=False):
    gf.reset_default_graph()
    gf.set_random_seed(11)
    x = gf.placeholder(dtype, (batch, STEPS, FEATURES))
    cell = gf.nn.rnn_cell.LSTMCell(UNITS, activation=activation, **options)
    if dynamic:
        outputs, state = gf.nn.dynamic_rnn(cell, x, dtype=dtype)
        outputs = [outputs]
    else:
        outputs, state = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=dtype)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0))) + gf.reduce_sum(gf.sin(state.c))
    fetches = [loss] + gf.gradients(loss, cell.trainable_variables + [x])
    return x, fetches


def _numbers(backend, dtype, options, activation=None, **kw):
    x, fetches = _graph(dtype, options, activation, **kw)
    feed = {x: (2 * np.random.default_rng(3).standard_normal((BATCH, STEPS, FEATURES)))
            .astype(dtype.as_numpy_dtype)}
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        return [np.asarray(v) for v in sess.run(fetches, feed)]


@pytest.mark.parametrize("options", OPTIONS)
def test_the_cell_is_one_step_node_each_way(options):
    x, fetches = _graph(gf.float32, options)
    plan = optimize_plan(fetches, [x], [(BATCH, STEPS, FEATURES)])
    if options.get("use_peepholes"):
        # forward z, c, h in one node; backward all of a step's gradients in one, but
        # for the first time step, whose cell-state gradient no one reads
        assert _count(plan, "lstm_peep_step") == STEPS
        assert _count(plan, "lstm_peep_step_grad") >= STEPS - 1
        assert _count(plan, "lstm_peep_c") == _count(plan, "lstm_peep_h") == 0
    else:  # the clip alone: the two fused nodes, their gradients
        assert _count(plan, "lstm_peep_c") == _count(plan, "lstm_peep_h") == STEPS
    assert _count(plan, "lstm_peep_c_grad") == _count(plan, "lstm_peep_h_grad") == 0 \
        or not options.get("use_peepholes")
    assert _count(plan, "sigmoid") == 0


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("batch, dynamic", [(None, False), (BATCH, False), (None, True)])
def test_fused_cells_give_the_elementary_ops_numbers_in_float64(backend, options, batch,
                                                                dynamic):
    fused = _numbers(backend, gf.float64, options, batch=batch, dynamic=dynamic)
    plain = _numbers(backend, gf.float64, options, lambda v: gf.tanh(v), batch=batch,
                     dynamic=dynamic)
    for got, want in zip(fused, plain):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_the_clip_is_reached_in_these_numbers():
    """The clipped cases clip: the test above checks the clip's gradient too."""
    x, _ = _graph(gf.float64, dict(cell_clip=0.5))
    c = [n for n in gf.get_default_graph().get_operations() if n.type == "lstm_peep_c"]
    feed = {x: 2 * np.random.default_rng(3).standard_normal((BATCH, STEPS, FEATURES))}
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        values = np.stack(sess.run(c, feed))  # get_operations() gives the op tensors
    assert np.any(np.abs(values) == 0.5) and np.any(np.abs(values) < 0.5)


def test_float32_numbers_match_within_float32(backend):
    options = dict(use_peepholes=True, cell_clip=0.5)
    fused = _numbers(backend, gf.float32, options)
    plain = _numbers(backend, gf.float32, options, lambda v: gf.tanh(v))
    for got, want in zip(fused, plain):
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-6)


@pytest.mark.parametrize("options", OPTIONS[:3])
def test_the_fused_cell_exports_to_onnx(tmp_path, options):
    pytest.importorskip("onnx", reason="ONNX export needs the onnx package (pip install onnx)")
    pytest.importorskip("onnxruntime", reason="the check runs the model in ONNX Runtime")
    from test_onnx_export import _check

    gf.reset_default_graph()
    x = gf.placeholder(gf.float32, (None, 3, 4), name="x")
    outs, state = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(5, **options),
                                   gf.unstack(x, axis=1), dtype=gf.float32)
    rng = np.random.default_rng(4)
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        _check(sess, tmp_path / "peep.onnx", {"x": x}, {"c": state.c, "last": outs[-1]},
               lambda b: {"x": 3 * rng.random((b, 3, 4), dtype=np.float32)})
