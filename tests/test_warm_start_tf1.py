"""``tf.train.warm_start`` and ``tf.train.VocabInfo`` (gradflow/train/warm_starting.py).

The expected values are TensorFlow 2.21's: its ``compat.v1`` ``warm_start`` run by hand in
graph mode on the same checkpoint values (``emb`` = arange(6) as [3, 2], ``out`` =
10 * arange(6) as [2, 3], ``bias`` = [7, 8]), old vocabulary a, b, c and new vocabulary
c, x, a with one OOV bucket, written in as literals.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


@pytest.fixture()
def checkpoint(tmp_path):
    (tmp_path / "old.txt").write_text("a\nb\nc\n")
    (tmp_path / "new.txt").write_text("c\nx\na\n")
    graph = gf.Graph()
    with graph.as_default():
        gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="emb")
        gf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3) * 10, name="out")
        gf.Variable([7.0, 8.0], name="bias")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            return tmp_path, gf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))


def test_warm_start_renames_and_remaps_vocabularies_as_tensorflow(checkpoint, backend):
    folder, path = checkpoint
    with gf.Graph().as_default():
        emb = gf.get_variable("emb2", [4, 2], initializer=gf.ones_initializer())
        out = gf.get_variable("out", [2, 4], initializer=gf.ones_initializer())
        bias = gf.get_variable("bias", [2])
        other = gf.get_variable("other", [2], trainable=False,
                                initializer=gf.constant_initializer(3.0))
        rows = gf.train.VocabInfo(new_vocab=str(folder / "new.txt"), new_vocab_size=3,
                                  num_oov_buckets=1, old_vocab=str(folder / "old.txt"))
        columns = rows._replace(axis=1)
        gf.train.warm_start(path, vars_to_warm_start=".*",
                            var_name_to_vocab_info={"emb2": rows, "out": columns},
                            var_name_to_prev_var_name={"emb2": "emb"})
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            got = sess.run([emb, out, bias, other])
    np.testing.assert_array_equal(got[0], [[4, 5], [0, 0], [0, 1], [0, 0]])  # TF 2.21's
    np.testing.assert_array_equal(got[1], [[20, 0, 0, 0], [50, 0, 30, 0]])
    np.testing.assert_array_equal(got[2], [7, 8])
    np.testing.assert_array_equal(got[3], [3, 3])  # not trainable: not warm-started


def test_backup_initializer_and_variable_lists(checkpoint):
    folder, path = checkpoint
    with gf.Graph().as_default():
        emb = gf.get_variable("emb", [4, 2])
        bias = gf.get_variable("bias", [2], trainable=False)
        info = gf.train.VocabInfo(str(folder / "new.txt"), 3, 1, str(folder / "old.txt"),
                                  backup_initializer=gf.constant_initializer(-1.0))
        gf.train.warm_start(path, vars_to_warm_start=["emb", "bias"],
                            var_name_to_vocab_info={"emb": info})
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            got_emb, got_bias = sess.run([emb, bias])
    np.testing.assert_array_equal(got_emb, [[4, 5], [-1, -1], [0, 1], [-1, -1]])
    np.testing.assert_array_equal(got_bias, [7, 8])


def test_names_that_select_nothing_are_refused(checkpoint):
    _, path = checkpoint
    with gf.Graph().as_default():
        gf.get_variable("bias", [2])
        with pytest.raises(ValueError, match="not selected"):
            gf.train.warm_start(path, var_name_to_prev_var_name={"biass": "bias"})
        with pytest.raises(ValueError, match="vars_to_warm_start"):
            gf.train.warm_start(path, vars_to_warm_start=3)
