"""TF1's queues and queue-based input: FIFOQueue, RandomShuffleQueue, QueueRunner,
the input producers, batch and shuffle_batch. Every wait for another thread here has
a timeout, so a queue that never wakes fails the test instead of hanging it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import gradflow as gf

WAIT = 30  # seconds a test waits for a thread before calling it stuck


def in_thread(fn):
    """Run ``fn`` in a daemon thread; its result, or the exception it raised."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive(), f"{fn} is still waiting after {WAIT} s"
    return box


def test_fifo_order_batches_size_and_the_end_of_a_closed_queue():
    q = gf.FIFOQueue(10, [gf.int32, gf.float32], shapes=[(), (2,)])
    put = q.enqueue_many([[1, 2, 3, 4, 5], np.arange(10, dtype=np.float32).reshape(5, 2)])
    one, many, up_to = q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(4)
    assert many[1].shape == (2, 2) and up_to[1].shape == (None, 2)
    with gf.Session() as sess:
        sess.run(put)
        assert sess.run(q.size()) == 5
        assert sess.run(one)[0] == 1
        ints, rows = sess.run(many)
        assert ints.tolist() == [2, 3] and rows.tolist() == [[2, 3], [4, 5]]
        sess.run(q.close())
        assert sess.run(q.is_closed())
        assert sess.run(up_to)[0].tolist() == [4, 5]  # closed: the rest, fewer than 4
        with pytest.raises(gf.errors.OutOfRangeError, match=r"FIFOQueue '.*fifo_queue' is "
                           r"closed and has insufficient elements \(requested 1, current "
                           r"size 0\)"):
            sess.run(one)
        with pytest.raises(gf.errors.CancelledError, match="is closed: .* cannot enqueue"):
            sess.run(put)


def test_a_queue_of_strings_and_floats_keeps_each_dtype():
    q = gf.FIFOQueue(4, [gf.string, gf.float32], shapes=[(), (2,)])
    put = q.enqueue([b"ab", np.ones(2, np.float32)])
    name, value = q.dequeue()
    names, values = q.dequeue_many(2)
    with gf.Session() as sess:
        for _ in range(3):
            sess.run(put)
        one = sess.run([name, value])
        two = sess.run([names, values])
    assert one[0] == b"ab" and one[1].dtype == np.float32
    assert two[0].dtype == object and two[0].tolist() == [b"ab", b"ab"]
    assert two[1].dtype == np.float32 and two[1].shape == (2, 2)


def test_two_sessions_on_one_graph_have_their_own_queue():
    q = gf.FIFOQueue(3, gf.int64, shapes=[()])
    put, size = q.enqueue(7), q.size()
    with gf.Session() as a, gf.Session() as b:
        a.run(put)
        a.run(put)
        assert (a.run(size), b.run(size)) == (2, 0)


def test_bad_elements_are_named_when_built_or_run():
    q = gf.FIFOQueue(3, [gf.float32], shapes=[(2,)])
    with pytest.raises(ValueError, match="component 0 has shape \\(3,\\); the queue's is "
                                         "\\(2,\\)"):
        q.enqueue([np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match="1 values for a queue of 2 components"):
        gf.FIFOQueue(3, [gf.float32, gf.int32]).enqueue([1.0])
    with pytest.raises(ValueError, match="dequeue_many and dequeue_up_to need a queue made "
                                         "with shapes="):
        gf.FIFOQueue(3, [gf.float32]).dequeue_many(2)
    fed = gf.placeholder(gf.float32, None)
    put = q.enqueue([fed])
    with gf.Session() as sess:
        with pytest.raises(gf.errors.InvalidArgumentError, match="component 0 of an element "
                           "has shape \\(4,\\); FIFOQueue '.*' holds \\(2,\\)"):
            sess.run(put, {fed: np.zeros(4, np.float32)})


def test_a_full_queue_waits_and_closing_the_session_ends_the_wait():
    q = gf.FIFOQueue(2, gf.int32, shapes=[()])
    put = q.enqueue_many([[1, 2, 3]])
    sess = gf.Session()
    waiting = threading.Thread(target=lambda: _expect_cancelled(sess, put), daemon=True)
    waiting.start()
    deadline = time.monotonic() + WAIT
    while sess.run(q.size()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert waiting.is_alive()  # the third element waits for room
    sess.close()
    waiting.join(WAIT)
    assert not waiting.is_alive()
    assert _cancelled == ["cancelled"]


_cancelled = []


def _expect_cancelled(sess, op):
    try:
        sess.run(op)
    except gf.errors.CancelledError:
        _cancelled.append("cancelled")


def test_slice_input_producer_and_batch_give_every_row_each_epoch():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    xi, yi = gf.train.slice_input_producer([x, y], num_epochs=2, shuffle=True, seed=3)
    xb, yb = gf.train.batch([xi, yi], batch_size=4, allow_smaller_final_batch=True)
    with gf.Session() as sess:
        sess.run(gf.local_variables_initializer())
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess=sess, coord=coord)

        def consume():
            labels = []
            try:
                while not coord.should_stop():
                    rows, ys = sess.run([xb, yb])
                    np.testing.assert_array_equal(rows, x[ys])  # rows and labels stay paired
                    labels.append(ys.tolist())
            except gf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            return labels

        box = in_thread(consume)
        coord.join(threads, stop_grace_period_secs=WAIT)
    labels = box["result"]
    assert [len(b) for b in labels] == [4, 4, 4, 4, 4]
    flat = sum(labels, [])
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:]) == list(range(10))
    assert flat[:10] != list(range(10))  # shuffled


