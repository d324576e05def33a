"""A steady training step allocates no array memory on NumPy: every value of the
run is written into a buffer of the plan (its arena, a variable's own array), the
CPU-side proof that the same schedule can be captured once and replayed on a GPU.

Measured with ``tracemalloc``, which sees NumPy's data buffers. NumPy's ufunc
iterator allocates a scratch buffer of ``np.getbufsize()`` elements on every
broadcasting call, used or not; the tests shrink it to 16 elements so that what
remains is Python's own objects (frames, array headers), each far smaller than
any array of these steps: an op that allocated its result would show its size.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import threads
from gradflow.executor import compile_plan
from gradflow.passes.ir import user_node

# What an op may allocate: its Python objects (measured once the free lists are
# full: 0.3-3.7 KB per op, a convolution's views of its blocks included, at batch 256
# and 512) and small scratch of its kernels (numba's row buffers), against the
# smallest array of a step below, 256 x 10 float32 logits (10 KB): at most 6 KB, or
# 1/16 of the op's result.
PER_OP_LIMIT = 6144
SHARE_LIMIT = 16
# Steps traced; each op counts what it allocated in the least of them. An array an op
# allocates is allocated every step; what Python's own free lists and caches take
# while they fill up (tuples kept for reuse: up to ~10 KB in a convolution of 43
# blocks in one step, none in the next) is not.
TRACED_STEPS = 3
BATCH = 256


def _minimize(loss):
    gf.losses.add_loss(loss)
    return gf.train.AdamOptimizer(1e-3).minimize(loss)


def _classifier_tail(features, labels):
    logits = gf.layers.dense(features, 10)
    return _minimize(gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)))


def mlp(dtype=gf.float32):
    x = gf.placeholder(dtype, [None, 784])
    y = gf.placeholder(gf.int64, [None])
    h = gf.layers.dense(x, 512, gf.nn.relu)
    h = gf.layers.dense(h, 512, gf.nn.relu)
    rng = np.random.default_rng(0)
    return _classifier_tail(h, y), {x: rng.random((BATCH, 784)).astype(x.dtype.name),
                                    y: rng.integers(0, 10, BATCH)}


def cnn(dtype=gf.float32):
    x = gf.placeholder(dtype, [None, 28, 28, 1])
    y = gf.placeholder(gf.int64, [None])
    h = gf.layers.conv2d(x, 32, 5, padding="same", activation=gf.nn.relu)
    h = gf.layers.max_pooling2d(h, 2, 2)
    h = gf.layers.conv2d(h, 64, 5, padding="same", activation=gf.nn.relu)
    h = gf.layers.max_pooling2d(h, 2, 2)
    h = gf.layers.dense(gf.reshape(h, [-1, 7 * 7 * 64]), 256, gf.nn.relu)
    rng = np.random.default_rng(0)
    return _classifier_tail(h, y), {x: rng.random((BATCH, 28, 28, 1)).astype(x.dtype.name),
                                    y: rng.integers(0, 10, BATCH)}


def lstm(dtype=gf.float32, steps=10, vocab=65, hidden=128):
    ids = gf.placeholder(gf.int32, [None, steps])
    targets = gf.placeholder(gf.int32, [None, steps])
    emb = gf.get_variable("emb", [vocab, 32], dtype)
    inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
    outputs, _ = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(hidden), inputs, dtype=dtype)
    logits = gf.layers.dense(gf.concat(outputs, 0), vocab)
    labels = gf.reshape(gf.transpose(targets), [-1])
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    rng = np.random.default_rng(0)
    batch = BATCH // 8
    feed = {ids: rng.integers(0, vocab, (batch, steps)).astype(np.int32),
            targets: rng.integers(0, vocab, (batch, steps)).astype(np.int32)}
    return _minimize(loss), feed


NETWORKS = {"mlp": mlp, "cnn": cnn, "lstm": lstm}


def _allocations_per_op(name):
    """``[(bytes, op)]``: the most each op allocated at once during a steady step (the
    least over ``TRACED_STEPS`` steps), largest first, and the schedule of the step."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        train, feed = NETWORKS[name]()
        init = gf.global_variables_initializer()
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        keys = tuple(feed)
        feeds = sess._convert_feeds(keys, list(feed.items()))
        plan = compile_plan(sess.run_state, [train], keys, [f.shape for f in feeds], trace=True)
        turn = [False]

        def clock():  # before an op: start counting; after it: what it took at most
            turn[0] = not turn[0]
            if turn[0]:
                tracemalloc.reset_peak()
                return tracemalloc.get_traced_memory()[0]
            return tracemalloc.get_traced_memory()[1]

        plan.fn.__globals__.update(clock=clock, sync=lambda: None)
        size = np.getbufsize()
        np.setbufsize(16)
        try:
            for _ in range(3):  # buffers taken, kernels (and in-place variants) compiled
                plan.fn(feeds, sess.run_state.store)
            least = {}
            _fill_free_lists()
            tracemalloc.start()
            try:
                for _ in range(TRACED_STEPS):
                    plan.trace.clear()
                    plan.fn(feeds, sess.run_state.store)
                    for node, start, end in plan.trace:
                        least[node] = min(least.get(node, end - start), end - start)
            finally:
                tracemalloc.stop()
        finally:
            np.setbufsize(size)
    return sorted(((took, node) for node, took in least.items()), key=lambda t: -t[0]), \
        plan.schedule


