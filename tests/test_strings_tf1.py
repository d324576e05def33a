"""TF1's string ops (``tf.string_split``, ``tf.strings.*``, ``tf.as_string``,
``tf.string_to_number``, ``tf.reduce_join``, ``tf.substr``, ``tf.regex_replace``,
``tf.string_to_hash_bucket_fast``) against TensorFlow 2.21's values.

The expected values are literals: TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in
graph mode, ``Session.run``) of the same calls, made once with TensorFlow installed and
pasted here; TensorFlow is not needed to run these tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError
from gradflow.prim.strings import fingerprint64


def _run(backend, build, feeds=None):
    graph = gf.Graph()
    with graph.as_default():
        out = build()
    with gf.Session(graph=graph, backend=backend) as sess:
        return sess.run(out, feeds)


def _sparse(value):
    return value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()


def test_splits_give_sparse_tensors_as_tensorflow(backend):
    got = _run(backend, lambda: [
        gf.string_split(["hello world", "a  b", ""], delimiter=" "),
        gf.string_split(["a,b;c", "d"], delimiter=",;"),
        gf.string_split(["ab", "c"], delimiter=""),
        gf.string_split(["a  b"], delimiter=" ", skip_empty=False),
        gf.strings.split(["a  b c", " x "]),
        gf.strings.split(["a<>b<><>c"], sep="<>"),
        gf.strings.split(["a b c d"], maxsplit=2)])
    assert [_sparse(v) for v in got] == [
        ([[0, 0], [0, 1], [1, 0], [1, 1]], [b"hello", b"world", b"a", b"b"], [3, 2]),
        ([[0, 0], [0, 1], [0, 2], [1, 0]], [b"a", b"b", b"c", b"d"], [2, 3]),
        ([[0, 0], [0, 1], [1, 0]], [b"a", b"b", b"c"], [2, 2]),
        ([[0, 0], [0, 1], [0, 2]], [b"a", b"", b"b"], [1, 3]),
        ([[0, 0], [0, 1], [0, 2], [1, 0]], [b"a", b"b", b"c", b"x"], [2, 3]),
        ([[0, 0], [0, 1], [0, 2], [0, 3]], [b"a", b"b", b"", b"c"], [1, 4]),
        ([[0, 0], [0, 1], [0, 2]], [b"a", b"b", b"c d"], [1, 3])]


def test_a_line_split_into_words_and_hashed_into_buckets_as_tf1_programs_do(backend):
    """The bag-of-words idiom: lines fed, split into words, words hashed into ids."""
    graph = gf.Graph()
    with graph.as_default():
        lines = gf.placeholder(gf.string, [None])
        words = gf.string_split(lines)
        ids = gf.string_to_hash_bucket_fast(words.values, 10)
        dense = gf.sparse_tensor_to_dense(gf.SparseTensor(words.indices, ids,
                                                          words.dense_shape), -1)
    with gf.Session(graph=graph, backend=backend) as sess:
        got = sess.run(dense, {lines: ["the quick", "brown fox"]})
    assert got.tolist() == [[4, 6], [3, 0]]


def test_joins_as_tensorflow(backend):
    table = [["a", "b"], ["c", "d"]]
    got = _run(backend, lambda: [
        gf.reduce_join(table), gf.reduce_join(table, axis=0, separator="-"),
        gf.reduce_join(table, axis=1, keep_dims=True), gf.reduce_join(table, axis=-1),
        gf.strings.reduce_join(table, axis=[0, 1], separator=","),
        gf.strings.join([["a", "b"], "x"], separator="_"), gf.string_join(["a", ["b", "c"]])])
    assert [np.asarray(v).tolist() for v in got] == [
        b"abcd", [b"a-c", b"b-d"], [[b"ab"], [b"cd"]], [b"ab", b"cd"], b"a,c,b,d",
        [b"a_x", b"b_x"], [b"ab", b"ac"]]


def test_element_wise_string_ops_as_tensorflow(backend):
    got = _run(backend, lambda: [
        gf.strings.length(["abc", "é", ""]),
        gf.strings.length(["abc", "é", ""], unit="UTF8_CHAR"),
        gf.substr(["hello", "world"], 1, 3), gf.substr(["hello"], -3, 2),
        gf.substr(["hello"], 4, 5), gf.substr(["hello", "abc"], [0, 1], [2, 1]),
        gf.strings.substr(["héllo"], 1, 2, unit="UTF8_CHAR"),
        gf.regex_replace(["aa bb", "c"], "a|b", "x"),
        gf.regex_replace(["aa bb"], "a", "x", replace_global=False),
        gf.regex_replace(["ab12"], r"(\d+)", r"<\1>"),
        gf.strings.regex_replace(["ab12"], r"\d", r"[\0]"),
        gf.strings.regex_full_match(["abc", "ab1"], "[a-z]+"),
        gf.strings.strip([" a b \n", "\tx"]), gf.strings.lower(["AbÉ"]),
        gf.strings.upper(["abé"]), gf.strings.upper(["abé"], encoding="utf-8")])
    assert [v.tolist() for v in got] == [
        [3, 2, 0], [3, 1, 0], [b"ell", b"orl"], [b"ll"], [b"o"], [b"he", b"b"],
        ["él".encode()], [b"xx xx", b"c"], [b"xa bb"], [b"ab<12>"], [b"ab[1][2]"],
        [True, False], [b"a b", b"x"], ["abÉ".encode()], ["ABé".encode()], ["ABÉ".encode()]]
    assert got[0].dtype == np.int32 and got[11].dtype == np.bool_


def test_numbers_to_text_and_back_as_tensorflow(backend):
    got = _run(backend, lambda: [
        gf.as_string([1.5, 2.0, 1e10, -0.25]), gf.as_string(np.array([1.5, 1e-7])),
        gf.as_string([1, -2]), gf.as_string([True, False]),
        gf.as_string([3.14159], precision=2), gf.as_string([3.14159], scientific=True),
        gf.as_string([3.14159], shortest=True), gf.as_string([7], width=4, fill="0"),
        gf.as_string([7.5], width=8),
        gf.string_to_number([" 1.5", "2e3", "inf", "1.5 "]),
        gf.strings.to_number(["12", "-3", " 4"], out_type=gf.int32)])
    assert [v.tolist() for v in got] == [
        [b"1.500000", b"2.000000", b"10000000000.000000", b"-0.250000"],
        [b"1.500000", b"0.000000"], [b"1", b"-2"], [b"true", b"false"], [b"3.14"],
        [b"3.141590e+00"], [b"3.14159"], [b"0007"], [b"7.500000"],
        [1.5, 2000.0, float("inf"), 1.5], [12, -3, 4]]
    assert got[-2].dtype == np.float32 and got[-1].dtype == np.int32


@pytest.mark.parametrize("text, out_type", [("0x10", gf.int32), ("1_0", gf.float32),
                                            ("abc", gf.float32), ("99999999999", gf.int32)])
def test_text_that_is_no_number_of_its_type_fails_when_run(backend, text, out_type):
    graph = gf.Graph()
    with graph.as_default():
        number = gf.string_to_number([text], out_type=out_type, name="parse")
    with gf.Session(graph=graph, backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match="'parse'"):
            sess.run(number)


def test_bad_arguments_fail_when_the_graph_is_built():
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="source .* must be a vector"):
            gf.string_split([["a"]])
        with pytest.raises(ValueError, match="not a regular expression"):
            gf.regex_replace(["a"], "(", "x")
        with pytest.raises(ValueError, match="names group \\\\2"):
            gf.regex_replace(["a"], "(a)", r"\2")
        with pytest.raises(TypeError, match="must be a string tensor"):
            gf.strings.length(gf.constant([1.0]))
        with pytest.raises(ValueError, match="one shape or be scalars"):
            gf.strings.join([["a", "b"], ["c"]])
        with pytest.raises(NotImplementedError, match="RaggedTensor"):
            gf.strings.split(["a"], result_type="RaggedTensor")
    with gf.Graph().as_default():
        cut = gf.substr(["hello"], 6, 1, name="cut")
        with gf.Session() as sess, pytest.raises(InvalidArgumentError,
                                                 match="'cut': pos 6 is out of range"):
            sess.run(cut)


def test_hash_buckets_are_tensorflows_at_every_length(backend):
    strings = [bytes((7 * i + 3) % 256 for i in range(n))
               for n in (0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129,
                         200, 1000)]
    expected = [1936946117179621455, 4521786392703311243, 50737162503519588,
                3731212521969449874, 1148148772684605860, 907454142650066470,
                3216519055487487771, 4528948699509268840, 671476038512894247,
                4421592475991032779, 2684005117763720424, 166524871036432617,
                1604338371932276380, 389040666157116578, 4026365912879116516,
                766062817087798142, 2767501098359636593, 1738507677182238851,
                3274404668230217687, 2315272888042904652]
    assert [fingerprint64(s) % 2 ** 62 for s in strings] == expected
    got = _run(backend, lambda: [
        gf.string_to_hash_bucket_fast(["hello", "world", "", "a" * 100], 1000),
        gf.strings.to_hash_bucket_fast(["hello", "x" * 17, "x" * 33, "x" * 65, "y" * 200],
                                       2 ** 31)])
    assert got[0].tolist() == [296, 598, 263, 618]
    assert got[1].tolist() == [825756904, 1937846181, 1139152439, 384982841, 341676980]
    assert got[0].dtype == np.int64
