"""Mixed precision: loss scaling (``tf.train.experimental``, ``tf.contrib.mixed_precision``)
and the graph rewrite (``gradflow.passes.mixed_precision``), in float16.

The reference values of the dynamic loss scale's run are TensorFlow 2.21's
``tf.compat.v1.train.experimental`` on the same graph (pasted as literals: TF is not a
test dependency). The bfloat16 tests are in ``tests/test_mixed_precision_bf16.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_mixed_precision_training import half_backends

import gradflow as gf
from gradflow import config
from gradflow.passes import optimize

experimental = gf.train.experimental
contrib_mp = gf.contrib.mixed_precision


@pytest.fixture(autouse=True)
def rewrite_off():
    """Each test starts and ends with TF1's process-wide rewrite flag off."""
    config.set_mixed_precision_graph_rewrite(None)
    yield
    config.set_mixed_precision_graph_rewrite(None)


def _linear_step(opt_of, w0=1.0):
    """``loss = sum(x @ w)`` with ``w`` 3x2 and the training step ``opt_of(Adam)``
    makes, with the global step."""
    x = gf.placeholder(gf.float32, [None, 3], name="x")
    w = gf.Variable(np.full((3, 2), w0, np.float32), name="w")
    adam = gf.train.AdamOptimizer(0.1)
    opt = opt_of(adam)
    step_count = gf.train.get_or_create_global_step()
    loss = gf.reduce_sum(gf.matmul(x, w))
    return x, w, adam, opt, step_count, opt.minimize(loss, global_step=step_count)


# -- loss scales ----------------------------------------------------------------------

def test_dynamic_loss_scale_run_matches_tensorflow(backend):
    scale = experimental.DynamicLossScale(initial_loss_scale=8, increment_period=2,
                                          multiplier=2)
    x, w, adam, _, step_count, train = _linear_step(
        lambda adam: experimental.MixedPrecisionLossScaleOptimizer(adam, scale))
    # TF 2.21 tf.compat.v1, same graph: (scale, global step, w[0,0], Adam's m[0,0])
    expected = [(8.0, 1, 0.90000004, 0.20000005), (16.0, 2, 0.80000037, 0.38000008),
                (16.0, 3, 0.70000106, 0.5420001), (8.0, 3, 0.70000106, 0.5420001),
                (4.0, 3, 0.70000106, 0.5420001), (4.0, 4, 0.60000134, 0.68780017)]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for feed, want in zip([1, 1, 1, np.inf, np.nan, 1], expected):
            sess.run(train, {x: np.full((2, 3), feed, np.float32)})
            got = sess.run([scale(), step_count, w[0, 0], adam.get_slot(w, "m")[0, 0]])
            np.testing.assert_allclose([float(g) for g in got], want, rtol=1e-5)


def test_dynamic_loss_scale_floor_and_overflowing_increase():
    big = experimental.DynamicLossScale(initial_loss_scale=2.0 ** 127, increment_period=1,
                                        multiplier=2)
    small = experimental.DynamicLossScale(initial_loss_scale=2, increment_period=1,
                                          multiplier=4)
    finite, infinite = gf.constant([1.0]), gf.constant([np.inf])
    grow, _ = big.update([finite])
    shrink, applied = small.update([infinite])
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(grow)  # 2**128 overflows float32: the scale stays
        assert sess.run(big()) == np.float32(2.0 ** 127)
        sess.run(shrink)  # 2 / 4 is below 1: the scale is 1
        assert sess.run(small()) == 1.0
        assert not sess.run(applied)


def test_loss_scale_defaults_and_identifiers():
    assert experimental.DynamicLossScale().get_config() == {
        "initial_loss_scale": 32768.0, "increment_period": 2000, "multiplier": 2.0}
    assert experimental.FixedLossScale(128).get_config() == {"loss_scale_value": 128.0}
    opt = experimental.MixedPrecisionLossScaleOptimizer(gf.train.AdamOptimizer(), 64)
    assert isinstance(opt.loss_scale, experimental.FixedLossScale)
    with pytest.raises(ValueError, match="Could not interpret loss scale identifier: foo"):
        experimental.MixedPrecisionLossScaleOptimizer(gf.train.AdamOptimizer(), "foo")
    with pytest.raises(ValueError, match='"opt" must be an instance of Optimizer'):
        experimental.MixedPrecisionLossScaleOptimizer(3, "dynamic")
    with pytest.raises(ValueError, match="at least 1"):
        experimental.FixedLossScale(0.5)
    dynamic = experimental.MixedPrecisionLossScaleOptimizer(gf.train.AdamOptimizer(), "dynamic")
    assert dynamic.get_name() == "Adam"  # TF's: the wrapped optimizer's name
    assert dynamic.variables() == list(dynamic.loss_scale.weights)  # Adam's come once used
    assert [v.name for v in dynamic.variables()] == ["current_loss_scale_1", "good_steps_1"]
    variables = {v.name: v for v in gf.global_variables()}
    assert not variables["current_loss_scale"].trainable
    assert variables["good_steps"].dtype == gf.int64


