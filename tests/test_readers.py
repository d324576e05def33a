"""TF1's readers and image preprocessing: ``FixedLengthRecordReader`` with
``decode_raw`` running the CIFAR-10 tutorial's input code as written (tensorflow/models
``cifar10_input.py``) over files in its binary format; ``TextLineReader``,
``WholeFileReader``, ``read_up_to``, the end of the input, files that are not what the
reader expects; and ``random_crop``, ``random_brightness``, ``random_contrast``,
``per_image_standardization``, ``resize_image_with_crop_or_pad`` against NumPy, with
float64 gradients on every CPU backend."""

from __future__ import annotations

import os

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf
from gradflow.errors import InvalidArgumentError, NotFoundError, OutOfRangeError


def _cifar_files(directory, names, records, seed=0):
    """Files in CIFAR-10's binary format: per record a label byte, then 3 x 32 x 32
    bytes (depth major). Returns {(label, image bytes)} over all files."""
    rng = np.random.default_rng(seed)
    content = set()
    for name in names:
        labels = rng.integers(0, 10, records, dtype=np.uint8)
        images = rng.integers(0, 256, (records, 3 * 32 * 32), dtype=np.uint8)
        data = np.concatenate([labels[:, None], images], axis=1)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data.tobytes())
        content |= {(int(lab), img.tobytes()) for lab, img in zip(labels, images)}
    return content


def read_cifar10(filename_queue):
    """``cifar10_input.read_cifar10`` of the CIFAR-10 tutorial (TF1), as written."""
    tf = gf

    class CIFAR10Record(object):
        pass
    result = CIFAR10Record()
    label_bytes = 1
    result.height = 32
    result.width = 32
    result.depth = 3
    image_bytes = result.height * result.width * result.depth
    record_bytes = label_bytes + image_bytes
    reader = tf.FixedLengthRecordReader(record_bytes=record_bytes)
    result.key, value = reader.read(filename_queue)
    record_bytes = tf.decode_raw(value, tf.uint8)
    result.label = tf.cast(
        tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [label_bytes],
                         [label_bytes + image_bytes]),
        [result.depth, result.height, result.width])
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def distorted_inputs(filenames, batch_size, min_queue_examples):
    """``cifar10_input.distorted_inputs`` as written, but for the file list and the
    queue's size (the tutorial's is 20,000 examples)."""
    tf = gf
    height = width = 24
    filename_queue = tf.train.string_input_producer(filenames)
    read_input = read_cifar10(filename_queue)
    reshaped_image = tf.cast(read_input.uint8image, tf.float32)
    distorted_image = tf.random_crop(reshaped_image, [height, width, 3])
    distorted_image = tf.image.random_flip_left_right(distorted_image)
    distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
    distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
    float_image = tf.image.per_image_standardization(distorted_image)
    float_image.set_shape([height, width, 3])
    read_input.label.set_shape([1])
    images, label_batch = tf.train.shuffle_batch(
        [float_image, read_input.label], batch_size=batch_size, num_threads=4,
        capacity=min_queue_examples + 3 * batch_size, min_after_dequeue=min_queue_examples)
    return images, tf.reshape(label_batch, [batch_size])


def test_the_cifar10_tutorials_input_reads_every_record(tmp_path):
    names = ["data_batch_1.bin", "data_batch_2.bin"]
    content = _cifar_files(str(tmp_path), names, records=7)
    queue = gf.train.string_input_producer([str(tmp_path / n) for n in names], num_epochs=1,
                                           shuffle=False)
    record = read_cifar10(queue)
    assert record.uint8image.shape.as_list() == [32, 32, 3]
    seen = set()
    keys = []
    with gf.Session() as sess:
        sess.run(gf.local_variables_initializer())
        threads = gf.train.start_queue_runners(sess)
        while True:
            try:
                key, label, image = sess.run([record.key, record.label, record.uint8image])
            except OutOfRangeError:
                break
            keys.append(key)
            seen.add((int(label[0]), image.transpose(2, 0, 1).tobytes()))
        for t in threads:
            t.join(timeout=30)
    assert seen == content and len(keys) == 14
    assert keys[:2] == [f"{tmp_path / names[0]}:0".encode(), f"{tmp_path / names[0]}:1".encode()]


