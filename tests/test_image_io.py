"""TF1's image input pipeline: ``read_file``, the decoders (``decode_jpeg`` gives
TensorFlow's bits for its accurate DCT, fixtures by tests/data/images/make.py;
``decode_png`` PNG's exact pixels), ``resize_images`` of sizes known only at run time
(the same bits as known ones, and gradients), ``gather`` of strings, hostile files
refused with errors naming the op, and aymericdamien's image-folder pipeline
(``slice_input_producer`` of paths, ``read_file``, ``decode_jpeg``, ``resize_images``,
``batch``)."""

from __future__ import annotations

import io
import os
import struct
import zlib

import numpy as np
import pytest
from gradcheck import numeric_grad

import gradflow as gf
from gradflow.errors import InvalidArgumentError, NotFoundError

Image = pytest.importorskip("PIL.Image", reason="Pillow decodes images: pip install pillow")
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "images")


def _png(array, **params):
    buffer = io.BytesIO()
    Image.fromarray(array, **params).save(buffer, format="PNG")
    return buffer.getvalue()


def test_decode_jpeg_gives_tensorflows_pixels(backend):
    expected = np.load(os.path.join(HERE, "expected.npz"))
    path = gf.placeholder(gf.string, ())
    contents = gf.read_file(path)
    decoded = {c: gf.image.decode_jpeg(contents, channels=c) for c in (0, 1, 3)}
    assert decoded[3].shape.as_list() == [None, None, 3] and decoded[3].dtype is gf.uint8
    resized = gf.image.resize_images(decoded[3], [5, 7])
    assert resized.shape.as_list() == [5, 7, 3]
    with gf.Session(backend=backend) as sess:
        for name in ("colour", "grey"):
            feed = {path: os.path.join(HERE, f"{name}.jpg")}
            for channels, tensor in decoded.items():
                np.testing.assert_array_equal(sess.run(tensor, feed),
                                              expected[f"{name}_{channels}"])
            np.testing.assert_array_equal(sess.run(resized, feed), expected[f"{name}_resized"])


def test_decode_png_gives_the_files_pixels(backend):
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (5, 6, 4), dtype=np.uint8)
    grey16 = rng.integers(0, 2**16, (3, 4), dtype=np.uint16)
    palette = Image.fromarray(rgba[..., :3]).quantize(8)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG")
    files = {"rgba": _png(rgba), "grey16": _png(grey16), "palette": buffer.getvalue()}
    contents = gf.placeholder(gf.string, ())
    with gf.Session(backend=backend) as sess:
        def run(channels, name):
            return sess.run(gf.image.decode_png(contents, channels=channels),
                            {contents: files[name]})

        np.testing.assert_array_equal(run(0, "rgba"), rgba)
        np.testing.assert_array_equal(run(3, "rgba"), rgba[..., :3])
        np.testing.assert_array_equal(run(0, "grey16"), (grey16 >> 8)[..., None])
        np.testing.assert_array_equal(run(0, "palette"), np.asarray(palette.convert("RGB")))
        assert run(1, "rgba").shape == (5, 6, 1) and run(4, "grey16").shape == (3, 4, 4)
        any_format = gf.image.decode_image(contents, channels=3)
        np.testing.assert_array_equal(sess.run(any_format, {contents: files["rgba"]}),
                                      rgba[..., :3])


