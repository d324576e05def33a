"""``Dataset.flat_map``/``interleave`` and ``tf.data.experimental``'s ``parallel_interleave``,
``scan``, ``group_by_window``, ``group_by_reducer``, ``bucket_by_sequence_length``,
``cardinality``, ``assert_cardinality``, ``get_single_element``, ``from_list``,
``TFRecordWriter`` and the options classes, against TensorFlow 2.21's values.

The expected values are literals: TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in
graph mode, a one-shot iterator's ``get_next`` run until ``OutOfRangeError``, or
``sess.run`` of ``cardinality``) of the same pipelines, made once with TensorFlow
installed and pasted here.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

E = gf.data.experimental
D = gf.data.Dataset


def _all(backend, build, limit=60):
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
    return [tuple(_py(x) for x in o) if isinstance(o, tuple) else _py(o) for o in out]


def _py(x):
    return x if isinstance(x, bytes) else x.tolist()


def test_flat_map_and_interleave(backend):
    assert _all(backend, lambda: D.range(1, 4).flat_map(lambda x: D.range(x))) == \
        [0, 0, 1, 0, 1, 2]
    expected = [1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5]
    assert _all(backend, lambda: D.range(1, 6).interleave(
        lambda x: D.from_tensors(x).repeat(x), cycle_length=2, block_length=2)) == expected
    assert _all(backend, lambda: D.range(1, 6).apply(E.parallel_interleave(
        lambda x: D.from_tensors(x).repeat(x), cycle_length=2, block_length=2))) == expected
    # an inner map that reads the outer element
    assert _all(backend, lambda: D.range(1, 4).flat_map(
        lambda x: D.range(3).map(lambda y: y * 10 + x))) == [1, 11, 21, 2, 12, 22, 3, 13, 23]
    assert _all(backend, lambda: D.range(1, 4).interleave(
        lambda x: D.range(3).map(lambda y: y * 10 + x), cycle_length=3)) == \
        [1, 2, 3, 11, 12, 13, 21, 22, 23]


def test_interleave_of_files(tmp_path):
    paths = []
    for k in range(2):
        path = str(tmp_path / f"f{k}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{k}-{i}\n" for i in range(3)))
        paths.append(path)
    lines = _all("numpy", lambda: D.from_tensor_slices(paths).interleave(
        gf.data.TextLineDataset, cycle_length=2))
    assert lines == [b"0-0", b"1-0", b"0-1", b"1-1", b"0-2", b"1-2"]


def test_scan_and_grouping(backend):
    assert _all(backend, lambda: D.range(1, 6).apply(E.scan(
        gf.constant(0, gf.int64), lambda s, x: (s + x, s * 10 + x)))) == [1, 12, 33, 64, 105]
    assert _all(backend, lambda: D.range(11).apply(E.group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(2), window_size=2))) == \
        [[0, 3], [1, 4], [2, 5], [6, 9], [7, 10], [8]]
    assert _all(backend, lambda: D.range(13).apply(E.group_by_window(
        lambda x: (x * 7) % 4, lambda k, w: w.batch(4).map(lambda b: (k, b)),
        window_size_func=lambda k: k + 1))) == \
        [(0, [0]), (0, [4]), (1, [3, 7]), (0, [8]), (2, [2, 6, 10]), (0, [12]), (1, [11]),
         (3, [1, 5, 9])]
    reducer = E.Reducer(lambda k: (k, gf.constant(0, gf.int64)),
                        lambda s, x: (s[0], s[1] + x), lambda k, c: (k, c))
    assert _all(backend, lambda: D.range(10).map(lambda x: (x * 7) % 10).apply(
        E.group_by_reducer(lambda x: x % 3, reducer))) == [(0, 18), (1, 12), (2, 15)]


SEQS = [[1], [1, 2, 3], [1, 2], [1, 2, 3, 4, 5], [1, 2, 3, 4], [1], [1, 2, 3, 4, 5, 6, 7]]


def test_bucket_by_sequence_length(backend):
    def seqs():
        return D.from_generator(lambda: iter(SEQS), gf.int64, [None])

    assert _all(backend, lambda: seqs().apply(E.bucket_by_sequence_length(
        lambda x: gf.shape(x)[0], [3, 5], [2, 2, 2]))) == \
        [[[1, 0], [1, 2]], [[1, 2, 3, 0], [1, 2, 3, 4]], [[1, 2, 3, 4, 5, 0, 0],
                                                         [1, 2, 3, 4, 5, 6, 7]], [[1]]]
    assert _all(backend, lambda: seqs().apply(E.bucket_by_sequence_length(
        lambda x: gf.shape(x)[0], [3, 5], [2, 3, 1],
        padding_values=gf.constant(-1, gf.int64)))) == \
        [[[1, -1], [1, 2]], [[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 5, 6, 7]], [[1]],
         [[1, 2, 3, -1], [1, 2, 3, 4]]]


def test_cardinality():
    graph = gf.Graph()
    with graph.as_default():
        fed = gf.placeholder(gf.float32, [None, 2])
        datasets = [
            D.range(10), D.range(10).batch(3), D.range(10).batch(3, True),
            D.range(10).repeat(), D.range(10).filter(lambda x: x > 2),
            D.range(10).repeat(3).skip(4).take(20), D.zip((D.range(3), D.range(5).repeat())),
            D.range(3).concatenate(D.range(4)), D.range(4).flat_map(lambda x: D.range(x)),
            D.range(5).apply(E.assert_cardinality(5)), D.from_tensor_slices(np.zeros((7, 2))),
            D.range(0).repeat(), D.range(10).filter(lambda x: x > 1).repeat(),
            D.range(10).filter(lambda x: x > 1).take(3), D.range(10).repeat().take(-1),
            D.range(10).shuffle(3).prefetch(2).map(lambda x: x).cache(),
            D.range(10).shuffle(3), D.range(10).prefetch(2), D.range(10).map(lambda x: x),
            D.range(10).cache(), D.range(10).padded_batch(3, []), D.range(10).batch(3).unbatch(),
            D.from_tensors(1), D.from_generator(lambda: iter([1]), gf.int64), D.range(2, 20, 3),
            D.range(10).skip(-1), D.range(10).skip(20), D.range(10).take(20),
            D.from_tensor_slices(fed)]
        counts = [E.cardinality(d) for d in datasets]
        with gf.Session(graph=graph) as sess:
            got = sess.run(counts, {fed: np.zeros((5, 2))})
    assert [int(n) for n in got] == [10, 4, 3, -1, -2, 20, 3, 7, -2, 5, 7, 0, -1, -2, -1, -2,
                                     10, 10, -2, 10, 4, -2, 1, -2, 6, 0, 0, 10, 5]
    assert E.INFINITE_CARDINALITY == -1 and E.UNKNOWN_CARDINALITY == -2


def test_assert_cardinality_and_single_element(backend):
    with pytest.raises(gf.errors.FailedPreconditionError,
                       match="expected to contain 4 elements but contained at least 5"):
        _all(backend, lambda: D.range(5).apply(E.assert_cardinality(4)))
    with pytest.raises(gf.errors.FailedPreconditionError,
                       match="expected to contain 4 elements but contained only 3"):
        _all(backend, lambda: D.range(3).apply(E.assert_cardinality(4)))
    graph = gf.Graph()
    with graph.as_default():
        one = E.get_single_element(D.range(5).skip(4))
        pair = E.get_single_element(D.from_tensors((gf.constant([1.5, 2.5]), "a")))
        many, empty = E.get_single_element(D.range(5)), E.get_single_element(D.range(0))
        with gf.Session(graph=graph, backend=backend) as sess:
            assert int(sess.run(one)) == 4
            x, s = sess.run(pair)
            assert x.tolist() == [1.5, 2.5] and s == b"a"
            with pytest.raises(gf.errors.InvalidArgumentError, match="more than one"):
                sess.run(many)
            with pytest.raises(gf.errors.InvalidArgumentError, match="empty"):
                sess.run(empty)


def test_from_list_and_tfrecord_writer(tmp_path):
    assert _all("numpy", lambda: E.from_list([(1, "a"), (2, "b")])) == \
        [(1, b"a"), (2, b"b")]
    path = str(tmp_path / "out.tfrecord")
    graph = gf.Graph()
    with graph.as_default():
        records = D.from_tensor_slices(["x", "yy", "zzz"])
        write = E.TFRecordWriter(path).write(records)
        with gf.Session(graph=graph) as sess:
            sess.run(write)
    assert _all("numpy", lambda: gf.data.TFRecordDataset([path])) == [b"x", b"yy", b"zzz"]
    # TensorFlow 2.21 wrote these same records to a file of these bytes
    with open(path, "rb") as f:
        assert f.read().hex() == TF_RECORDS_HEX


TF_RECORDS_HEX = ("01000000000000000175de4178503daa61020000000000000078270b347979207e3a91"
                  "0300000000000000b099490e7a7a7a2fa8a5c6")


def test_options_and_devices(backend):
    options = gf.data.Options()
    assert options.deterministic is None and options.threading.private_threadpool_size is None
    options.experimental_deterministic = False
    options.experimental_threading.private_threadpool_size = 4
    options.experimental_distribute.auto_shard_policy = E.AutoShardPolicy.DATA
    assert options.deterministic is False and options.threading.private_threadpool_size == 4
    with pytest.raises(TypeError):
        options.threading.private_threadpool_size = "four"
    with pytest.raises(AttributeError):
        options.no_such_option = 1
    later = gf.data.Options()
    later.threading.max_intra_op_parallelism = 1
    def build():
        return D.range(3).with_options(options).map(lambda x: x + 1).with_options(later)

    merged = build().options()
    assert merged.deterministic is False and merged.threading.private_threadpool_size == 4
    assert merged.threading.max_intra_op_parallelism == 1
    assert int(E.AutoShardPolicy.OFF) == -1 and int(E.AutoShardPolicy.HINT) == 3
    assert E.ExternalStatePolicy.FAIL.value == 2
    assert E.AutotuneAlgorithm.GRADIENT_DESCENT.value == 2
    assert _all(backend, lambda: build().apply(E.copy_to_device("/gpu:0")).apply(
        E.prefetch_to_device("/gpu:0", 2))) == [1, 2, 3]