def test_the_cifar10_tutorials_distorted_batches(tmp_path):
    names = [f"data_batch_{i}.bin" for i in (1, 2)]
    _cifar_files(str(tmp_path), names, records=20)
    images, labels = distorted_inputs([str(tmp_path / n) for n in names], batch_size=8,
                                      min_queue_examples=16)
    assert images.shape.as_list() == [8, 24, 24, 3] and labels.shape.as_list() == [8]
    with gf.train.MonitoredTrainingSession() as sess:
        for _ in range(3):
            x, y = sess.run([images, labels])
            np.testing.assert_allclose(x.mean(axis=(1, 2, 3)), 0, atol=1e-4)
            np.testing.assert_allclose(x.std(axis=(1, 2, 3)), 1, rtol=1e-3)
            assert ((0 <= y) & (y < 10)).all()


def test_text_lines_whole_files_and_read_up_to(tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_bytes(b"x,y\n1,2\r\n3,4\n")
    second.write_bytes(b"x,y\n5,6")
    files = [str(first), str(second)]
    lines = gf.TextLineReader(skip_header_lines=1).read(
        gf.train.string_input_producer(files, num_epochs=1, shuffle=False))
    reader = gf.WholeFileReader()
    whole = reader.read(gf.train.string_input_producer(files, num_epochs=1, shuffle=False))
    many = gf.TextLineReader().read_up_to(
        gf.train.string_input_producer(files, num_epochs=1, shuffle=False), 4)
    with gf.Session() as sess:
        sess.run(gf.local_variables_initializer())
        gf.train.start_queue_runners(sess)
        got = [tuple(sess.run(lines)) for _ in range(3)]
        assert got == [(f"{first}:2".encode(), b"1,2"), (f"{first}:3".encode(), b"3,4"),
                       (f"{second}:2".encode(), b"5,6")]
        with pytest.raises(OutOfRangeError):
            sess.run(lines)
        assert sess.run(whole)[1] == first.read_bytes()
        assert sess.run(whole)[0] == str(second).encode()
        assert sess.run(reader.num_records_produced()) == 2
        keys, values = sess.run(many)
        assert list(values) == [b"x,y", b"1,2", b"3,4", b"x,y"] and len(keys) == 4
        assert list(sess.run(many)[1]) == [b"5,6"]  # the input ends: fewer


def test_files_that_are_not_what_the_reader_expects(tmp_path):
    partial = tmp_path / "partial.bin"
    partial.write_bytes(bytes(10))
    values = {}
    for name in ("partial.bin", "missing.bin"):
        queue = gf.train.string_input_producer([str(tmp_path / name)], shuffle=False)
        values[name] = gf.FixedLengthRecordReader(record_bytes=4, name="cifar").read(queue)[1]
    strings = gf.placeholder(gf.string, (None,))
    with gf.Session() as sess:
        gf.train.start_queue_runners(sess)
        with pytest.raises(InvalidArgumentError, match=r"cifar: '.*partial.bin' has 10 bytes "
                                                       "between its header and footer, not a "
                                                       "whole number of 4-byte records"):
            sess.run(values["partial.bin"])
        with pytest.raises(NotFoundError, match=r"cifar_1: no file '.*missing.bin'"):
            sess.run(values["missing.bin"])
        with pytest.raises(InvalidArgumentError, match=r"one length, a multiple of 4 bytes "
                                                       r"\(int32\); got lengths \[3, 4\]"):
            sess.run(gf.decode_raw(strings, gf.int32), {strings: [b"abc", b"abcd"]})
        big = sess.run(gf.decode_raw(strings, gf.int16, little_endian=False),
                       {strings: [b"\x01\x02\x03\x04"]})
        np.testing.assert_array_equal(big, [[0x0102, 0x0304]])


@pytest.mark.parametrize("known", [True, False], ids=["known-shape", "unknown-shape"])
def test_image_preprocessing_matches_numpy_with_gradients(backend, known):
    x = np.random.default_rng(5).standard_normal((2, 5, 6, 3)) * 3 + 1
    images = gf.placeholder(gf.float64, x.shape if known else (None, None, None, 3))
    standard = gf.image.per_image_standardization(images)
    contrast = gf.image.adjust_contrast(images, 1.7)
    weights = np.random.default_rng(6).standard_normal(x.shape)
    loss = gf.reduce_sum((standard + contrast) * weights)
    (grad,) = gf.gradients(loss, [images])
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    channel_mean = x.mean(axis=(1, 2), keepdims=True)
    with gf.Session(backend=backend) as sess:
        got_standard, got_contrast, got = sess.run([standard, contrast, grad], {images: x})
        numeric = numeric_grad(sess, loss, images, x)
    np.testing.assert_allclose(got_standard, (x - mean) / x.std(axis=(1, 2, 3), keepdims=True),
                               rtol=1e-10)
    np.testing.assert_allclose(got_contrast, (x - channel_mean) * 1.7 + channel_mean,
                               rtol=1e-12)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


def test_random_crops_brightness_and_contrast_are_drawn_each_run():
    gf.set_random_seed(3)
    x = np.arange(6 * 7 * 2, dtype=np.float32).reshape(6, 7, 2)
    image = gf.constant(x)
    crop = gf.random_crop(image, [3, 4, 2])
    bright = gf.image.random_brightness(image, max_delta=5.0)
    contrast = gf.image.random_contrast(image, 0.5, 1.5)
    starts = set()
    with gf.Session() as sess:
        for _ in range(200):
            c, b, k = sess.run([crop, bright, contrast])
            top, left = int(c[0, 0, 0]) // 14, int(c[0, 0, 0]) % 14 // 2
            np.testing.assert_array_equal(c, x[top:top + 3, left:left + 4])
            starts.add((top, left))
            delta = b - x
            assert np.allclose(delta, delta.flat[0], atol=1e-4) and -5 <= delta.flat[0] < 5
            mean = x.mean(axis=(0, 1))
            factor = (k - mean) / (x - mean)
            assert np.allclose(factor, factor.flat[0], rtol=1e-4) and 0.5 <= factor.flat[0] < 1.5
    assert len(starts) == 16  # every place a 3 x 4 window fits in 6 x 7
    with pytest.raises(ValueError, match="does not fit"):
        gf.random_crop(image, [7, 4, 2])


def test_crop_or_pad_and_central_crop_as_tf1():
    x = np.arange(5 * 4, dtype=np.float32).reshape(5, 4, 1)
    image = gf.constant(x)
    with gf.Session() as sess:
        small, big, mixed, centre = sess.run([
            gf.image.resize_image_with_crop_or_pad(image, 3, 2),
            gf.image.resize_image_with_crop_or_pad(image, 8, 7),
            gf.image.resize_image_with_crop_or_pad(image, 2, 6),
            gf.image.central_crop(image, 0.5)])
    np.testing.assert_array_equal(small, x[1:4, 1:3])
    want = np.zeros((8, 7, 1), np.float32)
    want[1:6, 1:5] = x
    np.testing.assert_array_equal(big, want)
    want = np.zeros((2, 6, 1), np.float32)
    want[:, 1:5] = x[1:3]
    np.testing.assert_array_equal(mixed, want)
    np.testing.assert_array_equal(centre, x[1:4, 1:3])
    as_float = gf.image.convert_image_dtype(gf.constant(np.array([0, 255], np.uint8)),
                                            gf.float32)
    back = gf.image.convert_image_dtype(as_float, gf.uint8)
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(as_float), [0.0, 1.0])
        np.testing.assert_array_equal(sess.run(back), [0, 255])


