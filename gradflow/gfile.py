"""TF1's ``tf.gfile`` (and ``tf.io.gfile``): files and folders on the local filesystem.

TF1 programs use it for their data and log folders (``tf.gfile.Exists``,
``MakeDirs``, ``DeleteRecursively``, ``GFile``, ``Glob``...). Here every path is a
local path (TF1's ``gs://`` and ``hdfs://`` file systems are not there: such a path
raises ``UnimplementedError``). Every failure raises one of TF1's errors naming the
call and the path, mapped from the operating system's error code as TF does it: a
missing path ``errors.NotFoundError``, an existing one where a new one is wanted
``errors.AlreadyExistsError``, a refusal ``errors.PermissionDeniedError``, a folder
where a file is wanted (or a file where a folder is, or a folder that is not empty)
``errors.FailedPreconditionError``, a name too long ``errors.InvalidArgumentError``,
a full disk ``errors.ResourceExhaustedError``, anything else ``errors.UnknownError``.
Both spellings are here: TF1's (``tf.gfile.Exists``) and ``tf.io.gfile``'s
(``exists``).

>>> if not gf.gfile.Exists(log_dir):
...     gf.gfile.MakeDirs(log_dir)
>>> with gf.gfile.GFile(path, "w") as f:
...     f.write("hello")
"""

from __future__ import annotations

import contextlib
import errno
import glob as _glob
import io
import os
import shutil
import stat as stat_module
from collections import namedtuple

from gradflow import errors

FileStatistics = namedtuple("FileStatistics", ["length", "mtime_nsec", "is_directory"])


def _codes(names, error):
    return {getattr(errno, n): error for n in names.split() if hasattr(errno, n)}


# TF's ErrnoToCode (tensorflow/core/platform/errors.cc), for the classes gradflow has
_ERRNO = {
    **_codes("ENOENT ENODEV ENXIO ESRCH", errors.NotFoundError),
    **_codes("EEXIST", errors.AlreadyExistsError),
    **_codes("EPERM EACCES EROFS", errors.PermissionDeniedError),
    **_codes("EISDIR ENOTDIR ENOTEMPTY EBUSY ETXTBSY EBADF ELOOP EPIPE",
             errors.FailedPreconditionError),
    **_codes("EINVAL ENAMETOOLONG E2BIG EFAULT EILSEQ ESPIPE ENOTTY",
             errors.InvalidArgumentError),
    **_codes("ENOSPC EDQUOT ENOMEM EMFILE ENFILE EMLINK ENOBUFS EFBIG",
             errors.ResourceExhaustedError),
    **_codes("ENOSYS ENOTSUP EOPNOTSUPP EXDEV", errors.UnimplementedError),
    **_codes("ERANGE EOVERFLOW", errors.OutOfRangeError),
}


def _local(path, what="gfile") -> str:
    """``path`` (text, bytes or a path object) as a local path; InvalidArgumentError for
    anything else, UnimplementedError for another file system's."""
    try:
        path = os.fsdecode(path)
    except TypeError:
        raise errors.InvalidArgumentError(f"{what}: a path must be text, bytes or a path "
                                          f"object, got {type(path).__name__}") from None
    if "\0" in path:
        raise errors.InvalidArgumentError(f"{what}: {path!r} has a NUL character, which no "
                                          "file name may hold")
    scheme = path.split("://", 1)[0] if "://" in path else ""
    if scheme and scheme != "file":
        raise errors.UnimplementedError(f"{what}: {path!r} is on the file system "
                                        f"'{scheme}://', which gradflow does not have; "
                                        "only local paths are supported")
    return path[len("file://"):] if scheme == "file" else path


def os_error(what, path, err):
    """The TF1 error for the ``OSError`` (or ``ValueError``) ``err`` of the call ``what``
    on ``path``, naming both."""
    if isinstance(err, shutil.SameFileError):
        return errors.InvalidArgumentError(f"{what}: {path}: source and destination are "
                                           "the same file")
    if isinstance(err, io.UnsupportedOperation):  # a read of a file open for writing...
        return errors.PermissionDeniedError(f"{what}: {path}: the file is not open for "
                                            f"that ({err})")
    if isinstance(err, UnicodeError):
        return errors.InvalidArgumentError(f"{what}: {path}: not UTF-8 text ({err}); open "
                                           "it in binary mode ('rb')")
    if isinstance(err, ValueError):  # a closed file, a negative seek, a bad mode
        closed = "closed file" in str(err)
        kind = errors.FailedPreconditionError if closed else errors.InvalidArgumentError
        return kind(f"{what}: {path}: {'the file is closed' if closed else err}")
    if isinstance(err, (TypeError, OverflowError)):  # seek("x"), seek(2 ** 70)
        return errors.InvalidArgumentError(f"{what}: {path}: {err}")
    if isinstance(err, MemoryError):
        return errors.ResourceExhaustedError(f"{what}: {path}: out of memory ({err})")
    kind = _ERRNO.get(getattr(err, "errno", None), errors.UnknownError)
    reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return kind(f"{what}: {path}: {reason}")


@contextlib.contextmanager
def _errors(what, path):
    """OSErrors (and a file's ValueErrors) as TF1's errors, naming the call and the path."""
    try:
        yield
    except (OSError, ValueError, TypeError, OverflowError, MemoryError) as err:
        if isinstance(err, errors.GradflowError):
            raise
        raise os_error(what, path, err) from None


def _on(what, call, path, *args):
    """``call(local path, *args)``, its OSErrors as TF1's errors naming ``what``."""
    path = _local(path, what)
    with _errors(what, path):
        return call(path, *args)


