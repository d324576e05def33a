"""gf.train.Saver: roundtrips across backends, resuming training, index, atomicity, TF1
arguments, and the exact text of every error (what is wrong and what to do).

A checkpoint ``prefix`` is TensorFlow's V2 layout, ``prefix.index`` and
``prefix.data-00000-of-00001`` (``tests/test_tf_checkpoint_writer.py`` checks its bytes
against TensorFlow's); ``write_old_checkpoint`` writes the single ``.npz`` file of
earlier gradflow versions, which still restores."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gradflow as gf
from gradflow.train import saver as saver_module
from gradflow.train import tf_checkpoint_writer
from gradflow.train.saver import CheckpointError

DATA = ".data-00000-of-00001"


def files(*prefixes):
    """The file names of the checkpoints ``prefixes``: index, data file and meta graph of
    each (``Saver.save`` writes the meta graph by default, as TF1's)."""
    return sorted(name for p in prefixes for name in (p + DATA, p + ".index", p + ".meta"))


def write_old_checkpoint(path, arrays, global_step=None):
    """A checkpoint as gradflow wrote it before it wrote TensorFlow's layout: one .npz,
    each array under its name, and a JSON ``__header__``."""
    header = {"format_version": 1, "names": list(arrays),
              "shapes": [list(np.shape(a)) for a in arrays.values()],
              "dtypes": [np.asarray(a).dtype.name for a in arrays.values()],
              "global_step": global_step}
    with open(path, "wb") as f:
        np.savez(f, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.5], [0.1, 0.2, 0.3]],
             dtype=np.float32)
Y = np.array([[1.0], [-1.0], [0.5], [2.0]], dtype=np.float32)


def build():
    """A small linear model trained with Adam and a global step."""
    x = gf.constant(X)
    w = gf.Variable(np.linspace(-1, 1, 3, dtype=np.float32).reshape(3, 1), name="w")
    b = gf.Variable(np.zeros(1, np.float32), name="b")
    step = gf.train.get_or_create_global_step()
    loss = gf.reduce_mean(gf.square(gf.matmul(x, w) + b - Y))
    train = gf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    return dict(w=w, b=b, step=step, train=train, init=gf.global_variables_initializer())


def values(sess, var_list):
    return {v.name: sess.run(v) for v in var_list}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_roundtrip_across_backends_bit_exact(tmp_path):
    m = build()
    variables = gf.global_variables()
    with gf.Session(backend="numpy") as sess:
        sess.run(m["init"])
        for _ in range(3):
            sess.run(m["train"])
        expected = values(sess, variables)
        path = gf.train.Saver().save(sess, tmp_path / "model", global_step=m["step"])
    assert path == f"{tmp_path / 'model'}-3"
    for name in ["array_api_strict", "torch", "numpy"]:
        with gf.Session(backend=name) as sess:
            saver = gf.train.Saver()
            saver.restore(sess, path)
            assert_same(values(sess, variables), expected)
            path = saver.save(sess, tmp_path / name)
    assert any("Adam" in v.name for v in variables)
    assert expected["global_step"] == 3


def test_resume_training_is_bit_exact(tmp_path, backend):
    m = build()
    with gf.Session(backend=backend) as sess:
        sess.run(m["init"])
        for _ in range(5):
            sess.run(m["train"])
        straight = values(sess, gf.global_variables())
    with gf.Session(backend=backend) as sess:
        sess.run(m["init"])
        for _ in range(3):
            sess.run(m["train"])
        path = gf.train.Saver().save(sess, tmp_path / "model", global_step=m["step"])
    with gf.Session(backend=backend) as sess:
        gf.train.Saver().restore(sess, path)
        assert sess.run(m["step"]) == 3
        for _ in range(2):
            sess.run(m["train"])
        resumed = values(sess, gf.global_variables())
    assert_same(resumed, straight)


def test_max_to_keep_and_latest_checkpoint(tmp_path):
    m = build()
    assert gf.train.latest_checkpoint(tmp_path) is None
    saver = gf.train.Saver(max_to_keep=2)
    with gf.Session() as sess:
        sess.run(m["init"])
        paths = [saver.save(sess, tmp_path / "model", global_step=s) for s in range(4)]
    assert [gf.train.checkpoint_exists(p) for p in paths] == [False, False, True, True]
    assert gf.train.latest_checkpoint(tmp_path) == paths[-1]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + files("model-2", "model-3")
    lines = (tmp_path / "checkpoint").read_text().splitlines()  # TensorFlow's text format
    assert lines[:3] == ['model_checkpoint_path: "model-3"', 'all_model_checkpoint_paths: '
                         '"model-2"', 'all_model_checkpoint_paths: "model-3"']
    assert [line.split(":")[0] for line in lines[3:]] == ["all_model_checkpoint_timestamps"] * 2


