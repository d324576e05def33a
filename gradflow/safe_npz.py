"""Reading ``.npz`` archives written by NumPy without trusting them: each member's size
is checked against the archive before it is read, and each array's header against the
member's size, so a damaged or hostile archive is refused before anything large is
allocated; nothing is unpickled.

>>> arrays = read_npz(path_or_file, "checkpoint model-3", error=DataLossError)
"""

from __future__ import annotations

import math
import os
import zipfile

import numpy as np

# deflate expands at most about 1032 times: a member claiming more is a lie (a zip bomb)
_MOST_EXPANSION = 1100


def read_npz(file, source, error, names=None):
    """``{key: array}`` of the archive ``file`` (a path, or a binary file object), the
    keys ``names`` only when given (those it lacks are left out). Anything wrong with the
    archive raises ``error(message)``, the message naming ``source``; a ``MemoryError``
    is re-raised as is (the caller says how much was asked)."""
    try:
        with zipfile.ZipFile(file) as archive:
            members = _members(archive, _size(file), source, error)
            wanted = members if names is None else {k: members[k] for k in names
                                                     if k in members}
            return {key: _read_member(archive, info, source, error)
                    for key, info in wanted.items()}
    except (error, MemoryError):
        raise
    except Exception as err:  # zip, zlib and npy errors come in many types
        raise error(f"{source} is damaged: the data in it is corrupt "
                    f"({type(err).__name__}: {err})") from None


def check_npz(file, source, error):
    """``{key: (shape, dtype)}`` of the arrays in the archive, once each member's size and
    each array's header are checked (no data is read: ``np.load`` may then read it
    safely)."""
    try:
        with zipfile.ZipFile(file) as archive:
            described = {}
            for key, info in _members(archive, _size(file), source, error).items():
                with archive.open(info) as f:
                    described[key] = _header(f, info, source, error)[::2][:2]
            return described
    except error:
        raise
    except Exception as err:  # noqa: BLE001 - as in read_npz
        raise error(f"{source} is damaged: the data in it is corrupt "
                    f"({type(err).__name__}: {err})") from None


def _size(file):
    if isinstance(file, (str, os.PathLike)):
        return os.path.getsize(file)
    position = file.tell()
    end = file.seek(0, os.SEEK_END)
    file.seek(position)
    return end


def _members(archive, size, source, error):
    members = {}
    for info in archive.infolist():
        name = info.filename
        if not name.endswith(".npy") or name[:-4] in members:
            raise error(f"{source} is damaged: the archive holds {name!r}, which is not "
                        "an array of its own")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise error(f"{source}: array {name[:-4]!r} uses zip compression method "
                        f"{info.compress_type}, which NumPy never writes")
        stored = info.compress_type == zipfile.ZIP_STORED
        if info.compress_size > size or (stored and info.file_size != info.compress_size) \
                or info.file_size > _MOST_EXPANSION * info.compress_size + 1024:
            raise error(f"{source} is damaged: array {name[:-4]!r} claims {info.file_size} "
                        f"bytes from {info.compress_size} in a file of {size}")
        members[name[:-4]] = info
    return members


def _header(f, info, source, error):
    """``(shape, fortran order, dtype, bytes of data)`` of the member open as ``f``,
    checked against the member's size."""
    key = info.filename[:-4]
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise error(f"{source}: array {key!r} is in .npy format version {version}")
    if dtype.itemsize == 0:
        raise error(f"{source} is damaged: array {key!r} has dtype {dtype} of no size")
    if dtype.hasobject:
        raise error(f"{source} is damaged: array {key!r} holds Python objects (a pickle), "
                    "which are never loaded")
    need = math.prod(shape) * dtype.itemsize
    if f.tell() + need != info.file_size:
        raise error(f"{source} is damaged: array {key!r} claims shape {shape} of "
                    f"{dtype} ({need} bytes), but holds {info.file_size - f.tell()}")
    return shape, fortran, dtype, need


def _read_member(archive, info, source, error):
    with archive.open(info) as f:
        shape, fortran, dtype, need = _header(f, info, source, error)
        data = bytearray(need)
        if f.readinto(data) != need or f.read(1):  # reading to the end checks the CRC
            raise error(f"{source} is damaged: array {info.filename[:-4]!r} is cut short")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