def test_fixed_loss_scale_gives_the_unscaled_gradients(backend):
    x = gf.placeholder(gf.float32, [None, 3])
    w = gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
    loss = gf.reduce_mean(gf.square(gf.matmul(x, w)))
    plain = gf.train.GradientDescentOptimizer(0.1).compute_gradients(loss, [w])[0][0]
    fixed = experimental.MixedPrecisionLossScaleOptimizer(
        gf.train.GradientDescentOptimizer(0.1), 1024).compute_gradients(loss, [w])[0][0]
    manager = contrib_mp.FixedLossScaleManager(512)
    contrib = contrib_mp.LossScaleOptimizer(gf.train.GradientDescentOptimizer(0.1),
                                            manager).compute_gradients(loss, [w])[0][0]
    feed = {x: np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)}
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        want, got, got_contrib = sess.run([plain, fixed, contrib], feed)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got_contrib, want, rtol=1e-6)


def test_overflowing_step_changes_no_variable_slot_or_step(backend):
    x, w, adam, opt, step_count, train = _linear_step(
        lambda adam: experimental.MixedPrecisionLossScaleOptimizer(adam, "dynamic"))
    state = [w, adam.get_slot(w, "m"), adam.get_slot(w, "v"), step_count,
             *[v for v in adam.variables() if "power" in v.name]]
    assert len(state) == 6
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train, {x: np.ones((2, 3), np.float32)})
        before = sess.run(state)
        sess.run(train, {x: np.full((2, 3), np.inf, np.float32)})
        after = sess.run(state)
        assert sess.run(opt.loss_scale()) == 2.0 ** 14  # halved from 2**15
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_exponential_update_manager_steps(backend):
    manager = contrib_mp.ExponentialUpdateLossScaleManager(
        16, incr_every_n_steps=2, decr_every_n_nan_or_inf=2, incr_ratio=2, decr_ratio=0.5)
    x, w, adam, _, step_count, train = _linear_step(
        lambda adam: contrib_mp.LossScaleOptimizer(adam, manager))
    names = sorted(v.name for v in gf.global_variables() if v.name.startswith("loss_scale/"))
    assert names == ["loss_scale/bad_steps", "loss_scale/good_steps", "loss_scale/loss_scale"]
    # (feed, scale after, global step after): two finite steps double the scale, two
    # non-finite ones in a row halve it, one finite step between them resets the count
    runs = [(1, 16, 1), (1, 32, 2), (np.inf, 32, 2), (1, 32, 3), (np.inf, 32, 3),
            (np.nan, 16, 3), (np.inf, 16, 3), (np.inf, 8, 3), (1, 8, 4)]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        w_seen = sess.run(w)
        for feed, scale, steps in runs:
            sess.run(train, {x: np.full((2, 3), feed, np.float32)})
            got_w = sess.run(w)
            assert (sess.run(manager.get_loss_scale()), sess.run(step_count)) == (scale, steps)
            assert np.isfinite(feed) or np.array_equal(got_w, w_seen)
            w_seen = got_w
    with pytest.raises(ValueError, match="at least 1"):
        contrib_mp.FixedLossScaleManager(0)


def test_loss_scale_is_saved_by_saver(tmp_path):
    x, _, _, opt, _, train = _linear_step(
        lambda adam: experimental.MixedPrecisionLossScaleOptimizer(adam, "dynamic"))
    saver = gf.train.Saver()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train, {x: np.full((2, 3), np.inf, np.float32)})
        path = saver.save(sess, str(tmp_path / "model"))
    with gf.Session() as sess:
        saver.restore(sess, path)
        assert sess.run(opt.loss_scale()) == 2.0 ** 14
    assert dict(gf.train.list_variables(path))["current_loss_scale"] == []


# -- the graph rewrite ----------------------------------------------------------------

def _mlp():
    rng = np.random.default_rng(0)
    x = gf.placeholder(gf.float32, [None, 8], name="x")
    y = gf.placeholder(gf.int64, [None], name="y")
    w1 = gf.Variable(rng.normal(size=(8, 16)).astype(np.float32) * 0.3, name="w1")
    b1 = gf.Variable(np.zeros(16, np.float32), name="b1")
    w2 = gf.Variable(rng.normal(size=(16, 4)).astype(np.float32) * 0.3, name="w2")
    logits = gf.matmul(gf.nn.relu(gf.matmul(x, w1) + b1), w2)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    feed = {x: rng.normal(size=(5, 8)).astype(np.float32), y: rng.integers(0, 4, 5)}
    return x, y, logits, loss, train, feed