def test_var_list_dict_and_subset(tmp_path):
    m = build()
    with gf.Session() as sess:
        sess.run(m["init"])
        path = gf.train.Saver({"weights": m["w"]}).save(sess, tmp_path / "w")
        saved_w = sess.run(m["w"])
    with gf.Session() as sess:
        sess.run(m["init"])
        sess.load_variable(m["w"], np.zeros((3, 1), np.float32))
        gf.train.Saver({"weights": m["w"]}).restore(sess, path)
        np.testing.assert_array_equal(sess.run(m["w"]), saved_w)


def test_failed_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    m = build()
    saver = gf.train.Saver()
    with gf.Session() as sess:
        sess.run(m["init"])
        path = saver.save(sess, tmp_path / "model")
        before = values(sess, gf.global_variables())
        sess.run(m["train"])

        def broken(base, arrays):
            raise OSError("disk full")

        monkeypatch.setattr(saver_module, "_write_checkpoint", broken)
        with pytest.raises(OSError, match="disk full"):
            saver.save(sess, tmp_path / "model")
        monkeypatch.undo()

        def broken_fsync(fd):
            raise OSError("fsync failed")

        monkeypatch.setattr(saver_module.os, "fsync", broken_fsync)
        with pytest.raises(OSError, match="fsync failed"):
            saver.save(sess, tmp_path / "model")
        monkeypatch.undo()

        replace = os.replace

        def index_rename_fails(src, dst):  # after the new data file took the old one's place
            if str(dst).endswith(".index"):
                raise OSError("rename failed")
            replace(src, dst)

        monkeypatch.setattr(tf_checkpoint_writer.os, "replace", index_rename_fails)
        with pytest.raises(OSError, match="rename failed"):
            saver.save(sess, tmp_path / "model")
        monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + files("model")
    assert gf.train.latest_checkpoint(tmp_path) == path
    with gf.Session() as sess:
        saver.restore(sess, path)
        assert_same(values(sess, gf.global_variables()), before)


