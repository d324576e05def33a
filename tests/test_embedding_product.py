"""The embedding-product pass (gradflow/passes/embedding_product.py): a product of rows
looked up in a table with fewer rows than ids becomes a lookup in the table's product,
and its two gradient products products of the ids' row sum; the numbers are the plain
plan's (Session(optimize=False)) to rounding on every backend, for a dense layer, a
static LSTM and a dynamic one, with gradients and Adam steps; the plans it must leave
as they are; the error of an id out of range."""

from __future__ import annotations

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


MODELS = {"dense": (_dense, UNITS), "static_lstm": (_static_lstm, 4 * UNITS),
          "dynamic_lstm": (_dynamic_lstm, 4 * UNITS)}


def _plan(fetches, feed, with_pass=True, shapes=True):
    """The plan graph after the passes up to this one (with it or without it)."""
    at = passes.PASSES.index(rewrite_embedding_products)
    chosen = passes.PASSES[:at + 1] if with_pass else passes.PASSES[:at]
    return optimize(fetches, list(feed), [v.shape for v in feed.values()] if shapes else None,
                    passes=chosen)


def _kinds(graph):
    return sorted((n.opdef.name, tuple(n.shape) if n.shape is not None else None)
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
