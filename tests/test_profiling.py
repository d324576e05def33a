"""Seeing what a plan does and where its time goes: RunOptions tracing, RunMetadata's
step stats, gf.timeline's Chrome trace, and Session.describe_plan."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import numba_support

FULL = gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE)


def _mlp():
    x = gf.placeholder(gf.float32, shape=(None, 6), name="x")
    y = gf.placeholder(gf.int64, shape=(None,), name="y")
    h = gf.layers.dense(x, 8, activation=gf.nn.relu)
    logits = gf.layers.dense(h, 3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.AdamOptimizer(0.01).minimize(loss)
    rng = np.random.default_rng(0)
    feed = {x: rng.normal(size=(5, 6)).astype(np.float32), y: np.array([0, 1, 2, 1, 0])}
    return loss, train, feed


@pytest.mark.parametrize("optimize", [True, False])
def test_a_traced_run_times_every_op_and_gives_the_same_numbers(backend, optimize):
    loss, train, feed = _mlp()
    with gf.Session(backend=backend, optimize=optimize, seed=1) as plain, \
            gf.Session(backend=backend, optimize=optimize, seed=1) as traced:
        plain.run(gf.global_variables_initializer())
        traced.run(gf.global_variables_initializer())
        for _ in range(3):
            want = plain.run([train, loss], feed)[1]
            md = gf.RunMetadata()
            got = traced.run([train, loss], feed, options=FULL, run_metadata=md)[1]
            assert got == want
    [device] = md.step_stats.dev_stats
    names = [s.node_name for s in device.node_stats]
    assert any("dense/matmul" in n for n in names)
    assert any(n.startswith("Adam") or "+Adam" in n for n in names)
    for stat in device.node_stats:
        assert stat.all_start_micros > 1.6e15  # microseconds since 1970
        assert stat.all_end_rel_micros >= 0
        assert "test_profiling.py" in stat.timeline_label  # the user's line
    if optimize and backend == "numpy":  # fused groups are named by their members
        assert any("+" in n for n in names)


def test_without_options_nothing_is_recorded(backend):
    loss, train, feed = _mlp()
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        md = gf.RunMetadata()
        sess.run(loss, feed, run_metadata=md)
        assert md.step_stats.dev_stats == []


def test_the_timeline_is_a_chrome_trace():
    loss, train, feed = _mlp()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        md = gf.RunMetadata()
        sess.run(train, feed, options=FULL, run_metadata=md)
    trace = json.loads(gf.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(ops) == len(md.step_stats.dev_stats[0].node_stats) > 5
    assert min(e["ts"] for e in ops) == 0
    for e in ops:
        assert e["dur"] >= 1 and e["pid"] == 0 and e["name"] == e["args"]["name"]
    [process] = [e for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert process["args"]["name"].endswith("Compute")
    with pytest.raises(ValueError, match="step_stats is empty"):
        gf.timeline.Timeline(None)


def test_describe_plan_shows_steps_buffers_and_the_commit():
    loss, train, feed = _mlp()
    with gf.Session() as sess:
        text = sess.describe_plan([train, loss], feed)
        head = text.splitlines()[0]
        assert head.startswith("plan: ") and "bytes" in head
        assert "-- commit, under the store lock --" in text
        assert "matmul 'dense/matmul' 5x8 float32" in text
        assert "read_current 'dense/kernel/ReadCurrent'" in text
        if numba_support.get_numba() is not None:
            assert "fused[" in text
        # describing compiles nothing the session keeps, and runs nothing
        assert sess._plans == {}


def test_use_locking_is_accepted_everywhere():
    v = gf.Variable(1.0, name="v")
    ops = [gf.assign(v, 2.0, use_locking=True), gf.assign_add(v, 1.0, use_locking=True),
           gf.assign_sub(v, 1.0, use_locking=False), v.assign(3.0, use_locking=True),
           v.assign_add(1.0, use_locking=True), v.assign_sub(1.0, use_locking=True)]
    with gf.Session() as sess:
        sess.run(v.initializer)
        assert [float(sess.run(op)) for op in ops] == [2.0, 3.0, 2.0, 3.0, 4.0, 3.0]
    with pytest.raises(ValueError, match="validate_shape=False is not supported"):
        gf.assign(v, 1.0, validate_shape=False)
