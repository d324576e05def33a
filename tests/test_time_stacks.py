"""``passes/time_stacks.py``: the per-step stacks of unrolled RNNs (``stack`` along a new
axis, its gradient, a batch-major RNN's per-step inputs stacked for one product, the
two directions' input gradients of a bidirectional RNN, an unrolled ``while_loop``'s
output stack and its gradient) take one step of the plan instead of one per time step,
and every value is the same as the graph's as built."""

from __future__ import annotations

import numpy as np
import pytest
from test_passes import _assert_same, _both, _computed, _ops

import gradflow as gf
from gradflow.passes import PlanGraph
from gradflow.passes import optimize as optimize_plan
from gradflow.passes.rewrites import rewrite_algebra


def _exact(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_a_stack_of_steps_and_its_gradient_take_no_step_per_part(backend, axis):
    rng = np.random.default_rng(1)
    x = gf.placeholder(gf.float32, (None, 5, 3))
    steps = [gf.tanh(s) for s in gf.unstack(x, axis=1)]  # [batch, 3] each
    stacked = gf.stack(steps, axis=axis)
    weights = gf.constant(rng.standard_normal(stacked.shape.as_list()[1:] if axis else
                                              (4, 3)).astype(np.float32))
    loss = gf.reduce_sum(stacked * weights) if axis else gf.reduce_sum(stacked[:, :4] * weights)
    (grad,) = gf.gradients(loss, [x])
    graph = optimize_plan([stacked, grad], [x], [(4, 5, 3)])
    ops = _ops(graph)
    assert ops["expand_dims"] == 0 and ops["reshape_like"] == 0, ops
    assert ops["concat"] <= 2, ops  # the forward row stack and the gradient's
    feed = {x: rng.standard_normal((4, 5, 3)).astype(np.float32)}
    got, want = _both(backend, [stacked, grad], feed)
    _exact(got, want)


def test_stacks_of_unknown_or_mixed_parts_stay_concats():
    a = gf.placeholder(gf.float32, (None, 3))
    b = gf.placeholder(gf.float32, (2, 3))
    mixed = gf.concat([gf.expand_dims(b, 1), gf.expand_dims(b * 2.0, 1), b[:, None] * 1.0], 1)
    unknown = gf.stack([a, a * 2.0, a * 3.0], axis=1)
    graph = PlanGraph([mixed, unknown], [a, b])
    rewrite_algebra(graph)
    assert len(_computed(graph, "concat")) == 2
    assert len(_computed(graph, "expand_dims")) >= 4


@pytest.mark.parametrize("order, copies", [(range(6), 0), (range(5, -1, -1), 0),
                                           ([1, 2, 3], 0), ([0, 2, 4], 1), ([1, 1, 2], 1)])
def test_a_row_concat_of_consecutive_time_steps_is_one_copy(backend, order, copies):
    rng = np.random.default_rng(2)
    x = gf.placeholder(gf.float32, (None, 6, 3))
    stacked = gf.concat([x[:, t] for t in order], 0)
    gathered = gf.concat([gf.gather(x, gf.constant(t), axis=1) for t in order], 0)
    graph = PlanGraph([stacked + 1.0, gathered + 1.0], [x], [(2, 6, 3)])
    rewrite_algebra(graph)
    assert len(_computed(graph, "concat")) == 2 * copies
    feed = {x: rng.standard_normal((2, 6, 3)).astype(np.float32)}
    got, want = _both(backend, [stacked + 1.0, gathered + 1.0], feed)
    _exact(got, want)


def test_a_gather_out_of_range_is_left_to_the_run():
    x = gf.placeholder(gf.float32, (2, 3, 4))
    stacked = gf.concat([gf.gather(x, gf.constant(t), axis=1) for t in (1, 2, 3)], 0)
    graph = PlanGraph([stacked], [x])
    rewrite_algebra(graph)
    assert len(_computed(graph, "gather")) == 3


@pytest.mark.parametrize("inner, outer", [
    ((slice(1, 6),), (2,)), ((slice(1, 6),), (slice(1, 3),)),
    ((slice(None, 4),), (slice(2, None),)),
    ((slice(1, 6), slice(1, 3)), (slice(None), 0)), ((slice(0, 7),), (slice(0, 7),))])
def test_a_slice_of_a_slice_is_one_slice(backend, inner, outer):
    rng = np.random.default_rng(3)
    x = gf.placeholder(gf.float32, (7, 4))
    y = x[inner][outer]
    graph = PlanGraph([y * 2.0], [x])
    rewrite_algebra(graph)
    (getitem,) = _computed(graph, "getitem")
    assert getitem.inputs[0].opdef.name != "getitem"
    feed = {x: rng.standard_normal((7, 4)).astype(np.float32)}
    got, want = _both(backend, [y * 2.0], feed)
    _exact(got, want)


def test_stepped_or_negative_slices_are_not_composed():
    x = gf.placeholder(gf.float32, (7, 4))
    ys = [x[1:6:2][1], x[-5:][1], x[1:6][-1]]
    graph = PlanGraph([y * 1.5 for y in ys], [x])
    rewrite_algebra(graph)
    assert len(_computed(graph, "getitem")) == 6


def _bilstm(steps=5, batch=3, units=4, features=2, unknown_time=False):
    rng = np.random.default_rng(6)
    gf.set_random_seed(6)  # both sessions of _both draw the same initial kernels
    x = gf.placeholder(gf.float32, (None, None if unknown_time else steps, features))
    fw, bw = gf.nn.rnn_cell.LSTMCell(units), gf.nn.rnn_cell.LSTMCell(units)
    (out_fw, out_bw), _ = gf.nn.bidirectional_dynamic_rnn(fw, bw, x, dtype=gf.float32)
    outputs = gf.concat([out_fw, out_bw], 2)
    loss = gf.reduce_sum(gf.square(outputs) * gf.constant(
        rng.standard_normal(2 * units).astype(np.float32)))
    feed = {x: rng.standard_normal((batch, steps, features)).astype(np.float32)}
    return x, fw.trainable_variables + bw.trainable_variables, loss, feed


def _bilstm_plan_ops(steps, unknown_time):
    gf.reset_default_graph()
    x, variables, loss, feed = _bilstm(steps=steps, unknown_time=unknown_time)
    # a fed input of unknown length: its gradient is one gather_grad per step (not done)
    grads = gf.gradients(loss, variables + ([] if unknown_time else [x]))
    return _ops(optimize_plan(grads + [loss], [x], [(3, steps, 2)]))


@pytest.mark.parametrize("unknown_time", [False, True])
def test_a_bidirectional_lstm_plan_has_no_per_step_stacking(unknown_time):
    """Both directions write their outputs into row stacks; the backward direction reads
    its inputs and its outputs' gradients through views; the input gradient is one add
    of the two directions' products, not one per step. Counted per time step: the ops
    of a plan of 8 steps less those of one of 5."""
    short, long = _bilstm_plan_ops(5, unknown_time), _bilstm_plan_ops(8, unknown_time)
    per_step = {op: (long[op] - short[op]) / 3 for op in long}
    assert per_step["lstm_step"] == 2 and per_step["lstm_step_grad"] == 2, per_step
    for op in ("expand_dims", "reshape_like", "gather", "concat", "transpose", "reshape"):
        assert per_step.get(op, 0) == 0, (op, per_step)
    # per direction: the state product's gradient plus the output's gradient
    assert per_step["add"] == 2, per_step
    # per direction: its step's rows of the input product and of the output's gradient
    assert per_step["getitem"] == 4, per_step


@pytest.mark.parametrize("unknown_time", [False, True])
def test_a_bidirectional_lstm_plan_computes_the_graphs_numbers(backend, unknown_time):
    x, variables, loss, feed = _bilstm(unknown_time=unknown_time)
    grads = gf.gradients(loss, variables + [x])
    got, want = _both(backend, grads + [loss], feed)
    _assert_same(got, want, rtol=2e-5, atol=1e-6)


def test_an_unrolled_dynamic_rnn_plan_is_the_static_ones_size():
    def plan_size(time):
        gf.reset_default_graph()
        x = gf.placeholder(gf.float32, (None, time, 2))
        cell = gf.nn.rnn_cell.LSTMCell(4)
        outputs, _ = gf.nn.dynamic_rnn(cell, x, dtype=gf.float32)
        loss = gf.reduce_sum(gf.square(outputs))
        grads = gf.gradients(loss, cell.trainable_variables + [x])
        graph = optimize_plan(grads + [loss], [x], [(3, 6, 2)])
        return len(graph.nodes()), _ops(graph)

    static, _ = plan_size(6)
    dynamic, ops = plan_size(None)
    assert ops["expand_dims"] == ops["gather"] == ops["reshape_like"] == 0, ops
    assert dynamic <= static * 1.1 + 10, (dynamic, static)
