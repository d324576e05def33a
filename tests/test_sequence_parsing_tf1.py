"""``tf.parse_single_sequence_example`` and ``tf.io.parse_sequence_example``
(gradflow/prim/sequence_parsing.py) against TensorFlow 2.21, on every CPU backend.

The two records are the bytes TensorFlow 2.21 serialized (``tf.train.SequenceExample``
with context ``length``/``name`` and feature lists ``tokens`` (int64 per step), ``vec``
(2 floats per step) and ``words`` (k+1 strings at step k)); the expected values are what
TensorFlow 2.21's ``compat.v1`` parsers gave for them in graph mode, written in as
literals. gradflow's own ``SequenceExample`` writes them as well. The same for
``SparseFeature`` in ``parse_example`` / ``parse_single_example``, of the two
``tf.train.Example`` records E1 (ix [3, 1], val [0.5, 2.5]) and E2 (ix [4], val [7.0]).
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

A = bytes.fromhex(
    "0a230a0f0a066c656e67746812051a030a01030a100a046e616d6512080a060a0473657133127d0a270a05"
    "776f726473121e0a050a030a01770a080a060a01770a01770a0b0a090a01770a01770a01770a310a037665"
    "63122a0a0c120a0a0800000040000080c00a0c120a0a08000020400000a0c00a0c120a0a08000040400000"
    "c0c00a1f0a06746f6b656e7312150a051a030a01040a051a030a01050a051a030a0106")
B = bytes.fromhex(
    "0a230a0f0a066c656e67746812051a030a01010a100a046e616d6512080a060a0473657131123c0a100a05"
    "776f72647312070a050a030a01770a150a03766563120e0a0c120a0a0800009040000010c10a110a06746f"
    "6b656e7312070a051a030a0109")


def _features():
    context = {"length": gf.FixedLenFeature([], gf.int64),
               "name": gf.FixedLenFeature([], gf.string),
               "missing": gf.FixedLenFeature([2], gf.float32, default_value=[1.0, 2.0]),
               "length_v": gf.VarLenFeature(gf.int64)}
    sequence = {"tokens": gf.FixedLenSequenceFeature([], gf.int64),
                "vec": gf.io.FixedLenSequenceFeature([2], gf.float32),
                "words": gf.VarLenFeature(gf.string),
                "absent": gf.FixedLenSequenceFeature([3], gf.float32, allow_missing=True)}
    return context, sequence


def test_single_sequence_example_as_tensorflow(backend):
    gf.reset_default_graph()
    context, sequence = gf.parse_single_sequence_example(A, *_features())
    assert {k: v.shape.as_list() for k, v in sequence.items() if k != "words"} == {
        "tokens": [None], "vec": [None, 2], "absent": [None, 3]}  # TF 2.21's static shapes
    with gf.Session(backend=backend) as sess:
        c, s = sess.run([context, sequence])
    assert int(c["length"]) == 3 and c["name"] == b"seq3"
    np.testing.assert_array_equal(c["missing"], [1.0, 2.0])
    assert c["length_v"].values.shape == (0,) and list(c["length_v"].dense_shape) == [0]
    np.testing.assert_array_equal(s["tokens"], [4, 5, 6])
    np.testing.assert_array_equal(s["vec"], [[2.0, -4.0], [2.5, -5.0], [3.0, -6.0]])
    assert s["absent"].shape == (0, 3)
    np.testing.assert_array_equal(s["words"].indices,
                                  [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]])
    assert list(s["words"].values) == [b"w"] * 6 and list(s["words"].dense_shape) == [3, 3]


def test_batch_of_sequence_examples_is_padded_as_tensorflow(backend):
    gf.reset_default_graph()
    context, sequence, lengths = gf.io.parse_sequence_example([A, B], *_features())
    assert sequence["vec"].shape.as_list() == [2, None, 2]  # TF 2.21's
    with gf.Session(backend=backend) as sess:
        c, s, n = sess.run([context, sequence, lengths])
    np.testing.assert_array_equal(c["length"], [3, 1])
    assert list(c["name"]) == [b"seq3", b"seq1"]
    np.testing.assert_array_equal(c["missing"], [[1.0, 2.0], [1.0, 2.0]])
    assert list(c["length_v"].dense_shape) == [2, 0]
    np.testing.assert_array_equal(s["tokens"], [[4, 5, 6], [9, 0, 0]])
    np.testing.assert_array_equal(s["vec"], [[[2.0, -4.0], [2.5, -5.0], [3.0, -6.0]],
                                             [[4.5, -9.0], [0.0, 0.0], [0.0, 0.0]]])
    assert s["absent"].shape == (2, 0, 3)
    np.testing.assert_array_equal(s["words"].indices, [[0, 0, 0], [0, 1, 0], [0, 1, 1],
                                                       [0, 2, 0], [0, 2, 1], [0, 2, 2],
                                                       [1, 0, 0]])
    assert list(s["words"].dense_shape) == [2, 3, 3]
    assert {k: list(v) for k, v in n.items()} == {"absent": [0, 0], "tokens": [3, 1],
                                                  "vec": [3, 1]}


def test_records_written_by_gradflow_parse_and_errors_name_the_feature():
    gf.reset_default_graph()
    record = gf.train.SequenceExample()
    record.context.feature["id"].int64_list.value.append(7)
    for t in (1, 2):
        record.feature_lists.feature_list["x"].feature.add().float_list.value.append(t)
    data = record.SerializeToString()
    context, sequence = gf.parse_single_sequence_example(
        data, {"id": gf.FixedLenFeature([], gf.int64)},
        {"x": gf.FixedLenSequenceFeature([], gf.float32)})
    required = gf.parse_single_sequence_example(
        data, sequence_features={"nope": gf.FixedLenSequenceFeature([], gf.int64)})
    wrong = gf.parse_single_sequence_example(
        data, sequence_features={"x": gf.FixedLenSequenceFeature([2], gf.float32)})
    with gf.Session() as sess:
        c, s = sess.run([context, sequence])
        assert int(c["id"]) == 7 and list(s["x"]) == [1.0, 2.0]
        with pytest.raises(gf.errors.InvalidArgumentError, match="'nope' is required"):
            sess.run(required[1])
        with pytest.raises(gf.errors.InvalidArgumentError, match="step 0 of sequence"):
            sess.run(wrong[1])
    with pytest.raises(ValueError, match="default_value"):
        gf.io.parse_sequence_example([data], sequence_features={
            "x": gf.FixedLenSequenceFeature([], gf.float32, True, default_value=0.0)})


E1 = bytes.fromhex("0a230a0c0a02697812061a040a0203010a130a0376616c120c120a0a080000003f00002040")
E2 = bytes.fromhex("0a1e0a0b0a02697812051a030a01040a0f0a0376616c120812060a040000e040")


def test_sparse_feature_as_tensorflow(backend):
    gf.reset_default_graph()
    spec = gf.SparseFeature(index_key="ix", value_key="val", dtype=gf.float32, size=5)
    one = gf.parse_single_example(E1, {"sp": spec})
    two = gf.io.parse_example([E1, E2], {"sp": spec})
    kept = gf.parse_example([E1], {"sp": gf.io.SparseFeature("ix", "val", gf.float32, 5,
                                                             already_sorted=True),
                                   "val": gf.VarLenFeature(gf.float32)})
    assert set(kept) == {"sp", "val"}
    with gf.Session(backend=backend) as sess:
        a, b, c = sess.run([one["sp"], two["sp"], kept["sp"]])
    np.testing.assert_array_equal(a.indices, [[1], [3]])
    np.testing.assert_array_equal(a.values, [2.5, 0.5])
    np.testing.assert_array_equal(a.dense_shape, [5])
    np.testing.assert_array_equal(b.indices, [[0, 1], [0, 3], [1, 4]])
    np.testing.assert_array_equal(b.values, [2.5, 0.5, 7.0])
    np.testing.assert_array_equal(b.dense_shape, [2, 5])
    np.testing.assert_array_equal(c.indices, [[0, 3], [0, 1]])  # already_sorted: as stored
    with pytest.raises(ValueError, match="also asked for"):
        gf.parse_example([E1], {"sp": spec, "ix": gf.FixedLenFeature([2], gf.int64)})