def test_hostile_and_wrong_files_are_refused_naming_the_op(monkeypatch, tmp_path):
    with open(os.path.join(HERE, "colour.jpg"), "rb") as f:
        jpeg = f.read()
    png = _png(np.zeros((4, 4, 3), np.uint8))
    # a PNG header claiming 100000 x 100000 pixels, with a valid checksum
    header = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        for kind, data in ((b"IHDR", header), (b"IDAT", zlib.compress(b"\0" * 64)),
                           (b"IEND", b"")))
    contents = gf.placeholder(gf.string, ())
    as_jpeg = gf.image.decode_jpeg(contents, name="photo")
    as_png = gf.image.decode_png(contents)
    with gf.Session() as sess:
        for data in (jpeg[:len(jpeg) // 2], png, b"", b"\xff\xd8 not a jpeg"):
            with pytest.raises(InvalidArgumentError,
                               match=r"decode_jpeg 'photo': the contents \(\d+ bytes\) are not "
                                     r"a whole JPEG image"):
                sess.run(as_jpeg, {contents: data})
        with pytest.raises(InvalidArgumentError, match="not a whole PNG image"):
            sess.run(as_png, {contents: jpeg})
        with pytest.raises(InvalidArgumentError,  # Pillow's own check, past twice its limit
                           match=r"decode_png 'DecodePng': Image size \(10000000000 pixels\) "
                                 "exceeds limit"):
            sess.run(as_png, {contents: bomb})
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 10)
        with pytest.warns(Image.DecompressionBombWarning), \
                pytest.raises(InvalidArgumentError, match="4x4 pixels is over the limit of 10"):
            sess.run(as_png, {contents: png})
        missing = str(tmp_path / "missing.jpg")
        with pytest.raises(NotFoundError, match="read_file 'ReadFile': no file .*missing.jpg"):
            sess.run(gf.read_file(missing))
    with pytest.raises(ValueError, match="channels must be one of"):
        gf.image.decode_jpeg(contents, channels=4)
    with pytest.raises(ValueError, match="must be one string"):
        gf.read_file(gf.placeholder(gf.string, (2,)))
    with pytest.raises(NotImplementedError, match="only ratio=1"):
        gf.image.decode_jpeg(contents, ratio=2)


@pytest.mark.parametrize("method", [gf.image.ResizeMethod.BILINEAR,
                                    gf.image.ResizeMethod.NEAREST_NEIGHBOR])
@pytest.mark.parametrize("align_corners", [False, True])
def test_resize_of_sizes_known_at_run_time_has_the_same_bits(backend, method, align_corners):
    x = np.random.default_rng(1).standard_normal((2, 5, 7, 3))
    known = gf.placeholder(gf.float64, x.shape)
    unknown = gf.placeholder(gf.float64, (None, None, None, 3))
    sizes = ([3, 4], [8, 11], [1, 1])
    out = [gf.image.resize_images(p, size, method, align_corners)
           for size in sizes for p in (known, unknown)]
    assert [o.shape.as_list() for o in out[1::2]] == [[None] + s + [3] for s in sizes]
    with gf.Session(backend=backend) as sess:
        values = sess.run(out, {known: x, unknown: x})
    for a, b in zip(values[::2], values[1::2]):
        np.testing.assert_array_equal(a, b)


def test_nearest_resize_with_aligned_corners_rounds_halves_up_as_tf():
    """TF 2.21's numbers: source positions 0.5 and 1.5 (3 -> 5) take 1 and 2."""
    x = np.arange(3.0, dtype=np.float32).reshape(1, 1, 3, 1)
    wide = np.arange(7.0, dtype=np.float32).reshape(1, 1, 7, 1)
    unknown = gf.placeholder(gf.float32, (1, 1, None, 1))
    nearest = gf.image.ResizeMethod.NEAREST_NEIGHBOR
    out = [gf.image.resize_images(x, (1, 5), nearest, align_corners=True),
           gf.image.resize_images(unknown, (1, 5), nearest, align_corners=True),
           gf.image.resize_images(wide, (1, 5), nearest, align_corners=True)]
    with gf.Session() as sess:
        got = sess.run(out, {unknown: x})
    assert got[0].ravel().tolist() == [0, 1, 1, 2, 2]
    assert got[1].ravel().tolist() == [0, 1, 1, 2, 2]
    assert got[2].ravel().tolist() == [0, 2, 3, 5, 6]


def test_gradients_of_a_resize_of_unknown_size(backend):
    x = np.random.default_rng(2).standard_normal((1, 4, 5, 2))
    images = gf.placeholder(gf.float64, (None, None, None, 2))
    weights = np.random.default_rng(3).standard_normal((1, 6, 3, 2))
    loss = gf.reduce_sum(gf.image.resize_images(images, [6, 3]) * weights)
    (grad,) = gf.gradients(loss, [images])
    with gf.Session(backend=backend) as sess:
        got = sess.run(grad, {images: x})
        numeric = numeric_grad(sess, loss, images, x)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_gather_takes_string_tensors():
    names = gf.constant(["a", "bb", "ccc"])
    ids = gf.placeholder(gf.int32, (None,))
    picked = gf.gather(names, ids)
    with gf.Session() as sess:
        assert list(sess.run(picked, {ids: [2, 0, 2]})) == [b"ccc", b"a", b"ccc"]
        with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
            sess.run(picked, {ids: [0, 3]})


def test_an_image_folder_pipeline_gives_its_files(tmp_path):
    """aymericdamien's build_an_image_dataset.py: paths and labels through
    slice_input_producer, read, decoded, resized and batched by queue runners."""
    rng = np.random.default_rng(4)
    paths, labels, want = [], [], {}
    for k in range(6):
        size = tuple(int(v) for v in rng.integers(8, 20, 2))
        image = rng.integers(0, 256, size + (3,), dtype=np.uint8)
        path = str(tmp_path / f"{k}.png")
        Image.fromarray(image).save(path)
        paths.append(path)
        labels.append(k)
        with gf.Graph().as_default(), gf.Session() as sess:
            want[k] = sess.run(gf.image.resize_images(image, [6, 6]))
    image, label = gf.train.slice_input_producer(
        [gf.convert_to_tensor(paths, dtype=gf.string), gf.convert_to_tensor(labels)],
        shuffle=True, seed=1)
    image = gf.image.decode_png(gf.read_file(image), channels=3)
    image = gf.image.resize_images(image, [6, 6]) * (1.0 / 127.5) - 1.0
    x, y = gf.train.batch([image, label], batch_size=4, capacity=32, num_threads=2)
    assert x.shape.as_list() == [4, 6, 6, 3]
    seen = []
    with gf.train.MonitoredTrainingSession() as sess:
        for _ in range(3):
            xs, ys = sess.run([x, y])
            for xb, yb in zip(xs, ys):
                np.testing.assert_allclose(xb, want[int(yb)] / 127.5 - 1.0, rtol=1e-6, atol=1e-6)
                seen.append(int(yb))
    assert set(seen) == set(range(6))
