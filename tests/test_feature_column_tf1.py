"""TF1's ``tf.feature_column`` and ``tf.lookup`` against TensorFlow 2.21's values.

The expected values are literals: TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in
graph mode, ``Session.run`` after ``global_variables_initializer`` and
``tables_initializer``) of the same programs, made once with TensorFlow installed and
pasted here (the programs below, with ``tf`` = ``tf.compat.v1``); TensorFlow is not
needed to run these tests. The hashed ids (hash buckets, out-of-vocabulary buckets,
crosses) are FarmHash's as TensorFlow's, so they match bucket for bucket.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import FailedPreconditionError, InvalidArgumentError

fc = gf.feature_column

# input_layer of every column kind (the program of ``_every_kind``): per row, the
# non-zero columns of the [4, 48] result
EVERY_KIND = [
    {0: 10.0, 1: 1.0, 10: 1.0, 18: 1.0, 23: 1.0, 26: 1.0, 27: 1.0, 34: 1.0, 36: 1.0,
     38: 1.0, 44: 1.0},
    {0: 20.0, 2: 1.0, 12: 1.0, 21: 1.0, 25: 1.0, 29: 1.0, 33: 1.0, 43: 1.0},
    {0: 40.0, 4: 1.0, 16: 1.0, 21: 1.0},
    {0: 25.0, 3: 1.0, 11: 1.0, 19: 1.0, 24: 1.0, 28: 2.0, 36: 2.0, 41: 1.0, 47: 1.0}]
HASHED_EMBEDDING = [[9.0, 10.0, 11.0], [15.0, 16.0, 17.0], [0.0, 0.0, 0.0],
                    [18.0, 19.0, 20.0]]

WEIGHTED = {
    "emb_mean": [[0.64, 0.74, 0.84, 0.94], [2.0, 2.1, 2.2, 2.3], [0.0, 0.0, 0.0, 0.0]],
    "emb_sqrtn": [[0.7761140465736389, 0.8973818421363831, 1.0186495780944824,
                   1.1399173736572266], [2.0, 2.1, 2.2, 2.3], [0.0, 0.0, 0.0, 0.0]],
    "emb_sum": [[1.6, 1.85, 2.1, 2.35], [2.0, 2.1, 2.2, 2.3], [0.0, -0.1, -0.2, -0.3]],
    "indicator": [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.5, 0.0, 2.0, 4.0],
                  [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 6.0, 8.0],
                  [0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0, 12.0]],
    "linear": [[-16.0, -6.0], [-27.0, -10.0], [-38.0, -14.0]],
    "lines": [2, 0, -1],
    "shared": [[1.0, 1.1, 1.2, 1.3, 0.0, 0.1, 0.2, 0.3], [2.0, 2.1, 2.2, 2.3, 0.8, 0.9, 1.0, 1.1],
               [0.0, 0.1, 0.2, 0.3, 2.0, 2.1, 2.2, 2.3]],
    "textfile": [b"three", b"seven", b"?"],
}
WEIGHTED_NAMES = [
    "input_layer_1/ids_weighted_by_wts_embedding/embedding_weights",
    "input_layer_2/ids_weighted_by_wts_embedding/embedding_weights",
    "input_layer_3/ids_weighted_by_wts_embedding/embedding_weights",
    "input_layer_4/ids_k_shared_embedding/embedding_weights", "linear_model/bias_weights",
    "linear_model/color/weights", "linear_model/k/weights", "linear_model/x/weights"]


def _every_kind():
    age = fc.numeric_column("age")
    ages = fc.bucketized_column(age, [18, 25, 30])
    city = fc.categorical_column_with_vocabulary_list("city", ["a", "b", "c"])
    city_oov = fc.categorical_column_with_vocabulary_list("city2", ["a", "b"], num_oov_buckets=3)
    h = fc.categorical_column_with_hash_bucket("word", 10)
    hi = fc.categorical_column_with_hash_bucket("n", 7, dtype=gf.int64)
    ident = fc.categorical_column_with_identity("n2", 5, default_value=0)
    cross = fc.crossed_column(["city", ages], 13)
    ints = [[1, 9], [3, -1], [-1, -1], [2, 2]]
    feats = {"age": gf.constant([[10.], [20.], [40.], [25.]]),
             "city": gf.constant([["a"], ["c"], ["zz"], ["b"]]),
             "city2": gf.constant([["a"], ["c"], ["zz"], ["b"]]),
             "word": gf.constant([["hello", "x"], ["y", ""], ["", ""], ["q", "w"]]),
             "n": gf.constant(ints, dtype=gf.int64), "n2": gf.constant(ints, dtype=gf.int64)}
    net = fc.input_layer(feats, [age, ages, fc.indicator_column(city),
                                 fc.indicator_column(city_oov), fc.indicator_column(h),
                                 fc.indicator_column(hi), fc.indicator_column(ident),
                                 fc.indicator_column(cross)])
    init = gf.constant_initializer(np.arange(30.).reshape(10, 3))
    emb = fc.input_layer(feats, [fc.embedding_column(h, 3, initializer=init)])
    return net, emb


def _weighted(tmp_path):
    vocab, pairs = str(tmp_path / "vocab.txt"), str(tmp_path / "pairs.txt")
    (tmp_path / "vocab.txt").write_text("red\ngreen\nblue\n")
    (tmp_path / "pairs.txt").write_text("7\tseven\n3\tthree\n")
    out = {}
    color = fc.categorical_column_with_vocabulary_file("color", vocab, num_oov_buckets=2)
    w = fc.weighted_categorical_column(fc.categorical_column_with_identity("ids", 6), "wts")
    ci = np.arange(24.).reshape(6, 4) / 10
    index = [[0, 0], [0, 1], [1, 0], [2, 0]]
    feats = {"color": gf.constant([["red", "pink"], ["blue", ""], ["", ""]]),
             "ids": gf.SparseTensor(index, gf.constant([1, 4, 5, 0], gf.int64), [3, 2]),
             "wts": gf.SparseTensor(index, [2.0, 0.5, 1.0, -1.0], [3, 2]),
             "x": gf.constant([[1., 2.], [3., 4.], [5., 6.]]),
             "k": gf.constant([[0], [2], [5]], gf.int64)}
    x = fc.numeric_column("x", shape=(2,), normalizer_fn=lambda v: v * 2.0)
    k = fc.categorical_column_with_identity("k", 6)
    out["indicator"] = fc.input_layer(feats, [fc.indicator_column(color),
                                              fc.indicator_column(w), x])
    for comb in ("mean", "sqrtn", "sum"):
        init = gf.constant_initializer(ci)
        out["emb_" + comb] = fc.input_layer(feats, [fc.embedding_column(w, 4, comb, init)])
    shared = fc.shared_embedding_columns([k, fc.categorical_column_with_identity("ids", 6)], 4,
                                         initializer=gf.constant_initializer(ci))
    out["shared"] = fc.input_layer(feats, shared)
    cols = {}
    out["linear"] = fc.linear_model(feats, [x, color, k], units=2, cols_to_vars=cols)
    assigns = []
    for variables in cols.values():
        for v in variables:
            shape = [int(d) for d in v.shape]
            assigns.append(gf.assign(v, np.arange(np.prod(shape), dtype=np.float32)
                                     .reshape(shape) - 3))
    ti = gf.lookup.StaticHashTable(
        gf.lookup.TextFileInitializer(pairs, gf.int64, 0, gf.string, 1), "?")
    out["textfile"] = ti.lookup(gf.constant([3, 7, 9], gf.int64))
    tl = gf.lookup.StaticHashTable(gf.lookup.TextFileInitializer(
        vocab, gf.string, gf.lookup.TextFileIndex.WHOLE_LINE, gf.int64,
        gf.lookup.TextFileIndex.LINE_NUMBER), -1)
    out["lines"] = tl.lookup(gf.constant(["blue", "red", "x"]))
    return out, assigns


def _session(graph, backend):
    sess = gf.Session(graph=graph, backend=backend)
    sess.run([gf.global_variables_initializer(), gf.tables_initializer()])
    return sess


def test_every_column_kind_gives_tensorflows_input_layer(backend):
    graph = gf.Graph()
    with graph.as_default():
        net, emb = _every_kind()
        with _session(graph, backend) as sess:
            got, got_emb = sess.run([net, emb])
    want = np.zeros((4, 48), np.float32)
    for r, row in enumerate(EVERY_KIND):
        for c, v in row.items():
            want[r, c] = v
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_emb, HASHED_EMBEDDING)


def test_weights_vocabulary_files_shared_tables_and_linear_model(backend, tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        out, assigns = _weighted(tmp_path)
        names = sorted(v.name for v in gf.global_variables())
        with _session(graph, backend) as sess:
            sess.run(assigns)
            got = sess.run(out)
    assert names == WEIGHTED_NAMES
    for key, want in WEIGHTED.items():
        if key == "textfile":
            assert list(got[key]) == want
        else:
            np.testing.assert_allclose(got[key], want, rtol=1e-6, atol=1e-6, err_msg=key)


def test_make_parse_example_spec_and_names():
    age = fc.numeric_column("age", shape=2, default_value=1.5)
    city = fc.categorical_column_with_vocabulary_list("city", ["a", "b"])
    cross = fc.crossed_column(["city", fc.bucketized_column(age, [0.0])], 10)
    w = fc.weighted_categorical_column(fc.categorical_column_with_identity("i", 2), "w")
    spec = fc.make_parse_example_spec([age, city, cross, w])
    assert spec == {"age": gf.FixedLenFeature((2,), gf.float32, (1.5, 1.5)),
                    "city": gf.VarLenFeature(gf.string), "i": gf.VarLenFeature(gf.int64),
                    "w": gf.VarLenFeature(gf.float32)}
    assert cross.name == "age_bucketized_X_city"
    assert fc.embedding_column(city, 4).name == "city_embedding"
    assert fc.indicator_column(city).name == "city_indicator"
    assert w.name == "i_weighted_by_w"
    assert [c.name for c in fc.shared_embedding_columns([city, w], 2)] == [
        "city_shared_embedding", "i_weighted_by_w_shared_embedding"]


def test_bad_columns_are_refused_when_built():
    city = fc.categorical_column_with_vocabulary_list("city", ["a", "b"])
    with pytest.raises(ValueError, match="_DenseColumn"):
        fc.input_layer({"city": gf.constant([["a"]])}, [city])
    with pytest.raises(ValueError, match="Duplicate keys"):
        fc.categorical_column_with_vocabulary_list("c", ["a", "a"])
    with pytest.raises(ValueError, match="sorted"):
        fc.bucketized_column(fc.numeric_column("x"), [3, 1])
    with pytest.raises(ValueError, match="both default_value"):
        fc.categorical_column_with_vocabulary_list("c", ["a"], default_value=3,
                                                   num_oov_buckets=1)
    with pytest.raises(ValueError, match="not in features"):
        fc.input_layer({}, [fc.numeric_column("x")])


def test_identity_ids_outside_the_buckets_are_an_error(backend):
    graph = gf.Graph()
    with graph.as_default():
        ids = fc.indicator_column(fc.categorical_column_with_identity("k", 3))
        net = fc.input_layer({"k": gf.constant([[1], [7]], gf.int64)}, [ids])
        with _session(graph, backend) as sess, pytest.raises(InvalidArgumentError):
            sess.run(net)


def test_lookup_tables_as_tensorflow(backend):
    graph = gf.Graph()
    with graph.as_default():
        t = gf.lookup.StaticHashTable(gf.lookup.KeyValueTensorInitializer([1, 2], [5, 6]), -1)
        v = gf.lookup.StaticVocabularyTable(gf.lookup.KeyValueTensorInitializer(
            ["a", "b"], gf.constant([0, 1], gf.int64)), 3)
        v2 = gf.lookup.StaticVocabularyTable(gf.lookup.KeyValueTensorInitializer(
            gf.constant([7, 9], gf.int64), gf.constant([0, 1], gf.int64)), 4)
        sp = t.lookup(gf.SparseTensor([[0, 0], [1, 1]], [2, 8], [2, 2]))
        out = [t.lookup(gf.constant([1, 3])), t.size(),
               v.lookup(gf.constant(["a", "zz", "b", "hello", "c"])), v.size(),
               v2.lookup(gf.constant([7, 8, 9, 10, 11, 12], gf.int64)), sp.values]
        assert (t.key_dtype, t.value_dtype) == (gf.int32, gf.int32)
        with gf.Session(graph=graph, backend=backend) as sess:
            with pytest.raises(FailedPreconditionError, match="not initialized"):
                sess.run(out[0])
            sess.run(gf.initialize_all_tables())
            got = sess.run(out)
    assert got[0].tolist() == [5, -1] and got[1] == 2 and got[3] == 5
    assert got[2].tolist() == [0, 3, 1, 3, 3]
    assert got[4].tolist() == [0, 5, 1, 4, 5, 2]
    assert got[5].tolist() == [6, -1]


def test_a_key_with_two_values_is_an_error(backend):
    graph = gf.Graph()
    with graph.as_default():
        gf.lookup.StaticHashTable(gf.lookup.KeyValueTensorInitializer(["a", "a"], [1, 2]), 0)
        with gf.Session(graph=graph, backend=backend) as sess, \
                pytest.raises(InvalidArgumentError, match="different value for same key"):
            sess.run(gf.tables_initializer())
    with pytest.raises(ValueError, match="num_oov_buckets"):
        gf.lookup.StaticVocabularyTable(gf.lookup.KeyValueTensorInitializer(
            ["a"], gf.constant([0], gf.int64)), 0)


def test_tables_are_initialized_by_the_default_local_init_op(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        city = fc.categorical_column_with_vocabulary_list("city", ["a", "b"])
        net = fc.input_layer({"city": gf.constant([["b"], ["a"]])}, [fc.indicator_column(city)])
        gf.train.get_or_create_global_step()
        with gf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
            assert sess.run(net).tolist() == [[0.0, 1.0], [1.0, 0.0]]
