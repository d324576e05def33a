"""The embedding-product pass (gradflow/passes/embedding_product.py): a product of rows
looked up in a table with fewer rows than ids becomes a lookup in the table's product,
and its two gradient products products of the ids' row sum; the numbers are the plain
plan's (Session(optimize=False)) to rounding on every backend, for a dense layer, a
static LSTM and a dynamic one, with gradients and Adam steps; the plans it must leave
as they are; the error of an id out of range."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_passes import _both

import gradflow as gf
import gradflow.passes as passes
from gradflow.passes import optimize
from gradflow.passes.embedding_product import rewrite_embedding_products
from gradflow.passes.ir import PlanNode

VOCAB, EMBED, UNITS, STEPS, BATCH = 7, 5, 6, 4, 3  # 12 ids, 7 rows
# float32: the sums run in another order; the gradients sum 12 rows of O(1) values
RTOL = {"float64": 1e-12, "float32": 2e-5}


def _ids(rng, vocab=VOCAB, shape=(BATCH, STEPS)):
    return rng.integers(0, vocab, shape).astype(np.int32)


def _dense(dtype, vocab=VOCAB, time=STEPS):
    """ids [batch, time] -> embedding_lookup -> reshape to rows -> dense -> loss."""
    rng = np.random.default_rng(3)
    ids = gf.placeholder(gf.int32, (None, time), name="ids")
    emb = gf.Variable(rng.normal(size=(vocab, EMBED)).astype(dtype), name="emb")
    w = gf.Variable(rng.normal(size=(EMBED, UNITS)).astype(dtype), name="w")
    b = gf.Variable(rng.normal(size=UNITS).astype(dtype), name="b")
    rows = gf.reshape(gf.nn.embedding_lookup(emb, ids), (-1, EMBED))
    y = gf.matmul(rows, w) + b
    loss = gf.reduce_sum(gf.sin(y))
    return ids, {ids: _ids(rng, vocab)}, loss, [emb, w, b]


def _static_lstm(dtype, vocab=VOCAB):
    """Per-step lookups of ``ids[:, t]`` -> ``static_rnn`` of an ``LSTMCell``."""
    rng = np.random.default_rng(4)
    gf.set_random_seed(4)  # both sessions draw the same kernel
    ids = gf.placeholder(gf.int32, (None, STEPS), name="ids")
    emb = gf.Variable(rng.normal(size=(vocab, EMBED)).astype(dtype), name="emb")
    inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(STEPS)]
    cell = gf.nn.rnn_cell.LSTMCell(UNITS)
    outputs, _ = gf.nn.static_rnn(cell, inputs, dtype=getattr(gf, dtype))
    loss = gf.reduce_sum(gf.sin(gf.concat(outputs, 0)))
    return ids, {ids: _ids(rng, vocab)}, loss, [emb] + cell.trainable_variables


def _dynamic_lstm(dtype, vocab=VOCAB):
    """``embedding_lookup`` of ``[batch, time]`` ids (time unknown) -> ``dynamic_rnn``."""
    rng = np.random.default_rng(5)
    gf.set_random_seed(5)
    ids = gf.placeholder(gf.int32, (None, None), name="ids")
    emb = gf.Variable(rng.normal(size=(vocab, EMBED)).astype(dtype), name="emb")
    cell = gf.nn.rnn_cell.LSTMCell(UNITS)
    outputs, _ = gf.nn.dynamic_rnn(cell, gf.nn.embedding_lookup(emb, ids),
                                   dtype=getattr(gf, dtype))
    loss = gf.reduce_sum(gf.sin(outputs))
    return ids, {ids: _ids(rng, vocab)}, loss, [emb] + cell.trainable_variables


def _bidirectional_lstm(dtype, vocab=VOCAB, time=STEPS):
    """``bidirectional_dynamic_rnn`` of two ``LSTMCell``s over one lookup: the table's
    gradient is the sum of two products, one a layer; the backward layer reads the rows
    reversed in time (with ``time`` None, a ``reverse`` of the looked-up rows)."""
    rng = np.random.default_rng(10)
    gf.set_random_seed(10)
    ids = gf.placeholder(gf.int32, (None, time), name="ids")
    emb = gf.Variable(rng.normal(size=(vocab, EMBED)).astype(dtype), name="emb")
    fw, bw = gf.nn.rnn_cell.LSTMCell(UNITS), gf.nn.rnn_cell.LSTMCell(UNITS)
    (out_fw, out_bw), _ = gf.nn.bidirectional_dynamic_rnn(
        fw, bw, gf.nn.embedding_lookup(emb, ids), dtype=getattr(gf, dtype))
    loss = gf.reduce_sum(gf.sin(out_fw)) + gf.reduce_sum(gf.cos(out_bw))
    variables = [emb] + fw.trainable_variables + bw.trainable_variables
    return ids, {ids: _ids(rng, vocab)}, loss, variables


MODELS = {"dense": (_dense, UNITS), "static_lstm": (_static_lstm, 4 * UNITS),
          "dynamic_lstm": (_dynamic_lstm, 4 * UNITS),
          "bidirectional_lstm": (_bidirectional_lstm, 4 * UNITS),
          "bidirectional_dynamic_lstm": (
              lambda dtype: _bidirectional_lstm(dtype, time=None), 4 * UNITS)}


def _plan(fetches, feed, with_pass=True, shapes=True):
    """The plan graph after the passes up to this one (with it or without it)."""
    at = passes.PASSES.index(rewrite_embedding_products)
    chosen = passes.PASSES[:at + 1] if with_pass else passes.PASSES[:at]
    return optimize(fetches, list(feed), [v.shape for v in feed.values()] if shapes else None,
                    passes=chosen)


def _kinds(graph):
    return sorted((n.opdef.name, str(tuple(n.shape) if n.shape is not None else None))
                  for n in graph.nodes() if isinstance(n, PlanNode))


def _rewritten(graph, rows, cols):
    """Which rules applied: the lookup of a table product [rows, cols] (forward), the
    table's gradient from a row sum (table), the weights' from one (weights)."""
    nodes = [n for n in graph.nodes() if isinstance(n, PlanNode)]

    def is_sum(n):
        return n.opdef.name == "gather_grad" and tuple(n.shape) == (rows, cols)

    found = set()
    for n in nodes:
        if n.opdef.name == "gather" and n.inputs[0].opdef.name == "matmul" \
                and tuple(n.inputs[0].shape) == (rows, cols):
            found.add("forward")
        if n.opdef.name == "matmul" and is_sum(n.inputs[0]):
            found.add("table")
        if n.opdef.name == "matmul" and n.attrs.get("transpose_a") and is_sum(n.inputs[1]):
            found.add("weights")
    if any(n.opdef.name == "gather_grad" and tuple(n.shape) == (rows, EMBED) for n in nodes):
        found.add("scatter of the product")  # the rule for the table did not apply
    return found


def _assert_close(got, want, dtype):
    rtol = RTOL[dtype]
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(np.abs(w).max(), 1.0))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_values_and_gradients_are_the_plain_plans(backend, model, dtype):
    build, cols = MODELS[model]
    ids, feed, loss, variables = build(dtype)
    fetches = [loss] + gf.gradients(loss, variables)
    assert _rewritten(_plan(fetches, feed), VOCAB, cols) == {"forward", "table", "weights"}
    assert "scatter of the product" in _rewritten(_plan(fetches, feed, False), VOCAB, cols)
    got, want = _both(backend, fetches, feed)
    _assert_close(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_three_adam_steps_train_to_the_plain_plans_weights(backend, model, dtype):
    build, _ = MODELS[model]
    ids, feed, loss, variables = build(dtype)
    train = gf.train.AdamOptimizer(0.01).minimize(loss)
    got, want = _both(backend, [loss] + variables, feed, steps=(train, feed, 3))
    _assert_close(got, want, dtype)


def test_the_two_gradients_share_one_row_sum():
    ids, feed, loss, variables = _static_lstm("float32")
    graph = _plan([loss] + gf.gradients(loss, variables), feed)
    sums = [n for n in graph.nodes() if isinstance(n, PlanNode)
            and n.opdef.name == "gather_grad"]
    assert [tuple(n.shape) for n in sums] == [(VOCAB, 4 * UNITS)]
    readers = [n for n in graph.nodes() if isinstance(n, PlanNode) and sums[0] in n.inputs]
    assert sorted(n.opdef.name for n in readers) == ["matmul", "matmul"]


def _flat_dense(dtype="float64", table=None):
    """ids [n] -> embedding_lookup (no view) -> dense; ``table`` a constant if given."""
    rng = np.random.default_rng(6)
    ids = gf.placeholder(gf.int32, (None,), name="ids")
    emb = gf.Variable(rng.normal(size=(VOCAB, EMBED)).astype(dtype), name="emb") \
        if table is None else gf.constant(table.astype(dtype), name="emb")
    w = gf.Variable(rng.normal(size=(EMBED, UNITS)).astype(dtype), name="w")
    rows = gf.nn.embedding_lookup(emb, ids)
    y = gf.matmul(rows, w)
    return ids, {ids: _ids(rng, shape=(12,))}, emb, w, rows, y


def test_an_inference_plan_gets_the_forward_rule_alone(backend):
    ids, feed, emb, w, rows, y = _flat_dense()
    assert _rewritten(_plan([y], feed), VOCAB, UNITS) == {"forward"}
    got, want = _both(backend, [y], feed)
    _assert_close(got, want, "float64")


def test_a_constant_table_gets_the_forward_and_weight_rules(backend):
    table = np.random.default_rng(7).normal(size=(VOCAB, EMBED))
    ids, feed, emb, w, rows, y = _flat_dense(table=table)
    loss = gf.reduce_sum(gf.sin(y))
    fetches = [loss] + gf.gradients(loss, [w])
    assert _rewritten(_plan(fetches, feed), VOCAB, UNITS) == {"forward", "weights"}
    got, want = _both(backend, fetches, feed)
    _assert_close(got, want, "float64")


def test_a_gradient_of_the_table_alone_gets_the_table_rule(backend):
    """``gradients(y, emb, grad_ys)``: no forward product in the plan; the row sum's
    shape comes from a (small) product of the table made for it."""
    ids, feed, emb, w, rows, y = _flat_dense()
    seed = gf.placeholder(gf.float64, (None, UNITS), name="seed")
    feed[seed] = np.random.default_rng(8).normal(size=(12, UNITS))
    fetches = gf.gradients(y, [emb], grad_ys=seed)
    assert _rewritten(_plan(fetches, feed), VOCAB, UNITS) == {"table"}
    got, want = _both(backend, fetches, feed)
    _assert_close(got, want, "float64")


def test_rows_other_readers_need_stay(backend):
    ids, feed, emb, w, rows, y = _flat_dense()
    loss = gf.reduce_sum(gf.sin(y))
    fetches = [loss, rows * 2.0] + gf.gradients(loss, [emb, w])
    graph = _plan(fetches, feed)
    assert _rewritten(graph, VOCAB, UNITS) == {"forward", "table", "weights"}
    assert [tuple(n.shape) for n in graph.nodes() if isinstance(n, PlanNode)
            and n.opdef.name == "gather"] == [(12, UNITS), (12, EMBED)]
    got, want = _both(backend, fetches, feed)
    _assert_close(got, want, "float64")


def _axis1_lookup(dtype):
    rng = np.random.default_rng(9)
    ids = gf.placeholder(gf.int32, (None,), name="ids")
    table_t = gf.Variable(rng.normal(size=(EMBED, VOCAB)).astype(dtype))
    w = gf.Variable(rng.normal(size=(EMBED, UNITS)).astype(dtype))
    rows = gf.transpose(gf.gather(table_t, ids, axis=1))
    loss = gf.reduce_sum(gf.sin(gf.matmul(rows, w)))
    return [loss] + gf.gradients(loss, [table_t, w]), {ids: _ids(rng, shape=(12,))}


def _unchanged_cases():
    def few_ids():
        ids, feed, loss, variables = _dense("float64", vocab=20, time=2)  # 6 ids, 20 rows
        return [loss] + gf.gradients(loss, variables), feed, True

    def unknown_shapes():
        ids, feed, loss, variables = _dense("float64")
        return [loss] + gf.gradients(loss, variables), feed, False

    def half():
        ids, feed, loss, variables = _dense("float16")
        return [loss] + gf.gradients(loss, variables), feed, True

    def axis_1():
        return (*_axis1_lookup("float64"), True)

    def grad_ys_through_a_view():  # ids reshaped, and no lookup checks them first
        ids, feed, loss, variables = _dense("float64")
        rows = gf.reshape(gf.nn.embedding_lookup(variables[0], ids), (-1, EMBED))
        seed = gf.placeholder(gf.float64, (None, UNITS), name="seed")
        feed[seed] = np.ones((BATCH * STEPS, UNITS))
        return gf.gradients(gf.matmul(rows, variables[1]), variables[0], grad_ys=seed), \
            feed, True

    def a_scalar_reshaped():  # a view of no rows on the way (examples/reber_lstm.py)
        ids, feed, loss, variables = _dense("float64", vocab=20, time=2)
        y = gf.reduce_sum(gf.matmul(gf.reshape(loss, (1, 1)), gf.ones((1, 3), gf.float64)))
        return [y] + gf.gradients(y, variables), feed, True

    return {f.__name__: f for f in (few_ids, unknown_shapes, half, axis_1,
                                    grad_ys_through_a_view, a_scalar_reshaped)}


@pytest.mark.parametrize("case", sorted(_unchanged_cases()))
def test_plans_it_must_leave_as_they_are(case):
    fetches, feed, shapes = _unchanged_cases()[case]()
    with_pass = _kinds(_plan(fetches, feed, shapes=shapes))
    assert with_pass == _kinds(_plan(fetches, feed, False, shapes=shapes))
    assert any(name == "gather_grad" for name, _ in with_pass)


def _error(backend, fetches, feed, with_pass):
    """``(type, message)`` of the error a run of ``fetches`` raises, the message cut at
    its list of the plan node's inputs and static shape (a plan's own: the lookup of the
    table's product reads that product), with the user's line that built the node."""
    saved = passes.PASSES
    passes.PASSES = [p for p in saved if with_pass or p is not rewrite_embedding_products]
    try:
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            with pytest.raises(Exception) as caught:
                sess.run(fetches, feed)
    finally:
        passes.PASSES = saved
    message = str(caught.value)
    return type(caught.value), message.split(" (inputs: ")[0], message.split("created at ")[-1]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_an_id_out_of_range_raises_the_error_it_raises_without_the_pass(backend, model):
    ids, feed, loss, variables = MODELS[model][0]("float32")
    bad = feed[ids].copy()
    bad[1, 2] = VOCAB
    fetches = [loss] + gf.gradients(loss, variables)
    got = _error(backend, fetches, {ids: bad}, True)
    assert got == _error(backend, fetches, {ids: bad}, False)
    # (the static unroll's plan looks up all its ids at once before this pass: indices[7])
    assert re.fullmatch(r"gather 'embedding_lookup' failed at run time: indices\[(1,2|7)\] = 7 "
                        r"is not in \[0, 7\)", got[1])
    assert got[2].startswith(__file__)
