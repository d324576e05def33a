"""Plans captured once and replayed (``gradflow.capture``), on the CPU: NumPy's
capture records a run's op calls and replays them, which repeats the run only where
the schedule keeps every value in the same memory, the property a CUDA graph needs.
A captured session must give the numbers of an uncaptured one, bit for bit."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.capture import WARM_RUNS, CaptureGate, RecordingCapturer


def _mlp(dropout=False, rearranged_labels=False):
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(3)
        x = gf.placeholder(gf.float32, [None, 20])
        y = gf.placeholder(gf.int64, [None])
        h = gf.layers.dense(x, 32, gf.nn.relu)
        if dropout:
            h = gf.nn.dropout(h, 0.5)
        logits = gf.layers.dense(h, 4)
        labels = gf.reshape(gf.transpose(gf.reshape(y, [-1, 1])), [-1]) \
            if rearranged_labels else y  # a check of these is one of the fed labels
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        train = gf.train.AdamOptimizer(0.01).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, x, y, loss, train, init


def _batches(count, size=16, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((size, 20)).astype(np.float32),
             rng.integers(0, 4, size)) for _ in range(count)]


def _train(capture, batches, dropout=False):
    graph, x, y, loss, train, init = _mlp(dropout)
    with gf.Session(graph=graph, capture=capture) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]
        weights = [sess.run(v) for v in graph.get_collection(gf.GraphKeys.GLOBAL_VARIABLES)]
        plans = [p for p in sess._plans.values() if hasattr(p, "captured")]
    return losses, weights, plans


def test_a_captured_session_trains_bit_for_bit_as_an_uncaptured_one():
    batches = _batches(WARM_RUNS + 6)
    plain_losses, plain_weights, _ = _train(False, batches)
    losses, weights, plans = _train(True, batches)
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]
    np.testing.assert_array_equal(losses, plain_losses)
    for a, b in zip(weights, plain_weights):
        np.testing.assert_array_equal(a, b)


def test_fetched_values_of_replays_are_the_callers_own():
    graph, x, y, loss, train, init = _mlp()
    batches = _batches(WARM_RUNS + 3)
    with gf.Session(graph=graph, capture=True) as sess:
        sess.run(init)
        kept = [sess.run([loss, train], {x: bx, y: by}, output="native")[0]
                for bx, by in batches]
    assert len({id(v) for v in kept}) == len(kept)
    assert len({float(v) for v in kept}) > 1  # each holds its own run's loss


def test_a_plan_with_host_random_draws_runs_uncaptured_and_says_why(caplog):
    batches = _batches(WARM_RUNS + 2)
    with caplog.at_level(logging.DEBUG, logger="gradflow.capture"):
        losses, _, plans = _train(True, batches, dropout=True)
    plain, _, _ = _train(False, batches, dropout=True)
    np.testing.assert_array_equal(losses, plain)
    failures = [p.capture_failure for p in plans if p.capture_failure]
    assert failures and "draws its random numbers on the host" in failures[0]
    assert "runs uncaptured" in caplog.text


def test_a_run_fetching_a_variable_it_updates_is_not_captured():
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.zeros(3, np.float32))
        step = gf.placeholder(gf.float32, [3])
        update = gf.assign_add(v, step)
        init = gf.global_variables_initializer()
    with gf.Session(graph=graph, capture=True) as sess:
        sess.run(init)
        seen = [sess.run([v.value(), update], {step: np.full(3, k, np.float32)})
                for k in range(1, WARM_RUNS + 4)]
    total = 0
    for k, (before, after) in enumerate(seen, start=1):
        np.testing.assert_array_equal(before, np.full(3, total, np.float32))
        total += k
        np.testing.assert_array_equal(after, np.full(3, total, np.float32))


def test_a_new_feed_shape_gets_its_own_capture():
    """Each fed shape has its plan and capture; a variable given a new array by another
    plan's run makes the capture that read the old one capture again."""
    sizes = [16] * (WARM_RUNS + 2) + [8] * (WARM_RUNS + 2) + [16] * (WARM_RUNS + 2)
    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((n, 20)).astype(np.float32), rng.integers(0, 4, n))
               for n in sizes]
    plain, _, _ = _train(False, batches)
    losses, _, plans = _train(True, batches)
    np.testing.assert_array_equal(losses, plain)
    assert sum(p.captured is not None for p in plans) == 2


