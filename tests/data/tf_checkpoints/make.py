"""Writes the TensorFlow checkpoints ``tests/test_tf_checkpoint.py`` restores, with
TensorFlow itself (2.x, ``compat.v1`` graph mode): ``python make.py`` in this folder.

- ``adam/``: a small TF1 model (the graph of ``test_tf_checkpoint.model``) after 3 Adam
  steps, its ``checkpoint`` index naming the absolute path TensorFlow saved to, and
  ``adam_expected.npz``: every variable after a 4th step, computed by TensorFlow.
- ``many/``: 300 variables of several dtypes in one index block of 10 KB;
  ``many_expected.npz`` holds their values.
- ``sharded/``: a ``Saver(sharded=True)`` checkpoint of variables on two (logical)
  CPUs: two data files under one index.
- ``bundle/``: the tensors of ``bundle_values()`` (every dtype gradflow writes, scalars,
  empty and multi-dimensional tensors, names with slashes whose byte order is not their
  order of creation) saved by the ``compat.v1`` Saver, and ``raw/``: the same tensors
  written by ``tf.raw_ops.SaveV2`` in eager mode, names in the order given.
  ``bundle_expected.npz`` holds the values. ``tests/test_tf_checkpoint_writer.py``
  checks that gradflow writes these bytes.

``python make.py`` writes them all; ``python make.py bundle`` only the last two.
``python make.py hashes`` prints the SHA-256 of the files TensorFlow writes for
``many_values()`` (an index of several blocks, too large to keep here), which
``tests/test_tf_checkpoint_writer.py`` holds as literals.
"""

import os
import shutil

import numpy as np
import tensorflow as tf2
import tensorflow.compat.v1 as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def adam():
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, (4, 3), name="x")
    y = tf.placeholder(tf.int64, (4,), name="y")
    with tf.variable_scope("dense"):
        w = tf.get_variable("kernel", initializer=np.linspace(-1, 1, 15, dtype=np.float32)
                            .reshape(3, 5))
        b = tf.get_variable("bias", initializer=np.full(5, 0.1, np.float32))
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    tf.Variable(np.arange(6, dtype=np.float64).reshape(2, 3) / 7, name="scale64")
    tf.Variable(np.array([3, -4], np.int32), name="counts32")
    tf.Variable(np.array([True, False, True]), name="mask")
    feed = {x: np.arange(12, dtype=np.float32).reshape(4, 3) / 10, y: [0, 3, 1, 4]}
    folder = os.path.join(HERE, "adam")
    shutil.rmtree(folder, ignore_errors=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, feed)
        tf.train.Saver().save(sess, os.path.join(folder, "model.ckpt"), global_step=step)
        sess.run(train, feed)
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    os.remove(os.path.join(folder, "model.ckpt-3.meta"))
    np.savez(os.path.join(HERE, "adam_expected.npz"), **values)


def many():
    tf.reset_default_graph()
    rng = np.random.default_rng(0)
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8]
    values = {}
    for i in range(300):
        dtype = dtypes[i % len(dtypes)]
        value = (rng.standard_normal((i % 4 + 1, 3)) * 50).astype(dtype)
        name = f"block_{i // 10:02d}/layer_{i % 10}/weights"
        tf.Variable(value, name=name)
        values[name] = value
    folder = os.path.join(HERE, "many")
    shutil.rmtree(folder, ignore_errors=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().save(sess, os.path.join(folder, "many.ckpt"))
    os.remove(os.path.join(folder, "many.ckpt.meta"))
    np.savez(os.path.join(HERE, "many_expected.npz"), **values)


def sharded():
    tf.reset_default_graph()
    with tf.device("/cpu:0"):
        tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
    with tf.device("/cpu:1"):
        tf.Variable(np.arange(4, dtype=np.int64) * 7, name="scope/b")
    folder = os.path.join(HERE, "sharded")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with tf.Session(config=tf.ConfigProto(device_count={"CPU": 2})) as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver(sharded=True).save(sess, os.path.join(folder, "s.ckpt"))
    os.remove(os.path.join(folder, "s.ckpt.meta"))


def bundle_values():
    """Name -> value, in the order the variables are made."""
    rng = np.random.default_rng(47)
    return {
        "layer_2/kernel": rng.standard_normal((3, 2)).astype(np.float32),
        "layer/kernel": rng.standard_normal((2, 3)).astype(np.float32),
        "layer/bias": np.array([0.5, -0.25, 1e-30], np.float32),
        "layer/bias/Adam": np.array([np.inf, -np.inf, -0.0], np.float32),
        "scalar": np.float32(1.5),
        "f64/cube": rng.standard_normal((2, 2, 2)),
        "ints/i32": np.array([-(2 ** 31), -1, 0, 7, 2 ** 31 - 1], np.int32),
        "ints/i64": np.array([[-(2 ** 63), 2 ** 63 - 1], [3, -3]], np.int64),
        "global_step": np.int64(1234),
        "mask": np.array([[True, False, True], [False, False, True]]),
        "flag": np.bool_(True),
        "empty/rows": np.zeros((0, 3), np.float32),
        "empty/ids": np.zeros((0,), np.int64),
        "deep/a/b/c/d": np.arange(6, dtype=np.float64).reshape(1, 2, 1, 3) / 3,
    }


def bundle():
    values = bundle_values()
    tf.reset_default_graph()
    for name, value in values.items():
        tf.Variable(value, name=name)
    folder = os.path.join(HERE, "bundle")
    shutil.rmtree(folder, ignore_errors=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().save(sess, os.path.join(folder, "model.ckpt"), global_step=1234)
    os.remove(os.path.join(folder, "model.ckpt-1234.meta"))
    os.remove(os.path.join(folder, "checkpoint"))  # it names this machine's absolute path
    np.savez(os.path.join(HERE, "bundle_expected.npz"), **values)


def raw_bundle():
    values = bundle_values()
    folder = os.path.join(HERE, "raw")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    tf2.raw_ops.SaveV2(prefix=os.path.join(folder, "raw"), tensor_names=list(values),
                       shape_and_slices=[""] * len(values),
                       tensors=[tf2.constant(v) for v in values.values()])


def many_values(count=12000):
    """Tensors enough for an index of several 256 KiB blocks: name -> value."""
    return {f"tower_{i % 7}/block_{i:05d}/{'kernel' if i % 3 else 'bias/Momentum'}":
            np.full((i % 3,), i, np.float32) for i in range(count)}


def hashes():
    import hashlib
    import tempfile

    values = many_values()
    names = sorted(values)
    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, "many")
        tf2.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                           tensors=[tf2.constant(values[n]) for n in names])
        for suffix in (".index", ".data-00000-of-00001"):
            data = open(prefix + suffix, "rb").read()
            print(suffix, len(data), hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["hashes"]:
        hashes()
        sys.exit()

    everything = sys.argv[1:] != ["bundle"]
    if everything:
        cpu = tf2.config.list_physical_devices("CPU")[0]  # two logical CPUs, before any op
        tf2.config.set_logical_device_configuration(
            cpu, [tf2.config.LogicalDeviceConfiguration()] * 2)
    raw_bundle()  # eager, before graph mode is switched on
    tf.disable_eager_execution()
    if everything:
        adam()
        many()
        sharded()
    bundle()
