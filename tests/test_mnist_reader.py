"""TF1's tutorial reader: read_data_sets, DataSet.next_batch, input_data.

The epoch semantics and argument checks run on small made-up IDX files; the
tests marked ``real`` read the real digits from ``$GRADFLOW_DATA/mnist`` and
skip without them (nothing here downloads).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from pathlib import Path

import numpy as np
import pytest

import gradflow as gf
from gradflow.data import mnist
from gradflow.data.mnist import DataSet, MnistError

REAL_DATA = os.environ.get("GRADFLOW_DATA")


def idx_bytes(array):
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


def small_arrays(n_train=12, n_test=4, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No real data folders, and the made-up files' checksums are the canonical ones."""
    monkeypatch.delenv("GRADFLOW_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    arrays = small_arrays()
    payloads = {n: idx_bytes(a) for n, a in arrays.items()}
    monkeypatch.setattr(mnist, "FILES", {n: hashlib.sha256(p).hexdigest()
                                         for n, p in payloads.items()})

    def no_network(url):
        raise AssertionError(f"the test tried to download {url}")

    monkeypatch.setattr(mnist, "_fetch", no_network)
    return arrays, payloads


def write(folder, payloads):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in payloads.items():
        (folder / (name + ".gz")).write_bytes(gzip.compress(data))


def tagged(n, width=3):
    """Images whose first pixel is their index, labels = index: a batch says what it holds."""
    images = np.zeros((n, width), np.uint8)
    images[:, 0] = np.arange(n)
    return images, np.arange(n, dtype=np.uint8)


# -- DataSet.next_batch ---------------------------------------------------------------------


def test_every_example_once_per_epoch_and_a_straddling_batch():
    images, labels = tagged(10)
    ds = DataSet(images, labels, dtype=gf.uint8, seed=3)
    seen = []
    for _ in range(3):  # 9 examples of epoch 0
        xb, yb = ds.next_batch(3)
        np.testing.assert_array_equal(xb[:, 0], yb)  # images and labels stay aligned
        seen.extend(yb.tolist())
    assert ds.epochs_completed == 0
    first_order = list(seen)
    xb, yb = ds.next_batch(3)  # the 10th example, then two of the new epoch
    assert ds.epochs_completed == 1
    np.testing.assert_array_equal(xb[:, 0], yb)
    epoch0 = first_order + [int(yb[0])]
    assert sorted(epoch0) == list(range(10))  # every example exactly once
    epoch1 = yb[1:].tolist()
    while len(epoch1) < 10:
        epoch1.extend(ds.next_batch(2)[1].tolist())
    assert sorted(epoch1) == list(range(10)) and ds.epochs_completed == 1
    assert epoch0 != list(range(10)) and epoch1 != epoch0  # shuffled, and again


def test_exact_epoch_end_counts_at_the_next_call():
    ds = DataSet(*tagged(6), dtype=gf.uint8, seed=0)
    ds.next_batch(3)
    ds.next_batch(3)
    assert ds.epochs_completed == 0  # TF1: the epoch ends when a batch needs more
    ds.next_batch(3)
    assert ds.epochs_completed == 1


def test_no_shuffle_keeps_the_order_and_wraps():
    ds = DataSet(*tagged(5), dtype=gf.uint8)
    batches = [ds.next_batch(2, shuffle=False)[1].tolist() for _ in range(4)]
    assert batches == [[0, 1], [2, 3], [4, 0], [1, 2]]
    assert ds.epochs_completed == 1


def test_same_seed_same_batches():
    def run(seed):
        ds = DataSet(*tagged(20), dtype=gf.uint8, seed=seed)
        return [ds.next_batch(7)[1].tolist() for _ in range(8)]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_dataset_dtype_and_reshape():
    images = np.full((2, 28, 28, 1), 255, np.uint8)
    labels = np.array([3, 4], np.uint8)
    flat = DataSet(images, labels)
    assert flat.images.shape == (2, 784) and flat.images.dtype == np.float32
    assert flat.images.max() == 1.0
    raw = DataSet(images, labels, dtype=gf.uint8, reshape=False)
    assert raw.images.shape == (2, 28, 28, 1) and raw.images.dtype == np.uint8
    assert DataSet(images, labels, dtype="float32").images.dtype == np.float32
    with pytest.raises(TypeError, match="invalid image dtype.*expected uint8"):
        DataSet(images, labels, dtype=gf.float64)
    with pytest.raises(ValueError, match="2 images but 3 labels"):
        DataSet(images, np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="one-channel images"):
        DataSet(np.zeros((2, 28, 28, 3), np.uint8), labels)


def test_batch_size_is_checked():
    ds = DataSet(*tagged(4), dtype=gf.uint8)
    for bad in (0, 5):
        with pytest.raises(ValueError, match=f"between 1 and the number of examples \\(4\\), "
                                             f"got {bad}"):
            ds.next_batch(bad)


def test_fake_data():
    data = mnist.read_data_sets("unused", fake_data=True, one_hot=True)
    assert data.train.num_examples == data.validation.num_examples == 10000
    xb, yb = data.train.next_batch(4)
    assert xb.shape == (4, 784) and (xb == 1).all()
    np.testing.assert_array_equal(yb, np.tile(np.eye(10)[0], (4, 1)))
    xb, yb = DataSet(*tagged(3), dtype=gf.uint8).next_batch(2, fake_data=True)
    assert xb.shape == (2, 784) and yb.tolist() == [0, 0]


def test_dense_to_one_hot_and_extract():
    np.testing.assert_array_equal(mnist.dense_to_one_hot(np.array([2, 0]), 3),
                                  [[0, 0, 1], [1, 0, 0]])
    assert mnist.dense_to_one_hot(np.array([1])).dtype == np.float64  # as in TF1
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\)"):
        mnist.dense_to_one_hot(np.array([3]), 3)
    images = np.arange(2 * 28 * 28, dtype=np.uint32).reshape(2, 28, 28).astype(np.uint8)
    f = io.BytesIO(gzip.compress(idx_bytes(images)))
    np.testing.assert_array_equal(mnist.extract_images(f), images[..., None])
    f = io.BytesIO(gzip.compress(idx_bytes(np.array([1, 2], np.uint8))))
    np.testing.assert_array_equal(mnist.extract_labels(f, one_hot=True, num_classes=3),
                                  [[0, 1, 0], [0, 0, 1]])
    with pytest.raises(MnistError, match="expected an IDX file of labels"):
        mnist.extract_labels(io.BytesIO(idx_bytes(images)))


