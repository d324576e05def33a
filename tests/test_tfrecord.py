"""TFRecord files and ``tf.train.Example``: files TensorFlow wrote (fixtures by
tests/data/tfrecords/make.py) read and parsed, plain and GZIP; gradflow's writer and
serialization give TensorFlow's bytes; every flipped byte and every cut of a file is a
``DataLossError``; parsing errors name the feature; and TF1's reading-data flow
(``convert_to_records`` then ``read_and_decode`` through ``TFRecordReader``,
``parse_single_example``, ``decode_raw`` and ``shuffle_batch``)."""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import DataLossError, InvalidArgumentError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tfrecords")
FEATURES = {"label": gf.FixedLenFeature([], gf.int64),
            "image_raw": gf.FixedLenFeature([], gf.string),
            "weights": gf.FixedLenFeature([2], gf.float32, default_value=[9.0, 9.0]),
            "name": gf.FixedLenFeature([], gf.string)}


def _want(k):
    """The fixtures' record ``k`` (make.py's ``records``), as parsed with FEATURES."""
    weights = [0.5 * k, -1.25] if k < 2 else [9.0, 9.0]
    return k, bytes(range(k, k + 6)), np.float32(weights), f"ex-{k}".encode()


@pytest.mark.parametrize("kind", ["plain", "gzip"])
def test_files_tensorflow_wrote_are_read_and_parsed(kind):
    path = os.path.join(HERE, f"{kind}.tfrecords")
    options = gf.python_io.TFRecordOptions(gf.python_io.TFRecordCompressionType.GZIP) \
        if kind == "gzip" else None
    raw = list(gf.python_io.tf_record_iterator(path, options))
    assert len(raw) == 3
    dataset = gf.data.TFRecordDataset(path, compression_type="GZIP" if kind == "gzip" else "")
    one = dataset.map(lambda r: gf.parse_single_example(r, FEATURES))
    item = one.make_one_shot_iterator().get_next()
    batch = gf.parse_example(gf.constant(raw, dtype=gf.string), FEATURES)
    assert batch["weights"].shape.as_list() == [3, 2]
    with gf.Session() as sess:
        for k in range(3):
            got = sess.run(item)
            label, image, weights, name = _want(k)
            assert got["label"] == label and got["image_raw"] == image
            assert got["name"] == name
            np.testing.assert_array_equal(got["weights"], weights)
        batched = sess.run(batch)
    np.testing.assert_array_equal(batched["label"], [0, 1, 2])
    np.testing.assert_array_equal(batched["weights"], [_want(k)[2] for k in range(3)])
    assert list(batched["image_raw"]) == [_want(k)[1] for k in range(3)]


def test_gradflows_writer_and_examples_give_tensorflows_bytes(tmp_path):
    with open(os.path.join(HERE, "plain.tfrecords"), "rb") as f:
        theirs = f.read()
    records = list(gf.python_io.tf_record_iterator(os.path.join(HERE, "plain.tfrecords")))
    for kind in ("", "GZIP", "ZLIB"):
        path = str(tmp_path / f"ours{kind}.tfrecords")
        with gf.python_io.TFRecordWriter(path, gf.python_io.TFRecordOptions(kind)) as writer:
            for record in records:
                writer.write(record)
        with open(path, "rb") as f:
            ours = f.read()
        unpacked = {"": lambda b: b, "GZIP": gzip.decompress, "ZLIB": zlib.decompress}[kind]
        assert unpacked(ours) == theirs
        assert list(gf.python_io.tf_record_iterator(path, kind)) == records
    single = list(gf.python_io.tf_record_iterator(os.path.join(HERE, "single.tfrecords")))
    ours = [gf.train.Example(features=gf.train.Features(feature={"x": feature}))
            for feature in (gf.train.Feature(int64_list=gf.train.Int64List(value=[1, -2, 2**40])),
                            gf.train.Feature(float_list=gf.train.FloatList(value=[0.1, 3.5])),
                            gf.train.Feature(bytes_list=gf.train.BytesList(value=[b"a", b""])))]
    assert [e.SerializeToString() for e in ours] == single
    parsed = [gf.train.Example.FromString(s) for s in single]
    assert parsed == ours
    assert parsed[0].features.feature["x"].int64_list.value == [1, -2, 2**40]
    assert parsed[1].features.feature["x"].WhichOneof("kind") == "float_list"
    built = gf.train.Example()
    built.features.feature["x"].int64_list.value.append(1)  # protobuf's way, in place
    assert built.features.feature["x"].int64_list.value == [1]


