"""``Tensor.set_shape`` (TF1): the declared sizes reach the ops built after it, a
contradiction is a ValueError at once, a wrong declaration fails at run time naming
its line (never a wrong number), on every CPU backend; gradients pass through; the PTB
tutorial's reader, as written, gives its batches."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def _unknown_rows(x, cols):
    """``x`` through a py_func: a value whose static shape is unknown."""
    return gf.py_func(lambda a: a[:, :cols], [x], gf.float64)


def test_declared_sizes_reach_later_ops_and_are_checked_at_run_time(backend):
    x = gf.placeholder(gf.float64, (None, 4))
    y = _unknown_rows(x, 4)
    early = y * 2.0  # built before the declaration: it reads the checked value too
    assert y.shape is None
    y.set_shape([None, 4])
    assert y.shape.as_list() == [None, 4] and y.name == "PyFunc"
    total = gf.reduce_sum(y, axis=1)
    assert total.shape.as_list() == [None]
    short = _unknown_rows(x, 3)
    short.set_shape([None, 4])
    line = short.op.attrs["message"].split("set_shape at ")[1].split(" ")[0]
    value = np.arange(8.0).reshape(2, 4)
    with gf.Session(backend=backend) as sess:
        got, doubled = sess.run([total, early], {x: value})
        np.testing.assert_array_equal(got, value.sum(axis=1))
        np.testing.assert_array_equal(doubled, 2 * value)
        with pytest.raises(InvalidArgumentError,
                           match=r"'PyFunc_1' has shape \(2, 3\) at run time, but set_shape "
                                 r"at .*declared \(None, 4\)") as err:
            sess.run(short * 2.0, {x: value})
    assert "test_set_shape.py" in line and "test_set_shape.py" in str(err.value)


@pytest.mark.parametrize("known", [True, False], ids=["known-shape", "unknown-shape"])
def test_gradients_pass_through_a_declaration(backend, known):
    data = np.random.default_rng(0).standard_normal((3, 5))
    x = gf.placeholder(gf.float64, data.shape if known else (None, None))
    i = gf.placeholder(gf.int32, ())
    window = x[:, i:i + 2]
    window.set_shape([3, 2])
    assert window.shape.as_list() == [3, 2]
    weights = np.arange(6.0).reshape(3, 2)
    loss = gf.reduce_sum(gf.square(window) * weights)
    (grad,) = gf.gradients(loss, [x])
    with gf.Session(backend=backend) as sess:
        g = sess.run(grad, {x: data, i: 1})
        numeric = numeric_grad(sess, loss, x, data, feed={i: 1})
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    want = np.zeros_like(data)
    want[:, 1:3] = 2 * data[:, 1:3] * weights
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_a_contradiction_is_refused_and_nothing_new_adds_nothing():
    x = gf.placeholder(gf.float32, (None, 4))
    y = x * 2.0
    nodes = len(gf.get_default_graph().get_operations())
    y.set_shape([None, 4])
    y.set_shape(None)
    y.set_shape(gf.TensorShape([None, None]))
    assert len(gf.get_default_graph().get_operations()) == nodes
    with pytest.raises(ValueError, match=r"set_shape: 'multiply' has shape \(None, 4\), "
                                         r"which \(None, 5\) contradicts"):
        y.set_shape([None, 5])
    with pytest.raises(ValueError, match="contradicts"):
        y.set_shape([4])
    with pytest.raises(TypeError, match="is an operation, which has no shape"):
        gf.no_op().set_shape([1])


def test_a_placeholders_shape_is_refined_and_its_feeds_checked():
    p = gf.placeholder(gf.float32)
    p.set_shape([None, 3])
    assert p.shape.as_list() == [None, 3] and p.op.type == "placeholder"
    with gf.Session() as sess:
        assert sess.run(gf.reduce_sum(p), {p: np.ones((2, 3), np.float32)}) == 6
        with pytest.raises(ValueError, match="shape"):
            sess.run(p, {p: np.ones((2, 4), np.float32)})


def _ptb_producer(raw_data, batch_size, num_steps, name=None):
    """The PTB tutorial's ``reader.ptb_producer`` (tensorflow/models, TF1), as written."""
    tf = gf
    with tf.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
        raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
        data_len = tf.size(raw_data)
        batch_len = data_len // batch_size
        data = tf.reshape(raw_data[0: batch_size * batch_len], [batch_size, batch_len])
        epoch_size = (batch_len - 1) // num_steps
        assertion = tf.assert_positive(
            epoch_size, message="epoch_size == 0, decrease batch_size or num_steps")
        with tf.control_dependencies([assertion]):
            epoch_size = tf.identity(epoch_size, name="epoch_size")
        i = tf.train.range_input_producer(epoch_size, shuffle=False).dequeue()
        x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        x.set_shape([batch_size, num_steps])
        y = tf.strided_slice(data, [0, i * num_steps + 1],
                             [batch_size, (i + 1) * num_steps + 1])
        y.set_shape([batch_size, num_steps])
        return x, y


def test_the_ptb_reader_gives_its_batches():
    raw = list(range(23))
    x, y = _ptb_producer(raw, batch_size=2, num_steps=3)
    assert x.shape.as_list() == y.shape.as_list() == [2, 3]
    data = np.array(raw[:22]).reshape(2, 11)
    with gf.train.MonitoredTrainingSession() as sess:
        for step in range(5):  # 3 batches an epoch: the producer cycles
            i = step % 3
            got_x, got_y = sess.run([x, y])
            np.testing.assert_array_equal(got_x, data[:, i * 3:(i + 1) * 3])
            np.testing.assert_array_equal(got_y, data[:, i * 3 + 1:(i + 1) * 3 + 1])
