"""TF1's ``tf.sets`` (``set_size``, ``set_intersection``, ``set_union``,
``set_difference``) against TensorFlow 2.21's values: literals of TensorFlow 2.21's
results (CPU, ``tf.compat.v1`` in graph mode, ``Session.run``) of the same calls, made
once with TensorFlow installed; TensorFlow is not needed to run these tests."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def _parts(value):
    return value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()


def test_set_operations_give_tensorflows_sparse_tensors(backend):
    graph = gf.Graph()
    with graph.as_default():
        a = gf.constant([[1, 2, 2, 5], [3, 3, 4, 0]])
        b = gf.constant([[2, 5, 7, 7], [0, 9, 9, 9]])
        sp = gf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0], [2, 1]],
                             gf.constant([4, 4, 1, 8, 2]), [3, 4])
        sp2 = gf.SparseTensor([[0, 0], [1, 0], [1, 1]], gf.constant([4, 1, 7]), [3, 2])
        empty = gf.SparseTensor(gf.zeros([0, 3], gf.int64), gf.zeros([0], gf.int32), [2, 2, 5])
        outs = [gf.sets.set_intersection(a, b), gf.sets.set_union(a, b),
                gf.sets.set_difference(a, b), gf.sets.set_difference(a, b, aminusb=False),
                gf.sets.set_union(sp, sp2), gf.sets.intersection(sp, sp2),
                gf.sets.set_difference(sp, sp2),
                gf.sets.difference(sp2, gf.constant([[4], [0], [8]])),
                gf.sets.set_intersection(gf.constant([["a", "b"], ["c", "a"]]),
                                         gf.constant([["b", "a"], ["d", "d"]]))]
        sizes = [gf.sets.set_size(sp), gf.sets.size(empty)]
    with gf.Session(graph=graph, backend=backend) as sess:
        got, counts = sess.run([outs, sizes])
    assert [_parts(v) for v in got] == [
        ([[0, 0], [0, 1], [1, 0]], [2, 5, 0], [2, 2]),
        ([[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1], [1, 2], [1, 3]],
         [1, 2, 5, 7, 0, 3, 4, 9], [2, 4]),
        ([[0, 0], [1, 0], [1, 1]], [1, 3, 4], [2, 2]),
        ([[0, 0], [1, 0]], [7, 9], [2, 1]),
        ([[0, 0], [1, 0], [1, 1], [2, 0], [2, 1]], [4, 1, 7, 2, 8], [3, 2]),
        ([[0, 0], [1, 0]], [4, 1], [3, 1]),
        ([[2, 0], [2, 1]], [2, 8], [3, 2]),
        ([[1, 0], [1, 1]], [1, 7], [3, 2]),
        ([[0, 0], [0, 1]], [b"a", b"b"], [2, 2])]
    assert got[0].values.dtype == np.int32
    assert counts[0].tolist() == [1, 1, 2] and counts[0].dtype == np.int32
    assert counts[1].tolist() == [[0, 0], [0, 0]]


def test_bad_sets_fail():
    with gf.Graph().as_default():
        with pytest.raises(TypeError, match="must hold integers .* got float32"):
            gf.sets.set_union(gf.constant([[1.0]]), gf.constant([[2.0]]))
        with pytest.raises(ValueError, match="rank 2 or more"):
            gf.sets.set_union(gf.constant([1]), gf.constant([2]))
        with pytest.raises(TypeError, match="must be a SparseTensor"):
            gf.sets.set_size(gf.constant([[1]]))
        unordered = gf.sets.set_size(gf.SparseTensor([[0, 1], [0, 0]], gf.constant([1, 2]),
                                                     [1, 3]))
        with gf.Session() as sess, pytest.raises(InvalidArgumentError,
                                                 match="not in row-major order"):
            sess.run(unordered)
