"""Saver.restore from checkpoints TensorFlow wrote (``gradflow.train.tf_checkpoint``):
the files in ``tests/data/tf_checkpoints`` were written by TensorFlow 2.21's
``compat.v1`` Saver (``make.py`` there), with TensorFlow's values beside them."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import gradflow as gf
from gradflow import protowire
from gradflow.train import tf_checkpoint
from gradflow.train.saver import CheckpointError

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf_checkpoints")


def model():
    """The graph of ``make.py``'s ``adam()``, in gradflow: the same names, so the same
    checkpoint keys (Adam's slots and powers included)."""
    x = gf.placeholder(gf.float32, (4, 3), name="x")
    y = gf.placeholder(gf.int64, (4,), name="y")
    with gf.variable_scope("dense"):
        w = gf.get_variable("kernel", initializer=np.zeros((3, 5), np.float32))
        b = gf.get_variable("bias", initializer=np.zeros(5, np.float32))
    logits = gf.matmul(x, w) + b
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    step = gf.train.get_or_create_global_step()
    train = gf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    gf.Variable(np.zeros((2, 3)), name="scale64")
    gf.Variable(np.zeros(2, np.int32), name="counts32")
    gf.Variable(np.zeros(3, bool), name="mask")
    feed = {x: np.arange(12, dtype=np.float32).reshape(4, 3) / 10, y: [0, 3, 1, 4]}
    return train, feed


@pytest.fixture
def adam_folder(tmp_path):
    """A copy of the Adam checkpoint's folder: its index names the absolute path
    TensorFlow saved to, on another machine."""
    folder = tmp_path / "adam"
    shutil.copytree(os.path.join(DATA, "adam"), folder)
    return folder


def test_a_tf1_program_resumes_from_tensorflows_checkpoint_with_its_numbers(adam_folder,
                                                                           backend):
    expected = np.load(os.path.join(DATA, "adam_expected.npz"))
    with gf.Graph().as_default():
        train, feed = model()
        saver = gf.train.Saver()
        with gf.Session(backend=backend) as sess:
            state = gf.train.get_checkpoint_state(str(adam_folder))
            assert state.model_checkpoint_path == str(adam_folder / "model.ckpt-3")
            assert gf.train.checkpoint_exists(state.model_checkpoint_path)
            saver.restore(sess, gf.train.latest_checkpoint(str(adam_folder)))
            assert sess.run(gf.train.get_global_step()) == 3
            sess.run(train, feed)  # TensorFlow's 4th step, from its own 3
            variables = {v.op.name: v for v in gf.global_variables()}
            assert sorted(variables) == sorted(expected.files)
            for name, var in variables.items():
                got = sess.run(var)
                assert got.dtype == expected[name].dtype, name
                np.testing.assert_allclose(got, expected[name], rtol=2e-6, atol=1e-7,
                                           err_msg=name)


def test_every_dtype_and_shape_of_300_tensors_comes_back_bit_exact(tmp_path):
    expected = np.load(os.path.join(DATA, "many_expected.npz"))
    with gf.Graph().as_default():
        variables = {name: gf.Variable(np.zeros_like(expected[name]), name=name)
                     for name in expected.files}
        saver = gf.train.Saver()
        with gf.Session() as sess:
            saver.restore(sess, os.path.join(DATA, "many", "many.ckpt"))
            for name, var in variables.items():
                got = sess.run(var)
                assert got.dtype == expected[name].dtype
                np.testing.assert_array_equal(got, expected[name], err_msg=name)


def test_a_save_after_restoring_goes_on_with_tensorflows_series_and_keeps_other_files(
        adam_folder):
    """gradflow writes TensorFlow's layout too: the saves after a restore continue the
    series TensorFlow's index lists, and rotation deletes its oldest as it deletes
    gradflow's own (TF1's Saver does the same once it has recovered the index's list);
    files of another series, though TensorFlow's, stay."""
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(adam_folder / f"model.ckpt-3{suffix}", adam_folder / f"other.ckpt-3{suffix}")
    with gf.Graph().as_default():
        train, feed = model()
        saver = gf.train.Saver(max_to_keep=2)
        with gf.Session() as sess:
            saver.restore(sess, gf.train.latest_checkpoint(str(adam_folder)))
            for _ in range(2):
                sess.run(train, feed)
                saver.save(sess, str(adam_folder / "model.ckpt"),
                           global_step=gf.train.get_global_step())
    assert gf.train.latest_checkpoint(str(adam_folder)) == str(adam_folder / "model.ckpt-5")
    data = ".data-00000-of-00001"
    assert sorted(os.listdir(adam_folder)) == [
        "checkpoint", f"model.ckpt-4{data}", "model.ckpt-4.index", "model.ckpt-4.meta",
        f"model.ckpt-5{data}", "model.ckpt-5.index", "model.ckpt-5.meta",
        f"other.ckpt-3{data}", "other.ckpt-3.index"]
    assert gf.train.load_variable(str(adam_folder), "global_step") == 5


def test_variables_missing_from_tensorflows_checkpoint_are_named(adam_folder):
    with gf.Graph().as_default():
        model()
        extra = gf.Variable(1.0, name="not_in_tf")
        saver = gf.train.Saver()
        with gf.Session() as sess:
            sess.run(extra.initializer)
            with pytest.raises(CheckpointError) as err:
                saver.restore(sess, str(adam_folder / "model.ckpt-3"))
            assert sess.run(extra) == 1.0
    message = str(err.value)
    assert message.startswith(f"checkpoint {adam_folder / 'model.ckpt-3'} does not match the "
                              "variables to restore: variable 'not_in_tf' is missing from the "
                              "file (it holds 'beta1_power', 'beta2_power', 'counts32', ")
    assert message.endswith("Nothing was restored.")


def _restore_or_error(prefix):
    """The restored values of the Adam model, or the CheckpointError's message."""
    with gf.Graph().as_default():
        model()
        saver = gf.train.Saver()
        with gf.Session() as sess:
            try:
                saver.restore(sess, prefix)
            except CheckpointError as err:
                return str(err)
            return {v.op.name: sess.run(v) for v in gf.global_variables()}


def test_any_damaged_byte_is_an_error_or_changes_nothing(adam_folder):
    """Every byte of the index and of the data, flipped in turn: the restore refuses
    the file, or (a byte the reader never uses: the footer's padding, the metaindex)
    restores TensorFlow's values exactly."""
    prefix = str(adam_folder / "model.ckpt-3")
    intact = _restore_or_error(prefix)
    errors = 0
    for suffix in (".index", ".data-00000-of-00001"):
        path = prefix + suffix
        original = open(path, "rb").read()
        for k in range(len(original)):
            damaged = bytearray(original)
            damaged[k] ^= 0xFF
            open(path, "wb").write(bytes(damaged))
            result = _restore_or_error(prefix)
            if isinstance(result, str):
                assert result.startswith(f"checkpoint {prefix} is a TensorFlow checkpoint "
                                         "that cannot be read: "), result
                errors += 1
            else:
                assert suffix == ".index", f"data byte {k} flipped and restored"
                for name, value in intact.items():
                    np.testing.assert_array_equal(result[name], value)
        open(path, "wb").write(original)
    assert errors > 0.9 * (os.path.getsize(prefix + ".index")
                           + os.path.getsize(prefix + ".data-00000-of-00001"))


@pytest.mark.parametrize("case, expected", [
    ("short data", "its data file {prefix}.data-00000-of-00001 ends before tensor"),
    ("no data", "its data file {prefix}.data-00000-of-00001 cannot be read (FileNotFoundError"),
    ("short index", "its index {prefix}.index is not a TensorFlow checkpoint index, or is cut "
                    "short (400 bytes, no table footer)"),
])
def test_cut_or_missing_files_say_which_file_and_what(adam_folder, case, expected):
    prefix = str(adam_folder / "model.ckpt-3")
    if case == "short data":
        data = prefix + ".data-00000-of-00001"
        open(data, "r+b").truncate(os.path.getsize(data) - 3)
    elif case == "no data":
        os.remove(prefix + ".data-00000-of-00001")
    else:
        open(prefix + ".index", "r+b").truncate(400)
    message = _restore_or_error(prefix)
    assert message.startswith(f"checkpoint {prefix} is a TensorFlow checkpoint that cannot be "
                              f"read: {expected.format(prefix=prefix)}")
    assert "nothing was restored" in message


def test_a_tensorflow_index_names_only_files_in_its_own_folder(tmp_path):
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "../../outside/model.ckpt-9"\n'
        'all_model_checkpoint_paths: "/elsewhere/model.ckpt-8"\n'
        'all_model_checkpoint_paths: "../../outside/model.ckpt-9"\n')
    state = gf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == str(tmp_path / "model.ckpt-9")
    assert state.all_model_checkpoint_paths == [str(tmp_path / "model.ckpt-8"),
                                                str(tmp_path / "model.ckpt-9")]
    assert gf.train.latest_checkpoint(str(tmp_path)) is None  # neither is in the folder


