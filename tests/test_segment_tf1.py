"""TF1's segment reductions, ``dynamic_partition`` and ``dynamic_stitch``
(gradflow/ops/segment_ops.py, partition_ops.py) against TensorFlow 2.21's
``compat.v1`` in graph mode: every expected value below is what TF gave (values,
dtypes, static shapes, gradients, errors)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

DATA = np.array([[1., -2.], [3., 4.], [-5., 6.], [7., 8.], [9., -10.], [7., 12.]], np.float32)
IDATA = np.array([[1, -2], [3, -3], [-5, 6], [7, 8], [9, -10], [-7, 12]], np.int32)
SORTED_IDS = [0, 0, 1, 3, 3, 3]  # segment 2 empty
UNSORTED_IDS = [3, 0, -1, 3, 1, 0]  # row 2 dropped; segments 2 and 4 empty
F32_LOWEST = np.finfo(np.float32).min
I32_LOWEST, I32_HIGHEST = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def _run(fetches, feed=None, backend="numpy"):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


def _check(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), f"dtype {got.dtype}, TF {dtype}"
    np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), rtol=1e-6)


SORTED_TF = {  # TF 2.21 on DATA / IDATA with SORTED_IDS
    "sum": ([[4, 2], [-5, 6], [0, 0], [23, 10]], [[4, -5], [-5, 6], [0, 0], [9, 10]]),
    "mean": ([[2, 1], [-5, 6], [0, 0], [23 / 3, 10 / 3]], [[2, -2], [-5, 6], [0, 0], [3, 3]]),
    "max": ([[3, 4], [-5, 6], [0, 0], [9, 12]], [[3, -2], [-5, 6], [0, 0], [9, 12]]),
    "min": ([[1, -2], [-5, 6], [0, 0], [7, -10]], [[1, -3], [-5, 6], [0, 0], [-7, -10]]),
    "prod": ([[3, -8], [-5, 6], [1, 1], [441, -960]], [[3, 6], [-5, 6], [1, 1], [-441, -960]]),
}


@pytest.mark.parametrize("reduce", sorted(SORTED_TF))
def test_sorted_segment_values_and_empty_segments(reduce, backend):
    """An empty segment is 0 (1 for prod; 0 for max/min too, unlike the unsorted ops);
    integer means are divided toward zero."""
    fn = getattr(gf, f"segment_{reduce}")
    ids = gf.placeholder(gf.int32, [None])
    got = _run([fn(DATA, ids), fn(IDATA, ids), getattr(gf.math, f"segment_{reduce}")(DATA, ids)],
               {ids: SORTED_IDS}, backend)
    want_f, want_i = SORTED_TF[reduce]
    _check(got[0], want_f, np.float32)
    _check(got[1], want_i, np.int32)
    _check(got[2], want_f, np.float32)


def test_sorted_segment_static_shapes():
    """TF knows the rows only at run time; gradflow also knows them for constant ids."""
    x = gf.placeholder(gf.float32, [None, 2])
    assert gf.segment_sum(x, gf.placeholder(gf.int32, [None])).shape.as_list() == [None, 2]
    assert gf.segment_max(DATA, SORTED_IDS).shape.as_list() == [4, 2]
    assert gf.segment_mean(DATA, SORTED_IDS).dtype == gf.float32


UNSORTED_TF = {  # TF 2.21 on DATA / IDATA with UNSORTED_IDS, num_segments=5
    "sum": ([[10, 16], [9, -10], [0, 0], [8, 6], [0, 0]],
            [[-4, 9], [9, -10], [0, 0], [8, 6], [0, 0]]),
    "max": ([[7, 12], [9, -10], [F32_LOWEST] * 2, [7, 8], [F32_LOWEST] * 2],
            [[3, 12], [9, -10], [I32_LOWEST] * 2, [7, 8], [I32_LOWEST] * 2]),
    "min": ([[3, 4], [9, -10], [-F32_LOWEST] * 2, [1, -2], [-F32_LOWEST] * 2],
            [[-7, -3], [9, -10], [I32_HIGHEST] * 2, [1, -2], [I32_HIGHEST] * 2]),
    "prod": ([[21, 48], [9, -10], [1, 1], [7, -16], [1, 1]],
             [[-21, -36], [9, -10], [1, 1], [7, -16], [1, 1]]),
}


@pytest.mark.parametrize("reduce", sorted(UNSORTED_TF))
def test_unsorted_segment_values_and_empty_segments(reduce, backend):
    """Negative ids are dropped; an empty segment is 0, 1, or the dtype's lowest
    (max) / highest (min) value."""
    fn = getattr(gf, f"unsorted_segment_{reduce}")
    ids = gf.placeholder(gf.int32, [None])
    got = _run([fn(DATA, ids, 5), fn(IDATA, ids, 5)], {ids: UNSORTED_IDS}, backend)
    want_f, want_i = UNSORTED_TF[reduce]
    _check(got[0], want_f, np.float32)
    _check(got[1], want_i, np.int32)


def test_unsorted_mean_and_sqrt_n(backend):
    """TF1's means divide the sum by max(count, 1) with ``/``: integer data gives float64;
    sqrt_n takes floating data only."""
    ids = gf.placeholder(gf.int32, [None])
    got = _run([gf.unsorted_segment_mean(DATA, ids, 5), gf.unsorted_segment_mean(IDATA, ids, 5),
                gf.math.unsorted_segment_sqrt_n(DATA.astype(np.float64), ids, 5)],
               {ids: UNSORTED_IDS}, backend)
    _check(got[0], [[5, 8], [9, -10], [0, 0], [4, 3], [0, 0]], np.float32)
    _check(got[1], [[-2, 4.5], [9, -10], [0, 0], [4, 3], [0, 0]], np.float64)
    _check(got[2], [[7.0710678119, 11.313708499], [9, -10], [0, 0], [5.6568542495, 4.2426406871],
                    [0, 0]], np.float64)
    with pytest.raises(TypeError):
        gf.unsorted_segment_sqrt_n(IDATA, UNSORTED_IDS, 5)


def test_unsorted_segment_static_shapes():
    n = gf.placeholder(gf.int32, [])
    assert gf.unsorted_segment_sum(DATA, UNSORTED_IDS, 5).shape.as_list() == [5, 2]
    assert gf.unsorted_segment_max(DATA, UNSORTED_IDS, n).shape.as_list() == [None, 2]
    d3 = gf.placeholder(gf.float32, [2, 3, 4])
    assert gf.unsorted_segment_sum(d3, gf.placeholder(gf.int32, [2, 3]), 7).shape.as_list() \
        == [7, 4]


def test_unsorted_segment_ids_of_rank_two(backend):
    d3 = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    ids = np.array([[1, -1, 3], [3, 0, 1]], np.int32)
    got = _run([gf.unsorted_segment_sum(d3, ids, 4), gf.unsorted_segment_max(d3, ids, 4)],
               backend=backend)
    _check(got[0], [[8, 9], [10, 12], [0, 0], [10, 12]], np.float32)
    _check(got[1], [[8, 9], [10, 11], [F32_LOWEST] * 2, [6, 7]], np.float32)


def test_other_integer_dtypes(backend):
    got = _run([gf.unsorted_segment_max(np.array([1, 2, 3], np.uint8), [0, 0, 2], 3),
                gf.unsorted_segment_min(np.array([1, 2, 3], np.int64), [0, 0, 2], 3),
                gf.segment_max(np.array([1., 2.]), [0, 2])], backend=backend)
    _check(got[0], [2, 0, 3], np.uint8)
    _check(got[1], [1, np.iinfo(np.int64).max, 3], np.int64)
    _check(got[2], [1, 0, 2], np.float64)


def test_zero_size_inputs(backend):
    x = gf.placeholder(gf.float32, [None, 3])
    ids = gf.placeholder(gf.int32, [None])
    n = gf.placeholder(gf.int32, [])
    got = _run([gf.segment_sum(x, ids), gf.segment_max(x, ids),
                gf.unsorted_segment_max(x, ids, 2),
                gf.unsorted_segment_sum(DATA, np.full(6, -1, np.int32), n)],
               {x: np.zeros((0, 3)), ids: np.zeros(0, np.int32), n: 0}, backend)
    assert [g.shape for g in got] == [(0, 3), (0, 3), (2, 3), (0, 2)]
    _check(got[2], [[F32_LOWEST] * 3] * 2, np.float32)


W = np.array([[1., 2.], [3., 4.], [5., 6.], [7., 8.]])
TIES = np.array([[1., 2.], [1., 3.], [0.5, 3.], [2., 2.], [2., 2.], [2., 2.]])
TIES_IDS = [0, 0, 0, 1, 1, 3]
SORTED_GRADS_TF = {  # TF 2.21: d sum(segment_op(TIES) * W) / d TIES
    "max": [[0.5, 0], [0.5, 1], [0, 1], [1.5, 2], [1.5, 2], [7, 8]],
    "min": [[0, 2], [0, 0], [1, 0], [1.5, 2], [1.5, 2], [7, 8]],
    "sum": [[1, 2], [1, 2], [1, 2], [3, 4], [3, 4], [7, 8]],
    "mean": [[1 / 3, 2 / 3]] * 3 + [[1.5, 2], [1.5, 2], [7, 8]],
    "prod": [[0.5, 18], [0.5, 12], [1, 12], [6, 8], [6, 8], [7, 8]],
}


@pytest.mark.parametrize("reduce", sorted(SORTED_GRADS_TF))
def test_sorted_segment_gradients(reduce, backend):
    """max/min share the gradient equally among the rows that tie."""
    x = gf.placeholder(gf.float64, [None, 2])
    y = getattr(gf, f"segment_{reduce}")(x, TIES_IDS)
    (g,) = gf.gradients(gf.reduce_sum(y * W), [x])
    _check(_run(g, {x: TIES}, backend), SORTED_GRADS_TF[reduce], np.float64)


def test_three_way_tie_and_integer_mean_wrapping(backend):
    x = gf.placeholder(gf.float64, [None])
    (g,) = gf.gradients(gf.segment_max(x, [0, 0, 0]), [x])
    top = np.iinfo(np.int32).max
    got = _run([g, gf.segment_mean(np.array([top, top, 3], np.int32), [0, 0, 1]),
                gf.segment_mean(np.array([-5, 2, -7], np.int32), [0, 0, 1])],
               {x: [1., 1., 1.]}, backend)
    _check(got[0], [1 / 3] * 3, np.float64)
    _check(got[1], [-1, 3], np.int32)  # the int32 sum wraps, as in TF
    _check(got[2], [-1, -7], np.int32)


def test_product_gradients_with_zeros(backend):
    """One zero in a segment: it gets the product of the others, the others 0; two
    zeros: 0 for all."""
    x = gf.placeholder(gf.float64, [None, 2])
    (g,) = gf.gradients(gf.reduce_sum(gf.segment_prod(x, TIES_IDS) * W), [x])
    zeros = np.array([[0., 1.5], [2., 0.], [0.5, 0.], [-1.5, 0.], [1.2, 0.7], [3., 3.]])
    _check(_run(g, {x: zeros}, backend),
           [[1, 0], [0, 0], [0, 0], [3.6, 2.8], [-4.5, 0], [7, 8]], np.float64)
    w3 = np.array([[1., 2.], [3., 4.]])
    (gu,) = gf.gradients(gf.reduce_sum(gf.unsorted_segment_prod(x, [0, 1, 0, -1, 1, 1], 2)
                                       * w3), [x])
    zeros_u = np.array([[0., 2.], [1.5, 0.], [0., 3.], [0., 0.], [-0.5, 0.], [2., 4.]])
    _check(_run(gu, {x: zeros_u}, backend),
           [[0, 6], [-3, 0], [0, 4], [0, 0], [9, 0], [-2.25, 0]], np.float64)


def test_product_second_order(backend):
    x = gf.placeholder(gf.float64, [None, 2])
    (g,) = gf.gradients(gf.reduce_sum(gf.segment_prod(x, [0, 0, 1]) * W[:2]), [x])
    (h,) = gf.gradients(gf.reduce_sum(g * np.array([[1., 2.], [3., 4.], [5., 6.]])), [x])
    _check(_run(h, {x: np.array([[0.5, 2.], [3., -1.], [2., 0.5]])}, backend),
           [[3, 8], [1, 4], [0, 0]], np.float64)


TIES2 = np.array([[1., 2.], [1., 3.], [0.5, 3.], [0., 0.], [0., -1.], [0., -1.]])
TIES2_IDS = [0, 0, 0, -1, 2, 2]
W3 = np.array([[1., 2.], [3., 4.], [5., 6.]])
UNSORTED_GRADS_TF = {  # TF 2.21: d sum(unsorted_segment_op(TIES2, TIES2_IDS, 3) * W3) / d TIES2
    "max": [[0.5, 0], [0.5, 1], [0, 1], [0, 0], [2.5, 3], [2.5, 3]],
    "min": [[0, 2], [0, 0], [1, 0], [0, 0], [2.5, 3], [2.5, 3]],
    "sum": [[1, 2], [1, 2], [1, 2], [0, 0], [5, 6], [5, 6]],
    "mean": [[1 / 3, 2 / 3]] * 3 + [[0, 0], [2.5, 3], [2.5, 3]],
    "prod": [[0.5, 18], [0.5, 12], [1, 12], [0, 0], [0, -6], [0, -6]],
    "sqrt_n": [[0.5773502692, 1.1547005384]] * 3 + [[0, 0]] + [[3.5355339059, 4.2426406871]] * 2,
}


@pytest.mark.parametrize("reduce", sorted(UNSORTED_GRADS_TF))
def test_unsorted_segment_gradients(reduce, backend):
    """A dropped row gets no gradient, even where it equals the dropped max (0)."""
    x = gf.placeholder(gf.float64, [None, 2])
    y = getattr(gf.math, f"unsorted_segment_{reduce}")(x, TIES2_IDS, 3)
    (g,) = gf.gradients(gf.reduce_sum(y * W3), [x])
    _check(_run(g, {x: TIES2}, backend), UNSORTED_GRADS_TF[reduce], np.float64)


def _fails(fetch, feed, backend, *words):
    with pytest.raises(gf.errors.InvalidArgumentError) as err:
        _run(fetch, feed, backend)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_bad_ids_fail_the_run(backend):
    """TF's CPU kernels' checks, as InvalidArgumentError naming the op and the values."""
    ids = gf.placeholder(gf.int32, [None])
    _fails(gf.segment_max(DATA, ids), {ids: [0, 1, 0, 2, 2, 2]}, backend,
           "SegmentMax", "not increasing")
    _fails(gf.segment_sum(DATA, ids), {ids: [-1, 0, 0, 1, 1, 1]}, backend,
           "Segment id -1 out of range [0, 2), possibly because 'segment_ids' input is not "
           "sorted")
    _fails(gf.segment_sum(DATA, ids), {ids: [0, 1, 2]}, backend,
           "segment_ids should be the same size as dimension 0 of input")
    _fails(gf.unsorted_segment_sum(DATA, ids, 3), {ids: [0, 1, 0, 5, 2, 2]}, backend,
           "segment_ids[3] = 5 is out of range [0, 3)")
    _fails(gf.unsorted_segment_prod(DATA, ids, 3), {ids: [0, 1, 0, 5, 2, 2]}, backend,
           "segment_ids[3] = 5 is out of range [0, 3)")
    ids2 = gf.placeholder(gf.int32, [None, None])
    _fails(gf.unsorted_segment_max(np.zeros((2, 3, 2)), ids2, 3),
           {ids2: [[0, 1, 0], [2, 7, 2]]}, backend, "segment_ids[1,1] = 7 is out of range")
    _fails(gf.unsorted_segment_sum(DATA, ids, 3), {ids: [0, 1, 0]}, backend,
           "data.shape = [6,2] does not start with segment_ids.shape = [3]")
    n = gf.placeholder(gf.int32, [])
    _fails(gf.unsorted_segment_sum(DATA, UNSORTED_IDS, n), {n: -1}, backend,
           "num_segments == -1 must not be negative")


def test_bad_arguments_fail_when_built():
    with pytest.raises(TypeError, match="segment_ids"):
        gf.segment_sum(DATA, [0., 1., 1., 2., 2., 2.])
    with pytest.raises(ValueError, match="does not start with"):
        gf.unsorted_segment_sum(DATA, [[0, 1]], 3)
    with pytest.raises(ValueError, match="vector"):
        gf.segment_sum(DATA, [[0, 0, 1, 1, 2, 2]])
    with pytest.raises(ValueError, match="does not match the others"):
        gf.dynamic_stitch([[0], [1]], [[[1., 2.]], [[1., 2., 3.]]])


# -- dynamic_partition and dynamic_stitch ----------------------------------------------


def test_dynamic_partition(backend):
    x = np.array([10., 11., 12., 13., 14.], np.float32)
    parts = gf.dynamic_partition(x, [2, 0, 2, 2, 0], 3)
    assert [p.shape.as_list() for p in parts] == [[None]] * 3
    got = _run(parts, backend=backend)
    for g, want in zip(got, [[11, 14], [], [10, 12, 13]]):
        _check(g, want, np.float32)
    parts2 = gf.dynamic_partition(np.arange(12.).reshape(2, 3, 2), [[1, 0, 1], [1, 1, 0]], 2)
    assert [p.shape.as_list() for p in parts2] == [[None, 2]] * 2
    got2 = _run(parts2, backend=backend)
    _check(got2[0], [[2, 3], [10, 11]], np.float64)
    _check(got2[1], [[0, 1], [4, 5], [6, 7], [8, 9]], np.float64)
    scalar = _run(gf.dynamic_partition(np.array([1., 2.]), 1, 2), backend=backend)
    assert scalar[0].shape == (0, 2)
    _check(scalar[1], [[1, 2]], np.float64)


def test_dynamic_partition_gradient_and_errors(backend):
    x = gf.placeholder(gf.float64, [None, 2])
    parts = gf.dynamic_partition(x, [1, 0, 1], 2)
    loss = gf.reduce_sum(parts[0] * 2.0) + gf.reduce_sum(parts[1] * np.array([[1., 2.], [3., 4.]]))
    (g,) = gf.gradients(loss, [x])
    _check(_run(g, {x: np.ones((3, 2))}, backend), [[1, 2], [2, 2], [3, 4]], np.float64)
    p = gf.placeholder(gf.int32, [None])
    _fails(gf.dynamic_partition(np.array([1., 2., 3.]), p, 2), {p: [0, 2, 1]}, backend,
           "partitions[1] = 2 is not in [0, 2)")
    _fails(gf.dynamic_partition(np.array([1., 2., 3.]), p, 2), {p: [0, -1, 1]}, backend,
           "partitions[1] = -1 is not in [0, 2)")
    _fails(gf.dynamic_partition(np.array([1., 2., 3.]), p, 2), {p: [0, 1]}, backend,
           "data.shape must start with partitions.shape, got data.shape = [3], "
           "partitions.shape = [2]")


def test_dynamic_stitch(backend):
    """Of repeated indices the last wins; rows no index names are 0."""
    dup = gf.dynamic_stitch([[0, 2, 2], [1, 0]], [[1., 2., 3.], [4., 5.]])
    missing = gf.dynamic_stitch([[0, 4], [[1]]], [[[1., 1.], [2., 2.]], [[[3., 3.]]]])
    assert dup.shape.as_list() == [3] and missing.shape.as_list() == [5, 2]
    fed = gf.dynamic_stitch([gf.placeholder(gf.int32, [None])],
                            [gf.placeholder(gf.float32, [None, 3])])
    assert fed.shape.as_list() == [None, 3]
    p = gf.placeholder(gf.int32, [None])
    across = gf.dynamic_stitch([p, [0]], [[1., 2.], [3.]])
    got = _run([dup, missing, gf.dynamic_stitch([gf.zeros([0], gf.int32)], [gf.zeros([0, 2])]),
                across], {p: [0, 1]}, backend=backend)
    _check(got[0], [5, 4, 3], np.float32)
    _check(got[3], [3, 2], np.float32)
    _check(got[1], [[1, 1], [3, 3], [0, 0], [0, 0], [2, 2]], np.float32)
    assert got[2].shape == (0, 2)


def test_dynamic_stitch_gradient_and_errors(backend):
    """TF1's gradient gathers at every index, overwritten ones too."""
    a = gf.placeholder(gf.float64, [3])
    b = gf.placeholder(gf.float64, [2])
    merged = gf.dynamic_stitch([[0, 2, 2], [1, 0]], [a, b])
    grads = gf.gradients(gf.reduce_sum(merged * np.array([1., 2., 3.])), [a, b])
    got = _run(grads, {a: [1., 2., 3.], b: [4., 5.]}, backend)
    _check(got[0], [1, 3, 3], np.float64)
    _check(got[1], [2, 1], np.float64)
    p = gf.placeholder(gf.int32, [None])
    _fails(gf.dynamic_stitch([p], [[1., 2.]]), {p: [0, -1]}, backend,
           "indices[0][1] = -1 is out of range")
    _fails(gf.dynamic_stitch([p], [[1., 2.]]), {p: [0, 1, 2]}, backend,
           "data[0].shape = [2] does not start with indices[0].shape = [3]")