@pytest.mark.parametrize("capture", [False, True])
def test_threads_replaying_one_capture_lose_no_update(capture):
    graph = gf.Graph()
    with graph.as_default():
        v = gf.Variable(np.zeros((4, 4), np.float32))
        w = gf.placeholder(gf.float32, [4, 4])
        update = gf.assign_add(v, gf.matmul(w, w) * 0 + 1)
        init = gf.global_variables_initializer()
    ones = np.ones((4, 4), np.float32)
    with gf.Session(graph=graph, capture=capture) as sess:
        sess.run(init)

        def worker():
            for _ in range(200):
                sess.run(update.op, {w: ones})

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_array_equal(sess.run(v), np.full((4, 4), 800, np.float32))


class _ChecksFirst(RecordingCapturer):
    """The recording capture with a device graph's rule: checks run on the feeds before
    each replay, not inside it."""

    checks_feeds_first = True


@pytest.mark.parametrize("rearranged", [False, True])
def test_a_bad_label_fails_before_the_replay_and_changes_nothing(monkeypatch, rearranged):
    graph, x, y, loss, train, init = _mlp(rearranged_labels=rearranged)
    batches = _batches(WARM_RUNS + 3)
    with gf.Session(graph=graph, capture=True) as sess:
        monkeypatch.setattr(sess.backend, "capturer", _ChecksFirst)
        sess.run(init)
        for bx, by in batches:
            sess.run(train, {x: bx, y: by})
        plan = next(p for p in sess._plans.values() if getattr(p, "captured", None))
        assert plan.captured.checks
        variables = graph.get_collection(gf.GraphKeys.GLOBAL_VARIABLES)
        before = [sess.run(v) for v in variables]
        bad = batches[0][1].copy()
        bad[3] = 7
        with pytest.raises(gf.errors.InvalidArgumentError, match="7"):
            sess.run(train, {x: batches[0][0], y: bad})
        for v, old in zip(variables, before):
            np.testing.assert_array_equal(sess.run(v), old)
        sess.run(train, {x: batches[0][0], y: batches[0][1]})  # and it still replays
        assert plan.captured is not None


def test_a_capture_waits_for_no_thread_and_holds_the_others_back():
    gate = CaptureGate()
    inside, release, order = threading.Event(), threading.Event(), []

    def other():
        with gate.run():
            inside.set()
            release.wait(5)

    worker = threading.Thread(target=other)
    worker.start()
    inside.wait(5)
    with gate.run(), gate.exclusive() as alone:
        assert not alone  # another thread is inside run(): no capture now
    release.set()
    worker.join(5)

    def late():
        with gate.run():
            order.append("other thread")

    with gate.run(), gate.exclusive() as alone:
        assert alone
        worker = threading.Thread(target=late)
        worker.start()
        worker.join(0.2)
        order.append("capture")  # the other thread waited for the capture to end
    worker.join(5)
    assert order == ["capture", "other thread"]


@pytest.mark.parametrize("capture", [False, True])
def test_a_value_read_at_the_start_survives_an_update_of_its_variable(capture):
    """``scaled`` is read after the run has added to ``w``, but is made from the value
    ``w`` had when the run started (TF1): the update cannot be written over that array,
    in a captured run either (a capture writes its updates in place)."""
    w = gf.Variable(np.array([1.0, -2.0]), name="w")
    x = gf.placeholder(gf.float64, ())
    train = w.assign_add(gf.constant([0.5, 0.25], gf.float64))
    scaled = w * x
    with gf.control_dependencies([train]):
        out = scaled * 3.0
    with gf.Session(capture=capture) as sess:
        sess.run(gf.global_variables_initializer())
        for n in range(WARM_RUNS + 3):
            start = np.array([1.0, -2.0]) + n * np.array([0.5, 0.25])
            np.testing.assert_array_equal(sess.run(out, {x: 2.0}), start * 2.0 * 3.0)


