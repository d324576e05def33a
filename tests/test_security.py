"""Attacks on files gradflow reads: a checkpoint folder someone else supplied, and the
kernel cache. Each test is written as the attack; on the code before the fix it succeeds."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cpu import numba_support
from gradflow.train.saver import CheckpointError


def _model():
    w = gf.Variable(np.arange(3, dtype=np.float32), name="w")
    return w, gf.assign_add(w, np.ones(3, np.float32))


def _files(*prefixes):
    """The files of the checkpoints ``prefixes``: each one's index, data file and meta graph."""
    return sorted(p + s for p in prefixes for s in (".data-00000-of-00001", ".index", ".meta"))


def _hostile_index(folder, entries):
    (folder / "checkpoint").write_text(json.dumps({
        "model_checkpoint_path": entries[-1],
        "all_model_checkpoint_paths": entries,
        "all_model_checkpoint_timestamps": [1.0] * len(entries),
        "last_preserved_timestamp": 0.0}))


def test_a_hostile_index_makes_rotation_delete_nothing_outside_the_folder(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    beside = tmp_path / "victim.txt"
    beside.write_text("precious")
    absolute = tmp_path / "elsewhere" / "victim2.txt"
    absolute.parent.mkdir()
    absolute.write_text("precious too")
    inside = ckpt / "notes.txt"  # in the folder, but not a checkpoint of this Saver
    inside.write_text("keep me")
    fake = ckpt / "model-1"  # named like one, but not a checkpoint
    fake.write_text("not a checkpoint")
    _hostile_index(ckpt, ["../victim.txt", str(absolute), "notes.txt", "model-1"])
    w, step = _model()
    saver = gf.train.Saver(max_to_keep=3)
    with gf.Session() as sess:
        with pytest.warns(UserWarning, match=r"victim\.txt.*not a file name inside the folder"):
            saver.save(sess, ckpt / "model", global_step=0)
        for s in range(1, 4):
            sess.run(step)
            saver.save(sess, ckpt / "model", global_step=s + 1)
    assert beside.read_text() == "precious"
    assert absolute.read_text() == "precious too"
    assert inside.read_text() == "keep me"
    assert fake.read_text() == "not a checkpoint"
    assert sorted(os.listdir(ckpt)) == ["checkpoint", "model-1", *_files("model-2", "model-3",
                                                                       "model-4"), "notes.txt"]
    assert gf.train.latest_checkpoint(ckpt) == str(ckpt / "model-4")


@pytest.mark.parametrize("entry", ["../victim.txt", "/etc/passwd", "sub/../../x", ".."])
def test_latest_checkpoint_refuses_an_entry_that_leaves_the_folder(tmp_path, entry):
    _hostile_index(tmp_path, ["model-1", entry])
    with pytest.raises(CheckpointError) as err:
        gf.train.latest_checkpoint(tmp_path)
    assert str(err.value).startswith(
        f"the checkpoint index {tmp_path / 'checkpoint'} is damaged: it lists {entry!r}, which "
        "is not a file name inside the folder (an index may name only files in its own folder)")
    with pytest.raises(CheckpointError):
        gf.train.get_checkpoint_state(tmp_path)


def test_resuming_rotates_out_the_earlier_runs_checkpoints(tmp_path):
    w, step = _model()
    with gf.Session() as sess:
        first = [gf.train.Saver(max_to_keep=2).save(sess, tmp_path / "model", global_step=s)
                 for s in range(2)]
    with gf.Session() as sess:  # a new process would see the same: another Saver
        gf.train.Saver(max_to_keep=2).save(sess, tmp_path / "model", global_step=5)
    assert not gf.train.checkpoint_exists(first[0]) and gf.train.checkpoint_exists(first[1])
    assert not os.path.exists(first[0] + ".data-00000-of-00001")


_KILLED_MID_SAVE = textwrap.dedent("""
    import os, sys, time, numpy as np, gradflow as gf
    def stuck_fsync(fd):  # the temporary is written; the process dies before the rename
        print("writing", flush=True)
        time.sleep(60)
    os.fsync = stuck_fsync
    w = gf.Variable(np.zeros(200_000, np.float32), name="w")
    with gf.Session() as sess:
        gf.train.Saver().save(sess, sys.argv[1])
""")


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    script = tmp_path.parent / f"{tmp_path.name}-save.py"
    script.write_text(_KILLED_MID_SAVE)
    env = {**os.environ, "GRADFLOW_BACKEND": "numpy"}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "model")],
                            stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline() == b"writing\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    [orphan] = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert os.path.getsize(tmp_path / orphan) == 800_000  # the data file's temporary
    alive = tmp_path / f".model.{os.getpid()}.def456.tmp"  # a save in progress elsewhere
    alive.write_bytes(b"being written")
    unrelated = tmp_path / ".model.tmp"
    unrelated.write_bytes(b"not named as gradflow names its temporaries")
    w, _ = _model()
    with gf.Session() as sess:
        gf.train.Saver().save(sess, tmp_path / "model")
    assert set(os.listdir(tmp_path)) == {".model.tmp", alive.name, "checkpoint",
                                         *_files("model")}