def test_fixed_length_record_dataset_gives_every_record(tmp_path):
    names = ["data_batch_1.bin", "data_batch_2.bin"]
    content = _cifar_files(str(tmp_path), names, records=5, seed=1)
    (tmp_path / "partial.bin").write_bytes(bytes(3073 + 7))
    records = gf.data.FixedLengthRecordDataset([str(tmp_path / n) for n in names], 3073)
    pixels = records.map(lambda r: gf.decode_raw(r, gf.uint8)).batch(4)
    broken = gf.data.FixedLengthRecordDataset(str(tmp_path / "partial.bin"), 3073)
    nxt, bad = (ds.make_one_shot_iterator().get_next() for ds in (pixels, broken))
    seen = set()
    with gf.Session() as sess:
        for _ in range(3):
            for row in sess.run(nxt):
                seen.add((int(row[0]), row[1:].tobytes()))
        with pytest.raises(OutOfRangeError):
            sess.run(nxt)
        with pytest.raises(InvalidArgumentError, match="has 3080 bytes between its header"):
            sess.run(bad)
    assert seen == content


def test_slice_of_unknown_sizes_has_its_static_size_and_checks_it():
    x = gf.placeholder(gf.float32, (None, 3))
    block = gf.slice(x, [1, 0], [2, -1])
    assert block.shape.as_list() == [2, 3]
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(block, {x: np.ones((4, 3), np.float32)}),
                                      np.ones((2, 3)))
        with pytest.raises(InvalidArgumentError, match=r"slice: begin \[1, 0\] and size "
                                                       r"\[2, -1\] go past the end of "
                                                       r"'Placeholder': the block has shape "
                                                       r"\(1, 3\)"):
            sess.run(block, {x: np.ones((2, 3), np.float32)})