# -- the Array API form against the backends' lowerings, at a size the specs do not reach --


def _np_segments(reduce, data, ids, num, empty):
    out = np.full((num,) + data.shape[1:], empty)
    for s in range(num):
        part = data[ids == s]
        if len(part):
            out[s] = getattr(np, reduce)(part, 0)
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "max", "min"])
def test_many_rows_match_numpy(reduce, backend):
    """1000 rows in 40 segments (some empty): the doubling scan takes 10 steps."""
    rng = np.random.default_rng(7)
    data = rng.uniform(0.9, 1.1, (1000, 3))
    ids = rng.integers(-3, 40, 1000).astype(np.int32)
    ids[ids == 5] = 6  # segment 5 empty
    order = np.argsort(ids, kind="stable")[(ids < 0).sum():]  # the rows kept, by id
    got = _run([getattr(gf, f"unsorted_segment_{reduce}")(data, ids, 40),
                getattr(gf, f"segment_{reduce}")(data[order], ids[order])], backend=backend)
    info = np.finfo(np.float64)
    empty = {"sum": 0.0, "prod": 1.0, "max": info.min, "min": info.max}[reduce]
    np.testing.assert_allclose(got[0], _np_segments(reduce, data, ids, 40, empty), rtol=1e-12)
    np.testing.assert_allclose(got[1], _np_segments(reduce, data[order], ids[order], 40,
                                                    1.0 if reduce == "prod" else 0.0),
                               rtol=1e-12)
