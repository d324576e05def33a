"""``dynamic_rnn`` and ``while_loop`` over a length known only at run time, unrolled in the
plans specialized to the shapes fed (``passes/while_unroll.py``): the same numbers,
gradients included, as the host loop (a Session that runs the graph as built) and as the
static unroll, for several lengths fed to one Session; and the loops that must stay
host loops (a random op in the body, a count the plan cannot know, too many iterations)
still give the host loop's numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradflow as gf
from gradflow.passes import while_unroll

BATCH, FEATURES, UNITS = 3, 4, 5


def _loops(sess, fetches, feed):
    """The number of ``while`` steps in the plan ``sess`` runs for ``fetches``."""
    return len(re.findall(r"^\s*\d+ while ", sess.describe_plan(fetches, feed), re.M))


def _cell(kind):
    init = gf.constant_initializer(0.1)  # the static and dynamic graphs start equal
    if kind == "lstm":
        return gf.nn.rnn_cell.LSTMCell(UNITS, initializer=init)
    if kind == "gru":
        return gf.nn.rnn_cell.GRUCell(UNITS, kernel_initializer=init)
    return gf.nn.rnn_cell.MultiRNNCell([gf.nn.rnn_cell.LSTMCell(UNITS, initializer=init),
                                        gf.nn.rnn_cell.LSTMCell(UNITS, initializer=init)])


def _model(kind, steps, lengths, time_major=False):
    """``(x, lengths placeholder or None, [loss, *gradients])`` of ``dynamic_rnn`` in a
    new default graph; ``steps`` None leaves the time axis unknown (a while_loop)."""
    gf.reset_default_graph()
    shape = (steps, BATCH, FEATURES) if time_major else (BATCH, steps, FEATURES)
    x = gf.placeholder(gf.float32, shape, name="x")
    seq = gf.placeholder(gf.int32, (BATCH,), name="lengths") if lengths else None
    outputs, state = gf.nn.dynamic_rnn(_cell(kind), x, sequence_length=seq,
                                       dtype=gf.float32, time_major=time_major)
    last = gf.nest.flatten(state)
    loss = gf.reduce_sum(outputs * outputs) + sum(gf.reduce_sum(s * s * 0.5) for s in last)
    grads = gf.gradients(loss, gf.trainable_variables() + [x])
    return x, seq, [loss] + grads


def _feed(x, seq, steps, time_major=False, seed=0):
    rng = np.random.default_rng(seed + steps)
    shape = (steps, BATCH, FEATURES) if time_major else (BATCH, steps, FEATURES)
    feed = {x: rng.standard_normal(shape).astype(np.float32)}
    if seq is not None:
        feed[seq] = np.array([steps, max(steps - 2, 0), 1], np.int32)
    return feed


def _run(fetches, feeds, backend=None, optimize=True):
    with gf.Session(backend=backend, optimize=optimize) as sess:
        sess.run(gf.global_variables_initializer())
        return [sess.run(fetches, f) for f in feeds]


def _close(got, want, rtol=2e-5, atol=2e-6):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("kind", ["lstm", "gru", "stack"])
@pytest.mark.parametrize("lengths", [False, True])
def test_dynamic_rnn_of_a_run_time_length_is_unrolled_and_exact(backend, kind, lengths):
    steps_fed = (6, 2, 9)
    x, seq, fetches = _model(kind, None, lengths)
    feeds = [_feed(x, seq, t) for t in steps_fed]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [sess.run(fetches, f) for f in feeds]  # several lengths, one Session
        assert all(_loops(sess, fetches, f) == 0 for f in feeds)
    host = _run(fetches, feeds, backend, optimize=False)  # the while_loop as built
    for g, h in zip(got, host):
        _close(g, h)
    for t, g in zip(steps_fed, got):  # the static unroll of the same cell
        xs, seqs, static = _model(kind, t, lengths)
        (want,) = _run(static, [_feed(xs, seqs, t)], backend)
        _close(g, want)


def test_time_major_and_a_zero_length(backend):
    x, seq, fetches = _model("lstm", None, True, time_major=True)
    feeds = [_feed(x, seq, t, time_major=True) for t in (3, 1)]
    feeds.append({x: np.zeros((0, BATCH, FEATURES), np.float32),
                  seq: np.zeros(BATCH, np.int32)})
    got = _run(fetches, feeds, backend)
    for g, h in zip(got, _run(fetches, feeds, backend, optimize=False)):
        _close(g, h)


def test_a_counted_while_loop_is_unrolled_with_its_gradient(backend):
    gf.reset_default_graph()
    x = gf.placeholder(gf.float64, (None, 3))
    w = gf.Variable(np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [0.0, 0.2, 0.9]]))
    n = gf.shape(x)[0]

    def body(i, acc, h):
        h = gf.tanh(gf.matmul(h, w) + gf.gather(x, i))
        return i + 1, acc + gf.reduce_sum(h), h

    _, total, h = gf.while_loop(lambda i, acc, h: i < n, body,
                                [0, gf.constant(0.0, gf.float64), gf.zeros((1, 3), gf.float64)],
                                maximum_iterations=5)
    loss = total + gf.reduce_sum(h * h)
    fetches = [loss] + gf.gradients(loss, [w, x])
    feeds = [{x: np.linspace(-1, 1, 3 * t).reshape(t, 3)} for t in (4, 7)]  # 7: 5 iterations
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [sess.run(fetches, f) for f in feeds]
        assert [_loops(sess, fetches, f) for f in feeds] == [0, 0]
    for g, h in zip(got, _run(fetches, feeds, backend, optimize=False)):
        _close(g, h, rtol=1e-12, atol=1e-12)


def test_loops_that_stay_host_loops_give_the_host_loops_numbers(backend, monkeypatch):
    """A count read from a fed value, a random op in the body, more than ``MAX_UNROLL``
    iterations: the plan keeps the while node, and the numbers are the host loop's."""
    gf.reset_default_graph()
    gf.set_random_seed(3)
    x = gf.placeholder(gf.float32, (None, 2))
    stop = gf.placeholder(gf.int32, ())
    w = gf.Variable(np.full((2, 2), 0.3, np.float32))

    def body(i, h):
        return i + 1, gf.tanh(gf.matmul(h, w) + gf.gather(x, i))

    h0 = gf.zeros((1, 2))
    _, by_feed = gf.while_loop(lambda i, h: i < stop, body, [0, h0])
    _, by_shape = gf.while_loop(lambda i, h: i < gf.shape(x)[0], body, [0, h0])
    _, noisy = gf.while_loop(lambda i, h: i < gf.shape(x)[0],
                             lambda i, h: (i + 1, h + gf.random_uniform((1, 2)) * 0.0
                                           + gf.gather(x, i)), [0, h0])
    fetches = [by_feed, by_shape, noisy]
    fetches += gf.gradients(gf.reduce_sum(by_feed) + gf.reduce_sum(by_shape), [w])
    feed = {x: np.linspace(-1, 1, 12).reshape(6, 2).astype(np.float32), stop: 4}
    monkeypatch.setattr(while_unroll, "MAX_UNROLL", 5)  # 6 iterations: too many
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = sess.run(fetches, feed)
        assert _loops(sess, fetches, feed) == 3
    _close(got, _run(fetches, [feed], backend, optimize=False)[0])
    monkeypatch.setattr(while_unroll, "MAX_UNROLL", 256)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        again = sess.run(fetches, feed)
        assert _loops(sess, fetches, feed) == 2  # the fed count and the random op stay
    _close(again, got)


