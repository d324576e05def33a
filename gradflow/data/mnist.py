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
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.request
import zlib
from pathlib import Path

import numpy as np

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
    if len(raw) < 8 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise MnistError(f"{path}: not an IDX file of unsigned bytes (bad magic number)")
    ndim = raw[3]
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) != header + size:
        raise MnistError(f"{path}: truncated or padded: the header announces {dims} "
                         f"({size} bytes of data), the file holds {len(raw) - header}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load(data_dir=None, download=None, verify=True):
    """``((x_train, y_train), (x_test, y_test))``: uint8 images (N, 28, 28) and labels (N,).

    The result unpacks as that pair and also carries ``.folder``, where the
    files were read from. ``data_dir``: the folder with the four IDX files (or
    its ``mnist`` subfolder); when given, no other folder is searched.
    ``download``: ``True`` downloads missing files (into ``data_dir`` when
    given, else ``~/.cache/gradflow/mnist``); ``False`` never downloads;
    ``None`` (the default) downloads into the cache folder only when no
    ``data_dir`` was given. ``verify=False`` skips the canonical checksums (for
    small IDX files made in tests); the structure of every file is checked
    either way.
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
                _download(name, folder, dirs)
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


def _download(name, target, dirs):
    errors = []
    for mirror in MIRRORS:
        url = f"{mirror}{name}.gz"
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
