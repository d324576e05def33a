"""``tf.data.experimental``'s ``Counter``, ``enumerate_dataset``, ``take_while``,
``unique``, ``choose_from_datasets``, ``sample_from_datasets`` and the cardinality
constants against TensorFlow 2.21's values.

The expected values are literals: TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in
graph mode, a one-shot iterator's ``get_next`` run until ``OutOfRangeError``) of the
same pipelines, made once with TensorFlow installed and pasted here.
"""

from __future__ import annotations

import pytest

import gradflow as gf

E = gf.data.experimental


def _all(backend, build, limit=20):
    graph = gf.Graph()
    with graph.as_default():
        nxt = build().make_one_shot_iterator().get_next()
        out = []
        with gf.Session(graph=graph, backend=backend) as sess:
            try:
                for _ in range(limit):
                    out.append(sess.run(nxt))
            except gf.errors.OutOfRangeError:
                pass
    return [tuple(x.tolist() for x in o) if isinstance(o, tuple) else o.tolist() for o in out]


def test_counter_enumerate_take_while_unique(backend):
    assert _all(backend, lambda: E.Counter(3, 2).take(4)) == [3, 5, 7, 9]
    assert _all(backend, lambda: gf.data.Dataset.from_tensor_slices([5, 6, 7]).apply(
        E.enumerate_dataset(10))) == [(10, 5), (11, 6), (12, 7)]
    assert _all(backend, lambda: gf.data.Dataset.range(10).apply(
        E.take_while(lambda x: x < 4))) == [0, 1, 2, 3]
    assert _all(backend, lambda: gf.data.Dataset.from_tensor_slices(
        [1, 2, 1, 3, 2, 4]).apply(E.unique())) == [1, 2, 3, 4]


def _pair():
    return (gf.data.Dataset.from_tensor_slices([1, 2]),
            gf.data.Dataset.from_tensor_slices([10, 20, 30]))


def test_choose_and_sample_from_datasets(backend):
    def choose():
        a, b = _pair()
        choice = gf.data.Dataset.from_tensor_slices(gf.constant([0, 1, 0, 0, 1, 1, 1], gf.int64))
        return E.choose_from_datasets([a, b], choice)

    assert _all(backend, choose) == [1, 10, 2, 20, 30]
    sampled = _all(backend, lambda: E.sample_from_datasets(list(_pair()), [0.5, 0.5], seed=1))
    assert sorted(sampled) == [1, 2, 10, 20, 30]
    assert [x for x in sampled if x < 10] == [1, 2]  # each data set keeps its order


def test_constants_and_bad_arguments():
    assert (gf.data.AUTOTUNE, gf.data.INFINITE_CARDINALITY, gf.data.UNKNOWN_CARDINALITY) == \
        (-1, -1, -2)
    assert (E.INFINITE_CARDINALITY, E.UNKNOWN_CARDINALITY) == (-1, -2)
    with pytest.raises(ValueError, match="predicate"):
        gf.data.Dataset.range(3).apply(E.take_while(lambda x: x))
    with pytest.raises(TypeError, match="unique"):
        gf.data.Dataset.from_tensor_slices([1.5]).apply(E.unique())
    with pytest.raises(ValueError, match="weights"):
        E.sample_from_datasets(list(_pair()), [0.0, 0.0])