def corrupt_truncated(path):
    """Cut the data file of checkpoint ``path`` to half its size."""
    data = open(path + DATA, "rb").read()
    open(path + DATA, "wb").write(data[: len(data) // 2])
    return len(data) // 2


def corrupt_garbage(path):
    open(path + ".index", "wb").write(b"not a checkpoint at all")


def raises(exc, fn, *args):
    """The message of the ``exc`` that ``fn(*args)`` raises."""
    with pytest.raises(exc) as info:
        fn(*args)
    return str(info.value)


def damaged(path, name, start, end):
    """The message of checkpoint ``path`` whose data file ends before tensor ``name``."""
    return (f"checkpoint {path} is a TensorFlow checkpoint that cannot be read: its data file "
            f"{path}{DATA} ends before tensor '{name}' (bytes {start}-{end}), as when a copy is "
            "cut short; nothing was restored. ")


@pytest.mark.parametrize("case", ["missing", "shape", "dtype", "truncated", "garbage",
                                  "old garbage", "no file"])
def test_restore_errors_change_nothing(tmp_path, case, backend):
    with gf.Graph().as_default():
        gf.Variable(np.ones((2, 2), np.float32), name="a")
        gf.Variable(np.ones(3, np.float32), name="c")
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            path = gf.train.Saver().save(sess, tmp_path / "saved")
    # The graph that restores: same names, one difference per case.
    a = gf.Variable(np.full((2, 2), 7.0, np.float32), name="a")
    shape = (3,) if case != "shape" else (4,)
    dtype = np.float32 if case != "dtype" else np.float64
    c = gf.Variable(np.full(shape, 7.0, dtype), name="c")
    if case == "missing":
        gf.Variable(np.zeros(1, np.float32), name="extra")
    mismatch = f"checkpoint {path} does not match the variables to restore: "
    none_left = f"There is no other checkpoint in {tmp_path}: restore a backup, or start from " \
        "the initial values."
    if case == "truncated":
        corrupt_truncated(path)  # 'a' (16 bytes) and 'c' (12 bytes), cut to 14 bytes
        expected = damaged(path, "a", 0, 16) + none_left
    elif case == "garbage":
        corrupt_garbage(path)
        expected = (f"checkpoint {path} is a TensorFlow checkpoint that cannot be read: its "
                    f"index {path}.index is not a TensorFlow checkpoint index, or is cut short "
                    "(23 bytes, no table footer); nothing was restored. " + none_left)
    elif case == "old garbage":  # a file without an .index: not an earlier gradflow's either
        os.remove(path + ".index")
        os.remove(path + DATA)
        open(path, "wb").write(b"not a checkpoint at all")
        expected = (f"checkpoint {path} is not a checkpoint, or is corrupt: there is no "
                    f"{path}.index, and the file is not the .npz of an earlier gradflow either "
                    "(it starts with b'not a ch'); nothing was restored. " + none_left)
    elif case == "no file":
        path = str(tmp_path / "nowhere")
        expected = (f"checkpoint {path}: no such file. Checkpoints in {tmp_path}: saved. The "
                    f"newest is {tmp_path / 'saved'}, which "
                    f"gf.train.latest_checkpoint({str(tmp_path)!r}) returns.")
    else:
        expected = mismatch + {
            "missing": "variable 'extra' is missing from the file (it holds 'a', 'c'); restore "
                       "only saved variables with gf.train.Saver(var_list=[...]), or map names "
                       "to variables with a dict",
            "shape": "variable 'c' has shape (3,) in the file, the graph expects (4,)",
            "dtype": "variable 'c' has dtype float32 in the file, the graph expects float64 "
                     "(create it with dtype=float32 to restore it)",
        }[case] + ". Nothing was restored."
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        before = values(sess, gf.global_variables())
        assert raises(CheckpointError, gf.train.Saver().restore, sess, path) == expected
        assert_same(values(sess, gf.global_variables()), before)
        np.testing.assert_array_equal(sess.run(a), np.full((2, 2), 7.0, np.float32))
        assert sess.run(c).dtype == dtype


def test_mismatches_are_reported_together_and_reshape(tmp_path):
    with gf.Graph().as_default():
        gf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2), name="a")
        gf.Variable(np.ones(3, np.float32), name="c")
        with gf.Session() as sess:
            path = gf.train.Saver().save(sess, tmp_path / "saved")
    a = gf.Variable(np.zeros(4, np.float32), name="a")
    gf.Variable(np.zeros(3, np.int32), name="c")
    with gf.Session() as sess:
        assert raises(CheckpointError, gf.train.Saver().restore, sess, path) == (
            f"checkpoint {path} does not match the variables to restore: variable 'a' has shape "
            "(2, 2) in the file, the graph expects (4,) (same size: Saver(reshape=True) would "
            "reshape it); variable 'c' has dtype float32 in the file, the graph expects int32 "
            "(create it with dtype=float32 to restore it). Nothing was restored.")
        gf.train.Saver([a], reshape=True).restore(sess, path)
        np.testing.assert_array_equal(sess.run(a), np.arange(4, dtype=np.float32))


def test_restore_none_says_where_latest_checkpoint_looked(tmp_path, backend):
    m = build()
    start = ("Saver.restore: save_path is None. gf.train.latest_checkpoint returns None when it "
             "finds no checkpoint")
    end = (". Check the folder name, or start from the initial values when there is nothing to "
           "resume (`if path: saver.restore(sess, path)`).")
    missing = tmp_path / "no_such_folder"
    empty = tmp_path / "empty"
    empty.mkdir()
    with gf.Session(backend=backend) as sess:
        saver = gf.train.Saver()
        saver_module._last_search = None
        assert raises(CheckpointError, saver.restore, sess, None) == (
            f"{start}; pass the path of a checkpoint file, and check the folder you gave "
            "gf.train.latest_checkpoint.")
        assert raises(CheckpointError, saver.restore, sess,
                      gf.train.latest_checkpoint(missing)) == (
            f"{start}, and its last search, in {missing}, found none: the folder {missing} "
            f"does not exist{end}")
        assert raises(CheckpointError, saver.restore, sess,
                      gf.train.latest_checkpoint(empty)) == (
            f"{start}, and its last search, in {empty}, found none: {empty} has no "
            f"'checkpoint' index, so nothing was saved there{end}")
        path = saver.save(sess, empty / "model", global_step=m["step"])
        for suffix in (".index", DATA):
            os.rename(path + suffix, f"{empty / 'moved'}{suffix}")
        assert raises(CheckpointError, saver.restore, sess,
                      gf.train.latest_checkpoint(empty)) == (
            f"{start}, and its last search, in {empty}, found none: the index in {empty} lists "
            "model-0, but none of these files exists (moved or deleted?); it holds checkpoint "
            f"files not in an index (moved): restore one by its path{end}")
        saver.restore(sess, empty / "moved")