def _dtypes_by_op(nodes):
    found = {}
    for node in nodes:
        found.setdefault(node.opdef.name, set()).add(node.dtype.name if node.dtype else None)
    return found


def test_rewrite_casts_products_and_keeps_losses_and_updates_float32():
    x, y, logits, loss, train, _ = _mlp()
    # the passes off, the shapes of the values fed known (as a plan specializes them)
    graph = optimize([logits, loss, train], [x, y], feed_shapes=[(5, 8), (5,)], passes=[],
                     mixed_precision=gf.float16)
    nodes = list(graph.nodes())
    by_op = _dtypes_by_op(nodes)
    assert by_op["matmul"] == {"float16"}  # the forward's 2 products, the gradient's 3
    assert sum(n.opdef.name == "matmul" for n in nodes) == 5
    assert by_op["relu"] == {"float16"} and by_op["relu_grad"] == {"float16"}
    for op in ("log_softmax", "reduce_sum", "assign"):
        assert by_op[op] == {"float32"}, op
    # the bias gradient's sum stays float32 (an unbroadcast to the same shape does nothing)
    sums = [n for n in nodes if n.opdef.name == "unbroadcast"
            and tuple(n.shape) != tuple(n.inputs[0].shape)]
    assert sums and all(n.dtype == gf.float32 for n in sums)
    # the bias add between the products is low; the optimizer's formulas are not
    adds = {n.name: n.dtype.name for n in nodes if n.opdef.name == "add"}
    assert adds["add"] == "float16"
    update_math = [n for n in nodes if n.name.startswith("Momentum/")
                   and n.opdef.kind == "compute" and n.opdef.name != "cast"]
    assert update_math and all(n.dtype == gf.float32 for n in update_math)
    # every variable is read in float32 and cast once for the products
    casts = [n for n in nodes if n.opdef.name == "cast"]
    assert sorted(n.name for n in casts if n.inputs[0].opdef.kind == "variable") == [
        "b1/mixed_precision_cast_float16", "w1/mixed_precision_cast_float16",
        "w2/mixed_precision_cast_float16"]
    assert [o.dtype for o in graph.outputs[:2]] == [gf.float32, gf.float32]


def test_rewrite_leaves_float64_and_unlisted_graphs_alone():
    a = gf.placeholder(gf.float64, [2, 2])
    b = gf.placeholder(gf.float32, [2, 2])
    f64 = gf.matmul(a, a)
    f32 = gf.exp(b) + 1.0
    graph = optimize([f64, f32], [a, b], passes=[], mixed_precision="fp16")
    assert all(n.dtype != gf.float16 for n in graph.nodes())


@pytest.mark.parametrize("backend_name", half_backends())
def test_fp16_session_computes_float32_values_closely(backend_name):
    _, _, logits, loss, _, feed = _mlp()
    with gf.Session(backend=backend_name) as sess:
        sess.run(gf.global_variables_initializer())
        want = sess.run([logits, loss], feed)
    for optimize_on in (True, False):
        with gf.Session(backend=backend_name, mixed_precision="fp16",
                        optimize=optimize_on) as sess:
            assert sess.mixed_precision == gf.float16
            sess.run(gf.global_variables_initializer())
            got = sess.run([logits, loss], feed)
        assert got[0].dtype == np.float32
        assert not np.array_equal(got[0], want[0])  # rounded through float16
        np.testing.assert_allclose(got[0], want[0], rtol=2e-2, atol=2e-3)
        np.testing.assert_allclose(got[1], want[1], rtol=2e-3)


def test_session_keyword_names_and_bad_values():
    assert gf.Session(mixed_precision="float16").mixed_precision == gf.float16
    assert gf.Session(mixed_precision="fp16").mixed_precision == gf.float16
    assert gf.Session().mixed_precision is None
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        gf.Session(mixed_precision="int8")


def test_array_api_strict_refuses_an_explicit_request_and_skips_the_flag():
    strict = gf.backends.available()["array_api_strict"]
    if strict is not None:
        pytest.skip(f"array_api_strict: {strict}")
    with pytest.raises(ValueError, match="array_api_strict backend has no float16"):
        gf.Session(backend="array_api_strict", mixed_precision="fp16")
    options = gf.ConfigProto()
    options.graph_options.rewrite_options.auto_mixed_precision = config.RewriterConfig.ON
    with pytest.raises(ValueError, match="has no float16"):
        gf.Session(backend="array_api_strict", config=options)
    experimental.enable_mixed_precision_graph_rewrite(gf.train.AdamOptimizer())
    with pytest.warns(UserWarning, match="runs in float32"):
        sess = gf.Session(backend="array_api_strict")
    assert sess.mixed_precision is None


