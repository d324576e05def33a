"""gradflow writes TensorFlow's V2 checkpoint layout (``gradflow.train.tf_checkpoint_writer``,
what ``gf.train.Saver.save`` writes), checked without TensorFlow against files TensorFlow
2.21 wrote once (``tests/data/tf_checkpoints/make.py``):

- ``bundle/``: the tensors of ``bundle_expected.npz`` (float32/float64/int32/int64/bool,
  scalars, empty and multi-dimensional tensors, names with slashes) saved by TensorFlow's
  ``compat.v1`` Saver: gradflow writes the same bytes, index and data file, through its
  writer and through ``Saver.save``. So do the ``adam/`` and ``many/`` fixtures, read and
  written again.
- ``raw/``: the same tensors written by ``tf.raw_ops.SaveV2`` in the order they were made;
  TensorFlow's data file then follows that order, where its Saver (and gradflow) store
  by name: the bytes differ only in that order, and the values read back are the same.
- an index of 12000 tensors, two 256 KiB blocks (too large to keep here): the SHA-256 of
  the files TensorFlow writes (``python make.py hashes``) are literals below.

Every index gradflow writes is also checked by ``check_table``, the reader's rules
re-implemented here (footer, block checksums, restart points, sorted keys, index keys
that separate the blocks, contiguous entries, masked CRC-32C of each tensor's bytes), which
TensorFlow's own files pass too.

TensorFlow itself read what gradflow wrote (not run in CI: TensorFlow is not installed
there). With gradflow's test environment and TensorFlow 2.21's::

    PYTHONPATH=. python tests/data/tf_checkpoints/tf_reads_gradflow.py write /tmp/gf_ckpt
    /tmp/bench/bin/python tests/data/tf_checkpoints/tf_reads_gradflow.py read /tmp/gf_ckpt

printed "TensorFlow 2.21.0 read 14 tensors of /tmp/gf_ckpt/model.ckpt-2 identically
(load_checkpoint, list_variables, compat.v1 Saver.restore)": ``tf.train.latest_checkpoint``
found the newest checkpoint through gradflow's text ``checkpoint`` index, and
``tf.train.load_checkpoint``, ``tf.train.list_variables`` and ``tf.compat.v1.train.Saver``
read every tensor with its dtype, shape and bits.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

import gradflow as gf
from gradflow import protowire
from gradflow.train import checksums, tf_checkpoint, tf_checkpoint_writer

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tf_checkpoints")
SUFFIX = ".data-00000-of-00001"
BUNDLE = os.path.join(DATA, "bundle", "model.ckpt-1234")
# TensorFlow 2.21's files for many_values() (tf.raw_ops.SaveV2, names sorted):
# ``python make.py hashes`` in tests/data/tf_checkpoints
MANY_INDEX = (393358, "9420f394c6aa2a49666bde82d0ed7474fdf43d461f7cff6ac4c2971781da59d7")
MANY_DATA = (48000, "929a5d7838d1e6620d65acce50b64ac838b2a25af1afd97a2d8b27f8627ebe81")


def expected():
    with np.load(os.path.join(DATA, "bundle_expected.npz")) as npz:
        return {name: npz[name] for name in npz.files}


def many_values(count=12000):
    """make.py's ``many_values``: tensors enough for an index of two blocks."""
    return {f"tower_{i % 7}/block_{i:05d}/{'kernel' if i % 3 else 'bias/Momentum'}":
            np.full((i % 3,), i, np.float32) for i in range(count)}


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_the_writer_gives_tensorflows_bytes():
    index, data = tf_checkpoint_writer.bundle(expected())
    assert index == read_bytes(BUNDLE + ".index")
    assert data == read_bytes(BUNDLE + SUFFIX)


@pytest.mark.parametrize("folder, prefix", [("adam", "model.ckpt-3"), ("many", "many.ckpt")])
def test_tensorflows_checkpoints_read_and_written_again_are_the_same_bytes(folder, prefix):
    path = os.path.join(DATA, folder, prefix)
    names = [name for name, _ in gf.train.list_variables(path)]
    arrays, _ = tf_checkpoint.load(path, names)
    index, data = tf_checkpoint_writer.bundle(arrays)
    assert index == read_bytes(path + ".index")
    assert data == read_bytes(path + SUFFIX)