def test_restore_of_a_missing_path_lists_the_checkpoints_there(tmp_path):
    m = build()
    saver = gf.train.Saver()
    with gf.Session() as sess:
        for step in (10, 20):
            sess.run(m["step"].assign(step))
            saver.save(sess, tmp_path / "model", global_step=m["step"])
        assert raises(CheckpointError, saver.restore, sess, tmp_path / "model-30") == (
            f"checkpoint {tmp_path / 'model-30'}: no such file. Checkpoints in {tmp_path}: "
            f"model-10, model-20; did you mean {tmp_path / 'model-20'}? The newest is "
            f"{tmp_path / 'model-20'}, which gf.train.latest_checkpoint({str(tmp_path)!r}) "
            "returns.")
        assert raises(CheckpointError, saver.restore, sess, tmp_path) == (
            f"checkpoint {tmp_path} is a folder, not a checkpoint file; its newest checkpoint "
            f"is {tmp_path / 'model-20'}. Pass a checkpoint file, such as "
            f"gf.train.latest_checkpoint({str(tmp_path)!r})")
        open(tmp_path / "tf.ckpt.meta", "wb").write(b"")
        assert raises(CheckpointError, saver.restore, sess, tmp_path / "tf.ckpt").startswith(
            f"checkpoint {tmp_path / 'tf.ckpt'}: no such file (tf.ckpt.meta exists, but not "
            "tf.ckpt.index: a TensorFlow checkpoint is read through its .index file). "
            "Checkpoints in ")
        open(tmp_path / "tf.ckpt.index", "wb").write(b"")
        assert raises(CheckpointError, saver.restore, sess, tmp_path / "tf.ckpt").startswith(
            f"checkpoint {tmp_path / 'tf.ckpt'} is a TensorFlow checkpoint that cannot be "
            f"read: its index {tmp_path / 'tf.ckpt.index'} is not a TensorFlow checkpoint "
            "index, or is cut short (0 bytes, no table footer); nothing was restored. The "
            f"newest intact checkpoint in the same folder is {tmp_path / 'model-20'}")
        nowhere = tmp_path / "nowhere" / "model"
        assert raises(CheckpointError, saver.restore, sess, nowhere) == (
            f"checkpoint {nowhere}: no such file, and the folder {nowhere.parent} does not "
            "exist.")
        assert raises(TypeError, saver.restore, sess, 3) == (
            "Saver.restore: expected a path (str or os.PathLike), got int 3")


def test_damaged_newest_checkpoint_names_the_intact_earlier_one(tmp_path, backend):
    m = build()
    saver = gf.train.Saver(max_to_keep=4)
    saved = {}
    with gf.Session(backend=backend) as sess:
        sess.run(m["init"])
        for _ in range(4):
            sess.run(m["train"])
            path = saver.save(sess, tmp_path / "model", global_step=m["step"])
            saved[path] = values(sess, gf.global_variables())
    newest, previous = f"{tmp_path / 'model'}-4", f"{tmp_path / 'model'}-3"
    corrupt_truncated(newest)  # 64 bytes cut to 32, in the middle of 'w' (the first read)
    cut = damaged(newest, "w", 28, 40)
    assert gf.train.latest_checkpoint(tmp_path) == newest  # TF1: the newest recorded one
    with gf.Session(backend=backend) as sess:
        sess.run(m["init"])
        before = values(sess, gf.global_variables())
        assert raises(CheckpointError, saver.restore, sess, newest) == cut + (
            f"The newest intact checkpoint in the same folder is {previous} (global step 3): it "
            f"loads and matches these variables; saver.restore(sess, {previous!r}) resumes "
            "from it.")
        assert_same(values(sess, gf.global_variables()), before)  # nothing restored
        corrupt_garbage(previous)  # the next one is damaged too: skipped, and said so
        older = f"{tmp_path / 'model'}-2"
        assert raises(CheckpointError, saver.restore, sess, newest) == cut + (
            f"The newest intact checkpoint in the same folder is {older} (global step 2) "
            f"(model-3 is damaged): it loads and matches these variables; "
            f"saver.restore(sess, {older!r}) resumes from it.")
        saver.restore(sess, older)
        assert_same(values(sess, gf.global_variables()), saved[older])


