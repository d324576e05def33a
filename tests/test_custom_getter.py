"""``custom_getter`` on ``variable_scope`` and ``get_variable`` (issue 49), as TF1 calls
it: ``getter(next_getter, name, ...)`` with every argument of ``get_variable`` as a
keyword, scopes' getters nested inner around outer, ``get_variable``'s replacing the
scope's; and NVIDIA's float32-master-weights idiom training a small dense net in
float16 and bfloat16 to the float32 loss.

The calls and keywords below are those TF 2.21's ``compat.v1`` made on the same program
(run by hand with /tmp/bench/bin/python; ``tf.layers`` is gone from TF 2.21 with Keras 3,
so the layers part was not compared).
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends import available

KEYWORDS = ["aggregation", "caching_device", "collections", "constraint", "dtype",
            "initializer", "partitioner", "regularizer", "reuse", "shape", "synchronization",
            "trainable", "use_resource", "validate_shape"]
BACKENDS = [pytest.param("numpy"),
            pytest.param("torch", marks=pytest.mark.skipif(
                "torch" not in available(), reason="PyTorch is not installed"))]


def _recorder(calls, tag):
    # the first parameter must be called ``getter``: TF1 passes it by that keyword
    def recorder(getter, name, *args, **kwargs):
        calls.append((tag, name, sorted(kwargs)))
        return getter(name, *args, **kwargs)

    return recorder


def test_scopes_getters_nest_inner_around_outer_with_every_keyword():
    calls = []
    with gf.Graph().as_default():
        with gf.variable_scope("a", custom_getter=_recorder(calls, "outer")):
            with gf.variable_scope("b", custom_getter=_recorder(calls, "inner")):
                v = gf.get_variable("v", [2])
            with gf.variable_scope("c"):  # no getter of its own: the outer one's
                u = gf.get_variable("u", [2])
            w = gf.get_variable("w", [3], custom_getter=_recorder(calls, "given"))
    assert [c[:2] for c in calls] == [("inner", "a/b/v"), ("outer", "a/b/v"),
                                      ("outer", "a/c/u"), ("given", "a/w")]
    assert all(c[2] == KEYWORDS for c in calls)
    assert (v.name, u.name, w.name) == ("a/b/v", "a/c/u", "a/w")
    assert isinstance(v, gf.Variable) and v.dtype is gf.float32


def test_getter_sees_the_resolved_arguments_and_may_change_them():
    seen = {}

    def changing(getter, name, shape=None, dtype=None, initializer=None, trainable=None,
                 **kwargs):
        seen.update(name=name, shape=shape, dtype=dtype, trainable=trainable,
                    initializer=initializer, reuse=kwargs["reuse"])
        return getter(name + "_renamed", [4], dtype=gf.float64, initializer=initializer,
                      trainable=False, **kwargs)

    init = gf.constant_initializer(2.0)
    with gf.Graph().as_default():
        with gf.variable_scope("s", initializer=init, custom_getter=changing):
            v = gf.get_variable("v", [3])
        assert seen == {"name": "s/v", "shape": [3], "dtype": gf.float32, "trainable": True,
                        "initializer": init, "reuse": False}
        assert v.name == "s/v_renamed" and v.dtype is gf.float64 and tuple(v.shape) == (4,)
        assert v not in gf.trainable_variables() and v in gf.global_variables()
        with gf.Session() as sess:
            sess.run(v.initializer)
            assert sess.run(v).tolist() == [2.0] * 4


def test_a_getter_without_kwargs_gets_no_constraint_and_errors():
    def plain(getter, name, shape, dtype, initializer, regularizer, reuse, trainable,
              collections, caching_device, partitioner, validate_shape, use_resource,
              synchronization, aggregation):
        return getter(name, shape, dtype, initializer, regularizer, reuse, trainable,
                      collections, caching_device, partitioner, validate_shape, use_resource)

    with gf.Graph().as_default():
        assert gf.get_variable("p", [2], custom_getter=plain).name == "p"
        with pytest.raises(ValueError, match="custom_getter must be callable"):
            gf.variable_scope("x", custom_getter=3)
        with pytest.raises(ValueError, match="custom_getter must be callable"):
            gf.get_variable("q", [2], custom_getter="no")


def test_reuse_returns_the_shared_variable_through_the_getter():
    calls = []
    getter = _recorder(calls, "g")
    with gf.Graph().as_default():
        with gf.variable_scope("r", custom_getter=getter):
            first = gf.get_variable("v", [2])
        with gf.variable_scope("r", reuse=True, custom_getter=getter):
            again = gf.get_variable("v", [2])
        with gf.variable_scope("r", reuse=gf.AUTO_REUSE):
            auto = gf.get_variable("v", [2])
        assert first is again is auto
        assert [c[1] for c in calls] == ["r/v", "r/v"]
        with pytest.raises(ValueError, match="already exists"):
            with gf.variable_scope("r", custom_getter=getter):
                gf.get_variable("v", [2])


def test_set_custom_getter_on_the_current_scope():
    calls = []
    with gf.Graph().as_default():
        with gf.variable_scope("z") as scope:
            scope.set_custom_getter(_recorder(calls, "set"))
            gf.get_variable("v", [1])
            assert scope.custom_getter is not None
        gf.get_variable_scope().set_custom_getter(_recorder(calls, "root"))
        gf.get_variable("top", [1])
    assert [c[:2] for c in calls] == [("set", "z/v"), ("root", "top")]


def float32_variable_storage_getter(getter, name, shape=None, dtype=None, initializer=None,
                                    regularizer=None, trainable=True, *args, **kwargs):
    """NVIDIA DeepLearningExamples' getter, as written there: trainable variables are
    stored in float32 and read as a cast to the layer's dtype."""
    storage_dtype = gf.float32 if trainable else dtype
    variable = getter(name, shape, dtype=storage_dtype, initializer=initializer,
                      regularizer=regularizer, trainable=trainable, *args, **kwargs)  # noqa: B026
    if trainable and dtype != gf.float32:
        variable = gf.cast(variable, dtype)
    return variable


