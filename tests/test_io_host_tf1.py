"""TF1's host functions of ``tf.io`` (gradflow/prim/serialize.py, gradflow/prim/io_host.py):
``serialize_tensor``/``parse_tensor``, the ``SparseTensor`` serializations, web-safe
base64, ``decode_compressed``, ``write_file``, ``matching_files``,
``match_filenames_once``, and the checks of a Session's variables, on every CPU backend.

The expected bytes and values are TensorFlow 2.21's (``tensorflow.compat.v1`` in graph
mode, run once by hand: ``sess.run(tf.serialize_tensor(tf.constant([[1., 2.], [3.,
4.]]))).hex()`` and so on for each literal), written in as literals.
"""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np
import pytest

import gradflow as gf

# TensorFlow 2.21's TensorProto bytes (hex) of serialize_tensor
SERIALIZED = [
    (lambda: gf.constant([[1., 2.], [3., 4.]]),
     "08011208120208021202080222100000803f000000400000404000008040"),
    (lambda: gf.constant([5, -1], gf.int64),
     "080912041202080222100500000000000000ffffffffffffffff"),
    (lambda: gf.constant(7), "08031200220407000000"),
    (lambda: gf.constant([b"ab", b""]), "0807120412020802420261624200"),
    (lambda: gf.constant([True, False]), "080a12041202080222020100"),
    (lambda: gf.zeros([0, 3], gf.float64), "08021206120012020803"),
    (lambda: gf.constant([1, 255], gf.uint8), "0804120412020802220201ff"),
]
HALF = "08131204120208012202003e"  # of gf.constant([1.5], gf.float16)
# TensorFlow 2.21's serialize_sparse of SparseTensor([[0, 1], [2, 3]], [1.5, 2.5], [3, 4])
SPARSE = ["08091208120208021202080222200000000000000000010000000000000002000000000000000300"
          "000000000000", "080112041202080222080000c03f00002040",
          "0809120412020802221003000000000000000400000000000000"]
# and its serialize_many_sparse of SparseTensor([[0,0,1],[1,2,0],[1,2,3]], [7,8,9], [2,3,4])
MANY = [["080912081202080112020802221000000000000000000100000000000000",
         "0803120412020801220407000000",
         "0809120412020802221003000000000000000400000000000000"],
        ["08091208120208021202080222200200000000000000000000000000000002000000000000000300"
         "000000000000", "080312041202080222080800000009000000",
         "0809120412020802221003000000000000000400000000000000"]]


def _run(backend, fetches, feed=None):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


def test_serialize_tensor_writes_tensorflows_bytes(backend):
    got = _run(backend, [gf.serialize_tensor(make()) for make, _ in SERIALIZED])
    assert [g.hex() for g in got] == [want for _, want in SERIALIZED]


def test_parse_tensor_reads_tensorflows_bytes_back(backend):
    cases = [(bytes.fromhex(SERIALIZED[0][1]), gf.float32, [[1., 2.], [3., 4.]]),
             (bytes.fromhex(SERIALIZED[1][1]), gf.int64, [5, -1]),
             (bytes.fromhex(SERIALIZED[3][1]), gf.string, [b"ab", b""]),
             (bytes.fromhex(SERIALIZED[5][1]), gf.float64, np.zeros((0, 3)))]
    text = gf.placeholder(gf.string, [])
    with gf.Session(backend=backend) as sess:
        for data, dtype, want in cases:
            out = gf.io.parse_tensor(text, dtype)
            assert out.dtype is dtype and out.shape is None
            got = sess.run(out, {text: data})
            np.testing.assert_array_equal(got, np.asarray(want, dtype=got.dtype))
            assert got.shape == np.asarray(want).shape


def test_float16_round_trips_as_tensorflow():
    # on NumPy: the array_api_strict namespace has no float16
    text = gf.serialize_tensor(gf.constant([1.5], gf.float16))
    assert _run("numpy", text).hex() == HALF
    assert _run("numpy", gf.parse_tensor(bytes.fromhex(HALF), gf.float16)).tolist() == [1.5]


def test_parse_tensor_takes_typed_value_fields_and_refuses_the_wrong_dtype():
    # float_val (field 5, packed) holding one value for a [2, 2] tensor: repeated, as TF does
    proto = bytes.fromhex("0801120812020802120208022a040000c03f")
    assert np.array_equal(_run("numpy", gf.parse_tensor(proto, gf.float32)),
                          np.full((2, 2), 1.5, np.float32))
    with pytest.raises(gf.errors.InvalidArgumentError, match="out_type is int32"):
        _run("numpy", gf.parse_tensor(proto, gf.int32))
    with pytest.raises(gf.errors.InvalidArgumentError, match="not a TensorProto"):
        _run("numpy", gf.parse_tensor(b"\x08", gf.float32))


def test_sparse_serializations_as_tensorflow(backend):
    st = gf.SparseTensor([[0, 1], [2, 3]], [1.5, 2.5], [3, 4])
    st3 = gf.SparseTensor([[0, 0, 1], [1, 2, 0], [1, 2, 3]], [7, 8, 9], [2, 3, 4])
    many = gf.serialize_many_sparse(st3)
    back = gf.deserialize_many_sparse(many, gf.int32)
    assert many.shape.as_list() == [None, 3] and back.values.dtype is gf.int32
    one, rows, value = _run(backend, [gf.serialize_sparse(st), many, back])
    assert [x.hex() for x in one] == SPARSE
    assert [[x.hex() for x in row] for row in rows] == MANY
    np.testing.assert_array_equal(value.indices, [[0, 0, 1], [1, 2, 0], [1, 2, 3]])
    np.testing.assert_array_equal(value.values, [7, 8, 9])
    np.testing.assert_array_equal(value.dense_shape, [2, 3, 4])


