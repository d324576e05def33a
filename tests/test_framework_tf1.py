"""TF1's small framework names (gradflow/framework.py) and
``tf.train.noisy_linear_cosine_decay`` (gradflow/train/noisy_decay.py).

The numbers are TensorFlow 2.21's (``tensorflow.compat.v1`` in graph mode, run once by
hand), written in as literals: ``recompute_grad`` of ``sin(a) * a`` and its gradient,
``noisy_linear_cosine_decay`` with ``initial_variance=0`` (no noise), the values of
``AggregationMethod`` and of the two enums, and what ``get_static_value`` gives.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

gf.NotDifferentiable("X5NoGradient")  # once: a name is registered for the whole process


def test_not_differentiable_stops_the_gradient_through_an_overridden_op(backend):
    gf.reset_default_graph()
    assert gf.NoGradient is gf.NotDifferentiable and gf.no_gradient is gf.NotDifferentiable
    x = gf.constant([1.0, 2.0, 3.0])
    with gf.get_default_graph().gradient_override_map({"square": "X5NoGradient"}):
        z = gf.square(x)
    (only,) = gf.gradients(gf.reduce_sum(z), x)
    assert only is None
    (both,) = gf.gradients(gf.reduce_sum(z + x), x)  # TF: the ones of "+ x" only
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(both), [1.0, 1.0, 1.0])
    with pytest.raises(KeyError):
        gf.NotDifferentiable("X5NoGradient")


def test_enums_and_constants_have_tensorflows_values():
    assert (gf.AggregationMethod.ADD_N, gf.AggregationMethod.DEFAULT,
            gf.AggregationMethod.EXPERIMENTAL_TREE,
            gf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N) == (0, 0, 1, 2)
    assert [(m.name, m.value) for m in gf.VariableAggregation] == [
        ("NONE", 0), ("SUM", 1), ("MEAN", 2), ("ONLY_FIRST_REPLICA", 3)]
    assert [(m.name, m.value) for m in gf.VariableSynchronization] == [
        ("AUTO", 0), ("NONE", 1), ("ON_WRITE", 2), ("ON_READ", 3)]
    gf.reset_default_graph()
    x = gf.constant([1.0, 2.0])
    (g,) = gf.gradients(gf.reduce_sum(x * x), x,
                        aggregation_method=gf.AggregationMethod.EXPERIMENTAL_TREE)
    v = gf.get_variable("v", [2], aggregation=gf.VariableAggregation.MEAN,
                        synchronization=gf.VariableSynchronization.AUTO,
                        regularizer=gf.no_regularizer)
    assert gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES) == []
    assert gf.no_regularizer(v) is None
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(g), [2.0, 4.0])


def test_get_static_value_as_tensorflow():
    gf.reset_default_graph()
    np.testing.assert_array_equal(gf.get_static_value(gf.constant([1, 2])), [1, 2])
    assert gf.get_static_value(gf.placeholder(gf.float32)) is None
    known = gf.placeholder(gf.float32, [2, 3])
    np.testing.assert_array_equal(gf.get_static_value(gf.shape(known)), [2, 3])
    assert gf.get_static_value(gf.shape(gf.placeholder(gf.float32, [None, 3]))) is None
    assert gf.get_static_value(gf.placeholder(gf.float32, [None, 3]) * 1.0) is None
    assert gf.get_static_value(7) == 7  # not a tensor: as it is


def test_conversions_keep_indexed_slices_and_sparse_tensors():
    gf.reset_default_graph()
    slices = gf.IndexedSlices(gf.constant([[1.0]]), gf.constant([0]), gf.constant([2, 1]))
    assert gf.convert_to_tensor_or_indexed_slices(slices) is slices
    dense = gf.convert_to_tensor_or_indexed_slices([1.0, 2.0], dtype=gf.float32)
    assert dense.dtype is gf.float32
    sparse = gf.convert_to_tensor_or_sparse_tensor(
        gf.SparseTensorValue([[0, 1]], [5], [2, 2]))
    assert isinstance(sparse, gf.SparseTensor)
    assert gf.convert_to_tensor_or_sparse_tensor(sparse) is sparse
    with pytest.raises(ValueError, match="float32"):
        gf.convert_to_tensor_or_sparse_tensor(sparse, dtype=gf.float32)
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(sparse).values, [5])


def test_recompute_grad_gives_tensorflows_values_and_gradients(backend):
    gf.reset_default_graph()
    x = gf.constant([0.5, 1.0, 2.0], gf.float64)

    @gf.recompute_grad
    def f(a):
        return gf.sin(a) * a

    y = f(x)
    (g,) = gf.gradients(gf.reduce_sum(y), x)
    with gf.Session(backend=backend) as sess:
        got_y, got_g = sess.run([y, g])
    np.testing.assert_allclose(got_y, [0.23971277, 0.84147098, 1.81859485], rtol=1e-8)
    np.testing.assert_allclose(got_g, [0.91821682, 1.38177329, 0.07700375], rtol=1e-7)


def test_recompute_grad_reuses_the_variables_of_its_scope():
    gf.reset_default_graph()
    x = gf.constant([[1.0, 2.0]])

    @gf.recompute_grad
    def layer(a):
        w = gf.get_variable("w", initializer=gf.constant([[3.0], [4.0]]))
        return gf.matmul(a, w)

    with gf.variable_scope("block"):
        y = layer(x)
    w = gf.global_variables()
    gx, gw = gf.gradients(gf.reduce_sum(y), [x, w[0]])
    assert [v.name for v in gf.global_variables()] == ["block/w"]
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(gx), [[3.0, 4.0]])
        np.testing.assert_array_equal(sess.run(gw), [[1.0], [2.0]])


def test_noisy_linear_cosine_decay_as_tensorflow(backend):
    gf.reset_default_graph()
    quiet = [gf.train.noisy_linear_cosine_decay(0.1, s, 10, initial_variance=0.0)
             for s in (0, 3, 10, 20)]
    shaped = [gf.train.noisy_linear_cosine_decay(0.1, s, 10, initial_variance=0.0,
                                                 num_periods=2.0, alpha=0.1, beta=0.01)
              for s in (0, 3, 10)]
    step = gf.Variable(0, dtype=gf.int64)
    noisy = gf.train.noisy_linear_cosine_decay(0.1, step, 10, name="lr")
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got_quiet, got_shaped = sess.run([quiet, shaped])
        draws = {float(sess.run(noisy)) for _ in range(4)}
    np.testing.assert_allclose(got_quiet, [0.1001, 0.055672478, 0.000100000005,
                                           0.000100000005], rtol=1e-6)
    np.testing.assert_allclose(got_shaped, [0.111, 0.00863933, 0.011], rtol=1e-6)
    assert len(draws) == 4  # a new draw of the noise at each run
    assert noisy.name == "lr"


class _Meters:
    """A user type that TF1 programs teach convert_to_tensor to take."""

    def __init__(self, value):
        self.value = value


class _Declined:
    pass


_CALLS = []


def _to_tensor(value, dtype=None, name=None, as_ref=False):
    _CALLS.append((dtype, as_ref))
    return gf.constant(value.value, dtype=dtype or gf.float32)


# once: the registrations hold for the whole process
gf.register_tensor_conversion_function(_Meters, _to_tensor)
gf.register_tensor_conversion_function(_Declined, lambda *a, **k: NotImplemented)


def test_register_tensor_conversion_function_makes_user_types_tensors(backend):
    gf.reset_default_graph()
    calls = _CALLS
    total = gf.add(_Meters([1.0, 2.0]), 1.0)
    as_double = gf.convert_to_tensor(_Meters(3), dtype=gf.float64)
    assert as_double.dtype is gf.float64 and calls[-1] == (gf.float64, False)
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(total), [2.0, 3.0])
    with pytest.raises((TypeError, ValueError)):
        gf.convert_to_tensor(_Declined())
    with pytest.raises(TypeError, match="cannot be registered"):
        gf.register_tensor_conversion_function(float, _to_tensor)


# TensorFlow 2.21's make_tensor_proto(values, **kwargs).SerializeToString().hex()
PROTOS = [
    ([[1., 2.], [3., 4.]], {}, "08011208120208021202080222100000803f000000400000404000008040"),
    (7, {}, "080312003a0107"),
    ([b"ab", b""], {}, "0807120412020802420261624200"),
    (1.5, {"shape": [2, 2]}, "0801120812020802120208022a040000c03f"),
    ([1, 2], {"dtype": gf.int64}, "0809120412020802221001000000000000000200000000000000"),
    (np.float64(2.5), {}, "0802120032080000000000000440"),
    ([True, False], {}, "080a1204120208025a020100"),
    (3, {"dtype": gf.float32, "shape": [3]}, "08011204120208032a0400004040"),
    ([1, 2], {"shape": [4]}, "08031204120208043a020102"),
    (np.array([1.5, 2], np.float16), {}, "08131204120208022204003e0040"),
    (np.array([1, 2], np.uint16), {}, "08111204120208023a020102"),
    (np.array([1, 2], np.uint32), {}, "081612041202080222080100000002000000"),
    (np.array([3], np.int64), {}, "0809120412020801520103"),
    (2**40, {}, "080912005206808080808020"),
    (np.array(5, np.uint8), {}, "080412003a0105"),
]


@pytest.mark.parametrize("values, kwargs, want", PROTOS)
def test_make_tensor_proto_writes_tensorflows_bytes(values, kwargs, want):
    pytest.importorskip("tensorboardX", reason="TensorProto is tensorboardX's class")
    proto = gf.make_tensor_proto(values, **kwargs)
    assert proto.SerializeToString().hex() == want
    shape = tuple(kwargs.get("shape", np.shape(values)))
    expected = np.broadcast_to(values, shape) if np.size(values) in (1, np.prod(shape)) \
        else [1, 2, 2, 2]  # fewer values: the last fills the rest, as TF's make_ndarray
    got = gf.make_ndarray(proto)
    assert got.shape == shape
    assert got.tolist() == np.asarray(expected).tolist()


def test_make_tensor_proto_refuses_what_tensorflow_refuses():
    pytest.importorskip("tensorboardX", reason="TensorProto is tensorboardX's class")
    with pytest.raises(ValueError, match="too many elements"):
        gf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="shape"):
        gf.make_tensor_proto([1, 2, 3], shape=[2, 2], verify_shape=True)
