"""TF1's ``tf.image`` colour, adjustment, box, quality and resize functions
(``rgb_to_grayscale``, ``rgb_to_hsv``, ``hsv_to_rgb``, ``adjust_saturation``/``hue``/
``gamma``, ``crop_to_bounding_box``, ``pad_to_bounding_box``, ``image_gradients``,
``total_variation``, ``psnr``, ``resize_bilinear``, ``resize_nearest_neighbor``) against
TensorFlow 2.21's values, and ``encode_png``/``encode_jpeg`` through the decoders.

``EXPECTED`` holds TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in graph mode,
``Session.run``) of the calls in ``_cases`` on the same inputs, made once with
TensorFlow installed (each array flattened, written with the fewest digits that give
its float32 bits back) and pasted here; TensorFlow is not needed to run these tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

pytest.importorskip("PIL", reason="Pillow is not installed (image encoding needs it)")

IMG = (((np.arange(2 * 2 * 3 * 3) * 37 + 11) % 97) / 96.0).astype(np.float32).reshape(2, 2, 3, 3)
IMG[0, 0, 0] = [0.5, 0.5, 0.5]  # a grey pixel
IMG[0, 0, 1] = [0.0, 0.0, 0.0]  # a black one
U8 = (IMG * 255).astype(np.uint8)


def _cases():
    image = gf.image
    x = gf.constant(IMG)
    u = gf.constant(U8)
    return {
        "gray": image.rgb_to_grayscale(x), "gray_u8": image.rgb_to_grayscale(u),
        "g2rgb": image.grayscale_to_rgb(x[..., :1]),
        "hsv": image.rgb_to_hsv(x), "rgb": image.hsv_to_rgb(x),
        "rgb_edge": image.hsv_to_rgb(gf.constant([[1.0, 0.375, 0.76], [0.999, 1.0, 1.0],
                                                  [0.0, 0.0, 0.3]])),
        "sat": image.adjust_saturation(x, 1.7), "sat_u8": image.adjust_saturation(u, 0.4),
        "hue": image.adjust_hue(x, 0.3), "hue_neg": image.adjust_hue(x, -0.45),
        "hue_u8": image.adjust_hue(u, 0.2),
        "gamma": image.adjust_gamma(x, 2.2, 0.9), "gamma_u8": image.adjust_gamma(u, 0.5),
        "crop": image.crop_to_bounding_box(x, 1, 1, 1, 2),
        "pad": image.pad_to_bounding_box(x[0], 1, 0, 3, 4),
        "dy": image.image_gradients(x)[0], "dx": image.image_gradients(x)[1],
        "tv": image.total_variation(x), "tv3": image.total_variation(x[1]),
        "psnr": image.psnr(x, x * 0.9 + 0.05, 1.0), "psnr_u8": image.psnr(u, u // 2, 255),
        "bilinear": image.resize_bilinear(x, [3, 2]),
        "bilinear_ac": image.resize_bilinear(u, [3, 4], align_corners=True),
        "nearest": image.resize_nearest_neighbor(u, [3, 5]),
    }


EXPECTED = {
    'gray': ('float32', (2, 2, 3, 1), [
        0.49995002, 0, 0.60513645, 0.7509552, 0.30365938, 0.44947815, 0.5952969, 0.4391021,
        0.46973336, 0.61555207, 0.76137084, 0.31407502
    ]),
    'gray_u8': ('uint8', (2, 2, 3, 1), [
        127, 0, 153, 191, 76, 114, 151, 111, 119, 156, 193, 79
    ]),
    'g2rgb': ('float32', (2, 2, 3, 3), [
        0.5, 0.5, 0.5, 0, 0, 0, 0.40625, 0.40625, 0.40625, 0.5520833, 0.5520833, 0.5520833,
        0.6979167, 0.6979167, 0.6979167, 0.84375, 0.84375, 0.84375, 0.9895833, 0.9895833,
        0.9895833, 0.125, 0.125, 0.125, 0.27083334, 0.27083334, 0.27083334, 0.41666666,
        0.41666666, 0.41666666, 0.5625, 0.5625, 0.5625, 0.7083333, 0.7083333, 0.7083333
    ]),
    'hsv': ('float32', (2, 2, 3, 3), [
        0, 0, 0.5, 0, 0, 0, 0.26944447, 0.78947365, 0.7916667, 0.26944447, 0.6666667, 0.9375,
        0.8972222, 0.89552236, 0.6979167, 0.8972222, 0.7407407, 0.84375, 0.8972222, 0.631579,
        0.9895833, 0.5833334, 0.8604651, 0.8958333, 0.26944447, 0.95238096, 0.65625, 0.26944447,
        0.7792208, 0.8020833, 0.26944447, 0.6593406, 0.9479167, 0.8972222, 0.88235295, 0.7083333
    ]),
    'rgb': ('float32', (2, 2, 3, 3), [
        0.25, 0.5, 0.5, 0, 0, 0, 0.03472222, 0.16666667, 0.09244792, 0.01953125, 0.22094727,
        0.3125, 0.43117946, 0.4249132, 0.45833334, 0.6041667, 0.47200522, 0.5959066, 0.75,
        0.47656247, 0.49365228, 0.8958333, 0.78152126, 0.43858504, 0.018432617, 0.03125,
        0.0107421875, 0.035047747, 0.17708333, 0.10606554, 0.01681857, 0.20812988, 0.32291666,
        0.43945312, 0.4296875, 0.46875
    ]),
    'rgb_edge': ('float32', (3, 3), [
        0.76, 0.475, 0.475, 1, 0, 0.006000042, 0.3, 0.3, 0.3
    ]),
    'sat': ('float32', (2, 2, 3, 3), [
        0.5, 0.5, 0.5, 0, 0, 0, 0.3034723, 0.7916667, 0, 0.35937512, 0.9375, 0, 0.6979167, 0,
        0.43038204, 0.84375, 0, 0.5203126, 0.9895833, 0, 0.61024314, 0, 0.44791666, 0.8958333,
        0.25156257, 0.65625, 0, 0.30746534, 0.8020833, 0, 0.36336818, 0.9479167, 0, 0.7083333,
        0, 0.43680564
    ]),
    'sat_u8': ('uint8', (2, 2, 3, 3), [
        127, 127, 127, 0, 0, 0, 162, 201, 137, 199, 239, 175, 177, 113, 152, 215, 151, 190, 252,
        188, 228, 149, 189, 228, 128, 167, 103, 165, 204, 140, 202, 241, 177, 180, 116, 155
    ]),
    'hue': ('float32', (2, 2, 3, 3), [
        0.5, 0.5, 0.5, 0, 0, 0, 0.16666667, 0.53124994, 0.7916667, 0.3125, 0.67708325, 0.9375,
        0.5833333, 0.6979167, 0.072916664, 0.7291666, 0.84375, 0.21875, 0.875, 0.9895833,
        0.36458334, 0.8958333, 0.125, 0.66458315, 0.03125, 0.39583328, 0.65625, 0.17708333,
        0.5416666, 0.8020833, 0.32291666, 0.68749994, 0.9479167, 0.59374994, 0.7083333,
        0.083333336
    ]),
    'hue_neg': ('float32', (2, 2, 3, 3), [
        0.5, 0.5, 0.5, 0, 0, 0, 0.73958355, 0.16666667, 0.7916667, 0.88541687, 0.3125, 0.9375,
        0.072916664, 0.6979167, 0.50000006, 0.21875, 0.84375, 0.6458334, 0.36458334, 0.9895833,
        0.79166675, 0.8958333, 0.7416668, 0.125, 0.60416687, 0.03125, 0.65625, 0.7500002,
        0.17708333, 0.8020833, 0.8958335, 0.32291666, 0.9479167, 0.083333336, 0.7083333,
        0.5104167
    ]),
    'hue_u8': ('uint8', (2, 2, 3, 3), [
        127, 127, 127, 0, 0, 0, 42, 201, 172, 79, 239, 210, 177, 111, 18, 215, 148, 55, 252,
        185, 92, 168, 31, 228, 7, 167, 137, 45, 204, 175, 82, 241, 212, 180, 114, 21
    ]),
    'gamma': ('float32', (2, 2, 3, 3), [
        0.19587387, 0.19587387, 0.19587387, 0, 0, 0, 0.12404747, 0.53831404, 0.017470676,
        0.2435862, 0.78087103, 0.06964862, 0.40795323, 0.0028344016, 0.16174904, 0.61931676,
        0.03177812, 0.29702118, 0.8795038, 0.09776772, 0.47794425, 0.009277788, 0.20496382,
        0.70654917, 0.050837852, 0.35628292, 0.00043945303, 0.13115284, 0.55401987, 0.019963346,
        0.25381193, 0.8000864, 0.07485856, 0.42146873, 0.0038022767, 0.16994692
    ]),
    'gamma_u8': ('uint8', (2, 2, 3, 3), [
        180, 180, 180, 0, 0, 0, 162, 226, 103, 189, 247, 142, 212, 67, 172, 234, 118, 198, 253,
        153, 221, 89, 182, 241, 132, 206, 42, 164, 228, 107, 191, 248, 144, 214, 73, 174
    ]),
    'crop': ('float32', (2, 1, 2, 3), [
        0.6979167, 0.072916664, 0.45833334, 0.84375, 0.21875, 0.6041667, 0.5625, 0.9479167,
        0.32291666, 0.7083333, 0.083333336, 0.46875
    ]),
    'pad': ('float32', (3, 4, 3), [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.5, 0.5, 0, 0, 0, 0.40625, 0.7916667,
        0.16666667, 0, 0, 0, 0.5520833, 0.9375, 0.3125, 0.6979167, 0.072916664, 0.45833334,
        0.84375, 0.21875, 0.6041667, 0, 0, 0
    ]),
    'dy': ('float32', (2, 2, 3, 3), [
        0.052083313, 0.4375, -0.1875, 0.6979167, 0.072916664, 0.45833334, 0.4375, -0.5729167,
        0.4375, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.5729166, 0.43749997, -0.5729167, 0.4375, 0.4375,
        -0.5729166, 0.43749997, -0.5729167, 0.4375, 0, 0, 0, 0, 0, 0, 0, 0, 0
    ]),
    'dx': ('float32', (2, 2, 3, 3), [
        -0.5, -0.5, -0.5, 0.40625, 0.7916667, 0.16666667, 0, 0, 0, 0.14583337, -0.8645833,
        0.14583334, 0.14583331, 0.14583334, 0.14583334, 0, 0, 0, -0.8645833, 0.14583334,
        0.14583331, 0.14583334, 0.14583331, -0.8645833, 0, 0, 0, 0.14583334, 0.14583337,
        0.14583333, 0.14583331, -0.8645834, 0.14583334, 0, 0, 0
    ]),
    'tv': ('float32', (2,), [
        7.8125, 8.385417
    ]),
    'tv3': ('float32', (), [
        8.385417
    ]),
    'psnr': ('float32', (2,), [
        30.4692, 30.59106
    ]),
    'psnr_u8': ('float32', (2,), [
        11.8595915, 10.6813135
    ]),
    'bilinear': ('float32', (2, 3, 2, 3), [
        0.5, 0.5, 0.5, 0.203125, 0.39583334, 0.083333336, 0.5347222, 0.7916667, 0.375,
        0.58159727, 0.22916667, 0.38194445, 0.5520833, 0.9375, 0.3125, 0.7708334, 0.14583334,
        0.53125, 0.9895833, 0.36458334, 0.75, 0.19791667, 0.5833334, 0.46354166, 0.6076389,
        0.65625, 0.36805552, 0.4895833, 0.5381945, 0.41840276, 0.41666666, 0.8020833,
        0.17708333, 0.6354166, 0.515625, 0.3958333
    ]),
    'bilinear_ac': ('float32', (2, 3, 4, 3), [
        127, 127, 127, 42.33333, 42.33333, 42.33333, 34.333336, 67.00001, 14.000002, 103, 201,
        42, 133.5, 183, 103, 103.5, 66.99999, 73, 112.00001, 48.66667, 71.333336, 159, 128, 98,
        140, 239, 79, 164.66667, 91.66666, 103.66667, 189.66667, 30.333336, 128.66667, 215, 55,
        154, 252, 92, 191, 104.66666, 117.333336, 215.66667, 43.666668, 142.33333, 154.33333,
        69, 167, 7, 179, 148, 118, 117.666664, 173, 142.66667, 99.5, 155, 124.33333, 124.5, 94,
        63, 106, 204, 45, 130.66667, 228.66667, 69.66667, 155.33333, 167.66666, 94.333336, 180,
        21, 119
    ]),
    'nearest': ('uint8', (2, 3, 5, 3), [
        127, 127, 127, 127, 127, 127, 0, 0, 0, 0, 0, 0, 103, 201, 42, 127, 127, 127, 127, 127,
        127, 0, 0, 0, 0, 0, 0, 103, 201, 42, 140, 239, 79, 140, 239, 79, 177, 18, 116, 177, 18,
        116, 215, 55, 154, 252, 92, 191, 252, 92, 191, 31, 130, 228, 31, 130, 228, 69, 167, 7,
        252, 92, 191, 252, 92, 191, 31, 130, 228, 31, 130, 228, 69, 167, 7, 106, 204, 45, 106,
        204, 45, 143, 241, 82, 143, 241, 82, 180, 21, 119
    ]),
}


def test_image_functions_give_tensorflows_values(backend):
    graph = gf.Graph()
    with graph.as_default():
        cases = _cases()
    with gf.Session(graph=graph, backend=backend) as sess:
        got = sess.run(cases)
    assert sorted(got) == sorted(EXPECTED)
    for key, (dtype, shape, flat) in EXPECTED.items():
        value = got[key]
        assert value.dtype == np.dtype(dtype) and value.shape == shape, key
        expected = np.asarray(flat, dtype=dtype).reshape(shape)
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=key)


def test_colour_adjustments_and_resizing_are_differentiable():
    with gf.Graph().as_default():
        x = gf.constant(IMG)
        loss = gf.reduce_sum(gf.image.adjust_saturation(x, 1.3)) \
            + gf.reduce_sum(gf.image.resize_bilinear(x, [5, 4])) \
            + gf.reduce_sum(gf.image.adjust_hue(x, 0.1)) + gf.image.total_variation(x[0])
        grad, = gf.gradients(loss, [x])
        value = gf.Session().run(grad)
    assert value.shape == IMG.shape and np.isfinite(value).all() and np.abs(value).sum() > 0


def test_encoded_images_decode_to_their_pixels(backend):
    rows, cols = np.mgrid[0:16, 0:24]
    smooth = np.stack([8 * rows + 40, 6 * cols + 30, 4 * rows + 3 * cols + 50], axis=-1)
    graph = gf.Graph()
    with graph.as_default():
        pixels = gf.placeholder(gf.uint8, [None, None, 3])
        png = gf.image.encode_png(pixels)
        jpeg = gf.image.encode_jpeg(pixels, quality=95)
        grey = gf.image.encode_png(pixels[:, :, :1], compression=9)
        back = [gf.image.decode_png(png), gf.image.decode_jpeg(jpeg),
                gf.image.decode_png(grey)]
    with gf.Session(graph=graph, backend=backend) as sess:
        data, (from_png, from_jpeg, from_grey) = sess.run(
            [png, back], {pixels: smooth.astype(np.uint8)})
    assert isinstance(data, bytes) and data.startswith(b"\x89PNG")
    np.testing.assert_array_equal(from_png, smooth)
    np.testing.assert_array_equal(from_grey, smooth[:, :, :1])
    assert from_jpeg.shape == smooth.shape
    assert np.abs(from_jpeg.astype(int) - smooth).mean() < 2


def test_random_flips_saturation_and_hue_draw_per_run(backend):
    batch = np.arange(8 * 2 * 3 * 1, dtype=np.float32).reshape(8, 2, 3, 1)
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(5)
        flipped = gf.image.random_flip_up_down(gf.constant(batch))
        one = gf.image.random_flip_up_down(gf.constant(batch[0]))
        saturated = gf.image.random_saturation(gf.constant(IMG), 0.5, 1.5)
        turned = gf.image.random_hue(gf.constant(IMG), 0.2)
    with gf.Session(graph=graph, backend=backend) as sess:
        runs = [sess.run([flipped, one, saturated, turned]) for _ in range(4)]
    seen = set()
    for got, single, sat, hue in runs:
        for image, out in zip(batch, got):
            same = np.array_equal(out, image)
            assert same or np.array_equal(out, image[::-1])
            seen.add(same)
        assert np.array_equal(single, batch[0]) or np.array_equal(single, batch[0][::-1])
        assert sat.shape == hue.shape == IMG.shape
        assert (0 <= sat).all() and (sat <= 1).all() and (0 <= hue).all() and (hue <= 1).all()
    assert seen == {True, False}
    assert not np.array_equal(runs[0][2], runs[1][2])


def test_bad_image_arguments_fail_when_the_graph_is_built():
    with gf.Graph().as_default():
        x = gf.constant(IMG[0], name="picture")
        with pytest.raises(ValueError, match="box's height .* past 'picture"):
            gf.image.crop_to_bounding_box(x, 1, 0, 2, 2)
        with pytest.raises(ValueError, match="'picture.*' of shape .* does not fit"):
            gf.image.pad_to_bounding_box(x, 0, 0, 1, 3)
        with pytest.raises(ValueError, match="'picture.*' must have 1 channels"):
            gf.image.grayscale_to_rgb(x)
        with pytest.raises(TypeError, match="encode_png: 'picture.*' must be uint8"):
            gf.image.encode_png(x)
        with pytest.raises(NotImplementedError, match="half_pixel_centers"):
            gf.image.resize_bilinear(x, [4, 4], half_pixel_centers=True)
        with pytest.raises(ValueError, match="delta must be in"):
            gf.image.adjust_hue(x, 1.5)