@pytest.mark.parametrize("lengths", [False, True])
def test_bidirectional_dynamic_rnn_of_a_run_time_length(backend, lengths):
    """Over a time axis of unknown length: two unrolled loops, the backward one over the
    inputs reversed by ``reverse_sequence``; the numbers of the static unroll."""
    def model(steps):
        gf.reset_default_graph()
        x = gf.placeholder(gf.float32, (BATCH, steps, FEATURES), name="x")
        seq = gf.placeholder(gf.int32, (BATCH,), name="lengths") if lengths else None
        (out_fw, out_bw), (st_fw, st_bw) = gf.nn.bidirectional_dynamic_rnn(
            _cell("lstm"), _cell("gru"), x, sequence_length=seq, dtype=gf.float32)
        loss = gf.reduce_sum(out_fw * out_fw) + gf.reduce_sum(out_bw * 0.5) \
            + gf.reduce_sum(st_fw.h * st_bw)
        names = sorted(v.name for v in gf.trainable_variables())
        fetches = [loss, out_bw] + gf.gradients(loss, gf.trainable_variables() + [x])
        return x, seq, fetches, names

    x, seq, fetches, names = model(None)
    feeds = [_feed(x, seq, t) for t in (5, 3)]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [sess.run(fetches, f) for f in feeds]
        assert all(_loops(sess, fetches, f) == 0 for f in feeds)
    for t, g in zip((5, 3), got):
        xs, seqs, static, static_names = model(t)
        assert static_names == names
        (want,) = _run(static, [_feed(xs, seqs, t)], backend)
        _close(g, want)


def test_unknown_batch_and_time(backend):
    """``[None, None, n]`` inputs: the batch size and the length both come from the feed;
    each fed pair of sizes gets an unrolled plan with the host loop's numbers."""
    gf.reset_default_graph()
    x = gf.placeholder(gf.float32, (None, None, FEATURES))
    outputs, state = gf.nn.dynamic_rnn(_cell("lstm"), x, dtype=gf.float32)
    loss = gf.reduce_sum(outputs * outputs) + gf.reduce_sum(state.c)
    fetches = [loss] + gf.gradients(loss, gf.trainable_variables() + [x])
    rng = np.random.default_rng(9)
    feeds = [{x: rng.standard_normal((b, t, FEATURES)).astype(np.float32)}
             for b, t in ((2, 4), (5, 1), (2, 7))]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [sess.run(fetches, f) for f in feeds]
        assert all(_loops(sess, fetches, f) == 0 for f in feeds)
    for g, h in zip(got, _run(fetches, feeds, backend, optimize=False)):
        _close(g, h)
