"""TF1's composite top-level functions (``histogram_fixed_width``, ``unravel_index``,
``broadcast_dynamic_shape``, ``saturate_cast``, ``clip_by_average_norm``, ``where_v2``,
``hessians``, ``grad_pass_through``, ``switch_case``...) against TensorFlow 2.21.

The expected values are TensorFlow 2.21's, pasted as literals: each was computed once
with ``tensorflow.compat.v1`` in graph mode (``tf.disable_eager_execution()``), on the
same inputs written here, by running the same call in a ``tf.Session``.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

VALS = [0.6952999830245972, 1.36080002784729, 0.9110999703407288, 0.6794999837875366,
        0.19460000097751617, 1.0836000442504883, 0.25029999017715454, 2.0671000480651855,
        2.3547000885009766, 0.033799998462200165, 1.6669000387191772, 0.6155999898910522]


def run(fetch, feed=None, backend="numpy"):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetch, feed)


@pytest.fixture(autouse=True)
def fresh_graph():
    gf.reset_default_graph()


def test_histogram_fixed_width_as_tf(backend):
    vals = np.asarray(VALS, np.float32)
    out = run([gf.histogram_fixed_width(gf.constant(vals), [0.0, 2.0], nbins=5),
               gf.histogram_fixed_width_bins(gf.constant(vals.reshape(3, 4)), [0.0, 2.0],
                                             nbins=5),
               gf.histogram_fixed_width(gf.constant([0, 1, 2, 3, 7, -2]), [0, 6], nbins=3)],
              backend=backend)
    np.testing.assert_array_equal(out[0], [3, 3, 2, 1, 3])
    np.testing.assert_array_equal(out[1], [[1, 3, 2, 1], [0, 2, 0, 4], [4, 0, 4, 1]])
    np.testing.assert_array_equal(out[2], [3, 2, 1])
    assert out[0].dtype == np.int32 and out[1].shape == (3, 4)


def test_unravel_index_as_tf(backend):
    a, b = run([gf.unravel_index([1, 5, 7], [3, 3]), gf.unravel_index(5, [2, 3])],
               backend=backend)
    np.testing.assert_array_equal(a, [[0, 1, 2], [1, 2, 1]])
    np.testing.assert_array_equal(b, [1, 2])
    with pytest.raises(gf.errors.InvalidArgumentError):
        run(gf.unravel_index(9, [3, 3]), backend=backend)


def test_broadcast_shapes_as_tf(backend):
    out = run(gf.broadcast_dynamic_shape(gf.constant([2, 3]), gf.constant([4, 1, 1])),
              backend=backend)
    np.testing.assert_array_equal(out, [4, 2, 3])
    with pytest.raises(gf.errors.InvalidArgumentError):
        run(gf.broadcast_dynamic_shape(gf.constant([2, 3]), gf.constant([4, 1])),
            backend=backend)
    assert gf.broadcast_static_shape(gf.TensorShape([None, 3]),
                                     gf.TensorShape([4, 1, 1])).as_list() == [4, None, 3]
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        gf.broadcast_static_shape(gf.TensorShape([2, 3]), gf.TensorShape([4, 1]))


def test_saturate_cast_as_tf(backend):
    out = run([gf.saturate_cast(gf.constant([-1e10, 3.7, 1e10, -2.5]), gf.int32),
               gf.saturate_cast(gf.constant([-300, 5, 300]), gf.uint8),
               gf.saturate_cast(gf.constant([-1e6, 0.5, 1e6], gf.float64), gf.int16)],
              backend=backend)
    np.testing.assert_array_equal(out[0], [-2147483648, 3, 2147483520, -2])
    np.testing.assert_array_equal(out[1], [0, 5, 255])
    np.testing.assert_array_equal(out[2], [-32768, 0, 32767])
    assert gf.dtypes.saturate_cast is gf.saturate_cast


def test_clip_by_average_norm_and_where_v2_as_tf(backend):
    out = run([gf.clip_by_average_norm(gf.constant([3.0, 4.0]), 1.0),
               gf.clip_by_average_norm(gf.constant([[0.3, -0.4], [0.1, 0.2]]), 2.0),
               gf.where_v2([True, False], gf.ones((2, 2)), gf.zeros((2, 2)))],
              backend=backend)
    np.testing.assert_allclose(out[0], [1.2000000476837158, 1.600000023841858], rtol=1e-6)
    np.testing.assert_allclose(out[1], [[0.30000001192092896, -0.4000000059604645],
                                        [0.10000000149011612, 0.20000000298023224]], rtol=1e-6)
    np.testing.assert_array_equal(out[2], [[1.0, 0.0], [1.0, 0.0]])


def test_hessians_and_grad_pass_through_as_tf(backend):
    v = gf.constant([1.0, 2.0])
    m = gf.constant([[1.0, 2.0], [3.0, -1.0]])
    h = gf.hessians(gf.reduce_sum(v ** 3) + v[0] * v[1], v)[0]
    hm = gf.hessians(gf.reduce_sum(gf.matmul(m, m) ** 2), m)[0]
    g = gf.gradients(gf.grad_pass_through(gf.round)(v * 1.3) * 3.0, v)[0]
    out = run([h, hm, g], backend=backend)
    np.testing.assert_allclose(out[0], [[6.0, 1.0], [1.0, 12.0]])
    np.testing.assert_allclose(out[1], [[[[62.0, 12.0], [8.0, 26.0]],
                                         [[12.0, 36.0], [52.0, -12.0]]],
                                        [[[8.0, 52.0], [16.0, -8.0]],
                                         [[26.0, -12.0], [-8.0, 62.0]]]], rtol=1e-6)
    np.testing.assert_allclose(out[2], [3.8999998569488525, 3.8999998569488525], rtol=1e-6)
    assert h.shape == (2, 2) and hm.shape == (2, 2, 2, 2)


def test_switch_case_as_tf(backend):
    branches = [lambda: gf.constant(10), lambda: gf.constant(20)]
    out = run([gf.switch_case(gf.constant(1), branches),
               gf.switch_case(gf.constant(7), branches),
               gf.switch_case(gf.constant(-1), {0: branches[0], 1: branches[1]},
                              default=lambda: gf.constant(99))], backend=backend)
    assert [int(o) for o in out] == [20, 20, 99]


def test_small_helpers():
    a, b = gf.constant([1.0, 2.0]), gf.placeholder(gf.float32, (None, 3))
    ids = gf.identity_n([a, b])
    shapes = gf.shape_n([a, b])
    stacked = gf.parallel_stack([a, a * 2.0])
    assert stacked.shape == (2, 2)
    feed = {b: np.ones((4, 3), np.float32)}
    got = run(ids + shapes + [stacked], feed)
    np.testing.assert_array_equal(got[2], [2])
    np.testing.assert_array_equal(got[3], [4, 3])
    np.testing.assert_array_equal(got[4], [[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="fully defined"):
        gf.parallel_stack([b, b])
    with gf.colocate_with(a):
        c = a + 1.0
    assert run(c).tolist() == [2.0, 3.0]
    with gf.op_scope([a], "outer"):
        d = gf.identity(a, name="d")
    assert d.name == "outer/d"
    with gf.variable_op_scope([a], "vs"):
        w = gf.get_variable("w", (2,))
    assert w.name.startswith("vs/w")
    assert gf.compat.dimension_value(b.shape[1]) == 3
    assert gf.compat.dimension_value(b.shape[0]) is None
    assert gf.dimension_at_index(b.shape, 1) == 3
    assert gf.get_seed(None) == (None, None)
    assert gf.get_logger() is gf.logging.get_logger()
    assert gf.OpError is gf.errors.OpError
    assert gf.dtypes.bool is gf.bool and gf.dtypes.cast is gf.cast
