"""Write the TFRecord fixtures of tests/test_tfrecord.py with TensorFlow: ``plain`` and
``gzip`` hold the same three ``tf.train.Example`` records (``records`` below, the third
without ``weights``); ``single`` holds examples of one feature each, whose bytes the
tests compare gradflow's serialization with. Run with TensorFlow installed:
``python tests/data/tfrecords/make.py``."""

import os

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def records():
    """``[(label, image bytes, weights or None, name)]``: the fixtures' examples."""
    return [(k, bytes(range(k, k + 6)), [0.5 * k, -1.25] if k < 2 else None, f"ex-{k}")
            for k in range(3)]


def _example(label, image, weights, name):
    feature = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
               "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
               "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[name.encode()]))}
    if weights is not None:
        feature["weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=weights))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def single_examples():
    return [tf.train.Example(features=tf.train.Features(feature={"x": feature}))
            for feature in (tf.train.Feature(int64_list=tf.train.Int64List(value=[1, -2, 2**40])),
                            tf.train.Feature(float_list=tf.train.FloatList(value=[0.1, 3.5])),
                            tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a", b""])))]


def main():
    for name, options in (("plain", None), ("gzip", tf.io.TFRecordOptions("GZIP"))):
        with tf.io.TFRecordWriter(os.path.join(HERE, f"{name}.tfrecords"), options) as w:
            for record in records():
                w.write(_example(*record).SerializeToString())
    with tf.io.TFRecordWriter(os.path.join(HERE, "single.tfrecords")) as w:
        for example in single_examples():
            w.write(example.SerializeToString())


if __name__ == "__main__":
    main()