# -- read_data_sets on made-up files ---------------------------------------------------------


def test_split_of_small_files(isolated, tmp_path):
    arrays, payloads = isolated
    write(tmp_path / "MNIST_data", payloads)
    data = mnist.read_data_sets(str(tmp_path / "MNIST_data"), validation_size=5)
    assert isinstance(data, mnist.Datasets) and data._fields == ("train", "validation", "test")
    train_images = arrays["train-images-idx3-ubyte"].reshape(12, 784)
    # TF1 takes the validation set from the start of the training files
    np.testing.assert_allclose(data.validation.images, train_images[:5] / 255.0, rtol=1e-6)
    np.testing.assert_allclose(data.train.images, train_images[5:] / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(data.train.labels, arrays["train-labels-idx1-ubyte"][5:])
    assert data.train.labels.dtype == np.uint8
    assert (data.train.num_examples, data.validation.num_examples,
            data.test.num_examples) == (7, 5, 4)
    with pytest.raises(ValueError, match="validation_size must be between 0 and 12, got 13"):
        mnist.read_data_sets(str(tmp_path / "MNIST_data"), validation_size=13)


def test_train_dir_without_files_falls_back_to_gradflow_data(isolated, tmp_path, monkeypatch):
    _, payloads = isolated
    write(tmp_path / "shared" / "mnist", payloads)
    monkeypatch.setenv("GRADFLOW_DATA", str(tmp_path / "shared"))
    data = mnist.read_data_sets(str(tmp_path / "empty"), validation_size=2)
    assert data.train.num_examples == 10
    assert not (tmp_path / "empty").exists()  # nothing downloaded or created there


def test_no_files_and_no_download_names_every_folder(isolated, tmp_path):
    with pytest.raises(MnistError) as info:
        mnist.read_data_sets(str(tmp_path / "MNIST_data"), download=False)
    message = str(info.value)
    assert "read_data_sets" in message and "train_dir" in message
    for folder in [tmp_path / "MNIST_data", tmp_path / "MNIST_data" / "mnist",
                   mnist.cache_dir()]:
        assert str(folder) in message


def test_download_goes_to_train_dir_from_source_url_first(isolated, tmp_path, monkeypatch):
    _, payloads = isolated
    urls = []

    def fetch(url):
        urls.append(url)
        return gzip.compress(payloads[url.rsplit("/", 1)[-1].removesuffix(".gz")])

    monkeypatch.setattr(mnist, "_fetch", fetch)
    target = tmp_path / "MNIST_data"
    data = mnist.read_data_sets(str(target), one_hot=True, validation_size=0,
                                source_url="https://example.org/mnist")
    assert len(urls) == 4 and all(u.startswith("https://example.org/mnist/") for u in urls)
    assert sorted(os.listdir(target)) == sorted(payloads)
    assert data.validation.num_examples == 0 and data.train.labels.shape == (12, 10)


def test_failed_download_says_where_it_looked(isolated, tmp_path, monkeypatch):
    def offline(url):
        raise OSError("network unreachable")

    monkeypatch.setattr(mnist, "_fetch", offline)
    with pytest.raises(MnistError, match="network unreachable") as info:
        mnist.read_data_sets(str(tmp_path / "MNIST_data"))
    assert "not in train_dir" in str(info.value) and str(mnist.cache_dir()) in str(info.value)


def test_bad_dtype_fails_before_reading(isolated, tmp_path):
    with pytest.raises(TypeError, match="invalid image dtype"):
        mnist.read_data_sets(str(tmp_path), dtype=np.int32)


def test_input_data_module_is_tf1s_path():
    from gradflow.examples.tutorials.mnist import input_data

    assert input_data.read_data_sets is mnist.read_data_sets
    assert input_data.DataSet is DataSet
    assert input_data.DEFAULT_SOURCE_URL == "https://storage.googleapis.com/cvdf-datasets/mnist/"


# -- the real digits ---------------------------------------------------------------------------

real = pytest.mark.skipif(
    not REAL_DATA or not (Path(REAL_DATA) / "mnist").is_dir(),
    reason="needs the real MNIST files in $GRADFLOW_DATA/mnist (these tests never download)")


@pytest.fixture(scope="module")
def real_arrays():
    return mnist.load(download=False)


@real
def test_real_split_and_formats(real_arrays, tmp_path):
    (x_train, y_train), (x_test, y_test) = real_arrays
    data = mnist.read_data_sets(str(tmp_path / "MNIST_data"), one_hot=True, download=False)
    assert (data.train.num_examples, data.validation.num_examples,
            data.test.num_examples) == (55000, 5000, 10000)
    assert data.train.images.shape == (55000, 784) and data.train.images.dtype == np.float32
    assert 0.0 == data.train.images.min() and data.train.images.max() == 1.0
    assert data.train.labels.shape == (55000, 10) and data.train.labels.dtype == np.float64
    np.testing.assert_array_equal(data.train.labels.argmax(1), y_train[5000:])
    np.testing.assert_array_equal(data.validation.labels.argmax(1), y_train[:5000])
    # scaled as TF1 scales: float32 pixels times float32(1 / 255)
    np.testing.assert_array_equal(data.test.images,
                                  x_test.reshape(10000, 784).astype(np.float32)
                                  * np.float32(1.0 / 255.0))
    np.testing.assert_array_equal(data.test.labels.argmax(1), y_test)
    # the label counts of the training files, split 5,000 / 55,000
    counts = np.bincount(y_train, minlength=10)
    np.testing.assert_array_equal(data.train.labels.sum(0) + data.validation.labels.sum(0),
                                  counts)


@real
def test_real_uint8_unflattened(real_arrays, tmp_path):
    (x_train, y_train), _ = real_arrays
    data = mnist.read_data_sets(str(tmp_path), dtype=gf.uint8, reshape=False,
                                validation_size=1000, download=False)
    assert data.train.images.shape == (59000, 28, 28, 1) and data.train.images.dtype == np.uint8
    np.testing.assert_array_equal(data.validation.images[..., 0], x_train[:1000])
    np.testing.assert_array_equal(data.train.labels, y_train[1000:])
    assert data.train.labels.dtype == np.uint8


@real
def test_real_next_batch_is_seeded_and_covers_an_epoch(tmp_path):
    def first_batches(seed):
        data = mnist.read_data_sets(str(tmp_path), seed=seed, download=False)
        return [data.train.next_batch(100)[1] for _ in range(3)], data

    b = first_batches(7)[0]  # its data set goes before the next is read (172 MB each)
    a, data = first_batches(7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    # the rest of the first epoch: 55,000 labels with the split's counts
    labels = np.concatenate(a + [data.train.next_batch(1000)[1] for _ in range(54)]
                            + [data.train.next_batch(700)[1]])
    assert len(labels) == 55000 and data.train.epochs_completed == 0
    np.testing.assert_array_equal(np.bincount(labels, minlength=10),
                                  np.bincount(data.train.labels, minlength=10))