def _fill_free_lists():
    """Fill CPython's tuple free lists (2,000 tuples of each length up to 20): a tuple
    freed while its list has room stays allocated to tracemalloc, so otherwise an op
    that makes many small tuples (a convolution's views, block by block) would seem
    to keep them."""
    made = [tuple(range(length)) for length in range(1, 21) for _ in range(2000)]
    del made


def _result_bytes(node):
    if node.shape is None or None in tuple(node.shape) or node.dtype is None:
        return 0
    return math.prod(node.shape) * node.dtype.as_numpy_dtype().itemsize


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_a_steady_training_step_allocates_no_arrays(name, monkeypatch):
    monkeypatch.setenv("GRADFLOW_THREADS", "1")  # no look at /proc/stat during the step
    threads.reset()
    try:
        took, schedule = _allocations_per_op(name)
    finally:
        threads.reset()
    assert took, "the traced step recorded no op"
    over = [(size, f"{n.opdef.name} '{user_node(n).name}'") for size, n in took
            if size >= max(PER_OP_LIMIT, _result_bytes(n) // SHARE_LIMIT)]
    assert not over, f"ops that allocated: {over[:3]}"
    assert schedule.arena_bytes > 0 and schedule.replayable



def session_of(name, dtype=gf.float32, **options):
    """``(session, train op, feed, variables)`` of network ``name`` in ``dtype``,
    initialized (its loss is in the graph's ``GraphKeys.LOSSES``)."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        train, feed = NETWORKS[name](dtype)
        init = gf.global_variables_initializer()
        variables = gf.global_variables()
    sess = gf.Session(graph=graph, **options)
    sess.run(init)
    return sess, train, feed, variables


def _batches(feed, count):
    rng = np.random.default_rng(1)
    for _ in range(count):
        yield {t: (rng.random(v.shape, dtype=np.float32) if v.dtype.kind == "f"
                   else rng.integers(0, 10, v.shape).astype(v.dtype))
               for t, v in feed.items()}


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_a_recorded_step_replays_as_the_plan_runs(name):
    """The CPU stand-in for capturing a step as one CUDA graph: record every op call of
    one run (function, argument arrays, output buffers), then only copy each new batch
    into the recorded feed arrays and make the same calls again, with no plan code in
    between. That gives the numbers of running the plan only if every value lives in
    the same memory on every run (the schedule says so: ``replayable``)."""
    steps = 4
    ref, ref_train, feed, ref_vars = session_of(name)
    for batch in _batches(feed, steps + 1):
        ref.run(ref_train, batch)
    sess, train, feed, variables = session_of(name)
    keys = tuple(feed)
    batches = list(_batches(feed, steps + 1))
    fixed = sess._convert_feeds(keys, list(batches[0].items()))
    plan = compile_plan(sess.run_state, [train], keys, [f.shape for f in fixed])
    assert plan.schedule.replayable, plan.schedule.why_not_replayable()
    plan.fn(fixed, sess.run_state.store)  # the first run: buffers taken, kernels compiled
    calls = []
    env = plan.fn.__globals__
    for key in [k for k in env if k[0] == "I" and k[1:].isdigit()]:
        # an update in place takes the variable's array only if nothing else holds it;
        # the recording holds the arrays it has seen, so it takes them unconditionally
        env[key] = lambda store, __var=env[key].keywords["var"]: store[__var]
    for key in [k for k in env if k[0] == "F" and k[1:].isdigit()]:
        def record(*args, __fn=plan.fn.__globals__[key], **kwargs):
            calls.append((__fn, args, kwargs))
            return __fn(*args, **kwargs)

        plan.fn.__globals__[key] = record
    for array, value in zip(fixed, batches[1].values()):
        np.copyto(array, value)
    plan.fn(fixed, sess.run_state.store)  # recorded
    assert calls
    for batch in batches[2:]:
        for array, value in zip(fixed, batch.values()):
            np.copyto(array, value)
        for fn, args, kwargs in calls:
            fn(*args, **kwargs)
    for mine, theirs in zip(variables, ref_vars):
        np.testing.assert_allclose(sess.run(mine), ref.run(theirs), rtol=1e-5, atol=1e-6,
                                   err_msg=mine.name)
    sess.close()
    ref.close()



def test_the_torch_backend_writes_matmuls_and_elementwise_ops_into_the_arena():
    """PyTorch's functions take ``out=`` too (``gradflow.backends.torch.out``): the MLP's
    matmuls, fused groups and updates write into the plan's buffers there as well."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    sess, train, feed, _ = session_of("mlp", backend="torch")
    with sess:
        keys = tuple(feed)
        feeds = sess._convert_feeds(keys, list(feed.items()))
        schedule = compile_plan(sess.run_state, [train], keys, [f.shape for f in feeds]).schedule
    placed = set(schedule.arena) | set(schedule.recycled)  # in place, or the spare array
    for node in schedule.order:
        if node.opdef.name in ("matmul", "fused_output") or (
                node.opdef.name == "fused" and node.attrs["program"].outputs == (
                    len(node.attrs["program"].members) - 1,)):
            assert node in placed or node in schedule.keep, node
    assert schedule.arena_bytes > 1_000_000


if __name__ == "__main__":
    import sys
    took, schedule = _allocations_per_op(sys.argv[1])
    for size, n in took[:25]:
        print(size, n.opdef.name, user_node(n).name, [tuple(i.shape or ()) for i in n.inputs])
