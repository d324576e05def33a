"""``train.Coordinator``, ``start_queue_runners``, ``MonitoredTrainingSession`` and its
hooks, as TF1 training loops use them."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import gradflow as gf


def test_coordinator_stops_threads_and_reraises_their_error():
    coord = gf.train.Coordinator()
    ticks = []

    def worker():
        with coord.stop_on_exception():
            while not coord.should_stop():
                ticks.append(1)
                if len(ticks) == 3:
                    raise ValueError("bad batch")
                coord.wait_for_stop(0.01)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="bad batch"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined
    assert not any(t.is_alive() for t in threads)
    coord.clear_stop()
    assert not coord.should_stop()


def test_coordinator_end_of_input_is_a_clean_stop():
    coord = gf.train.Coordinator()
    coord.request_stop(gf.errors.OutOfRangeError(None, None, "end of epoch"))
    coord.join([])  # nothing re-raised
    coord.raise_requested_exception()


def test_start_queue_runners_without_queues_starts_nothing():
    with gf.Session() as sess:
        assert gf.train.start_queue_runners(sess=sess, coord=gf.train.Coordinator()) == []
    with pytest.raises(RuntimeError, match="No default session"):
        gf.train.start_queue_runners()


def _model():
    w = gf.Variable(5.0, name="w")
    step = gf.train.get_or_create_global_step()
    loss = w * w
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return w, step, loss, train


def test_monitored_training_session_stops_saves_and_restores(tmp_path):
    w, step, loss, train = _model()
    runs = 0
    with gf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), save_checkpoint_steps=3, save_summaries_steps=None,
            hooks=[gf.train.StopAtStepHook(last_step=7)]) as sess:
        while not sess.should_stop():
            sess.run(train)
            runs += 1
    assert runs == 7
    saved = sorted(f.removesuffix(".index") for f in os.listdir(tmp_path)
                   if f.startswith("model.ckpt-") and f.endswith(".index"))
    assert saved == ["model.ckpt-0", "model.ckpt-3", "model.ckpt-6", "model.ckpt-7"]
    assert all(os.path.exists(os.path.join(tmp_path, f + ".meta")) for f in saved)
    with gf.train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path), save_checkpoint_secs=None,
            hooks=[gf.train.StopAtStepHook(num_steps=2)]) as sess:
        got_step, got_w = sess.run([step, w])  # restored from model.ckpt-7
        assert got_step == 7
        np.testing.assert_allclose(got_w, 5.0 * 0.8 ** 7, rtol=1e-6)
        while not sess.should_stop():
            sess.run(train)
        assert sess.run(step) == 9


def test_the_end_of_the_input_ends_the_with_block_quietly():
    _, step, _, train = _model()
    with gf.train.MonitoredTrainingSession() as sess:
        for _ in range(3):
            sess.run(train)
        raise gf.errors.OutOfRangeError(None, None, "End of sequence")
    with pytest.raises(ValueError, match="a real error"):
        with gf.train.MonitoredTrainingSession() as sess:
            raise ValueError("a real error")


class _Recorder(gf.train.SessionRunHook):
    def __init__(self, tensor, feed):
        self.tensor, self.feed, self.seen, self.calls = tensor, feed, [], []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("created")

    def before_run(self, run_context):
        assert run_context.original_args.fetches is not None
        return gf.train.SessionRunArgs(self.tensor, feed_dict=self.feed)

    def after_run(self, run_context, run_values):
        self.seen.append(run_values.results)
        if len(self.seen) == 2:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_hooks_add_fetches_and_feeds_and_request_stops():
    x = gf.placeholder(gf.float32, (), name="x")
    y = gf.placeholder(gf.float32, (), name="y")
    total = x + y
    hook = _Recorder(total * 10.0, {y: 2.0})
    with gf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        assert sess.run(total, {x: 1.0}) == 3.0
        assert not sess.should_stop()
        assert sess.run(total, {x: 5.0}) == 7.0
        assert sess.should_stop()
    assert hook.seen == [30.0, 70.0]
    assert hook.calls == ["begin", "created", "end"]


def test_summary_saver_hook_writes_every_n_steps(tmp_path):
    pytest.importorskip("tensorboardX", reason="summaries are written through tensorboardX")
    _, step, loss, train = _model()
    gf.summary.scalar("loss", loss)
    hook = gf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path))
    with gf.train.MonitoredTrainingSession(hooks=[hook, gf.train.StopAtStepHook(5)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboardX.event_file_writer import EventFileWriter  # noqa: F401 - present

    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [e.step for e in events.Scalars("loss")] == [0, 2, 4]


def test_hooks_refuse_what_tf1_refuses():
    with pytest.raises(ValueError, match="One of num_steps or last_step"):
        gf.train.StopAtStepHook()
    with pytest.raises(RuntimeError, match="Global step should be created"):
        gf.train.StopAtStepHook(3).begin()
    with pytest.raises(ValueError, match="exactly one of save_steps and save_secs"):
        gf.train.CheckpointSaverHook("/tmp/x")
    with pytest.raises(NotImplementedError, match="distributed sessions"):
        gf.train.MonitoredTrainingSession(master="grpc://host:2222")


def test_the_monitored_session_finalizes_the_graph_as_tf1s_scaffold_does(tmp_path):
    w, step, loss, train = _model()
    with gf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        sess.run(train)
        with pytest.raises(RuntimeError, match="Graph is finalized"):
            gf.square(w)  # an op built per step: TF1 refuses it here too
    assert gf.get_default_graph().finalized
    # a second session on the same graph takes the first one's init ops
    with gf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        assert sess.run(step) == 1