def test_every_flipped_byte_and_every_cut_is_data_loss(tmp_path):
    with open(os.path.join(HERE, "plain.tfrecords"), "rb") as f:
        data = f.read()
    path = str(tmp_path / "damaged.tfrecords")
    for k in range(len(data)):
        with open(path, "wb") as f:
            f.write(data[:k] + bytes([data[k] ^ 0x10]) + data[k + 1:])
        with pytest.raises(DataLossError, match="damaged.tfrecords': record [0-2]"):
            list(gf.python_io.tf_record_iterator(path))
    ends = set()
    for record in gf.python_io.tf_record_iterator(os.path.join(HERE, "plain.tfrecords")):
        ends.add((max(ends) if ends else 0) + len(record) + 16)
    for cut in range(1, len(data)):
        with open(path, "wb") as f:
            f.write(data[:cut])
        if cut in ends:
            assert len(list(gf.python_io.tf_record_iterator(path))) >= 1
            continue
        with pytest.raises(DataLossError, match="cut short"):
            list(gf.python_io.tf_record_iterator(path))


def test_parsing_errors_name_the_feature():
    example = gf.train.Example(features=gf.train.Features(feature={
        "label": gf.train.Feature(float_list=gf.train.FloatList(value=[1.0])),
        "pair": gf.train.Feature(int64_list=gf.train.Int64List(value=[1, 2, 3]))}))
    record = gf.placeholder(gf.string, ())
    serialized = example.SerializeToString()
    with gf.Session() as sess:
        def parse(features, value=serialized):
            return sess.run(gf.parse_single_example(record, features, name="parse"),
                            {record: value})

        with pytest.raises(InvalidArgumentError, match="'parse': feature 'missing' \\(int64\\) "
                                                       "is required"):
            parse({"missing": gf.FixedLenFeature([], gf.int64)})
        with pytest.raises(InvalidArgumentError, match="feature 'label' holds a float_list, "
                                                       "not the int64_list"):
            parse({"label": gf.FixedLenFeature([], gf.int64)})
        with pytest.raises(InvalidArgumentError, match="feature 'pair' has 3 values, its "
                                                       "shape \\[2\\] needs 2"):
            parse({"pair": gf.FixedLenFeature([2], gf.int64)})
        with pytest.raises(InvalidArgumentError, match="not a tf.train.Example"):
            parse({"label": gf.FixedLenFeature([], gf.float32)}, value=b"\x0a\xff\xff")
    with pytest.raises(InvalidArgumentError, match="feature 'label' holds a float_list"):
        with gf.Session() as sess:
            sess.run(gf.parse_single_example(record, {"label": gf.VarLenFeature(gf.int64)}),
                     {record: serialized})
    with pytest.raises(TypeError, match="float32, int64 or string"):
        gf.parse_single_example(record, {"x": gf.FixedLenFeature([], gf.int32)})


def test_variable_length_features_are_sparse_tensors():
    """VarLenFeature gives TF1's SparseTensor: positions within the record (and the record
    in a batch), the values in order, the longest count as the dense width; a record
    without the feature has no entries."""
    def example(tokens, words):
        feature = {"tokens": gf.train.Feature(int64_list=gf.train.Int64List(value=tokens))}
        if words is not None:
            feature["words"] = gf.train.Feature(bytes_list=gf.train.BytesList(value=words))
        return gf.train.Example(features=gf.train.Features(feature=feature)).SerializeToString()

    records = [example([4, 5, 6], [b"a\x00", b"bc"]), example([7], None), example([], [b"d"])]
    one, batch = gf.placeholder(gf.string, ()), gf.placeholder(gf.string, (None,))
    spec = {"tokens": gf.VarLenFeature(gf.int64), "words": gf.VarLenFeature(gf.string),
            "n": gf.FixedLenFeature([], gf.int64, default_value=-1)}
    single = gf.parse_single_example(one, spec)
    many = gf.parse_example(batch, spec)
    assert isinstance(single["tokens"], gf.SparseTensor)
    dense = gf.sparse_tensor_to_dense(many["tokens"], default_value=-1)
    with gf.Session() as sess:
        got = sess.run(single, {one: records[0]})
        np.testing.assert_array_equal(got["tokens"].indices, [[0], [1], [2]])
        np.testing.assert_array_equal(got["tokens"].values, [4, 5, 6])
        np.testing.assert_array_equal(got["tokens"].dense_shape, [3])
        assert list(got["words"].values) == [b"a\x00", b"bc"]
        assert got["n"] == -1
        got, padded = sess.run([many, dense], {batch: records})
        np.testing.assert_array_equal(got["tokens"].indices, [[0, 0], [0, 1], [0, 2], [1, 0]])
        np.testing.assert_array_equal(got["tokens"].dense_shape, [3, 3])
        np.testing.assert_array_equal(got["words"].indices, [[0, 0], [0, 1], [2, 0]])
        np.testing.assert_array_equal(got["words"].dense_shape, [3, 2])
        np.testing.assert_array_equal(padded, [[4, 5, 6], [7, -1, -1], [-1, -1, -1]])


