"""TF1's ``tf.debugging`` checks added here (``assert_integer``, ``assert_scalar``,
``assert_rank_at_least``, ``assert_rank_in``, ``assert_near``, ``assert_proper_iterable``,
``assert_same_float_dtype``, ``is_tensor``, ``is_numeric_tensor``), ``tf.nest``,
``tf.compat``'s helpers, ``tf.resource_loader``, ``tf.logging.TaskLevelStatusMessage``
and ``tf.initializers.uniform_unit_scaling``.

The messages, results and exception types expected are TensorFlow 2.21's, pasted as
literals: each was observed once with ``tensorflow.compat.v1`` (graph mode) by making
the same call on the same values.
"""

from __future__ import annotations

import collections
import logging
import os

import numpy as np
import pytest

import gradflow as gf

P = collections.namedtuple("P", "x y")


@pytest.fixture(autouse=True)
def fresh_graph():
    gf.reset_default_graph()


def test_static_checks_raise_as_tf():
    x = gf.constant([1, 2], name="Const")
    with pytest.raises(TypeError, match='msg.  Expected "x" to be integer type.  Found: '):
        gf.assert_integer(gf.constant(1.0), message="msg")
    assert isinstance(gf.assert_integer(x), gf.Operation)
    with pytest.raises(ValueError, match=r"Expected scalar shape for Const:0, saw shape: "
                                         r"\(2,\)\."):
        gf.assert_scalar(x)
    s = gf.constant(1)
    assert gf.assert_scalar(s) is s
    with pytest.raises(ValueError, match=r"m\.  Tensor Const:0 must have rank at least 2\.  "
                                         r"Received rank 1, shape \(2,\)"):
        gf.assert_rank_at_least(x, 2, message="m")
    with pytest.raises(ValueError, match=r"Tensor Const:0 must have rank in \(0, 2\)\.  "
                                         r"Received rank 1, shape \(2,\)"):
        gf.assert_rank_in(x, [0, 2])
    assert gf.debugging.assert_rank_in is gf.assert_rank_in


def test_proper_iterable_and_float_dtype_as_tf():
    with pytest.raises(TypeError, match='to be a "proper" iterable.  Found: <class \'str\'>'):
        gf.assert_proper_iterable("ab")
    with pytest.raises(TypeError, match='"proper" iterable'):
        gf.assert_proper_iterable(gf.constant([1]))
    with pytest.raises(TypeError, match='Expected argument "values" to be iterable.  Found: '
                                        "<class 'int'>"):
        gf.assert_proper_iterable(3)
    assert gf.assert_proper_iterable([1]) is None
    a, b = gf.constant(1.0), gf.constant(1.0, gf.float64)
    with pytest.raises(ValueError, match="must be of the same type"):
        gf.assert_same_float_dtype([a, b])
    with pytest.raises(ValueError, match="Expected floating point type, got"):
        gf.assert_same_float_dtype([gf.constant([1])])
    with pytest.raises(ValueError, match="Expected floating point type, got"):
        gf.assert_same_float_dtype(None, gf.int32)
    assert gf.assert_same_float_dtype() is gf.float32
    assert gf.assert_same_float_dtype([b]) is gf.float64
    assert gf.assert_same_float_dtype(None, gf.float16) is gf.float16


def test_is_tensor_as_tf():
    v = gf.Variable(1.0)
    x = gf.constant([1, 2])
    st = gf.SparseTensor([[0]], [1.0], [2])
    # TF 2.21: True True True False False / False True False False False False
    assert [gf.is_tensor(o) for o in (v, x, st, np.ones(2), 3)] == [True, True, True, False,
                                                                    False]
    assert [gf.is_numeric_tensor(o) for o in (v, x, gf.constant(True), gf.constant("a"), st,
                                              np.ones(2))] == [False, True, False, False,
                                                               False, False]


def test_run_time_rank_and_near_checks(backend):
    p = gf.placeholder(gf.float32)
    a1 = gf.assert_rank_at_least(p, 2)
    a2 = gf.debugging.assert_rank_in(p, [0, 2])
    a3 = gf.assert_near(p, gf.constant([1.0, 2.0]))
    a4 = gf.debugging.assert_near(gf.constant([1.0, 2.0]), gf.constant([1.0, 2.1]), atol=0.2,
                                  rtol=0.0)
    with gf.Session(backend=backend) as sess:
        sess.run(a1, {p: np.ones((2, 2, 2), np.float32)})
        sess.run(a2, {p: 3.0})
        sess.run(a3, {p: [1.0, 2.0 + 1e-6]})
        sess.run(a4)
        for op, value in ((a1, [1.0]), (a2, [1.0]), (a3, [1.0, 2.01])):
            with pytest.raises(gf.errors.InvalidArgumentError):
                sess.run(op, {p: value})


