"""gradflow.data: IDX parsing, MNIST loading and downloading (offline), batching."""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import gradflow as gf
from gradflow.data import mnist
from gradflow.data.mnist import MnistError

NAMES = list(mnist.FILES)
REAL_DATA = os.environ.get("GRADFLOW_DATA")  # read before the fixture below unsets it


def idx_bytes(array):
    """The IDX encoding of a uint8 array."""
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


def small_set(seed=0):
    """Four small arrays under the canonical MNIST names."""
    rng = np.random.default_rng(seed)
    return {
        "train-images-idx3-ubyte": rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, 6, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (4, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, 4, dtype=np.uint8),
    }


def write_set(folder, arrays, gzipped):
    folder.mkdir(parents=True, exist_ok=True)
    for name, array in arrays.items():
        data = idx_bytes(array)
        if gzipped:
            (folder / (name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No real data folders: GRADFLOW_DATA unset, home in a temp folder."""
    monkeypatch.delenv("GRADFLOW_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.mark.parametrize("gzipped", [True, False], ids=["gz", "raw"])
def test_load_small_files(tmp_path, gzipped):
    arrays = small_set()
    write_set(tmp_path / "data", arrays, gzipped)
    (x_train, y_train), (x_test, y_test) = mnist.load(data_dir=tmp_path / "data",
                                                      download=False, verify=False)
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_train, arrays["train-labels-idx1-ubyte"])
    np.testing.assert_array_equal(x_test, arrays["t10k-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_test, arrays["t10k-labels-idx1-ubyte"])
    assert x_train.dtype == np.uint8 and x_train.shape == (6, 28, 28)


def test_load_finds_mnist_subfolder(tmp_path):
    write_set(tmp_path / "mnist", small_set(), gzipped=True)
    (x_train, _), _ = mnist.load(data_dir=tmp_path, download=False, verify=False)
    assert x_train.shape == (6, 28, 28)


def test_verify_rejects_non_canonical_files(tmp_path):
    write_set(tmp_path, small_set(), gzipped=False)
    with pytest.raises(MnistError, match="SHA-256"):
        mnist.load(data_dir=tmp_path, download=False, verify=True)


def corrupt(path, how):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[:-5])
    elif how == "magic":
        path.write_bytes(b"\x00\x00\x09" + data[3:])
    elif how == "gzip":
        path.write_bytes(b"\x1f\x8b" + bytes(range(40)))


@pytest.mark.parametrize("how,gzipped,pattern", [
    ("truncated", False, "truncated"),
    ("truncated", True, "decompress"),
    ("magic", False, "magic"),
    ("gzip", True, "decompress"),
])
def test_bad_files_raise_naming_the_file(tmp_path, how, gzipped, pattern):
    write_set(tmp_path, small_set(), gzipped)
    suffix = ".gz" if gzipped else ""
    path = tmp_path / ("t10k-images-idx3-ubyte" + suffix)
    corrupt(path, how)
    with pytest.raises(MnistError, match=pattern) as info:
        mnist.load(data_dir=tmp_path, download=False, verify=False)
    assert str(path) in str(info.value)


def test_corrupt_deflate_stream_raises_mnist_error(tmp_path):
    good = gzip.compress(idx_bytes(np.arange(200, dtype=np.uint8)))
    bad = bytearray(good)
    for i in range(12, len(bad) - 8):  # scramble the deflate data, keep header and trailer
        bad[i] ^= 0x5A
    path = tmp_path / "x.gz"
    path.write_bytes(bytes(bad))
    with pytest.raises(MnistError) as info:
        mnist.read_idx(path)
    assert str(path) in str(info.value)


def test_truncated_header_raises(tmp_path):
    path = tmp_path / "short"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0]))
    with pytest.raises(MnistError, match="magic|truncated"):
        mnist.read_idx(path)


def test_mismatched_images_and_labels(tmp_path):
    arrays = small_set()
    arrays["t10k-labels-idx1-ubyte"] = arrays["t10k-labels-idx1-ubyte"][:3]
    write_set(tmp_path, arrays, gzipped=False)
    with pytest.raises(MnistError, match="do not match"):
        mnist.load(data_dir=tmp_path, download=False, verify=False)


def test_result_unpacks_as_a_pair_and_names_its_folder(tmp_path):
    write_set(tmp_path / "d" / "mnist", small_set(), gzipped=True)
    data = mnist.load(data_dir=tmp_path / "d", download=False, verify=False)
    (x_train, _), (x_test, _) = data
    assert len(data) == 2 and x_train.shape == (6, 28, 28) and x_test.shape == (4, 28, 28)
    assert data.folder == tmp_path / "d" / "mnist"
    again = pickle.loads(pickle.dumps(data))
    assert again.folder == data.folder
    np.testing.assert_array_equal(again[0][0], x_train)


def no_network(monkeypatch):
    def fetch(url):
        raise AssertionError(f"load tried to download {url}")

    monkeypatch.setattr(mnist, "_fetch", fetch)


@pytest.mark.parametrize("exists", [True, False], ids=["empty", "absent"])
def test_explicit_data_dir_is_never_replaced(tmp_path, monkeypatch, exists):
    """An empty data_dir fails, though $GRADFLOW_DATA/mnist and the cache hold the files."""
    write_set(tmp_path / "shared" / "mnist", small_set(), gzipped=True)
    write_set(tmp_path / "home" / ".cache" / "gradflow" / "mnist", small_set(), gzipped=True)
    monkeypatch.setenv("GRADFLOW_DATA", str(tmp_path / "shared"))
    no_network(monkeypatch)
    empty = tmp_path / "empty"
    if exists:
        empty.mkdir()
    with pytest.raises(MnistError) as info:
        mnist.load(data_dir=empty, verify=False)  # the default download=None: no download
    message = str(info.value)
    assert str(empty) in message and str(empty / "mnist") in message
    assert all(name in message for name in NAMES)
    assert "download=True" in message
    assert ("does not exist" in message) != exists
    assert str(tmp_path / "shared") not in message  # not searched, so not listed


def test_partial_data_dir_says_what_it_holds(tmp_path, monkeypatch):
    arrays = small_set()
    write_set(tmp_path / "d", {n: arrays[n] for n in NAMES[:2]}, gzipped=False)
    no_network(monkeypatch)
    with pytest.raises(MnistError, match="has only train-images-idx3-ubyte, "
                                         "train-labels-idx1-ubyte"):
        mnist.load(data_dir=tmp_path / "d", verify=False)


def test_without_data_dir_uses_gradflow_data_then_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "home" / ".cache" / "gradflow" / "mnist"
    assert mnist.cache_dir() == cache
    no_network(monkeypatch)
    write_set(cache, small_set(seed=1), gzipped=True)
    monkeypatch.setenv("GRADFLOW_DATA", str(tmp_path / "shared"))  # no mnist/ there yet
    data = mnist.load(verify=False)
    assert data.folder == cache
    np.testing.assert_array_equal(data[0][0], small_set(seed=1)["train-images-idx3-ubyte"])
    write_set(tmp_path / "shared" / "mnist", small_set(seed=2), gzipped=False)
    data = mnist.load(verify=False)
    assert data.folder == tmp_path / "shared" / "mnist"
    np.testing.assert_array_equal(data[0][0], small_set(seed=2)["train-images-idx3-ubyte"])


def test_missing_files_list_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADFLOW_DATA", str(tmp_path / "shared"))
    with pytest.raises(MnistError) as info:
        mnist.load(download=False, verify=False)
    message = str(info.value)
    assert mnist.candidate_dirs() == [tmp_path / "shared" / "mnist", mnist.cache_dir()]
    for folder in mnist.candidate_dirs():
        assert str(folder) in message
    assert "train-images-idx3-ubyte" in message and "download=True" in message


def fake_download(monkeypatch, payloads):
    """Serve ``payloads[name]`` (raw IDX bytes) gzipped for any mirror; record the URLs."""
    urls = []

    def fetch(url):
        urls.append(url)
        name = url.rsplit("/", 1)[-1].removesuffix(".gz")
        return gzip.compress(payloads[name])

    monkeypatch.setattr(mnist, "_fetch", fetch)
    return urls


def test_download_saves_files_atomically(tmp_path, monkeypatch):
    arrays = small_set()
    payloads = {n: idx_bytes(a) for n, a in arrays.items()}
    monkeypatch.setattr(mnist, "FILES", {n: hashlib.sha256(p).hexdigest()
                                         for n, p in payloads.items()})
    urls = fake_download(monkeypatch, payloads)
    target = tmp_path / "dl"
    (x_train, _), (_, y_test) = mnist.load(data_dir=target, download=True, verify=True)
    np.testing.assert_array_equal(x_train, arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(y_test, arrays["t10k-labels-idx1-ubyte"])
    assert len(urls) == 4 and all(u.startswith(mnist.MIRRORS[0]) for u in urls)
    assert sorted(os.listdir(target)) == sorted(NAMES)
    # Found on disk the second time: no more downloads.
    mnist.load(data_dir=target, download=True, verify=True)
    assert len(urls) == 4


def test_default_download_goes_to_the_cache(tmp_path, monkeypatch):
    arrays = small_set()
    payloads = {n: idx_bytes(a) for n, a in arrays.items()}
    monkeypatch.setattr(mnist, "FILES", {n: hashlib.sha256(p).hexdigest()
                                         for n, p in payloads.items()})
    urls = fake_download(monkeypatch, payloads)
    data = mnist.load()
    assert len(urls) == 4 and data.folder == mnist.cache_dir()
    assert sorted(os.listdir(mnist.cache_dir())) == sorted(NAMES)
    np.testing.assert_array_equal(data[1][1], arrays["t10k-labels-idx1-ubyte"])


def test_download_with_bad_checksum_fails_and_leaves_nothing(tmp_path, monkeypatch):
    payloads = {n: idx_bytes(a) for n, a in small_set().items()}
    urls = fake_download(monkeypatch, payloads)  # real FILES checksums: all mismatch
    target = tmp_path / "dl"
    with pytest.raises(MnistError, match="checksum mismatch") as info:
        mnist.load(data_dir=target, download=True)
    assert len(urls) == len(mnist.MIRRORS)  # every mirror tried for the first file
    assert str(target) in str(info.value)
    leftovers = os.listdir(target) if target.exists() else []
    assert leftovers == []


def test_failed_save_leaves_no_temp_files(tmp_path, monkeypatch):
    def broken_replace(src, dst):
        raise OSError("no space left")

    monkeypatch.setattr(mnist.os, "replace", broken_replace)
    with pytest.raises(OSError, match="no space"):
        mnist._save_atomically(tmp_path, "t10k-labels-idx1-ubyte", b"abc")
    assert os.listdir(tmp_path) == []


def test_network_errors_are_reported(tmp_path, monkeypatch):
    def offline(url):
        raise OSError("network unreachable")

    monkeypatch.setattr(mnist, "_fetch", offline)
    with pytest.raises(MnistError, match="network unreachable"):
        mnist.load(data_dir=tmp_path, download=True)


REAL_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_real_mnist(monkeypatch):
    root = REAL_DATA
    if not root or not (Path(root) / "mnist").is_dir():
        pytest.skip("set GRADFLOW_DATA to a folder with mnist/ to check the real files")
    monkeypatch.setenv("GRADFLOW_DATA", root)
    (x_train, y_train), (x_test, y_test) = mnist.load(download=False, verify=True)
    assert x_train.shape == (60000, 28, 28) and y_train.shape == (60000,)
    assert x_test.shape == (10000, 28, 28) and y_test.shape == (10000,)
    assert np.bincount(y_test, minlength=10).tolist() == REAL_TEST_COUNTS


# -- batching ------------------------------------------------------------------------


def test_batches_aligned_in_order():
    x = np.arange(10)
    y = np.arange(10) * 10
    out = list(gf.data.batches(x, y, batch_size=4, shuffle=False))
    assert [len(b[0]) for b in out] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[0] for b in out]), x)
    for xb, yb in out:
        np.testing.assert_array_equal(yb, xb * 10)


def test_batches_shuffle_is_deterministic_with_seed():
    x = np.arange(50)
    y = -x
    first = list(gf.data.batches(x, y, batch_size=8, seed=3))
    again = list(gf.data.batches(x, y, batch_size=8, seed=3))
    other = list(gf.data.batches(x, y, batch_size=8, seed=4))
    for (a, b), (c, d) in zip(first, again):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
        np.testing.assert_array_equal(b, -a)
    seen = np.concatenate([a for a, _ in first])
    assert sorted(seen.tolist()) == list(range(50))
    assert not np.array_equal(seen, np.arange(50))
    assert not np.array_equal(seen, np.concatenate([a for a, _ in other]))


@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_drop_last(shuffle):
    x = np.arange(10)
    out = list(gf.data.batches(x, batch_size=4, shuffle=shuffle, seed=0, drop_last=True))
    assert [len(b[0]) for b in out] == [4, 4]
    assert len(set(np.concatenate([b[0] for b in out]).tolist())) == 8


def test_batches_errors():
    with pytest.raises(ValueError, match="array 1 has 3 rows, array 0 has 4"):
        list(gf.data.batches(np.zeros(4), np.zeros(3), batch_size=2))
    with pytest.raises(ValueError, match="positive"):
        list(gf.data.batches(np.zeros(4), batch_size=0))
    with pytest.raises(ValueError, match="at least one"):
        list(gf.data.batches(batch_size=2))