def test_damaged_checkpoint_with_no_intact_one_left(tmp_path):
    build()
    saver = gf.train.Saver()
    with gf.Session() as sess:
        paths = [saver.save(sess, tmp_path / "model", global_step=s) for s in range(2)]
    corrupt_truncated(paths[1])
    data = bytearray(open(paths[0] + DATA, "rb").read())
    at = data.find(np.linspace(-1, 1, 3, dtype=np.float32).tobytes())
    data[at] ^= 0xFF  # one flipped byte in the values of 'w': the CRC check finds it
    open(paths[0] + DATA, "wb").write(bytes(data))
    with gf.Session() as sess:
        message = raises(CheckpointError, saver.restore, sess, paths[1])
        assert message.endswith(f"No other checkpoint in {tmp_path} can be restored (model-0 is "
                                "damaged): restore a backup, or start from the initial values.")
        assert raises(CheckpointError, saver.restore, sess, paths[0]).startswith(
            f"checkpoint {paths[0]} is a TensorFlow checkpoint that cannot be read: tensor 'w' "
            f"in {paths[0]}{DATA} fails its checksum: the data file is damaged; nothing was "
            "restored. ")


def test_a_foreign_npz_and_a_newer_format_are_named(tmp_path):
    gf.Variable(1.0, name="v")
    np.savez(tmp_path / "other.npz", a=np.ones(2))
    header = {"format_version": 9, "names": ["v"], "shapes": [[]], "dtypes": ["float32"]}
    np.savez(tmp_path / "future.npz", __header__=np.frombuffer(json.dumps(header).encode(),
                                                               np.uint8), v=np.float32(1))
    saver = gf.train.Saver()
    with gf.Session() as sess:
        assert raises(CheckpointError, saver.restore, sess, tmp_path / "other.npz") == (
            f"checkpoint {tmp_path / 'other.npz'} is a .npz archive but not a gradflow "
            "checkpoint: it has no __header__ entry (it holds a.npy); nothing was restored. "
            f"No other checkpoint in {tmp_path} can be restored (future.npz has format version "
            "9): restore a backup, or start from the initial values.")
        assert raises(CheckpointError, saver.restore, sess, tmp_path / "future.npz") == (
            f"checkpoint {tmp_path / 'future.npz'} was written in checkpoint format version 9; "
            "this gradflow reads version 1; upgrade gradflow to read it; nothing was restored. "
            f"There is no other checkpoint in {tmp_path}: restore a backup, or start from the "
            "initial values.")


def test_damaged_index_is_an_error_not_an_empty_folder(tmp_path):
    m = build()
    saver = gf.train.Saver()
    with gf.Session() as sess:
        saver.save(sess, tmp_path / "model", global_step=m["step"])
    open(tmp_path / "checkpoint", "w").write("{half an index")
    expected = (f"the checkpoint index {tmp_path / 'checkpoint'} is damaged: it is not valid JSON "
                "(JSONDecodeError: Expecting property name enclosed in double quotes: line 1 "
                "column 2 (char 1)). Delete it (the next Saver.save writes a new one) or repair "
                "it; checkpoint files there: model-0; restore one by its path")
    assert raises(CheckpointError, gf.train.latest_checkpoint, tmp_path) == expected
    assert raises(CheckpointError, saver_module.get_checkpoint_state, tmp_path) == expected
    open(tmp_path / "checkpoint", "w").write('model_checkpoint_path: model.ckpt-5\n')
    assert raises(CheckpointError, gf.train.latest_checkpoint, tmp_path).startswith(
        f"the checkpoint index {tmp_path / 'checkpoint'} is damaged: it is a TensorFlow index "
        "that cannot be read: line 1: model_checkpoint_path is not a quoted string. ")