def test_a_data_set_parses_variable_length_features(tmp_path):
    """In a TFRecordDataset's map, a VarLenFeature made dense batches with padded_batch;
    a map that returns the SparseTensor itself is refused, naming what to do."""
    path = str(tmp_path / "tokens.tfrecord")
    with gf.python_io.TFRecordWriter(path) as writer:
        for tokens in ([1, 2, 3], [4], [5, 6]):
            feature = {"t": gf.train.Feature(int64_list=gf.train.Int64List(value=tokens))}
            writer.write(gf.train.Example(features=gf.train.Features(feature=feature))
                         .SerializeToString())

    def tokens(record):
        return gf.parse_single_example(record, {"t": gf.VarLenFeature(gf.int64)})["t"]

    data = gf.data.TFRecordDataset(path).map(lambda r: gf.sparse_tensor_to_dense(tokens(r)))
    batch = data.padded_batch(3, padded_shapes=[None]).make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(batch), [[1, 2, 3], [4, 0, 0], [5, 6, 0]])
    with pytest.raises(TypeError, match="returned a SparseTensor.*sparse_tensor_to_dense"):
        gf.data.TFRecordDataset(path).map(tokens)


def _convert_to(images, labels, path):
    """TF1's reading-data example, ``convert_to_records.convert_to``'s loop."""
    tf = gf

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def _bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    rows, cols, depth = images.shape[1], images.shape[2], images.shape[3]
    with tf.python_io.TFRecordWriter(path) as writer:
        for index in range(len(images)):
            image_raw = images[index].tostring() if hasattr(images[index], "tostring") \
                else images[index].tobytes()
            example = tf.train.Example(features=tf.train.Features(feature={
                "height": _int64_feature(rows), "width": _int64_feature(cols),
                "depth": _int64_feature(depth), "label": _int64_feature(int(labels[index])),
                "image_raw": _bytes_feature(image_raw)}))
            writer.write(example.SerializeToString())


def _read_and_decode(filename_queue, pixels):
    """TF1's reading-data example, ``fully_connected_reader.read_and_decode``."""
    tf = gf
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={"image_raw": tf.FixedLenFeature([], tf.string),
                  "label": tf.FixedLenFeature([], tf.int64)})
    image = tf.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([pixels])
    image = tf.cast(image, tf.float32) * (1. / 255) - 0.5
    label = tf.cast(features["label"], tf.int32)
    return image, label


def test_the_reading_data_example_round_trips(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (10, 4, 4, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, 10)
    path = str(tmp_path / "train.tfrecords")
    _convert_to(images, labels, path)
    queue = gf.train.string_input_producer([path], num_epochs=2)
    image, label = _read_and_decode(queue, 16)
    batch_images, batch_labels = gf.train.shuffle_batch(
        [image, label], batch_size=4, num_threads=2, capacity=20, min_after_dequeue=5,
        allow_smaller_final_batch=True)
    want = {(int(y), (x.reshape(16).astype(np.float32) * np.float32(1 / 255)
                      - np.float32(0.5)).tobytes()) for x, y in zip(images, labels)}
    seen = []
    with gf.Session() as sess:
        sess.run([gf.global_variables_initializer(), gf.local_variables_initializer()])
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                xs, ys = sess.run([batch_images, batch_labels])
                seen += [(int(y), x.astype(np.float32).tobytes()) for x, y in zip(xs, ys)]
        except gf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=30)
    assert len(seen) == 20 and set(seen) == want


def test_bytes_keep_their_trailing_zero_bytes():
    """A string scalar is a 0-d object array: never NumPy's "S" type, which drops
    trailing NUL bytes (an image's last black pixels)."""
    raw = bytes([5, 0, 7, 0, 0])
    example = gf.train.Example(features=gf.train.Features(feature={
        "raw": gf.train.Feature(bytes_list=gf.train.BytesList(value=[raw]))}))
    record = gf.placeholder(gf.string, ())
    value = gf.parse_single_example(record, {"raw": gf.FixedLenFeature([], gf.string)})["raw"]
    picked = gf.gather(gf.constant([b"a\x00", raw], dtype=gf.string), 1)
    with gf.Session() as sess:
        got, pixels, one = sess.run([value, gf.decode_raw(value, gf.uint8), picked],
                                    {record: example.SerializeToString()})
    assert got == raw and one == raw
    np.testing.assert_array_equal(pixels, [5, 0, 7, 0, 0])
