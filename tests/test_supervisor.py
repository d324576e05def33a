"""``tf.train.Supervisor``, ``SessionManager``, ``Scaffold`` and TF1's other session hooks,
used as TF1 training loops use them."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import gradflow as gf


def _model():
    """w -> 0.8 w per step (gradient descent on w*w at rate 0.1), with a global step."""
    w = gf.Variable(5.0, name="w")
    step = gf.train.get_or_create_global_step()
    loss = gf.multiply(w, w, name="loss")
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return w, step, loss, train


class Interrupted(Exception):
    pass


def _supervised_run(logdir, stop_at, interrupt_at=None):
    """A TF1 Supervisor loop that saves by hand every 3 steps (and is interrupted)."""
    with gf.Graph().as_default():
        w, step, loss, train = _model()
        sv = gf.train.Supervisor(logdir=logdir, save_model_secs=3600, save_summaries_secs=0)
        with sv.managed_session() as sess:
            start = int(sess.run(step))
            while not sv.should_stop():
                _, s = sess.run([train, step])
                if (s + 1) % 3 == 0:
                    sv.saver.save(sess, sv.save_path, global_step=sv.global_step)
                if interrupt_at is not None and s + 1 == interrupt_at:
                    raise Interrupted("power cut")
                if s + 1 >= stop_at:
                    sv.request_stop()
            return start, float(sess.run(w))


def test_a_supervised_loop_restarts_from_its_checkpoint_after_an_interruption(tmp_path):
    logdir = str(tmp_path)
    with pytest.raises(Interrupted, match="power cut"):
        _supervised_run(logdir, stop_at=10, interrupt_at=7)
    # the checkpoint thread saved step 0 at the start; the loop saved steps 3 and 6
    assert gf.train.latest_checkpoint(logdir) == os.path.join(logdir, "model.ckpt-6")
    assert os.path.isfile(os.path.join(logdir, "model.ckpt-0.index"))
    assert any(f.startswith("events.out.tfevents") for f in os.listdir(logdir))
    start, w = _supervised_run(logdir, stop_at=10)
    assert start == 6
    np.testing.assert_allclose(w, 5.0 * 0.8 ** 10, rtol=1e-5)


def test_supervisor_defaults_summaries_and_stopping(tmp_path):
    with gf.Graph().as_default() as graph:
        w, step, loss, train = _model()
        gf.summary.scalar("loss", loss)
        sv = gf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0,
                                 save_summaries_secs=3600)
        assert graph.finalized and sv.is_chief and sv.global_step is step
        assert sv.summary_op is not None and sv.saver is gf.get_collection("savers")[0]
        assert sv.init_op is gf.get_collection(gf.GraphKeys.INIT_OP)[0]
        assert sv.save_path == os.path.join(str(tmp_path), "model.ckpt")
        with sv.managed_session() as sess:
            sv.summary_computed(sess, sess.run(sv.summary_op))
            sess.run(train)
            raise gf.errors.OutOfRangeError(None, None, "end of input")  # a clean stop
        assert sv.should_stop()
        sv.summary_writer.reopen()  # stop() closed it, as TF1's does
        sess2 = sv.prepare_or_wait_for_session(start_standard_services=False)
        assert sess2.run(w) == 5.0  # no checkpoint (save_model_secs=0): initialized
        sess2.close()
    assert gf.train.latest_checkpoint(str(tmp_path)) is None


def test_supervisor_without_logdir_and_loop():
    with gf.Graph().as_default():
        w, step, _, train = _model()
        sv = gf.train.Supervisor(logdir=None)
        assert sv.summary_writer is None
        ticks = []
        with sv.managed_session() as sess:
            sv.loop(0.01, lambda: ticks.append(1))
            for _ in range(3):
                sess.run(train)
            assert sess.run(step) == 3
        assert ticks
        with pytest.raises(RuntimeError, match="summary writer"):
            sv.summary_computed(None, b"")


def test_session_manager_prepare_recover_and_wait(tmp_path):
    w, step, _, train = _model()
    saver = gf.train.Saver()
    init = gf.global_variables_initializer()
    manager = gf.train.SessionManager(ready_op=gf.train.session_manager.UNINITIALIZED_GLOBALS)
    sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert restored is False
    sess.close()
    called = []
    sess = manager.prepare_session("", init_op=init, saver=saver, checkpoint_dir=str(tmp_path),
                                   init_fn=called.append)
    assert called == [sess]
    sess.run(train)
    saver.save(sess, str(tmp_path / "model"), global_step=step)
    sess.close()
    sess, restored = manager.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert restored and sess.run(step) == 1
    sess.close()
    sess = manager.prepare_session("", saver=saver,
                                   checkpoint_filename_with_path=str(tmp_path / "model-1"))
    np.testing.assert_allclose(sess.run(w), 4.0)
    sess.close()
    with pytest.raises(RuntimeError, match="no init_op or init_fn"):
        manager.prepare_session("")
    with pytest.raises(RuntimeError, match="did not make model ready.*w, global_step"):
        manager.prepare_session("", init_fn=lambda s: None)
    with pytest.raises(ValueError, match="both checkpoint_dir"):
        manager.prepare_session("", init_op=init, saver=saver, checkpoint_dir="a",
                                checkpoint_filename_with_path="b")
    not_ready = gf.train.SessionManager(ready_op=gf.constant(["w"]), recovery_wait_secs=0.01)
    with pytest.raises(gf.errors.OpError, match="not ready after waiting"):
        not_ready.wait_for_session("", max_wait_secs=0.05)
    ready = gf.train.SessionManager(ready_op=gf.constant(np.zeros(0, np.int32)))
    ready.wait_for_session("").close()


def test_scaffold_defaults_init_fn_and_monitored_training_session(tmp_path):
    w, step, _, train = _model()
    seen = []

    def init_fn(scaffold, sess):
        seen.append(scaffold)
        w.load(2.0, sess)

    scaffold = gf.train.Scaffold(init_fn=init_fn)
    with gf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), scaffold=scaffold,
                                           save_checkpoint_steps=1,
                                           save_summaries_steps=None) as sess:
        assert seen == [scaffold] and sess.run(w) == 2.0
        sess.run(train)
    assert scaffold.saver is gf.get_collection("savers")[0]
    assert scaffold.init_op is gf.get_collection(gf.GraphKeys.INIT_OP)[0]
    assert gf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-1")
    copy = gf.train.Scaffold(copy_from_scaffold=scaffold, init_feed_dict={})
    assert copy.saver is scaffold.saver and copy.init_feed_dict == {}


def test_scaffold_refuses_two_items_in_a_collection():
    gf.Variable(1.0)
    gf.add_to_collection(gf.GraphKeys.INIT_OP, gf.no_op())
    gf.add_to_collection(gf.GraphKeys.INIT_OP, gf.no_op())
    with pytest.raises(RuntimeError, match='More than one item in the collection "init_op"'):
        gf.train.Scaffold().finalize()


# -- hooks ----------------------------------------------------------------------------


def _run(hooks, steps, train, **kwargs):
    with gf.train.MonitoredSession(hooks=hooks, **kwargs) as sess:
        for _ in range(steps):
            if sess.should_stop():
                break
            sess.run(train)
    return sess


def test_logging_tensor_hook_logs_every_n_iter_and_at_end(caplog):
    w, step, loss, train = _model()
    hook = gf.train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="gradflow"):
        _run([hook], 5, train)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    w_at = [np.float32(5.0)]
    for _ in range(5):
        w_at.append(w_at[-1] - np.float32(0.2) * w_at[-1])
    want = [f"loss = {str(w_at[s] * w_at[s])}, step = {s}" for s in (0, 2, 4, 5)]
    assert [line.split(" (")[0] for line in lines] == want
    with pytest.raises(ValueError, match="every_n_iter"):
        gf.train.LoggingTensorHook([loss])


def test_nan_tensor_hook_raises_or_stops():
    x = gf.placeholder(gf.float32, [], name="x")
    loss = gf.identity(x * 1.0)
    with pytest.raises(gf.train.NanLossDuringTrainingError, match="NaN loss during training"):
        with gf.train.MonitoredSession(hooks=[gf.train.NanTensorHook(loss)]) as sess:
            sess.run(loss, {x: 1.0})
            sess.run(loss, {x: np.nan})
    with gf.train.MonitoredSession(hooks=[gf.train.NanTensorHook(loss, False)]) as sess:
        sess.run(loss, {x: np.nan})
        assert sess.should_stop()


def test_profiler_step_counter_final_ops_and_feed_fn_hooks(tmp_path, caplog):
    w, step, loss, train = _model()
    scale = gf.placeholder_with_default(1.0, [], name="scale")
    scaled = loss * scale
    final = gf.train.FinalOpsHook(scaled, final_ops_feed_dict={scale: 3.0})
    hooks = [gf.train.ProfilerHook(save_steps=2, output_dir=str(tmp_path)),
             gf.train.StepCounterHook(every_n_steps=1, output_dir=str(tmp_path)),
             gf.train.FeedFnHook(lambda: {scale: 2.0}), final]
    with caplog.at_level(logging.INFO, logger="gradflow"):
        _run(hooks, 5, train)
    timelines = sorted(f for f in os.listdir(tmp_path) if f.startswith("timeline-"))
    assert timelines == ["timeline-2.json", "timeline-4.json"]  # as TensorFlow 2.21 names them
    trace = json.loads((tmp_path / "timeline-2.json").read_text())
    assert any(e.get("ph") == "X" for e in trace["traceEvents"])
    assert "global_step/sec" in caplog.text
    np.testing.assert_allclose(final.final_ops_values, 3 * (5 * 0.8 ** 5) ** 2, rtol=1e-5)
    with gf.train.MonitoredSession(hooks=[gf.train.FeedFnHook(lambda: {scale: 2.0})]) as sess:
        np.testing.assert_allclose(sess.run(scaled), 2 * 25.0)


def test_global_step_waiter_and_second_or_step_timer():
    w, step, _, train = _model()
    _run([gf.train.GlobalStepWaiterHook(wait_until_step=0)], 2, train)
    timer = gf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(2) and timer.should_trigger_for_step(3)
    assert timer.update_last_triggered_step(3)[1] == 3 and timer.last_triggered_step() == 3
    with pytest.raises(ValueError, match="every_secs or every_steps"):
        gf.train.SecondOrStepTimer()


def test_checkpoint_saver_listener_is_told_and_can_stop(tmp_path):
    w, step, _, train = _model()
    told = []

    class Listener(gf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            told.append(global_step_value)
            return global_step_value >= 2

    hook = gf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, listeners=[Listener()])
    _run([hook], 10, train)
    assert told == [0, 1, 2]