def test_save_gives_uninitialized_variables_their_initial_value(tmp_path, backend):
    v = gf.Variable(1.5, name="v")
    r = gf.Variable(gf.random_normal((3,), seed=1), name="r")
    w = gf.Variable([2.0, 3.0], name="w")
    with gf.Session(backend=backend) as sess:
        sess.load_variable(w, [4.0, 5.0])
        path = gf.train.Saver().save(sess, tmp_path / "m")
        saved = gf.train.load_checkpoint(path)
        assert saved.get_tensor("v") == np.float32(1.5)
        np.testing.assert_array_equal(saved.get_tensor("w"), [4.0, 5.0])  # initialized: kept
        np.testing.assert_array_equal(saved.get_tensor("r"), sess.run(r))  # the session's value
        assert sess.run(v) == np.float32(1.5)


def test_save_and_restore_refuse_bad_sessions_and_paths(tmp_path):
    gf.Variable(1.0, name="v")
    saver = gf.train.Saver()
    sess = gf.Session()
    assert raises(TypeError, saver.save, str(tmp_path / "m"), sess) == (
        f"Saver.save: sess must be a gf.Session, got str {str(tmp_path / 'm')!r} (the arguments "
        "are (sess, save_path): swapped?)")
    assert raises(ValueError, saver.save, sess, tmp_path) == (
        f"Saver.save: {tmp_path} is a folder; save_path is a file path and the prefix of the "
        f"checkpoint's name, such as {str(tmp_path / 'model')!r}")
    assert raises(TypeError, saver.save, sess, tmp_path / "m", 1.5) == (
        "Saver.save: global_step must be an int, or a scalar integer variable or tensor such as "
        "gf.train.get_or_create_global_step(), got 1.5")
    sess.close()
    for verb, fn in (("save", saver.save), ("restore", saver.restore)):
        assert raises(gf.errors.FailedPreconditionError, fn, sess, tmp_path / "m") == (
            f"Saver.{verb}: the session is closed, and its variable values are gone; {verb} "
            "inside the `with gf.Session()` block, before the session closes")
    with gf.Graph().as_default():
        with gf.Session() as other:
            assert raises(ValueError, saver.save, other, tmp_path / "m") == (
                "Saver.save: the variables ['v'] belong to another graph than the session's; "
                "create the Saver in the graph the session runs (with graph.as_default(): "
                "saver = gf.train.Saver())")
    assert not os.listdir(tmp_path)


def test_saver_constructor_errors():
    v = gf.Variable(1.0, name="v")
    gf.Variable(2.0, name="v2")
    assert raises(ValueError, gf.train.Saver, [v, v]) == (
        "Saver: several variables share the names ['v']; give them distinct names (name=...), "
        "or pass var_list as a dict that maps a distinct name to each variable")
    assert raises(TypeError, gf.train.Saver, v) == (
        "Saver: var_list must be a list, tuple or set of variables, or a dict name -> variable, "
        "got Variable <gf.Variable 'v' shape=() dtype=float32>")
    assert raises(TypeError, gf.train.Saver, [v * 2.0]).endswith(
        "is not a gf.Variable; a Saver saves variables only")
    assert raises(ValueError, gf.train.Saver, [], ) == (
        "Saver: no variables to save (in var_list); create the variables before the Saver, "
        "pass var_list=, or pass allow_empty=True for a Saver that does nothing")
    assert raises(ValueError, gf.train.Saver, None, False, False, -1) == (
        "Saver: max_to_keep must be an int >= 0 (or None or 0 to keep every checkpoint), got -1")
    assert raises(NotImplementedError, lambda: gf.train.Saver(saver_def=object())) == (
        "Saver(saver_def=...) is not supported: gradflow checkpoints are not built from graph "
        "protobufs; pass var_list= (or nothing, for every global variable) instead")


