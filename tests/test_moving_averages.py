"""``train.ExponentialMovingAverage`` against TF1's formulas, and the evaluation pattern
of restoring the averages into a fresh graph."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


def test_shadows_follow_the_tf1_update_with_num_updates(backend):
    w = gf.Variable(np.array([1.0, -2.0]), name="w")
    x = gf.placeholder(gf.float64, ())
    step = gf.Variable(0, name="step", trainable=False, dtype=gf.int64)
    scaled = w * x  # a tensor is averaged too; its shadow starts at zero
    ema = gf.train.ExponentialMovingAverage(0.9, num_updates=step)
    train = w.assign_add(gf.constant([0.5, 0.25], gf.float64))
    with gf.control_dependencies([train]):
        update = ema.apply([w, scaled])
    bump = step.assign_add(1)
    shadow_w, shadow_t = ema.average(w), ema.average(scaled)
    assert shadow_w.name == "w/ExponentialMovingAverage" == ema.average_name(w)
    assert not shadow_w.trainable and w in gf.moving_average_variables()
    ref_w, ref_s, value = np.array([1.0, -2.0]), np.zeros(2), np.array([1.0, -2.0])
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for n in range(5):
            sess.run(update, {x: 2.0})
            sess.run(bump)
            # the variable's update reads the weights its control dependency assigned;
            # the tensor, built outside that block, the weights the run started with
            decay = min(0.9, (1 + n) / (10 + n))
            ref_s = ref_s - (1 - decay) * (ref_s - value * 2.0)
            value = value + [0.5, 0.25]
            ref_w = ref_w - (1 - decay) * (ref_w - value)
            got_w, got_s = sess.run([shadow_w, shadow_t])
            np.testing.assert_allclose(got_w, ref_w, rtol=1e-12)
            np.testing.assert_allclose(got_s, ref_s, rtol=1e-12)


def test_variables_to_restore_loads_the_averages_into_an_evaluation_graph(tmp_path):
    train_graph = gf.Graph()
    with train_graph.as_default():
        w = gf.Variable(np.zeros(3, np.float32), name="dense/w")
        count = gf.Variable(0, name="count", trainable=False)
        ema = gf.train.ExponentialMovingAverage(0.5)
        with gf.control_dependencies([w.assign_add(np.ones(3, np.float32))]):
            update = ema.apply([w])
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for _ in range(3):
                sess.run(update)
            sess.run(count.assign(7))
            averaged = sess.run(ema.average(w))
            path = saver.save(sess, str(tmp_path / "model"))
    eval_graph = gf.Graph()
    with eval_graph.as_default():
        w = gf.Variable(np.zeros(3, np.float32), name="dense/w")
        count = gf.Variable(0, name="count", trainable=False)
        restore = gf.train.ExponentialMovingAverage(0.5).variables_to_restore()
        assert restore == {"dense/w/ExponentialMovingAverage": w, "count": count}
        with gf.Session() as sess:
            gf.train.Saver(restore).restore(sess, path)
            got_w, got_count = sess.run([w, count])
    # shadow: 0 -> 0.5 -> 1.25 -> 2.125 while w went 1, 2, 3
    np.testing.assert_allclose(averaged, [2.125] * 3)
    np.testing.assert_allclose(got_w, averaged)
    assert got_count == 7


def test_bad_arguments():
    with pytest.raises(ValueError, match="decay must be in"):
        gf.train.ExponentialMovingAverage(1.5)
    ema = gf.train.ExponentialMovingAverage(0.9)
    with pytest.raises(TypeError, match="'counter' is int32"):
        ema.apply([gf.Variable(0, name="counter")])
    with pytest.raises(ValueError, match="var_list is empty"):
        ema.apply([])
