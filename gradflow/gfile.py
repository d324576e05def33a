"""TF1's ``tf.gfile`` (and ``tf.io.gfile``): files and folders on the local filesystem.

TF1 programs use it for their data and log folders (``tf.gfile.Exists``,
``MakeDirs``, ``DeleteRecursively``, ``GFile``, ``Glob``...). Here every path is a
local path (TF1's ``gs://`` and ``hdfs://`` file systems are not there: such a path
raises ``UnimplementedError``), and failures raise TF1's errors: a missing path
``errors.NotFoundError``, an existing one where a new one is wanted
``errors.AlreadyExistsError``, a refusal ``errors.PermissionDeniedError``. Both
spellings are here: TF1's (``tf.gfile.Exists``) and ``tf.io.gfile``'s (``exists``).

>>> if not gf.gfile.Exists(log_dir):
...     gf.gfile.MakeDirs(log_dir)
>>> with gf.gfile.GFile(path, "w") as f:
...     f.write("hello")
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import shutil
from collections import namedtuple

from gradflow import errors

FileStatistics = namedtuple("FileStatistics", ["length", "mtime_nsec", "is_directory"])


def _local(path) -> str:
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    scheme = path.split("://", 1)[0] if "://" in path else ""
    if scheme and scheme != "file":
        raise errors.UnimplementedError(f"gfile: {path!r} is on the file system "
                                        f"'{scheme}://', which gradflow does not have; "
                                        "only local paths are supported")
    return path[len("file://"):] if scheme == "file" else path


@contextlib.contextmanager
def _errors(what, path):
    """OSErrors as TF1's errors, naming the call and the path."""
    try:
        yield
    except FileNotFoundError as err:
        raise errors.NotFoundError(f"{what}: {path}: {err.strerror or err}") from None
    except FileExistsError as err:
        raise errors.AlreadyExistsError(f"{what}: {path}: {err.strerror or err}") from None
    except PermissionError as err:
        raise errors.PermissionDeniedError(f"{what}: {path}: {err.strerror or err}") from None


def _on(what, call, path, *args):
    """``call(local path, *args)``, its OSErrors as TF1's errors naming ``what``."""
    path = _local(path)
    with _errors(what, path):
        return call(path, *args)


class GFile:
    """A file, opened as Python's ``open`` would (``mode`` "r", "w", "a", with "b" for
    bytes); TF1's ``GFile`` also reports its ``size()`` and ``name``."""

    def __init__(self, name, mode="r"):
        self.name = _local(name)
        with _errors("GFile", self.name):
            self._file = open(self.name, mode, encoding=None if "b" in mode else "utf-8")

    def size(self) -> int:
        """The file's length in bytes."""
        return os.path.getsize(self.name)

    def __getattr__(self, attr):  # read, readline, readlines, write, seek, tell, flush...
        return getattr(self._file, attr)

    def __iter__(self):
        return iter(self._file)

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = FastGFile = GFile


def Exists(filename) -> bool:  # noqa: N802 - TF1's names
    """Whether ``filename`` (a file or a folder) exists."""
    return os.path.exists(_local(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    """Whether ``dirname`` is a folder."""
    return os.path.isdir(_local(dirname))


def MakeDirs(dirname) -> None:  # noqa: N802
    """Make ``dirname`` and the folders above it that are missing (none is an error)."""
    _on("MakeDirs", os.makedirs, dirname, 0o777, True)


def MkDir(dirname) -> None:  # noqa: N802
    """Make the folder ``dirname``, whose parent exists; AlreadyExistsError if it does."""
    _on("MkDir", os.mkdir, dirname)


def ListDirectory(dirname) -> list:  # noqa: N802
    """The names in the folder ``dirname`` (not paths), in no set order."""
    path = _local(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(f"ListDirectory: {path}: not a folder")
    with _errors("ListDirectory", path):
        return os.listdir(path)


def Glob(filename) -> list:  # noqa: N802
    """The paths matching the pattern ``filename`` (``*``, ``?``, ``[...]``)."""
    return sorted(_glob.glob(_local(filename)))


def Remove(filename) -> None:  # noqa: N802
    """Delete the file ``filename``."""
    _on("Remove", os.remove, filename)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Delete the folder ``dirname`` and everything in it (a file: just the file)."""
    path = _local(dirname)
    with _errors("DeleteRecursively", path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _move(what, move, old, new, overwrite):
    new = _local(new)
    if not overwrite and os.path.exists(new):
        raise errors.AlreadyExistsError(f"{what}: {new}: exists (pass overwrite=True)")
    _on(what, move, old, new)


def Copy(oldpath, newpath, overwrite=False) -> None:  # noqa: N802
    """Copy the file ``oldpath`` to ``newpath``; AlreadyExistsError if that exists and
    ``overwrite`` is false."""
    _move("Copy", shutil.copyfile, oldpath, newpath, overwrite)


def Rename(oldname, newname, overwrite=False) -> None:  # noqa: N802
    """Rename ``oldname`` to ``newname``; AlreadyExistsError if that exists and
    ``overwrite`` is false."""
    _move("Rename", os.replace, oldname, newname, overwrite)


def Stat(filename) -> FileStatistics:  # noqa: N802
    """``FileStatistics(length, mtime_nsec, is_directory)`` of ``filename``."""
    st = _on("Stat", os.stat, filename)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(_local(filename)))


def Walk(top, in_order=True):  # noqa: N802
    """``(folder, subfolder names, file names)`` for ``top`` and each folder below it,
    top-down when ``in_order`` (else bottom-up); nothing for a missing ``top``."""
    yield from os.walk(_local(top), topdown=in_order)


# tf.io.gfile's spellings
exists, isdir, makedirs, mkdir, listdir = Exists, IsDirectory, MakeDirs, MkDir, ListDirectory
glob, remove, rmtree, copy, rename, stat, walk = (Glob, Remove, DeleteRecursively, Copy,
                                                   Rename, Stat, Walk)
