"""Graph-compiler passes and gradient code for unrolled RNNs: the ids of every time step
stacked as one copy, a reshape to a folded shape made static, an RNN's states written
once for the layer above and the kernel's gradient (``passes/shared_stacks.py``), and
the gradients of time slices joined into one stack."""

from __future__ import annotations

import numpy as np
import pytest
from test_passes import _assert_same, _both, _computed, _lstm

import gradflow as gf
from gradflow.passes import PlanGraph
from gradflow.passes import optimize as optimize_plan
from gradflow.passes.rewrites import rewrite_algebra


@pytest.mark.parametrize("order, copies", [([0, 1, 2, 3], 0), ([3, 2, 1, 0], 0),
                                           ([2, 1], 0), ([0, 2, 3], 1), ([1, 1, 2], 1)])
def test_a_row_concat_of_consecutive_columns_is_one_copy(backend, order, copies):
    rng = np.random.default_rng(8)
    ids = gf.placeholder(gf.int32, (None, 5))
    stacked = gf.concat([ids[:, t] for t in order], 0)
    graph = PlanGraph([stacked + 1], [ids], [(3, 5)])
    rewrite_algebra(graph)
    assert len(_computed(graph, "concat")) == copies
    feed = {ids: rng.integers(0, 99, (3, 5)).astype(np.int32)}
    got, want = _both(backend, [stacked + 1], feed)
    _assert_same(got, want)


def test_a_reshape_to_a_folded_shape_reads_no_shape_at_run_time(backend):
    x = gf.placeholder(gf.float32, (None, 6))
    y = gf.reshape(x, gf.stack([gf.shape(x)[0], 2, -1]))
    graph = optimize_plan([y * 2.0], [x], [(4, 6)])
    (reshape,) = _computed(graph, "reshape")
    assert reshape.attrs["shape"] == (4, 2, -1) and len(reshape.inputs) == 1
    feed = {x: np.arange(24, dtype=np.float32).reshape(4, 6)}
    got, want = _both(backend, [y * 2.0], feed)
    _assert_same(got, want)


def test_a_reshape_by_another_tensors_size_claims_no_size_it_cannot_know(backend):
    """``reshape(flat, [shape(inputs)[0], -1, n])`` of a ``flat`` of unknown rows: the -1
    is rows / batch, not 1. The shape rule once took the batch for ``flat``'s own unknown
    size, and the gradient of a CTC speech model then summed to a (1, 8, 4) it believed."""
    inputs = gf.placeholder(gf.float32, (None, None, 4))
    flat = gf.reshape(inputs, [-1, 4])
    y = gf.reshape(flat, [gf.shape(inputs)[0], -1, 4])
    assert y.shape.as_list() == [None, None, 4]
    own = gf.reshape(flat, [gf.shape(flat)[0], -1])  # its own unknown size: as TF1
    assert own.shape.as_list() == [None, 4]
    graph = optimize_plan([y * 2.0], [inputs], [(3, 5, 4)])
    assert [tuple(n.shape) for n in _computed(graph, "reshape")][-1] == (3, 5, 4)
    feed = {inputs: np.arange(60, dtype=np.float32).reshape(3, 5, 4)}
    got, want = _both(backend, [gf.reduce_sum(y, 0) * 2.0], feed)
    _assert_same(got, want)


def test_the_gradient_of_an_rnn_reads_its_states_from_the_outputs_stack(backend):
    """The recurrent kernel's gradient stacks ``h_0 .. h_(T-1)``, the layer above stacks
    ``h_1 .. h_T``: the first is the zero state and a slice of the second, two parts
    (``share_row_stacks``), so the schedule writes each state once, into its row."""
    x, cell, loss, feed = _lstm(steps=6)
    kernel, bias = cell.trainable_variables
    grads = gf.gradients(loss, [kernel, bias])
    graph = optimize_plan(grads + [loss], [x], [(3, 6, 2)])
    sizes = sorted(len(n.inputs) for n in _computed(graph, "concat"))
    shared = [n for n in _computed(graph, "concat")
              if any(p.opdef.name == "getitem" and p.inputs[0].opdef.name == "concat"
                     for p in n.inputs)]
    assert len(shared) == 1 and len(shared[0].inputs) == 2, sizes
    # the outputs and the gates' gradients stack six parts each; the inputs, x[:, t] of
    # one fed x, are one copy of x with its time axis first (passes/time_stacks.py)
    assert sizes.count(6) == 2, sizes
    assert not [n for n in _computed(graph, "getitem") if n.inputs[0] in graph.fed], sizes
    got, want = _both(backend, grads + [loss], feed)
    _assert_same(got, want, rtol=2e-5, atol=1e-6)


def test_row_stacks_share_only_runs_of_an_earlier_stack(backend):
    from gradflow.passes.shared_stacks import share_row_stacks

    rng = np.random.default_rng(9)
    parts = [gf.constant(rng.standard_normal((2, 3)).astype(np.float32)) * 1.0
             for _ in range(5)]
    a = gf.concat(parts[:4], 0)
    b = gf.concat([parts[4]] + parts[1:4], 0)  # shares parts 1..3 of a
    c = gf.concat([parts[0], parts[2], parts[1]], 0)  # no run of three in order
    graph = PlanGraph([a * 2.0, b * 3.0, c], [])
    share_row_stacks(graph)
    sizes = sorted(len(n.inputs) for n in _computed(graph, "concat"))
    assert sizes == [2, 3, 4], sizes
    got, want = _both(backend, [a * 2.0, b * 3.0, c])
    _assert_same(got, want)


def test_the_gradient_of_time_slices_of_a_batch_of_unknown_size_is_one_stack(backend):
    """``x[:, t]`` for every t of an ``x`` of shape [None, T, n] (an RNN's steps): the
    slices' gradients tile ``x``, and ``getitem`` gradients are exact (shaped like ``x``
    at run time), so autodiff joins them into one stack instead of T zero-padded arrays
    of ``x``'s size, each behind an ``unbroadcast``."""
    rng = np.random.default_rng(10)
    x = gf.placeholder(gf.float32, (None, 4, 3))
    weights = [gf.constant(rng.standard_normal(3).astype(np.float32)) for _ in range(4)]
    loss = gf.add_n([gf.reduce_sum(gf.square(x[:, t] * w)) for t, w in enumerate(weights)])
    (dx,) = gf.gradients(loss, [x])
    seen, pending = set(), [dx]
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending.extend(node.inputs)
    assert not [n for n in seen if n.opdef.name == "getitem_grad"
                or (n.opdef.name == "unbroadcast" and n.inputs[1] is x)]
    feed = {x: rng.standard_normal((2, 4, 3)).astype(np.float32)}
    with gf.Session(backend=backend) as sess:
        got = sess.run(dx, feed)
    want = np.stack([2 * feed[x][:, t] * np.asarray(w.op.attrs["value"].array) ** 2
                     for t, w in enumerate(weights)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