def test_saver_save_writes_tensorflows_bytes_and_index(tmp_path):
    values = expected()
    with gf.Graph().as_default():
        for name, value in values.items():
            gf.Variable(value, name=name)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            path = gf.train.Saver().save(sess, str(tmp_path / "model.ckpt"), global_step=1234)
    assert path == str(tmp_path / "model.ckpt-1234")
    for suffix in (".index", SUFFIX):
        assert read_bytes(path + suffix) == read_bytes(BUNDLE + suffix), suffix
    text = (tmp_path / "checkpoint").read_text().splitlines()
    assert text[:2] == ['model_checkpoint_path: "model.ckpt-1234"',
                        'all_model_checkpoint_paths: "model.ckpt-1234"']
    assert float(text[2].removeprefix("all_model_checkpoint_timestamps: ")) > 1.6e9
    assert len(text) == 3


def test_tensorflows_own_order_of_the_data_differs_only_in_order():
    """``SaveV2`` given the names unsorted stores the data in that order; the index and
    every value read back are the same as gradflow's (which stores by name)."""
    raw = os.path.join(DATA, "raw", "raw")
    values = expected()
    arrays, described = tf_checkpoint.load(raw, list(values))
    got, _ = tf_checkpoint.load(BUNDLE, list(values))
    for name, value in values.items():
        for array in (arrays[name], got[name]):
            assert array.dtype == value.dtype and array.shape == value.shape, name
            assert array.tobytes() == value.tobytes(), name
        assert described[name] == (value.dtype.name, value.shape)
    assert sorted(read_bytes(raw + SUFFIX)) == sorted(read_bytes(BUNDLE + SUFFIX))
    check_table(read_bytes(raw + ".index"), read_bytes(raw + SUFFIX), contiguous=False)


def test_an_index_of_two_blocks_is_tensorflows():
    values = many_values()
    index, data = tf_checkpoint_writer.bundle(values)
    assert (len(index), hashlib.sha256(index).hexdigest()) == MANY_INDEX
    assert (len(data), hashlib.sha256(data).hexdigest()) == MANY_DATA
    entries = check_table(index, data)
    assert len(entries) == len(values) + 1


@pytest.mark.parametrize("which", ["bundle", "many", "adam", "tensorflow's bundle"])
def test_every_index_passes_the_readers_rules(which):
    if which == "tensorflow's bundle":
        index, data = read_bytes(BUNDLE + ".index"), read_bytes(BUNDLE + SUFFIX)
    else:
        if which == "adam":
            path = os.path.join(DATA, "adam", "model.ckpt-3")
            values = tf_checkpoint.load(path, [n for n, _ in gf.train.list_variables(path)])[0]
        else:
            values = expected() if which == "bundle" else many_values(3000)
        index, data = tf_checkpoint_writer.bundle(values)
    check_table(index, data)


def test_a_tensor_the_layout_cannot_hold_is_refused_before_any_file(tmp_path):
    prefix = str(tmp_path / "m")
    with pytest.raises(ValueError, match="tensor 's' has dtype <U2, which a checkpoint"):
        tf_checkpoint_writer.write(prefix, {"a": np.ones(2), "s": np.array(["ab"])})
    with pytest.raises(ValueError, match="needs a non-empty name, got ''"):
        tf_checkpoint_writer.write(prefix, {"": np.ones(2)})
    assert not os.listdir(tmp_path)


def test_big_endian_values_are_stored_little_endian(tmp_path):
    value = np.arange(6, dtype=">f8").reshape(2, 3)
    tf_checkpoint_writer.write(str(tmp_path / "m"), {"v": value})
    assert read_bytes(str(tmp_path / "m") + SUFFIX) == value.astype("<f8").tobytes()
    np.testing.assert_array_equal(gf.train.load_variable(str(tmp_path / "m"), "v"), value)