def test_debugging_namespace_is_the_top_level_functions():
    for name in ("Assert", "assert_equal", "assert_less", "assert_rank", "assert_type",
                 "check_numerics", "is_finite", "is_nan", "is_non_decreasing"):
        assert getattr(gf.debugging, name) is getattr(gf, name)
    x = gf.constant([1.0, np.inf])
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError, match="bad"):
        sess.run(gf.debugging.assert_all_finite(x, "bad"))
    assert gf.queue.FIFOQueue is gf.FIFOQueue


def test_nest_as_tf():
    assert gf.nest.flatten({"b": [1, 2], "a": (3, None)}) == [3, None, 1, 2]
    assert gf.nest.flatten("ab") == ["ab"] and gf.nest.flatten(None) == [None]
    packed = gf.nest.pack_sequence_as({"b": [0, 0], "a": P(0, 0)}, [1, 2, 3, 4])
    assert packed == {"b": [3, 4], "a": P(x=1, y=2)} and isinstance(packed["a"], P)
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    assert gf.nest.flatten(od) == [2, 1]
    assert list(gf.nest.pack_sequence_as(od, [5, 6]).items()) == [("z", 6), ("a", 5)]
    assert gf.nest.map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == \
        [11, (22, 33)]
    # TF 2.21: TypeError, ValueError, ValueError, ValueError, ValueError, TypeError
    cases = [([1, 2], (1, 2), TypeError), ([1, 2], [1], ValueError),
             ({"a": 1}, {"b": 1}, ValueError), (1, [1], ValueError), ({"a": 1}, od, ValueError),
             (P(1, 2), (1, 2), TypeError)]
    for a, b, err in cases:
        with pytest.raises(err):
            gf.nest.assert_same_structure(a, b)
    with pytest.raises(ValueError):
        gf.nest.pack_sequence_as([0, 0], [1])
    assert gf.nest.assert_same_structure([1, 2], (1, 2), check_types=False) is None
    assert [gf.nest.is_nested(v) for v in ([], "x", {})] == [True, False, True]


def test_compat_helpers_as_tf():
    assert gf.compat.bytes_or_text_types == (bytes, str)
    assert np.int8(1).__class__.__mro__ and isinstance(np.int8(1), gf.compat.integral_types)
    assert isinstance(np.float32(1), gf.compat.real_types)
    assert isinstance(1j, gf.compat.complex_types)
    # TF 2.21's horizon is 2026-01-16
    assert gf.compat.forward_compatible(2021, 1, 1)
    assert not gf.compat.forward_compatible(2026, 1, 16)
    with gf.compat.forward_compatibility_horizon(2100, 1, 2):
        assert gf.compat.forward_compatible(2100, 1, 1)
        assert not gf.compat.forward_compatible(2100, 1, 2)
    assert not gf.compat.forward_compatible(2100, 1, 1)
    assert gf.compat.dimension_at_index(gf.placeholder(gf.float32).get_shape(), 3) is None


def test_resource_loader_uses_the_callers_folder():
    here = os.path.dirname(os.path.abspath(__file__))
    assert os.path.abspath(gf.resource_loader.get_data_files_path()) == here
    assert os.path.abspath(gf.resource_loader.get_path_to_datafile("data/x.txt")) == \
        os.path.join(here, "data", "x.txt")
    assert gf.resource_loader.readahead_file_path("/a/b") == "/a/b"


def test_task_level_status_message_logs_an_error(caplog):
    with caplog.at_level(logging.ERROR, logger="gradflow"):
        gf.logging.TaskLevelStatusMessage("task 3 done")
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert caplog.records[0].getMessage() == "task 3 done"


def test_uniform_unit_scaling_initializer_bounds():
    init = gf.uniform_unit_scaling_initializer(factor=1.5, seed=3)
    assert gf.initializers.uniform_unit_scaling is gf.uniform_unit_scaling_initializer
    w = gf.get_variable("w", (50, 8, 40), initializer=init)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        value = sess.run(w)
    limit = 1.5 * np.sqrt(3.0 / (50 * 8))  # TF1: every dimension but the last
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.9 * limit
    assert abs(value.std() - limit / np.sqrt(3.0)) < 0.05 * limit
    assert init.get_config() == {"factor": 1.5, "seed": 3, "dtype": "float32"}
    with pytest.raises(TypeError):
        gf.uniform_unit_scaling_initializer(dtype=gf.int32)


def test_io_namespace_aliases():
    assert gf.io.decode_jpeg is gf.image.decode_jpeg and gf.io.encode_png is gf.image.encode_png
    assert gf.io.decode_image is gf.image.decode_image and gf.io.decode_raw is gf.decode_raw
    assert gf.io.write_graph is gf.train.write_graph
    assert gf.io.RandomShuffleQueue is gf.RandomShuffleQueue
    assert gf.io.TFRecordCompressionType.GZIP == gf.python_io.TFRecordCompressionType.GZIP
