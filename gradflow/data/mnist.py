"""MNIST from the four canonical IDX files, gzipped or not, with checksums.

Where ``load()`` reads the files:

- ``data_dir`` given: ``data_dir`` or ``data_dir/mnist``, nowhere else. If
  the files are not there it fails, naming the folder and the files it
  expected, unless ``download=True``, which downloads them into ``data_dir``.
- no ``data_dir``: ``$GRADFLOW_DATA/mnist`` (when the variable is set), then
  ``~/.cache/gradflow/mnist``; if neither holds the four files they are
  downloaded into the cache folder (unless ``download=False``).

A download comes from public mirrors; the SHA-256 of each decompressed file
is checked and each file is saved atomically. The result says which folder
the files were read from (``load(...).folder``).

``read_data_sets`` and ``DataSet`` are TF1 tutorials' reader on top of
``load`` (also importable as ``gradflow.examples.tutorials.mnist.input_data``).
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import os
import tempfile
import urllib.request
import zlib
from pathlib import Path

import numpy as np

from gradflow import dtypes

FILES = {  # name -> SHA-256 of the decompressed file
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)


class MnistError(RuntimeError):
    """MNIST files are missing, corrupt or could not be downloaded."""


class MnistData(tuple):
    """What ``load`` returns: ``((x_train, y_train), (x_test, y_test))``, a plain pair
    to unpack, with ``folder``, the folder the files were read from."""

    def __new__(cls, train, test, folder):
        self = super().__new__(cls, (train, test))
        self.folder = Path(folder)
        return self

    def __getnewargs__(self):
        return self[0], self[1], self.folder


def cache_dir() -> Path:
    """``~/.cache/gradflow/mnist``: where downloads go when no ``data_dir`` is given."""
    return Path.home() / ".cache" / "gradflow" / "mnist"


def candidate_dirs(data_dir=None) -> list[Path]:
    """Where ``load`` looks, in order: only ``data_dir`` (and its ``mnist`` subfolder)
    when it is given, else ``$GRADFLOW_DATA/mnist`` and the cache folder."""
    if data_dir is not None:
        return [Path(data_dir), Path(data_dir) / "mnist"]
    dirs = []
    if os.environ.get("GRADFLOW_DATA"):
        dirs.append(Path(os.environ["GRADFLOW_DATA"]) / "mnist")
    dirs.append(cache_dir())
    return dirs


def _find(name, folder):
    """``folder/name`` or ``folder/name.gz``, whichever is a file, else None."""
    for candidate in (folder / name, folder / (name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def read_idx(path, expected_sha256=None) -> np.ndarray:
    """Parse one IDX file (``.gz`` or raw); raise MnistError naming the file if it is bad."""
    path = Path(path)
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as err:  # zlib.error: a corrupt deflate stream
        raise MnistError(f"{path}: cannot read or decompress it ({err}); delete it and "
                         "load again") from None
    if expected_sha256 is not None and hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise MnistError(f"{path}: the SHA-256 of its contents is not the canonical MNIST "
                         "one; the file is corrupt or not MNIST. Delete it and load again")
    return parse_idx(raw, path)


def parse_idx(raw: bytes, where="the data") -> np.ndarray:
    """The uint8 array held by the bytes of an IDX file; ``where`` names it in errors."""
    if len(raw) < 8 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise MnistError(f"{where}: not an IDX file of unsigned bytes (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) != header + size:
        raise MnistError(f"{where}: truncated or padded: the header announces {dims} "
                         f"({size} bytes of data), the file holds {len(raw) - header}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load(data_dir=None, download=None, verify=True, mirrors=None):
    """``((x_train, y_train), (x_test, y_test))``: uint8 images (N, 28, 28) and labels (N,).

    The result unpacks as that pair and also carries ``.folder``, where the
    files were read from. ``data_dir``: the folder with the four IDX files (or
    its ``mnist`` subfolder); when given, no other folder is searched.
    ``download``: ``True`` downloads missing files (into ``data_dir`` when
    given, else ``~/.cache/gradflow/mnist``); ``False`` never downloads;
    ``None`` (the default) downloads into the cache folder only when no
    ``data_dir`` was given. ``verify=False`` skips the canonical checksums (for
    small IDX files made in tests); the structure of every file is checked
    either way. ``mirrors``: the base URLs to download from, in order
    (default ``MIRRORS``).
    """
    dirs = candidate_dirs(data_dir)
    folder = next((d for d in dirs if all(_find(n, d) for n in FILES)), None)
    if folder is None:
        if download is None:
            download = data_dir is None
        if not download:
            raise MnistError(_missing_message(data_dir, dirs))
        folder = Path(data_dir) if data_dir is not None else cache_dir()
        for name in FILES:
            if _find(name, folder) is None:
                _download(name, folder, dirs, MIRRORS if mirrors is None else mirrors)
    paths = {name: _find(name, folder) for name in FILES}
    arrays = {n: read_idx(p, FILES[n] if verify else None) for n, p in paths.items()}
    x_train, y_train = arrays["train-images-idx3-ubyte"], arrays["train-labels-idx1-ubyte"]
    x_test, y_test = arrays["t10k-images-idx3-ubyte"], arrays["t10k-labels-idx1-ubyte"]
    for x, y, which in ((x_train, y_train, "train"), (x_test, y_test, "t10k")):
        if x.ndim != 3 or y.ndim != 1 or len(x) != len(y):
            raise MnistError(f"{which} images {x.shape} and labels {y.shape} do not match")
    return MnistData((x_train, y_train), (x_test, y_test), folder)


def _missing_message(data_dir, dirs):
    """Which files were expected where, what was found, and how to get the files."""
    expected = ", ".join(FILES)
    found = []
    for d in dirs:
        have = [n for n in FILES if _find(n, d)]
        if have:
            found.append(f"{d} has only {', '.join(have)}")
    found = f" ({'; '.join(found)})" if found else ""
    if data_dir is not None:
        folder = Path(data_dir)
        state = "" if folder.is_dir() else " (the folder does not exist)"
        return (f"MNIST: the data folder {folder}{state} does not hold the four MNIST files "
                f"{expected} (each raw or gzipped as NAME.gz), neither in {folder} nor in "
                f"{folder / 'mnist'}{found}. The folder was given explicitly, so no other "
                "folder was searched. Put the files there, or download them into it with "
                "download=True (checksums verified), or leave data_dir out to use "
                f"$GRADFLOW_DATA/mnist or {cache_dir()} (downloaded there if missing).")
    where = " or ".join(str(d) for d in dirs)
    return (f"MNIST: the four MNIST files {expected} (each raw or gzipped as NAME.gz) were "
            f"not found together in {where}{found}. Put them in one of these folders (set "
            "GRADFLOW_DATA=<dir> with the files in <dir>/mnist, or pass data_dir=), or "
            f"allow a download (download=True, into {cache_dir()}, checksums verified).")


def _download(name, target, dirs, mirrors=MIRRORS):
    errors = []
    for mirror in mirrors:
        url = f"{mirror.rstrip('/')}/{name}.gz"
        try:
            raw = gzip.decompress(_fetch(url))
        except Exception as err:  # network errors come in many types
            errors.append(f"{url}: {err}")
            continue
        if hashlib.sha256(raw).hexdigest() != FILES[name]:
            errors.append(f"{url}: checksum mismatch")
            continue
        return _save_atomically(target, name, raw)
    searched = " or ".join(str(d) for d in dirs)
    raise MnistError(f"MNIST: the files were not in {searched}, and downloading {name} into "
                     f"{target} failed: {'; '.join(errors)}. Check the network, or put the "
                     f"four files {', '.join(FILES)} (raw or .gz) in {target} by hand.")


def _fetch(url):
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    with urllib.request.urlopen(url, timeout=60) as response:
        total = int(response.headers.get("Content-Length") or 0)
        bar = tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1]) \
            if tqdm else None
        chunks = []
        while chunk := response.read(1 << 16):
            chunks.append(chunk)
            if bar:
                bar.update(len(chunk))
        if bar:
            bar.close()
    return b"".join(chunks)


def _save_atomically(folder, name, raw):
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / name)
    except BaseException:
        os.unlink(tmp)
        raise
    return folder / name


# -- TF1's tutorial reader: read_data_sets and DataSet ---------------------------------

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def dense_to_one_hot(labels_dense, num_classes=10):
    """One row per label with a 1.0 in the label's column (float64, as in TF1)."""
    labels_dense = np.asarray(labels_dense).ravel()
    if labels_dense.size and (labels_dense.min() < 0 or labels_dense.max() >= num_classes):
        raise ValueError(f"dense_to_one_hot: labels must be in [0, {num_classes}), got "
                         f"{labels_dense.min()}..{labels_dense.max()}")
    one_hot = np.zeros((labels_dense.size, num_classes))
    one_hot[np.arange(labels_dense.size), labels_dense.astype(np.int64)] = 1.0
    return one_hot