# -- the kernel cache -----------------------------------------------------------------


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADFLOW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(numba_support, "_kernels", {})
    numba_support._refused.clear()
    yield tmp_path / "cache" / "kernels"
    numba_support._refused.clear()


SOURCE = "def kernel(x):\n    return x + 1\n"


def test_the_cache_folder_is_created_private(fresh_cache):
    assert numba_support.load_kernel(SOURCE, "kernel")(1) == 2
    mode = os.stat(fresh_cache).st_mode
    assert stat.S_IMODE(mode) == 0o700


def test_a_tampered_cached_kernel_never_runs(fresh_cache, tmp_path):
    numba_support.load_kernel(SOURCE, "kernel")
    [module] = [p for p in fresh_cache.iterdir() if p.suffix == ".py"]
    marker = tmp_path / "pwned"
    module.write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + SOURCE.replace("1", "100"))
    numba_support._kernels.clear()
    sys.modules.pop(module.stem, None)
    assert numba_support.load_kernel(SOURCE, "kernel")(1) == 2
    assert not marker.exists()
    assert module.read_text() == SOURCE  # rewritten as gradflow writes it


@pytest.mark.parametrize("bits", [0o777, 0o770, 0o757])
def test_a_shared_cache_folder_is_refused_with_a_warning(fresh_cache, tmp_path, bits):
    fresh_cache.mkdir(parents=True)
    os.chmod(fresh_cache, bits)
    marker = tmp_path / "pwned"
    digest_name = numba_support.module_name(SOURCE)
    (fresh_cache / f"{digest_name}.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n" + SOURCE)
    with pytest.warns(UserWarning, match="group- or world-writable"):
        assert numba_support.load_kernel(SOURCE, "kernel")(1) == 2
    assert not marker.exists()
    assert numba_support.cache_dir() is None


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user owns needs root")
def test_a_cache_folder_another_user_owns_is_refused(fresh_cache):
    fresh_cache.mkdir(parents=True, mode=0o700)
    os.chown(fresh_cache, 12345, 12345)
    with pytest.warns(UserWarning, match="owned by uid 12345"):
        assert numba_support.cache_dir() is None
    assert numba_support.load_kernel(SOURCE, "kernel")(3) == 4


def test_no_predictable_fallback_when_the_cache_cannot_be_made(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("GRADFLOW_CACHE", str(blocker))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(numba_support, "_kernels", {})
    numba_support._refused.clear()
    with pytest.warns(UserWarning, match="cannot be created"):
        assert numba_support.load_kernel(SOURCE, "kernel")(1) == 2
    numba_support._refused.clear()
    assert os.listdir(tmp_path / "tmp") == []


def test_an_own_folder_readable_by_others_is_made_private(fresh_cache):
    fresh_cache.mkdir(parents=True)
    os.chmod(fresh_cache, 0o755)  # what earlier gradflow versions made: writable by us only
    assert numba_support.cache_dir() == str(fresh_cache)
    assert stat.S_IMODE(os.stat(fresh_cache).st_mode) == 0o700