def test_tf1_arguments_are_accepted(tmp_path):
    m = build()
    saver = gf.train.Saver(var_list=None, reshape=False, sharded=True, max_to_keep=2,
                           keep_checkpoint_every_n_hours=10000.0, name="save",
                           restore_sequentially=True, defer_build=True, allow_empty=False,
                           write_version=2, pad_step_number=True, save_relative_paths=True,
                           filename="x")
    saver.build()
    with gf.Session() as sess:
        sess.run(m["init"])
        path = saver.save(sess, tmp_path / "model", global_step=7, latest_filename=None,
                          meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
                          strip_default_attrs=False, save_debug_info=False)
        assert path == f"{tmp_path / 'model'}-00000007"
        assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + files("model-00000007")
        side = saver.save(sess, tmp_path / "side", write_state=False)
        assert saver_module.checkpoint_exists(side) and os.path.isfile(side + ".index")
        assert gf.train.latest_checkpoint(tmp_path) == path
        own = saver.save(sess, tmp_path / "own", latest_filename="own_index")
        assert gf.train.latest_checkpoint(tmp_path, latest_filename="own_index") == own
        assert gf.train.latest_checkpoint(tmp_path) == path
        state = saver_module.get_checkpoint_state(tmp_path)
        assert state.model_checkpoint_path == path
        assert state.all_model_checkpoint_paths == [path]
        assert len(state.all_model_checkpoint_timestamps) == 1
        saver.restore(sess, path)
    assert not saver_module.checkpoint_exists(tmp_path / "nothing")
    assert not saver_module.checkpoint_exists(tmp_path)
    assert saver_module.get_checkpoint_state(tmp_path / "empty") is None
    with gf.Session() as sess:
        assert raises(ValueError, saver.save, sess, tmp_path / "m", None, "a/b") == (
            "latest_filename must be a file name without a folder (the index kept beside the "
            "checkpoints), got 'a/b'")


def test_allow_empty_saver_does_nothing(tmp_path):
    saver = gf.train.Saver(allow_empty=True)
    with gf.Session() as sess:
        assert saver.save(sess, tmp_path / "m") is None
        saver.restore(sess, tmp_path / "m")
    assert not os.listdir(tmp_path)


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(saver_module, "_now", lambda: clock[0])
    build()
    saver = gf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1)
    with gf.Session() as sess:
        for step, at in enumerate([1010.0, 5000.0, 5100.0, 9000.0]):
            clock[0] = at
            saver.save(sess, tmp_path / "model", global_step=step)
    # model-0 (before the first hour) goes; model-1 (after it) stays on disk, off the index.
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + files("model-1", "model-3")
    state = saver_module.get_checkpoint_state(tmp_path)
    assert state.all_model_checkpoint_paths == [f"{tmp_path / 'model'}-3"]
    assert state.last_preserved_timestamp == 5000.0


def test_the_index_describes_variables(tmp_path):
    m = build()
    with gf.Session() as sess:
        sess.run(m["init"])
        path = gf.train.Saver().save(sess, tmp_path / "m", global_step=7)
    reader = gf.train.load_checkpoint(path)
    assert reader.get_variable_to_shape_map()["w"] == [3, 1]
    assert reader.get_variable_to_dtype_map()["w"] == gf.float32
    assert reader.get_tensor("global_step").dtype == np.int64
    assert reader.get_tensor("global_step") == 0  # the variable's value; 7 names the file
    assert path.endswith("m-7")


def test_a_checkpoint_of_an_earlier_gradflow_restores_and_a_save_replaces_it(tmp_path):
    """The single .npz file earlier versions wrote (and their JSON index) still restores;
    a save to its name writes TensorFlow's layout and removes it; rotation deletes the
    old files of the series as it does the new ones."""
    m = build()
    with gf.Session() as sess:
        sess.run(m["init"])
        sess.run(m["train"])
        old = values(sess, gf.global_variables())
    for step in (1, 2):
        write_old_checkpoint(tmp_path / f"model-{step}", old, step)
    (tmp_path / "checkpoint").write_text(json.dumps({
        "model_checkpoint_path": "model-2", "all_model_checkpoint_paths": ["model-1", "model-2"],
        "all_model_checkpoint_timestamps": [1.0, 2.0], "last_preserved_timestamp": 0.0}))
    saver = gf.train.Saver(max_to_keep=2)
    with gf.Session() as sess:
        saver.restore(sess, gf.train.latest_checkpoint(tmp_path))
        assert_same(values(sess, gf.global_variables()), old)
        assert gf.train.list_variables(tmp_path)[0] == ("b", [1])
        sess.run(m["train"])
        newer = values(sess, gf.global_variables())
        saver.save(sess, tmp_path / "model", global_step=2)  # over the old model-2
        assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-1"] + files("model-2")
        saver.save(sess, tmp_path / "model", global_step=3)  # rotates model-1 out
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + files("model-2", "model-3")
    with gf.Session() as sess:
        saver.restore(sess, tmp_path / "model-2")
        assert_same(values(sess, gf.global_variables()), newer)
