"""Captured CUDA-graph runs on a real GPU (skipped without CuPy and a CUDA device):
captured and uncaptured CuPy runs agree with NumPy on the MLP, CNN and LSTM training
steps; checkpoints move between cupy and numpy; a new feed shape captures again; a
steady captured step launches one graph and allocates nothing from CuPy's pool; two
replays draw different dropout masks."""

from __future__ import annotations

import numpy as np
import pytest
from test_steady_memory import NETWORKS, session_of

import gradflow as gf
from gradflow.capture import WARM_RUNS

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

STEPS = WARM_RUNS + 4


def _train(name, backend, capture=None, steps=STEPS, dtype=gf.float32):
    """``(variables, losses of the steps, plans)`` after ``steps`` training steps."""
    sess, train, feed, variables = session_of(name, dtype, backend=backend, capture=capture)
    loss, = sess.graph.get_collection(gf.GraphKeys.LOSSES)
    with sess:
        losses = [sess.run([train, loss], feed)[1] for _ in range(steps)]
        plans = [p for p in sess._plans.values() if hasattr(p, "captured")]
        return [sess.run(v) for v in variables], np.array(losses), plans


# In float32 the variables after a few steps are no test of agreement: a ReLU input
# within rounding of 0 (a handful of 3.2 million in the CNN's second convolution at batch
# 256) falls on either side of the kink, depending on the order of a sum, and moves a
# whole element of the kernel's gradient; Adam then turns every sign of a gradient near
# 0 into a step of the learning rate. The NumPy and PyTorch CPU backends differ by up to
# 6e-3 of the largest gradient there, each as far from the float64 gradient. So: the
# variables in float64, where one number is to be expected, and float32's losses.
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_captured_and_uncaptured_runs_agree_with_numpy(name):
    reference, _, _ = _train(name, "numpy", dtype=gf.float64)
    plain, _, _ = _train(name, "cupy", capture=False, dtype=gf.float64)
    captured, _, plans = _train(name, "cupy", capture=True, dtype=gf.float64)
    print(name, "float64 capture:", [p.capture_failure or "captured" for p in plans])
    for ref, a, b in zip(reference, plain, captured):
        np.testing.assert_allclose(a, ref, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(b, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_float32_steps_report_numpys_losses(name):
    _, reference, _ = _train(name, "numpy")
    _, plain, _ = _train(name, "cupy", capture=False)
    _, captured, plans = _train(name, "cupy", capture=True)
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]
    np.testing.assert_allclose(plain, reference, rtol=2e-5)
    np.testing.assert_allclose(captured, reference, rtol=2e-5)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_the_training_step_is_captured(name):
    _, _, plans = _train(name, "cupy", capture=True)
    assert any(p.captured is not None for p in plans), [p.capture_failure for p in plans]


def test_a_steady_captured_step_launches_one_graph_and_allocates_nothing():
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        train, feed = NETWORKS["mlp"]()
        init = gf.global_variables_initializer()
    with gf.Session(graph=graph, backend="cupy", capture=True) as sess:
        sess.run(init)
        for _ in range(WARM_RUNS + 2):
            sess.run(train, feed)
        pool = cp.get_default_memory_pool()
        before = pool.used_bytes(), pool.total_bytes()
        launches = []
        plan = next(p for p in sess._plans.values() if getattr(p, "captured", None))
        replay = plan.captured._replay
        plan.captured._replay = lambda: launches.append(1) or replay()
        for _ in range(5):
            sess.run(train, feed)
        sess.backend.synchronize()
        assert launches == [1] * 5
        assert (pool.used_bytes(), pool.total_bytes()) == before


def test_a_checkpoint_moves_between_cupy_and_numpy(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        train, feed = NETWORKS["mlp"]()
        init = gf.global_variables_initializer()
        saver = gf.train.Saver()
        variables = gf.global_variables()
    with gf.Session(graph=graph, backend="cupy") as sess:
        sess.run(init)
        for _ in range(STEPS):
            sess.run(train, feed)
        path = saver.save(sess, str(tmp_path / "model"))
        values = [sess.run(v) for v in variables]
    with gf.Session(graph=graph, backend="numpy") as sess:
        saver.restore(sess, path)
        for v, want in zip(variables, values):
            np.testing.assert_array_equal(sess.run(v), want)
        sess.run(train, feed)
        path = saver.save(sess, str(tmp_path / "back"))
        values = [sess.run(v) for v in variables]
    with gf.Session(graph=graph, backend="cupy") as sess:
        saver.restore(sess, path)
        for v, want in zip(variables, values):
            np.testing.assert_array_equal(sess.run(v), want)


def test_a_new_feed_shape_is_captured_again():
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        train, feed = NETWORKS["mlp"]()
        init = gf.global_variables_initializer()
    half = {t: v[: len(v) // 2] for t, v in feed.items()}
    with gf.Session(graph=graph, backend="cupy", capture=True) as sess:
        sess.run(init)
        for batch in [feed] * STEPS + [half] * STEPS:
            sess.run(train, batch)
        captured = [p for p in sess._plans.values() if getattr(p, "captured", None)]
        assert len(captured) == 2


def test_replays_draw_new_dropout_masks():
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        x = gf.placeholder(gf.float32, [64, 256])
        y = gf.nn.dropout(x, 0.5)
    ones = np.ones((64, 256), np.float32)
    with gf.Session(graph=graph, backend="cupy", capture=True) as sess:
        masks = [sess.run(y, {x: ones}) for _ in range(WARM_RUNS + 3)]
        plan = next(p for p in sess._plans.values() if hasattr(p, "captured"))
        assert plan.captured is not None, plan.capture_failure
    for a, b in zip(masks, masks[1:]):
        assert not np.array_equal(a, b)
    for m in masks:
        assert set(np.unique(m)) <= {0.0, 2.0}
        assert 0.4 < (m > 0).mean() < 0.6