def test_a_draw_shaped_like_a_fed_batch_knows_its_shape_in_the_batchs_plan():
    """Dropout on an unknown batch draws numbers shaped like its input: the plan made
    for a fed batch knows that shape, so it is not a reason to run uncaptured."""
    x = gf.placeholder(gf.float32, (None, 8))
    y = gf.nn.dropout(gf.nn.relu(x), 0.5)
    with gf.Session() as sess:
        sess.run(y, {x: np.ones((4, 8), np.float32)})
        plan = next(p for p in sess._plans.values() if getattr(p, "specialized", False))
        draws = [n for n in plan.schedule.order if n.opdef.kind == "random"]
        assert draws and all(tuple(n.shape) == (4, 8) for n in draws)


def _embedding_steps(capture, monkeypatch, feeds):
    """``(losses or error messages, table, plan)`` of an Adam step on the rows that
    columns of fed ids pick, with the device graph's capture rule on NumPy."""
    graph = gf.Graph()
    with graph.as_default():
        ids = gf.placeholder(gf.int64, (None, 3), name="ids")
        table = gf.Variable(np.arange(20.0).reshape(10, 2), name="table")
        rows = [gf.nn.embedding_lookup(table, ids[:, t]) for t in range(3)]
        loss = gf.reduce_sum(gf.square(gf.concat(rows, 0)))
        train = gf.train.AdamOptimizer(0.01).minimize(loss)
        init = gf.global_variables_initializer()
    out = []
    with gf.Session(graph=graph, capture=capture) as sess:
        monkeypatch.setattr(sess.backend, "capturer", _ChecksFirst)
        sess.run(init)
        for feed in feeds:
            try:
                out.append(sess.run([loss, train], {ids: feed})[0])
            except gf.errors.InvalidArgumentError as err:
                out.append(str(err))
        plan = next((p for p in sess._plans.values() if getattr(p, "captured", None)), None)
        return out, sess.run(table), plan


def test_ids_picked_from_a_feed_are_checked_before_the_replay(monkeypatch):
    """A gather checks its ids itself; a device graph cannot raise, so the replay checks
    the fed ids first (through the slice that picks them), with the error the op gives,
    and the bad step changes nothing."""
    rng = np.random.default_rng(0)
    feeds = [rng.integers(0, 10, (4, 3)) for _ in range(WARM_RUNS + 4)]
    bad = feeds[1].copy()
    bad[2, 1] = 10
    feeds.insert(WARM_RUNS + 2, bad)
    got, table, plan = _embedding_steps(True, monkeypatch, feeds)
    want, want_table, _ = _embedding_steps(False, monkeypatch, feeds)
    assert plan is not None and plan.captured.id_checks, plan and plan.capture_failure
    # a plain int: CuPy's ufuncs refuse the static shape's Dimension (seen on an H100)
    assert all(type(size) is int for *_, size in plan.captured.id_checks)
    assert isinstance(got[WARM_RUNS + 2], str) and "] = 10 is not in [0, 10)" in \
        got[WARM_RUNS + 2]
    assert got == want  # the same losses, and the same error message
    np.testing.assert_array_equal(table, want_table)


def test_a_failed_capture_names_the_op_whose_step_raised(monkeypatch):
    """A capture refused by one op's work (CuPy: a read back to the host) says which op."""
    graph, x, y, loss, train, init = _mlp()
    calls = []

    def lower_relu(xp):
        def relu(a, out=None):
            calls.append(1)
            if len(calls) == WARM_RUNS + 1:  # the run that captures
                raise RuntimeError("the current stream is capturing")
            return xp.maximum(a, 0, out=out) if out is not None else xp.maximum(a, 0)
        return relu

    batches = _batches(WARM_RUNS + 3)
    with gf.Session(graph=graph, capture=True) as sess:
        monkeypatch.setitem(sess.backend.overrides, "relu", lower_relu)
        sess.run(init)
        for bx, by in batches:
            sess.run(train, {x: bx, y: by})
        failures = [p.capture_failure for p in sess._plans.values()
                    if "capturing failed" in (getattr(p, "capture_failure", None) or "")]
    assert len(failures) == 1, failures
    # relu runs inside the fused node of the bias add: that node is named, with its members
    assert failures[0].startswith("capturing failed: RuntimeError: the current stream is "
                                  "capturing (in fused "), failures
    assert "relu 'dense/relu' at " in failures[0] and "test_capture.py" in failures[0]