def test_the_text_index_reads_escapes_and_timestamps_and_refuses_other_fields():
    fields = tf_checkpoint.read_index_text(
        b'model_checkpoint_path: "a\\"b\\\\c-1"\n'
        b'all_model_checkpoint_paths: "a\\"b\\\\c-1"\n'
        b'all_model_checkpoint_timestamps: 1700000000.5\n'
        b'last_preserved_timestamp: 1699999999.25\n')
    assert fields == {"model_checkpoint_path": 'a"b\\c-1',
                      "all_model_checkpoint_paths": ['a"b\\c-1'],
                      "all_model_checkpoint_timestamps": [1700000000.5],
                      "last_preserved_timestamp": 1699999999.25}
    with pytest.raises(tf_checkpoint.TFCheckpointError, match="line 2 .* is not a field"):
        tf_checkpoint.read_index_text(b'model_checkpoint_path: "a"\nimport_os: "x"\n')


def test_the_python_checksum_is_crc32c():
    """The fallback where the crc32c package is missing gives the same sums."""
    assert protowire.crc32c_python(b"123456789") == 0xE3069283  # the standard check
    data = os.urandom(1000)
    assert protowire.crc32c_python(data) == protowire.crc32c(data)


@pytest.mark.parametrize("fmt", ["tensorflow", "gradflow"])
def test_a_checkpoint_reader_lists_and_reads_either_format(tmp_path, fmt):
    expected = np.load(os.path.join(DATA, "adam_expected.npz"))
    if fmt == "tensorflow":
        folder = os.path.join(DATA, "adam")
    else:  # the same values, saved by gradflow
        folder = str(tmp_path)
        with gf.Graph().as_default():
            for name in expected.files:
                gf.Variable(expected[name], name=name)
            with gf.Session() as sess:
                sess.run(gf.global_variables_initializer())
                gf.train.Saver().save(sess, os.path.join(folder, "model.ckpt"), global_step=3)
    assert gf.train.list_variables(folder) == sorted(
        (n, list(expected[n].shape)) for n in expected.files)
    reader = gf.train.load_checkpoint(folder)
    assert reader.path == os.path.join(folder, "model.ckpt-3")
    assert reader.get_variable_to_dtype_map()["counts32"] == gf.int32
    assert reader.has_tensor("mask") and not reader.has_tensor("Mask")
    assert gf.train.NewCheckpointReader(reader.path).get_tensor("mask").tolist() == [
        True, False, True]
    kernel = gf.train.load_variable(folder, "dense/kernel")
    if fmt == "gradflow":
        np.testing.assert_array_equal(kernel, expected["dense/kernel"])
    else:  # TensorFlow's 3rd step: not the 4th of expected, but close to it
        np.testing.assert_allclose(kernel, expected["dense/kernel"], atol=0.2)
    with pytest.raises(CheckpointError, match="has no tensor 'nope'; it holds 'beta1_power'"):
        reader.get_tensor("nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="empty holds no checkpoint listed in its index"):
        gf.train.load_checkpoint(tmp_path / "empty")


def test_init_from_checkpoint_warm_starts_renamed_scopes_from_tensorflows_checkpoint():
    """TF1's warm start (BERT's fine-tuning does this): the dense layer under another
    scope takes TensorFlow's trained values through its initializer; the rest keep
    their own initial values."""
    prefix = os.path.join(DATA, "adam", "model.ckpt-3")
    reader = gf.train.load_checkpoint(prefix)
    with gf.Graph().as_default():
        with gf.variable_scope("pretrained"):
            kernel = gf.get_variable("kernel", initializer=np.zeros((3, 5), np.float32))
            bias = gf.get_variable("bias", initializer=np.zeros(5, np.float32))
        fresh = gf.Variable(np.ones(2, np.int32), name="counts32")
        with pytest.raises(ValueError, match="tensor 'dense/nope' \\(for variable "
                                             "'pretrained/kernel'\\) is not in checkpoint"):
            gf.train.init_from_checkpoint(prefix, {"dense/nope": kernel})
        with pytest.raises(ValueError, match="variable 'pretrained/bias' is float32 \\(5,\\), "
                                             "tensor 'scale64' of checkpoint .* is float64 "
                                             "\\(2, 3\\)"):
            gf.train.init_from_checkpoint(prefix, {"scale64": "pretrained/bias"})
        gf.train.init_from_checkpoint(prefix, {"dense/": "pretrained/"})
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(kernel), reader.get_tensor("dense/kernel"))
            np.testing.assert_array_equal(sess.run(bias), reader.get_tensor("dense/bias"))
            assert sess.run(fresh).tolist() == [1, 1]
    with gf.Graph().as_default():
        w = gf.Variable(np.zeros((3, 5), np.float32), name="w")
        gf.train.init_from_checkpoint(os.path.join(DATA, "adam"), {"dense/kernel": w})
        with gf.Session() as sess:
            sess.run(w.initializer)
            np.testing.assert_array_equal(sess.run(w), reader.get_tensor("dense/kernel"))


def test_a_sharded_checkpoint_reads_each_tensor_from_its_own_data_file(tmp_path):
    """``Saver(sharded=True)`` over two devices: one index, two data files."""
    folder = tmp_path / "sharded"
    shutil.copytree(os.path.join(DATA, "sharded"), folder)
    with gf.Graph().as_default():
        a = gf.Variable(np.zeros((2, 3), np.float32), name="a")
        with gf.name_scope("scope"):
            b = gf.Variable(np.zeros(4, np.int64), name="b")
        with gf.Session() as sess:
            gf.train.Saver().restore(sess, gf.train.latest_checkpoint(str(folder)))
            assert sess.run(a).tolist() == [[0, 1, 2], [3, 4, 5]]
            assert sess.run(b).tolist() == [0, 7, 14, 21]
    os.remove(folder / "s.ckpt.data-00001-of-00002")
    with pytest.raises(CheckpointError, match="its data file .*s.ckpt.data-00001-of-00002 "
                                              "cannot be read"):
        gf.train.load_variable(str(folder), "scope/b")
    assert gf.train.load_variable(str(folder), "a").shape == (2, 3)