def _train(backend, dtype, steps=60):
    """A 2-layer dense net on a fixed regression problem, computing in ``dtype`` with
    float32 master weights; the loss (in float32) before and after."""
    r = np.random.RandomState(0)
    x_value = r.randn(64, 8).astype(np.float32)
    y_value = np.tanh(x_value @ r.randn(8, 1)).astype(np.float32)
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [None, 8])
        y = gf.placeholder(gf.float32, [None, 1])
        with gf.variable_scope("net", custom_getter=float32_variable_storage_getter):
            # seeded initializers: the same start whatever the graph's other ops
            h = gf.layers.dense(gf.cast(x, dtype), 16, activation=gf.nn.relu,
                                kernel_initializer=gf.glorot_uniform_initializer(seed=1))
            out = gf.layers.dense(h, 1, kernel_initializer=gf.glorot_uniform_initializer(seed=2))
        assert out.dtype is dtype
        weights = gf.trainable_variables()
        assert [v.dtype for v in weights] == [gf.float32] * 4
        loss = gf.reduce_mean(gf.square(gf.cast(out, gf.float32) - y))
        grads = gf.gradients(loss, weights)
        assert [g.dtype for g in grads] == [gf.float32] * 4  # each its variable's dtype
        train = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            feed = {x: x_value, y: y_value}
            first = sess.run(loss, feed)
            for _ in range(steps):
                sess.run(train, feed)
            return first, sess.run(loss, feed)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [gf.float16, gf.bfloat16], ids=lambda d: d.name)
def test_float32_master_weights_train_to_the_float32_loss(backend, dtype):
    """Margin: the half-precision run's final loss within 2% of float32's (the issue's
    goal; measured after 60 steps: 0.01% off for float16 on NumPy and torch, 0.5% for
    bfloat16), after both fell by more than 3x."""
    first32, last32 = _train(backend, gf.float32)
    first, last = _train(backend, dtype)
    assert last32 < first32 / 3 and last < first / 3
    assert abs(last - last32) <= 0.02 * last32, (last, last32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv2d_and_dense_layers_of_float16_read_float32_variables(backend):
    r = np.random.RandomState(4)
    images = r.rand(2, 6, 6, 3).astype(np.float16)
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float16, [None, 6, 6, 3])
        with gf.variable_scope("cnn", custom_getter=float32_variable_storage_getter):
            h = gf.layers.conv2d(x, 4, 3, activation=gf.nn.relu)
            out = gf.layers.dense(gf.layers.flatten(h), 2)
        assert h.dtype is gf.float16 and out.dtype is gf.float16
        kernel = gf.trainable_variables()[0]
        assert kernel.name == "cnn/conv2d/kernel" and kernel.dtype is gf.float32
        step = gf.train.GradientDescentOptimizer(0.5).minimize(
            gf.reduce_sum(gf.cast(out, gf.float32)))
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            before = sess.run(kernel)
            sess.run(step, {x: images})
            after = sess.run(kernel)
    assert after.dtype == np.float32 and not np.array_equal(before, after)