def test_enable_and_disable_the_graph_rewrite():
    gf.Session()  # a plain Session made before: enabling warns that it is not affected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gf.Session().mixed_precision is None
    opt = experimental.enable_mixed_precision_graph_rewrite(gf.train.AdamOptimizer(),
                                                            loss_scale=128)
    assert isinstance(opt, experimental.MixedPrecisionLossScaleOptimizer)
    assert isinstance(opt.loss_scale, experimental.FixedLossScale)
    assert gf.Session().mixed_precision == gf.float16
    off = gf.ConfigProto()
    off.graph_options.rewrite_options.auto_mixed_precision = config.RewriterConfig.OFF
    assert gf.Session(config=off).mixed_precision is None
    experimental.disable_mixed_precision_graph_rewrite()
    assert gf.Session().mixed_precision is None
    on = gf.ConfigProto(graph_options=gf.GraphOptions(
        rewrite_options=config.RewriterConfig(auto_mixed_precision=config.RewriterConfig.ON)))
    assert gf.Session(config=on).mixed_precision == gf.float16
    with pytest.raises(ValueError, match='"opt" must be an instance of Optimizer'):
        experimental.enable_mixed_precision_graph_rewrite("adam")


def test_rewrite_casts_convolutions_and_their_gradients():
    rng = np.random.default_rng(0)
    images = gf.placeholder(gf.float32, [2, 8, 8, 3])
    k1 = gf.Variable(rng.normal(size=(3, 3, 3, 4)).astype(np.float32))
    k2 = gf.Variable(rng.normal(size=(3, 3, 4, 4)).astype(np.float32))
    hidden = gf.nn.relu(gf.nn.conv2d(images, k1, [1, 1, 1, 1], "SAME"))
    out = gf.reduce_mean(gf.nn.conv2d(hidden, k2, [1, 1, 1, 1], "SAME"))
    grads = gf.gradients(out, [k1, k2])
    graph = optimize([out, *grads], [images], passes=[], mixed_precision="float16")
    by_op = _dtypes_by_op(graph.nodes())
    for op in ("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "relu_grad"):
        assert by_op[op] == {"float16"}, op
    assert [o.dtype for o in graph.outputs] == [gf.float32] * 3


def test_fp16_overflow_in_the_products_skips_steps_and_lowers_the_scale():
    """In a float16 Session a scale of 2**24 makes the gradient's products overflow
    float16 (65504): those steps apply nothing and halve the scale, until one fits."""
    x, y, _, loss, _, feed = _mlp()
    scale = experimental.DynamicLossScale(initial_loss_scale=2 ** 24)
    opt = experimental.MixedPrecisionLossScaleOptimizer(gf.train.AdamOptimizer(0.01), scale)
    step_count = gf.train.get_or_create_global_step()
    train = opt.minimize(loss, global_step=step_count)
    weights = gf.trainable_variables()
    with gf.Session(mixed_precision="fp16") as sess:
        sess.run(gf.global_variables_initializer())
        start = sess.run(weights)
        scales = []
        while sess.run(step_count) == 0:
            assert len(scales) < 20
            assert all(np.array_equal(a, b) for a, b in zip(sess.run(weights), start))
            scales.append(float(sess.run(scale())))
            sess.run(train, feed)
        assert len(scales) > 1 and scales == [2.0 ** 24 / 2 ** k for k in range(len(scales))]
        assert not all(np.array_equal(a, b) for a, b in zip(sess.run(weights), start))
    with gf.Session() as sess:  # float32 at the same scale: no overflow, no skipped step
        sess.run(gf.global_variables_initializer())
        sess.run(train, feed)
        assert sess.run(step_count) == 1


def test_a_lookup_gradient_stays_sparse_through_unscaling(backend):
    """RMSProp updates only the rows looked up (TF1's sparse kernel: the other rows'
    mean squares stay 1, where a dense zero gradient would decay them); wrapped, too."""
    ids = gf.placeholder(gf.int64, [None])
    table = gf.Variable(np.arange(12, dtype=np.float32).reshape(6, 2))
    loss = gf.reduce_sum(gf.square(gf.nn.embedding_lookup(table, ids)))
    plain = gf.train.RMSPropOptimizer(0.1)
    wrapped_inner = gf.train.RMSPropOptimizer(0.1, name="Wrapped")
    wrapped = experimental.MixedPrecisionLossScaleOptimizer(wrapped_inner, 256)
    steps = [plain.minimize(loss, var_list=[table]), wrapped.minimize(loss, var_list=[table])]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        results = []
        for step, opt in zip(steps, (plain, wrapped_inner)):
            sess.run(table.initializer)
            for feed in ([0, 2, 2], [5]):
                sess.run(step, {ids: feed})
            results.append(sess.run([table, opt.get_slot(table, "rms")]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
    assert np.all(results[1][1][[1, 3, 4]] == 1.0)  # never looked up: slot untouched
