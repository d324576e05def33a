"""TF1's ``tf.gfile`` / ``tf.io.gfile`` on the local filesystem, and the module paths
TF1 programs import (``tensorflow.python.client.timeline``,
``tensorflow.python.platform.gfile``), with only ``tensorflow`` changed to
``gradflow``."""

from __future__ import annotations

import pytest

import gradflow as tf
from gradflow.errors import AlreadyExistsError, NotFoundError, UnimplementedError


def test_a_log_folder_made_filled_listed_and_deleted(tmp_path):
    logs = str(tmp_path / "logs" / "run1")
    assert not tf.gfile.Exists(logs)
    tf.gfile.MakeDirs(logs)
    tf.gfile.MakeDirs(logs)  # again: no error, as TF1
    assert tf.gfile.IsDirectory(logs) and tf.io.gfile.isdir(logs)
    with tf.gfile.GFile(logs + "/notes.txt", "w") as f:
        f.write("épsilon\nsecond line\n")
    with tf.gfile.Open(logs + "/notes.txt") as f:
        assert f.readline() == "épsilon\n" and list(f) == ["second line\n"]
    with tf.gfile.GFile(logs + "/notes.txt", "rb") as f:
        assert f.read() == "épsilon\nsecond line\n".encode() and f.size() == 21
    tf.gfile.Copy(logs + "/notes.txt", logs + "/copy.txt")
    with pytest.raises(AlreadyExistsError, match="copy.txt: exists"):
        tf.gfile.Copy(logs + "/notes.txt", logs + "/copy.txt")
    tf.gfile.Rename(logs + "/copy.txt", logs + "/moved.txt")
    assert sorted(tf.gfile.ListDirectory(logs)) == ["moved.txt", "notes.txt"]
    assert tf.gfile.Glob(logs + "/*.txt") == [logs + "/moved.txt", logs + "/notes.txt"]
    stat = tf.gfile.Stat(logs + "/moved.txt")
    assert stat.length == 21 and not stat.is_directory and stat.mtime_nsec > 0
    walked = list(tf.gfile.Walk(str(tmp_path / "logs")))
    assert walked[0][1] == ["run1"] and sorted(walked[1][2]) == ["moved.txt", "notes.txt"]
    tf.gfile.Remove(logs + "/moved.txt")
    tf.gfile.DeleteRecursively(str(tmp_path / "logs"))
    assert not tf.io.gfile.exists(str(tmp_path / "logs"))


def test_missing_and_existing_paths_raise_tf1s_errors(tmp_path):
    missing = str(tmp_path / "nothing")
    for call in (lambda: tf.gfile.DeleteRecursively(missing),
                 lambda: tf.gfile.Remove(missing), lambda: tf.gfile.Stat(missing),
                 lambda: tf.gfile.ListDirectory(missing), lambda: tf.gfile.GFile(missing)):
        with pytest.raises(NotFoundError, match="nothing"):
            call()
    tf.gfile.MkDir(str(tmp_path / "once"))
    with pytest.raises(AlreadyExistsError, match="once"):
        tf.gfile.MkDir(str(tmp_path / "once"))
    with pytest.raises(UnimplementedError, match="'gs://'"):
        tf.gfile.Exists("gs://bucket/data")
    assert tf.gfile.Exists("file://" + str(tmp_path / "once"))


def test_tf1_module_paths():
    from gradflow.python.client import timeline
    from gradflow.python.platform import gfile

    assert timeline.Timeline is tf.timeline.Timeline and gfile is tf.gfile
    import gradflow.compat.v1 as v1

    assert v1.gfile is tf.gfile and v1.io.gfile is tf.gfile
