"""TensorFlow reads the checkpoints gradflow writes: run by hand where TensorFlow is
installed (never in CI), its result recorded in ``tests/test_tf_checkpoint_writer.py``.

    PYTHONPATH=. python tests/data/tf_checkpoints/tf_reads_gradflow.py write /tmp/gf_ckpt
    <python with tensorflow> tests/data/tf_checkpoints/tf_reads_gradflow.py read /tmp/gf_ckpt

``write`` (gradflow's interpreter) saves the tensors of ``bundle_expected.npz`` as
variables with ``gf.train.Saver`` three times (``max_to_keep=2``: the first is rotated
out), and the values of the last save in ``expected.npz`` beside them. ``read``
(TensorFlow's) finds the newest checkpoint with ``tf.train.latest_checkpoint`` (through
gradflow's text ``checkpoint`` index), reads every tensor with
``tf.train.load_checkpoint`` and ``tf.train.list_variables``, restores them into a
``compat.v1`` graph with ``tf.compat.v1.train.Saver``, and checks dtype, shape and every
bit against ``expected.npz``; it prints what it checked and exits non-zero on a
difference.
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write(folder):
    import gradflow as gf

    values = dict(np.load(os.path.join(HERE, "bundle_expected.npz")))
    with gf.Graph().as_default():
        variables = {name: gf.Variable(value, name=name) for name, value in values.items()}
        bump = gf.assign_add(variables["layer/kernel"], np.ones((2, 3), np.float32))
        saver = gf.train.Saver(max_to_keep=2)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for step in range(3):
                sess.run(bump)
                saver.save(sess, os.path.join(folder, "model.ckpt"), global_step=step)
            last = {name: sess.run(var) for name, var in variables.items()}
    np.savez(os.path.join(folder, "expected.npz"), **last)
    print("wrote", sorted(os.listdir(folder)))


def read(folder):
    import tensorflow as tf

    expected = dict(np.load(os.path.join(folder, "expected.npz")))
    prefix = tf.train.latest_checkpoint(folder)
    assert prefix == os.path.join(folder, "model.ckpt-2"), prefix
    reader = tf.train.load_checkpoint(folder)
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    assert sorted(shapes) == sorted(expected), sorted(shapes)
    assert dict(tf.train.list_variables(folder)) == {n: list(v.shape)
                                                     for n, v in expected.items()}
    for name, value in expected.items():
        got = reader.get_tensor(name)
        assert dtypes[name].as_numpy_dtype == value.dtype, (name, dtypes[name])
        assert got.dtype == value.dtype and got.shape == value.shape, name
        assert got.tobytes() == value.tobytes(), name
    state = tf.train.get_checkpoint_state(folder)
    assert list(state.all_model_checkpoint_paths) == [os.path.join(folder, "model.ckpt-1"),
                                                      prefix], state
    tf.compat.v1.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        variables = {name: tf.compat.v1.Variable(np.zeros_like(value), name=name)
                     for name, value in expected.items()}
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, prefix)
            for name, var in variables.items():
                assert sess.run(var).tobytes() == expected[name].tobytes(), name
    print(f"TensorFlow {tf.__version__} read {len(expected)} tensors of {prefix} "
          "identically (load_checkpoint, list_variables, compat.v1 Saver.restore)")


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](sys.argv[2])