def test_decode_csv_of_a_text_line_reader_as_tf1s_reading_data_guide(tmp_path):
    """The flow of TF1's "Reading data" guide: file names, TextLineReader, decode_csv,
    the columns stacked into features."""
    first, second = tmp_path / "file0.csv", tmp_path / "file1.csv"
    first.write_text('1,2,3,4,5\n6,7,"8",9,10\n')
    second.write_text("11,12,13,14,15\n")
    filename_queue = gf.train.string_input_producer([str(first), str(second)], num_epochs=1,
                                                    shuffle=False)
    reader = gf.TextLineReader()
    key, value = reader.read(filename_queue)
    record_defaults = [[1], [1], [1], [1], [1]]
    col1, col2, col3, col4, col5 = gf.decode_csv(value, record_defaults=record_defaults)
    features = gf.stack([col1, col2, col3, col4])
    rows = []
    with gf.Session() as sess:
        sess.run(gf.local_variables_initializer())
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                example, label = sess.run([features, col5])
                rows.append(list(example) + [label])
        except OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=30)
    assert rows == [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]


def test_decode_csv_defaults_quotes_and_bad_records():
    lines = gf.placeholder(gf.string, (None,))
    number, ratio, text, required = gf.decode_csv(
        lines, record_defaults=[[0], [9.5], ["none"], []], name="csv")
    assert number.dtype is gf.int32 and ratio.dtype is gf.float32
    assert text.dtype is gf.string and required.dtype is gf.float32
    with gf.Session() as sess:
        got = sess.run([number, ratio, text, required],
                       {lines: ['1,2.5,"a, b",7', ',,,0.5', '3,-1e3,"say ""hi""",2']})
        np.testing.assert_array_equal(got[0], [1, 0, 3])
        np.testing.assert_array_equal(got[1], np.float32([2.5, 9.5, -1000.0]))
        assert list(got[2]) == [b"a, b", b"none", b'say "hi"']
        np.testing.assert_array_equal(got[3], np.float32([7, 0.5, 2]))
        for bad, message in (
                (["1,2,3"], r"'csv': record 0 has 3 fields, the record_defaults 4"),
                (["1,2,3,"], r"record 0, column 3 is empty, and the column has no default"),
                (["1,2,3,4", "x,2,3,4"], r"record 1, column 0: 'x' is not a int32"),
                (["99999999999,2,3,4"], r"99999999999 is out of the int32 range")):
            with pytest.raises(InvalidArgumentError, match=message):
                sess.run(number, {lines: bad})
    with pytest.raises(TypeError, match="column 0 must be int32, int64, float32, float64 or "
                                        "string, got bool"):
        gf.decode_csv(lines, record_defaults=[[True]])


def test_csv_columns_batched_as_python_slices_of_the_decoded_list(tmp_path):
    """A regression program's input: ``tf.train.batch([xy[0:-1], xy[-1:]])`` on the list
    ``decode_csv`` returns; each slice of tensors is packed into one tensor, as TF1 does."""
    scores = tmp_path / "scores.csv"
    scores.write_text("".join(f"{i},{i + 1},{2 * i},{3 * i + 1}\n" for i in range(12)))
    filename_queue = gf.train.string_input_producer([str(scores)], shuffle=False,
                                                    name="filename_queue")
    key, value = gf.TextLineReader().read(filename_queue)
    xy = gf.decode_csv(value, record_defaults=[[0.], [0.], [0.], [0.]])
    train_x_batch, train_y_batch = gf.train.batch([xy[0:-1], xy[-1:]], batch_size=5)
    assert train_x_batch.shape.as_list() == [5, 3] and train_y_batch.shape.as_list() == [5, 1]
    with gf.Session() as sess:
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess=sess, coord=coord)
        x_batch, y_batch = sess.run([train_x_batch, train_y_batch])
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=30)
    rows = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(x_batch, np.stack([rows, rows + 1, 2 * rows], 1))
    np.testing.assert_array_equal(y_batch, (3 * rows + 1)[:, None])
