"""``import gradflow.compat.v1 as tf``: all of gradflow, plus TF 1.15's mode switches."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gradflow as gf
import gradflow.compat.v1 as v1


def test_v1_is_reachable_both_ways():
    assert gf.compat.v1 is v1
    import gradflow.compat

    assert gradflow.compat.v1 is v1


def test_v1_delegates_every_public_name():
    public = [n for n in dir(gf) if not n.startswith("_")]
    assert public  # sanity
    for name in public:
        assert getattr(v1, name) is getattr(gf, name), name
    assert set(public) <= set(dir(v1))
    assert {"Session", "placeholder", "nn", "train", "disable_v2_behavior"} <= set(v1.__all__)


def test_from_import_and_star_import():
    from gradflow.compat.v1 import Session, nn, placeholder

    assert (Session, nn, placeholder) == (gf.Session, gf.nn, gf.placeholder)
    namespace = {}
    exec("from gradflow.compat.v1 import *", namespace)
    assert namespace["train"] is gf.train and namespace["executing_eagerly"]() is False


def test_unknown_and_private_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="gradflow has no tf.no_such_op"):
        v1.no_such_op  # noqa: B018
    with pytest.raises(AttributeError):
        v1._private_thing  # noqa: B018
    assert not hasattr(v1, "__path__")  # a module, not a package


@pytest.mark.parametrize("switch", [
    "disable_v2_behavior", "disable_eager_execution", "enable_resource_variables",
    "disable_resource_variables", "disable_v2_tensorshape"])
def test_switches_towards_tf1_are_no_ops(switch):
    for module in (v1, gf):
        assert getattr(module, switch)() is None
    assert v1.executing_eagerly() is False and gf.executing_eagerly() is False
    assert v1.resource_variables_enabled() is False


@pytest.mark.parametrize("switch", [
    "enable_eager_execution", "enable_v2_behavior", "enable_v2_tensorshape"])
def test_switches_away_from_graph_mode_raise(switch):
    for module in (v1, gf):
        with pytest.raises(NotImplementedError, match=f"{switch}\\(\\): gradflow runs TF1 "
                                                      "graph mode only"):
            getattr(module, switch)()


def test_a_tf1_program_through_compat_v1(backend):
    tf = v1
    tf.disable_v2_behavior()
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.ones([2, 1]))
    y = tf.matmul(x, w)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y))
    with tf.Session(backend=backend) as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: [[1.0, 2.0]]})
        np.testing.assert_allclose(sess.run(w), [[0.9], [0.8]], rtol=1e-6)


def test_import_as_a_script_does():
    code = ("import gradflow.compat.v1 as tf\n"
            "tf.disable_v2_behavior()\n"
            "with tf.Session() as s:\n"
            "    print(s.run(tf.constant(2.0) * 3.0))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6.0"


def test_byte_and_text_helpers():
    assert gf.compat.as_bytes("é") == "é".encode() and gf.compat.as_bytes(b"x") == b"x"
    assert gf.compat.as_text(b"caf\xc3\xa9") == "café" and gf.compat.as_str("a") == "a"
    assert gf.compat.as_str_any(3) == "3" and gf.compat.as_str_any(b"b") == "b"
    with pytest.raises(TypeError, match="as_bytes: expected bytes or str, got int"):
        gf.compat.as_bytes(3)
    import pathlib

    assert gf.compat.path_to_str(pathlib.Path("a") / "b") == "a/b"