def test_shuffle_batch_of_strings_in_a_monitored_session_ends_with_the_input():
    names = [f"file{k}.png".encode() for k in range(12)]
    name = gf.train.string_input_producer(names, num_epochs=1, shuffle=False).dequeue()
    batch = gf.train.shuffle_batch([name], batch_size=5, capacity=8, min_after_dequeue=2,
                                 num_threads=2, seed=1, allow_smaller_final_batch=True)
    step = gf.train.get_or_create_global_step()
    count = gf.assign_add(step, 1)

    def train():
        seen = []
        with gf.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                seen.append(sess.run([batch, count])[0])
        return seen

    seen = in_thread(train)["result"]
    assert all(b.dtype == object for b in seen)  # gradflow's strings: bytes objects
    assert sorted(sum((b.tolist() for b in seen), [])) == sorted(names)
    assert [len(b) for b in seen] == [5, 5, 2]


def test_an_error_in_an_enqueue_thread_reaches_coord_join():
    def fails():
        raise ValueError("the reader broke")

    q = gf.FIFOQueue(4, gf.float32, shapes=[()])
    value = gf.py_func(fails, [], gf.float32)
    gf.train.add_queue_runner(gf.train.QueueRunner(q, [q.enqueue(gf.reshape(value, []))]))
    with gf.Session() as sess:
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess=sess, coord=coord)
        assert coord.wait_for_stop(WAIT)
        with pytest.raises(ValueError, match="the reader broke"):
            coord.join(threads, stop_grace_period_secs=WAIT)


def test_a_stop_request_ends_runners_waiting_on_a_full_queue():
    q = gf.FIFOQueue(2, gf.int32, shapes=[()])
    gf.train.add_queue_runner(gf.train.QueueRunner(q, [q.enqueue(1)] * 3))
    with gf.Session() as sess:
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess=sess, coord=coord)
        deadline = time.monotonic() + WAIT
        while sess.run(q.size()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=WAIT)  # no thread left waiting
        assert not any(t.is_alive() for t in threads)


def test_a_padding_queue_pads_each_batch_to_its_longest():
    """batch(dynamic_pad=True) through a PaddingFIFOQueue: sequences of open length (a
    py_func's, declared with set_shape) padded with zeros, strings with b""."""
    index = gf.train.range_input_producer(5, shuffle=False).dequeue()
    seq = gf.py_func(lambda i: np.arange(1, i + 2, dtype=np.int64), [index], gf.int64)
    seq.set_shape([None])
    word = gf.py_func(lambda i: np.array([b"w"] * int(i), dtype=object), [index], gf.string)
    word.set_shape([None])
    seqs, words, ids = gf.train.batch([seq, word, index], batch_size=2, dynamic_pad=True)
    assert seqs.shape.as_list() == [2, None] and ids.shape.as_list() == [2]
    with gf.train.MonitoredTrainingSession() as sess:
        first, first_words, _ = sess.run([seqs, words, ids])
        second = sess.run(seqs)
    np.testing.assert_array_equal(first, [[1, 0], [1, 2]])
    assert first_words.tolist() == [[b""], [b"w"]]
    np.testing.assert_array_equal(second, [[1, 2, 3, 0], [1, 2, 3, 4]])
    with pytest.raises(ValueError, match="shapes are required"):
        gf.PaddingFIFOQueue(4, [gf.int32], None)
