"""gf.train.Saver: roundtrips across backends, resuming training, index, atomicity, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gradflow as gf
from gradflow.train import saver as saver_module
from gradflow.train.saver import CheckpointError

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
    assert [os.path.exists(p) for p in paths] == [False, False, True, True]
    assert gf.train.latest_checkpoint(tmp_path) == paths[-1]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-2", "model-3"]


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

        def broken(file, arrays):
            file.write(b"PK\x03\x04 half a zip")
            raise OSError("disk full")

        monkeypatch.setattr(saver_module, "_write_npz", broken)
        with pytest.raises(OSError, match="disk full"):
            saver.save(sess, tmp_path / "model")
        monkeypatch.undo()

        def broken_fsync(fd):
            raise OSError("fsync failed")

        monkeypatch.setattr(saver_module.os, "fsync", broken_fsync)
        with pytest.raises(OSError, match="fsync failed"):
            saver.save(sess, tmp_path / "model")
        monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model"]
    assert gf.train.latest_checkpoint(tmp_path) == path
    with gf.Session() as sess:
        saver.restore(sess, path)
        assert_same(values(sess, gf.global_variables()), before)


def corrupt_truncated(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def corrupt_garbage(path):
    open(path, "wb").write(b"not a checkpoint at all")


@pytest.mark.parametrize("case", ["missing", "shape", "dtype", "truncated", "garbage",
                                  "no file"])
def test_restore_errors_change_nothing(tmp_path, case):
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
    names = {"missing": "extra", "shape": "c", "dtype": "c"}
    if case == "missing":
        gf.Variable(np.zeros(1, np.float32), name="extra")
    if case == "truncated":
        corrupt_truncated(path)
    elif case == "garbage":
        corrupt_garbage(path)
    elif case == "no file":
        path = str(tmp_path / "nowhere")
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        before = values(sess, gf.global_variables())
        with pytest.raises(CheckpointError) as info:
            gf.train.Saver().restore(sess, path)
        message = str(info.value)
        assert str(path) in message
        if case in names:
            assert f"'{names[case]}'" in message
            assert {"missing": "missing", "shape": "shape", "dtype": "dtype"}[case] in message
        elif case in ("truncated", "garbage"):
            assert "corrupt" in message
        else:
            assert "no such file" in message
        assert_same(values(sess, gf.global_variables()), before)
        np.testing.assert_array_equal(sess.run(a), np.full((2, 2), 7.0, np.float32))
        assert sess.run(c).dtype == dtype


def test_save_uninitialized_variable_fails(tmp_path):
    gf.Variable(1.0, name="v")
    with gf.Session() as sess:
        with pytest.raises(gf.errors.FailedPreconditionError, match="'v'"):
            gf.train.Saver().save(sess, tmp_path / "m")
    assert not os.listdir(tmp_path)


def test_header_describes_variables(tmp_path):
    m = build()
    with gf.Session() as sess:
        sess.run(m["init"])
        path = gf.train.Saver().save(sess, tmp_path / "m", global_step=7)
    with np.load(path, allow_pickle=False) as npz:
        import json

        header = json.loads(npz["__header__"].tobytes())
        assert header["global_step"] == 7
        assert header["format_version"] == 1
        i = header["names"].index("w")
        assert header["shapes"][i] == [3, 1] and header["dtypes"][i] == "float32"
        assert npz["global_step"].dtype == np.int64