def extract_images(f):
    """The images of an open MNIST image file (gzipped IDX) as uint8 ``[N, 28, 28, 1]``."""
    where = getattr(f, "name", "the image file")
    array = _read_gz_stream(f, where)
    if array.ndim != 3:
        raise MnistError(f"{where}: expected an IDX file of images (3 dimensions), got "
                         f"shape {array.shape}")
    return array[..., None]


def extract_labels(f, one_hot=False, num_classes=10):
    """The labels of an open MNIST label file (gzipped IDX): uint8 ``[N]``, or float64
    ``[N, num_classes]`` with ``one_hot``."""
    where = getattr(f, "name", "the label file")
    array = _read_gz_stream(f, where)
    if array.ndim != 1:
        raise MnistError(f"{where}: expected an IDX file of labels (1 dimension), got "
                         f"shape {array.shape}")
    return dense_to_one_hot(array, num_classes) if one_hot else array


def _read_gz_stream(f, where):
    raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise MnistError(f"{where}: cannot decompress it ({err})") from None
    return parse_idx(raw, where)


def _image_dtype(dtype):
    try:
        dt = dtypes.as_dtype(dtype)
    except (TypeError, ValueError, KeyError):
        dt = None
    if dt not in (dtypes.uint8, dtypes.float32):
        raise TypeError(f"DataSet: invalid image dtype {dtype!r}, expected uint8 (pixels "
                        "0..255) or float32 (pixels scaled to [0, 1])")
    return dt


