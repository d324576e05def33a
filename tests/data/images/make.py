"""Write the image fixtures of tests/test_image_io.py: small JPEG and PNG files (Pillow)
and what TensorFlow's decoders give for them (``expected.npz``). Run with TensorFlow
installed: ``python tests/data/images/make.py``."""

import os

import numpy as np
import tensorflow.compat.v1 as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(7)
    smooth = np.stack(np.meshgrid(np.linspace(0, 255, 13), np.linspace(40, 200, 9)), -1)
    colour = np.concatenate([smooth, rng.integers(0, 256, (9, 13, 1))], -1).astype(np.uint8)
    Image.fromarray(colour).save(os.path.join(HERE, "colour.jpg"), quality=85)
    Image.fromarray(colour[..., 0]).save(os.path.join(HERE, "grey.jpg"), quality=85)
    tf.disable_v2_behavior()
    expected = {}
    with tf.Session() as sess:
        for name in ("colour", "grey"):
            with open(os.path.join(HERE, f"{name}.jpg"), "rb") as f:
                data = f.read()
            for channels in (0, 1, 3):
                # gradflow decodes as libjpeg's accurate integer DCT (Pillow's)
                expected[f"{name}_{channels}"] = sess.run(tf.image.decode_jpeg(
                    data, channels=channels, dct_method="INTEGER_ACCURATE"))
            expected[f"{name}_resized"] = sess.run(tf.image.resize_images(
                tf.image.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE"), [5, 7]))
    np.savez_compressed(os.path.join(HERE, "expected.npz"), **expected)


if __name__ == "__main__":
    main()