def test_deserialize_many_sparse_takes_the_largest_shape_of_the_rows():
    rows = gf.placeholder(gf.string, [None, 3])
    a = gf.serialize_many_sparse(gf.SparseTensor([[0, 1]], [b"x"], [1, 2]))
    b = gf.serialize_many_sparse(gf.SparseTensor([[0, 4]], [b"y"], [1, 5]))
    with gf.Session() as sess:
        both = np.concatenate(sess.run([a, b]))
        got = sess.run(gf.deserialize_many_sparse(rows, gf.string), {rows: both})
    np.testing.assert_array_equal(got.indices, [[0, 1], [1, 4]])
    assert list(got.values) == [b"x", b"y"]
    np.testing.assert_array_equal(got.dense_shape, [2, 5])


def test_web_safe_base64_as_tensorflow(backend):
    words = [b"hello", b"\xff\xfe?", b"", b"ab"]
    plain, padded, decoded = _run(backend, [
        gf.encode_base64(words), gf.io.encode_base64(words, pad=True),
        gf.decode_base64([b"aGVsbG8", b"__4_", b"YWI=", b""])])
    assert list(plain) == [b"aGVsbG8", b"__4_", b"", b"YWI"]  # TF 2.21's
    assert list(padded) == [b"aGVsbG8=", b"__4_", b"", b"YWI="]
    assert list(decoded) == [b"hello", b"\xff\xfe?", b"ab", b""]
    for bad in (b"a", b"ab+/"):  # TF: "Base64 string length cannot be 1 mod 4"; not web-safe
        with pytest.raises(gf.errors.InvalidArgumentError):
            _run(backend, gf.decode_base64(bad))


def test_decode_compressed_as_tensorflow(backend):
    data = b"compress me " * 5
    z, g, same = _run(backend, [gf.decode_compressed(zlib.compress(data), "ZLIB"),
                                gf.io.decode_compressed([gzip.compress(data)], "GZIP"),
                                gf.decode_compressed([b"x"])])
    assert z == data and list(g) == [data] and list(same) == [b"x"]
    with pytest.raises(gf.errors.InvalidArgumentError, match="not ZLIB"):
        _run(backend, gf.decode_compressed(b"plain", "ZLIB"))
    with pytest.raises(ValueError, match="compression_type"):
        gf.decode_compressed(b"x", "BZIP2")


def test_write_file_and_matching_files(tmp_path, backend):
    target = str(tmp_path / "made" / "out.txt")
    write = gf.write_file(target, gf.constant(b"written"))
    found = gf.matching_files([str(tmp_path / "made" / "*.txt"), str(tmp_path / "*.none")])
    with gf.Session(backend=backend) as sess:
        sess.run(write)
        assert open(target, "rb").read() == b"written"
        assert list(sess.run(found)) == [target.encode()]
        (tmp_path / "made" / "a.txt").write_bytes(b"")
        assert list(sess.run(found)) == [str(tmp_path / "made" / "a.txt").encode(),
                                         target.encode()]


def test_match_filenames_once_feeds_a_filename_queue_as_tf1_programs_do(tmp_path):
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("1,2\n")
    filenames = gf.train.match_filenames_once(os.path.join(str(tmp_path), "*.csv"))
    queue = gf.train.string_input_producer(filenames, num_epochs=1, shuffle=False)
    _, line = gf.TextLineReader().read(queue)
    with gf.Session() as sess:
        sess.run([gf.global_variables_initializer(), gf.local_variables_initializer()])
        first = list(sess.run(filenames))
        (tmp_path / "c.csv").write_text("3,4\n")
        assert list(sess.run(filenames)) == first  # found once per Session
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess, coord=coord)
        lines = []
        with pytest.raises(gf.errors.OutOfRangeError):
            while True:
                lines.append(sess.run(line))
        coord.request_stop()
        coord.join(threads)
    assert first == [str(tmp_path / n).encode() for n in ("a.csv", "b.csv")]
    assert lines == [b"1,2", b"1,2"]
    with gf.Session() as sess:
        assert len(sess.run(filenames)) == 3


def test_variable_checks_look_at_the_sessions_variables(backend):
    gf.reset_default_graph()
    w = gf.Variable(1.0, name="w")
    step = gf.Variable(0, name="step")
    flag = gf.is_variable_initialized(w)
    report = gf.report_uninitialized_variables()
    check = gf.assert_variables_initialized([w, step])
    assert flag.dtype is gf.bool and report.shape.as_list() == [None]
    with gf.Session(backend=backend) as sess:
        assert not sess.run(flag)
        assert list(sess.run(report)) == [b"w", b"step"]
        with pytest.raises(gf.errors.FailedPreconditionError, match="w, step"):
            sess.run(check)
        sess.run(w.initializer)
        assert sess.run(flag) and list(sess.run(report)) == [b"step"]
        sess.run(gf.global_variables_initializer())
        assert list(sess.run(report)) == []
        sess.run(check)
    gf.reset_default_graph()
    assert gf.assert_variables_initialized() is None
    with gf.Session() as sess:
        assert list(sess.run(gf.report_uninitialized_variables())) == []


def test_count_up_to_counts_then_stops(backend):
    gf.reset_default_graph()
    counter = gf.Variable(0, dtype=gf.int64, name="counter")
    count = gf.count_up_to(counter, 3)
    assert count.dtype is gf.int64
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        assert [int(sess.run(count)) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(gf.errors.OutOfRangeError, match="limit of 3"):
            sess.run(count)
        assert int(sess.run(counter)) == 3
    with pytest.raises(TypeError, match="int32 or int64"):
        gf.count_up_to(gf.Variable(0.0), 3)