class DataSet:
    """One split of MNIST as TF1's tutorials use it: ``images``, ``labels``,
    ``num_examples``, ``epochs_completed`` and ``next_batch``.

    ``images``: uint8 ``[N, 28, 28, 1]`` (or ``[N, 28, 28]``); with ``reshape``
    they are flattened to ``[N, 784]``; with ``dtype=float32`` (the default) they
    are scaled to ``[0, 1]``, with ``dtype=uint8`` they keep 0..255. ``seed``
    seeds this set's own shuffling (``None``: a fresh random order each run).
    ``fake_data=True`` makes a stand-in of 10,000 examples whose batches are
    all-ones images with label 0.
    """

    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=np.float32,
                 reshape=True, seed=None):
        dt = _image_dtype(dtype)
        self._rng = np.random.RandomState(seed)
        self._fake = bool(fake_data)
        self.one_hot = one_hot
        self._dtype = dt
        if self._fake:
            self._num_examples = 10000
            images, labels = np.zeros((0, 784), dt.as_numpy_dtype), np.zeros((0,), np.uint8)
        else:
            images, labels = np.asarray(images), np.asarray(labels)
            if images.shape[:1] != labels.shape[:1]:
                raise ValueError(f"DataSet: {images.shape[0]} images but {labels.shape[0]} "
                                 f"labels (images.shape: {images.shape} labels.shape: "
                                 f"{labels.shape})")
            self._num_examples = images.shape[0]
            if reshape:
                if images.ndim == 4 and images.shape[3] != 1:
                    raise ValueError(f"DataSet: reshape=True flattens one-channel images "
                                     f"[N, rows, cols, 1], got shape {images.shape}")
                images = images.reshape(images.shape[0], int(np.prod(images.shape[1:])))
            if dt == dtypes.float32:  # scaled in place: one float32 copy, not two at once
                images = images.astype(np.float32)
                images *= np.float32(1.0 / 255.0)
        self._images, self._labels = images, labels
        self._order = None  # the current epoch's permutation; None: in order
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        """The images, one row (or one 28x28 array) per example.

        >>> mnist.train.images.shape
        """
        return self._images

    @property
    def labels(self):
        """The labels: digits, or one-hot rows with ``one_hot=True``."""
        return self._labels

    @property
    def num_examples(self):
        """How many examples the set holds (55,000 for ``mnist.train``)."""
        return self._num_examples

    @property
    def epochs_completed(self):
        """How many full passes ``next_batch`` has made over the set."""
        return self._epochs_completed

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next ``batch_size`` examples: ``(images, labels)``.

        As in TF1: with ``shuffle`` the order is shuffled at the first call and
        again each time an epoch ends, so every example comes exactly once per
        epoch; a batch that crosses the end of an epoch is the rest of that
        epoch followed by the start of the next (newly shuffled) one.
        """
        if fake_data or self._fake:
            images = np.ones((batch_size, 784), self._dtype.as_numpy_dtype)
            labels = np.zeros((batch_size, 10)) if self.one_hot else np.zeros(batch_size,
                                                                              np.uint8)
            if self.one_hot:
                labels[:, 0] = 1.0
            return images, labels
        batch_size = int(batch_size)
        if not 0 < batch_size <= self._num_examples:
            raise ValueError(f"next_batch: batch_size must be between 1 and the number of "
                             f"examples ({self._num_examples}), got {batch_size}")
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._order = self._rng.permutation(self._num_examples)
        if start + batch_size > self._num_examples:
            self._epochs_completed += 1
            rest = self._take(start, self._num_examples)
            self._order = self._rng.permutation(self._num_examples) if shuffle else None
            self._index_in_epoch = batch_size - (self._num_examples - start)
            new = self._take(0, self._index_in_epoch)
            return (np.concatenate((rest[0], new[0]), axis=0),
                    np.concatenate((rest[1], new[1]), axis=0))
        self._index_in_epoch += batch_size
        return self._take(start, self._index_in_epoch)

    def _take(self, start, stop):
        if self._order is None:
            return self._images[start:stop], self._labels[start:stop]
        index = self._order[start:stop]
        return self._images[index], self._labels[index]

    def __repr__(self):
        return (f"<DataSet {self._num_examples} examples, images {self._images.shape[1:]} "
                f"{self._images.dtype}, epochs_completed={self._epochs_completed}>")


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=np.float32, reshape=True,
                   validation_size=5000, seed=None, source_url=DEFAULT_SOURCE_URL, *,
                   download=True):
    """MNIST as TF1's tutorials read it (``input_data.read_data_sets``): a
    ``Datasets(train, validation, test)`` of ``DataSet`` objects.

    As in TF1, the first ``validation_size`` training images are the
    validation set and the rest (55,000 by default) the training set; the
    test set is the 10,000 t10k images. ``one_hot`` gives float64 rows of 10
    instead of uint8 labels; see ``DataSet`` for ``dtype``, ``reshape`` and
    ``seed``.

    ``train_dir`` is searched first (it or its ``mnist`` subfolder). If it does
    not hold the four files, the folders ``load()`` searches by default are
    tried (``$GRADFLOW_DATA/mnist``, then ``~/.cache/gradflow/mnist``), so a
    script's ``"MNIST_data/"`` finds the shared copy. Only if none holds them
    are they downloaded into ``train_dir`` (from ``source_url`` first, then the
    other mirrors, checksums verified), unless ``download=False``.
    """
    if fake_data:
        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)

        return Datasets(train=fake(), validation=fake(), test=fake())
    _image_dtype(dtype)  # a bad dtype fails before any reading or downloading
    (train_images, train_labels), (test_images, test_labels) = _load_for_reader(
        train_dir, source_url or DEFAULT_SOURCE_URL, download)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"read_data_sets: validation_size must be between 0 and "
                         f"{len(train_images)}, got {validation_size}")
    if one_hot:
        train_labels, test_labels = dense_to_one_hot(train_labels), dense_to_one_hot(test_labels)
    train_images, test_images = train_images[..., None], test_images[..., None]
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    validation = DataSet(train_images[:validation_size], train_labels[:validation_size],
                         **options)
    train = DataSet(train_images[validation_size:], train_labels[validation_size:], **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def _has_all(folder):
    return all(_find(n, folder) for n in FILES)


def _load_for_reader(train_dir, source_url, download):
    """``load()`` from ``train_dir``, else from the default folders, else downloaded."""
    own = candidate_dirs(train_dir) if train_dir else []
    if any(_has_all(d) for d in own):
        return load(data_dir=train_dir, download=False)
    fallback = candidate_dirs(None)
    if any(_has_all(d) for d in fallback):
        return load(download=False)
    target = Path(train_dir) if train_dir else cache_dir()
    searched = ", ".join(str(d) for d in own + fallback)
    if not download:
        raise MnistError(f"read_data_sets: the four MNIST files {', '.join(FILES)} (raw or "
                         f".gz) are not in train_dir ({train_dir!r}), nor in the default "
                         f"folders; searched {searched}. Put them in one of those folders "
                         "(or set GRADFLOW_DATA=<dir> with the files in <dir>/mnist), or "
                         f"allow the download into {target}.")
    mirrors = (source_url,) + tuple(m for m in MIRRORS if m.rstrip("/") !=
                                    source_url.rstrip("/"))
    try:
        return load(data_dir=target, download=True, mirrors=mirrors)
    except MnistError as err:
        raise MnistError(f"read_data_sets: the MNIST files were not in train_dir "
                         f"({train_dir!r}) nor in the default folders (searched {searched}), "
                         f"and downloading them into {target} failed: {err}") from None
