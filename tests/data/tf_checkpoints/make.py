"""Writes the TensorFlow checkpoints ``tests/test_tf_checkpoint.py`` restores, with
TensorFlow itself (2.x, ``compat.v1`` graph mode): ``python make.py`` in this folder.

- ``adam/``: a small TF1 model (the graph of ``test_tf_checkpoint.model``) after 3 Adam
  steps, its ``checkpoint`` index naming the absolute path TensorFlow saved to, and
  ``adam_expected.npz``: every variable after a 4th step, computed by TensorFlow.
- ``many/``: 300 variables of several dtypes in one index block of 10 KB;
  ``many_expected.npz`` holds their values.
- ``sharded/``: a ``Saver(sharded=True)`` checkpoint of variables on two (logical)
  CPUs: two data files under one index.
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


if __name__ == "__main__":
    cpu = tf2.config.list_physical_devices("CPU")[0]  # two logical CPUs, before any graph
    tf2.config.set_logical_device_configuration(cpu, [tf2.config.LogicalDeviceConfiguration()] * 2)
    tf.disable_eager_execution()
    adam()
    many()
    sharded()