@pytest.mark.parametrize("size", [0, 1, 300, 1 << 17, (1 << 17) + 13, 3 << 20])
def test_the_numpy_checksum_is_crc32c(size):
    """The lanes NumPy advances together give the byte-at-a-time loop's CRC-32C."""
    data = np.random.default_rng(size).integers(0, 256, size, np.uint8).tobytes()
    if size <= 1 << 17:
        assert checksums.crc32c(data) == protowire.crc32c_python(data)
    assert checksums.crc32c(data) == protowire.crc32c(data)  # the package's, where it is


def test_without_the_crc32c_package_the_bytes_are_the_same(tmp_path, monkeypatch):
    values = {"big": np.arange(300_000, dtype=np.float32), **expected()}
    with_package = tf_checkpoint_writer.bundle(values)
    monkeypatch.setattr(protowire, "crc32c", protowire.crc32c_python)
    assert tf_checkpoint_writer.bundle(values) == with_package
    tf_checkpoint_writer.write(str(tmp_path / "m"), values)
    np.testing.assert_array_equal(gf.train.load_variable(str(tmp_path / "m"), "big"),
                                  values["big"])


# -- the reader's rules, written again here -----------------------------------------------


def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def _block(table, offset, size):
    """A block's bytes, its trailer checked: kind 0 (no compression), masked CRC-32C."""
    raw, kind = table[offset:offset + size], table[offset + size]
    crc = int.from_bytes(table[offset + size + 1:offset + size + 5], "little")
    assert kind == 0 and crc == protowire.masked_crc32c(table[offset:offset + size + 1])
    return raw


def _entries(block):
    """A block's ``(key, value)`` pairs; every restart point starts an unshared key."""
    count = int.from_bytes(block[-4:], "little")
    end = len(block) - 4 - 4 * count
    restarts = [int.from_bytes(block[end + 4 * k:end + 4 * k + 4], "little")
                for k in range(count)]
    assert restarts[0] == 0 and restarts == sorted(set(restarts))
    pos, key, pairs = 0, b"", []
    while pos < end:
        start = pos
        shared, pos = _varint(block, pos)
        rest, pos = _varint(block, pos)
        size, pos = _varint(block, pos)
        assert shared == 0 or start not in restarts
        key = key[:shared] + block[pos:pos + rest]
        pairs.append((key, block[pos + rest:pos + rest + size]))
        pos += rest + size
    assert pos == end and all(r < end for r in restarts[1:])
    return pairs


def check_table(table, data, contiguous=True):
    """The checks a reader of TensorFlow's checkpoints makes; the entries, in order."""
    assert int.from_bytes(table[-8:], "little") == tf_checkpoint_writer.MAGIC
    footer = table[-48:]
    meta_offset, pos = _varint(footer, 0)
    meta_size, pos = _varint(footer, pos)
    index_offset, pos = _varint(footer, pos)
    index_size, _ = _varint(footer, pos)
    assert _entries(_block(table, meta_offset, meta_size)) == []
    entries, previous_separator = [], None
    for separator, handle in _entries(_block(table, index_offset, index_size)):
        offset, pos = _varint(handle, 0)
        size, _ = _varint(handle, pos)
        block = _entries(_block(table, offset, size))
        assert block and block[-1][0] <= separator  # a Seek finds every key in its block
        assert previous_separator is None or previous_separator < block[0][0]
        entries += block
        previous_separator = separator
    keys = [key for key, _ in entries]
    assert keys[0] == b"" and keys == sorted(set(keys))
    header = {n: v for n, _, v in protowire.fields(entries[0][1])}
    assert header[1] == 1 and header.get(2, 0) == 0  # one shard, little-endian
    end = 0
    for key, value in entries[1:]:
        fields = {n: v for n, _, v in protowire.fields(value)}
        offset, size = fields.get(4, 0), fields.get(5, 0)
        assert fields.get(3, 0) == 0 and 1 in fields and 2 in fields, key
        assert offset == end or not contiguous, key
        assert fields[6] == protowire.masked_crc32c(data[offset:offset + size]), key
        end = max(end, offset + size)
    assert end == len(data)
    return entries