class GFile:
    """A file, opened as Python's ``open`` would (``mode`` "r", "w", "a", with "b" for
    bytes and "+" for both ways); TF1's ``GFile`` also reports its ``size()`` and
    ``name``, and ``write`` takes text or bytes in either mode (UTF-8)."""

    def __init__(self, name, mode="r"):
        self.name = _local(name, "GFile")
        self.mode = mode
        with _errors(f"GFile(mode={mode!r})", self.name):
            if not isinstance(mode, str):
                raise ValueError(f"the mode must be text, got {type(mode).__name__}")
            self._file = open(self.name, mode, encoding=None if "b" in mode else "utf-8")

    def _call(self, what, method, *args):
        with _errors(f"GFile.{what}", self.name):
            if self._file.closed:
                raise ValueError("I/O operation on closed file")
            return getattr(self._file, method)(*args)

    def size(self) -> int:
        """The file's length in bytes."""
        if not self._file.closed and self._file.writable():
            self._call("size", "flush")
        return _on("GFile.size", os.path.getsize, self.name)

    def read(self, n=-1):
        """``n`` characters (bytes in binary mode), or all that remain."""
        return self._call("read", "read", -1 if n is None else n)

    def readline(self):
        """The next line (empty at the end)."""
        return self._call("readline", "readline")

    def readlines(self):
        """The remaining lines."""
        return self._call("readlines", "readlines")

    def write(self, file_content):
        """Write text or bytes (converted to the mode's kind as UTF-8)."""
        if isinstance(file_content, (bytes, bytearray, memoryview)) and "b" not in self.mode:
            try:
                file_content = bytes(file_content).decode("utf-8")
            except UnicodeDecodeError as err:
                raise os_error("GFile.write", self.name, err) from None
        elif isinstance(file_content, str) and "b" in self.mode:
            file_content = file_content.encode("utf-8")
        elif not isinstance(file_content, (str, bytes, bytearray, memoryview)):
            raise errors.InvalidArgumentError(
                f"GFile.write: {self.name}: expected text or bytes, got "
                f"{type(file_content).__name__}")
        return self._call("write", "write", file_content)

    def seek(self, offset=None, whence=0, position=None):
        """Move to ``offset`` (TF1 also spells it ``position``) from ``whence``."""
        if position is not None:
            offset = position
        return self._call("seek", "seek", 0 if offset is None else offset, whence)

    def tell(self):
        """The position in the file."""
        return self._call("tell", "tell")

    def flush(self):
        """Write what is buffered to the file."""
        return self._call("flush", "flush")

    def __getattr__(self, attr):  # fileno, readable, writable, seekable, truncate...
        file = self.__dict__.get("_file")
        if file is None:  # (a GFile whose open failed)
            raise AttributeError(attr)
        value = getattr(file, attr)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            with _errors(f"GFile.{attr}", self.name):
                return value(*args, **kwargs)

        return call

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def close(self):
        with _errors("GFile.close", self.name):
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = FastGFile = GFile


def Exists(filename) -> bool:  # noqa: N802 - TF1's names
    """Whether ``filename`` (a file or a folder) exists."""
    return os.path.exists(_local(filename, "Exists"))


def IsDirectory(dirname) -> bool:  # noqa: N802
    """Whether ``dirname`` is a folder."""
    return os.path.isdir(_local(dirname, "IsDirectory"))


def MakeDirs(dirname) -> None:  # noqa: N802
    """Make ``dirname`` and the folders above it that are missing (none is an error)."""
    _on("MakeDirs", os.makedirs, dirname, 0o777, True)


def MkDir(dirname) -> None:  # noqa: N802
    """Make the folder ``dirname``, whose parent exists; AlreadyExistsError if it does."""
    _on("MkDir", os.mkdir, dirname)


def ListDirectory(dirname) -> list:  # noqa: N802
    """The names in the folder ``dirname`` (not paths), in no set order."""
    path = _local(dirname, "ListDirectory")
    if not os.path.isdir(path):
        raise errors.NotFoundError(f"ListDirectory: {path}: not a folder")
    with _errors("ListDirectory", path):
        return os.listdir(path)


def Glob(filename) -> list:  # noqa: N802
    """The paths matching the pattern ``filename`` (``*``, ``?``, ``[...]``)."""
    return sorted(_glob.glob(_local(filename, "Glob")))


def Remove(filename) -> None:  # noqa: N802
    """Delete the file ``filename``."""
    _on("Remove", os.remove, filename)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    """Delete the folder ``dirname`` and everything in it (a file: just the file)."""
    path = _local(dirname, "DeleteRecursively")
    with _errors("DeleteRecursively", path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _move(what, move, old, new, overwrite):
    old, new = _local(old, what), _local(new, what)
    if not overwrite and os.path.lexists(new):
        raise errors.AlreadyExistsError(f"{what}: {new}: exists (pass overwrite=True)")
    with _errors(what, f"{old} -> {new}"):
        move(old, new)


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
    return FileStatistics(st.st_size, st.st_mtime_ns, stat_module.S_ISDIR(st.st_mode))


def Walk(top, in_order=True):  # noqa: N802
    """``(folder, subfolder names, file names)`` for ``top`` and each folder below it,
    top-down when ``in_order`` (else bottom-up); nothing for a missing ``top``."""
    yield from os.walk(_local(top, "Walk"), topdown=in_order)


# tf.io.gfile's spellings
exists, isdir, makedirs, mkdir, listdir = Exists, IsDirectory, MakeDirs, MkDir, ListDirectory
glob, remove, rmtree, copy, rename, stat, walk = (Glob, Remove, DeleteRecursively, Copy,
                                                   Rename, Stat, Walk)
