"""Reading the files of a checkpoint folder without trusting them: checkpoints in
TensorFlow's V2 layout (``tf_checkpoint``: what gradflow's Saver and TensorFlow's write),
the single ``.npz`` files of earlier gradflow versions (a JSON header checked field by
field against the arrays in it), and the folder's ``checkpoint`` index (TensorFlow's
text, or the JSON of earlier gradflow versions). ``Saver`` and ``CheckpointReader`` read through
here; every fault is a ``CheckpointError`` of the kind it is:
``DamagedCheckpointError`` (a ``DataLossError``) for damaged bytes,
``CheckpointNotFoundError`` (a ``NotFoundError``) for a missing file, and
``CheckpointError`` itself (an ``InvalidArgumentError``) for a well-formed file that does
not fit.
"""

from __future__ import annotations

import json
import math
import os
import re
import zipfile

import numpy as np

from gradflow.errors import DataLossError, InvalidArgumentError, NotFoundError
from gradflow.safe_npz import check_npz
from gradflow.train import tf_checkpoint
from gradflow.train.tf_checkpoint_writer import INDEX_SUFFIX, MAGIC

FORMAT_VERSION = 1
_HEADER_KEY = "__header__"
_LARGEST_INDEX_FILE = 1 << 20  # bytes: a larger ``checkpoint`` index is refused unread


class CheckpointError(InvalidArgumentError):
    """A checkpoint is missing, unreadable, or does not match the variables to restore."""


class DamagedCheckpointError(CheckpointError, DataLossError):
    """A checkpoint's bytes are damaged: cut short, a failed checksum, a broken header."""

    error_code = DataLossError.error_code


class CheckpointNotFoundError(CheckpointError, NotFoundError):
    """There is no checkpoint at the path given."""

    error_code = NotFoundError.error_code


class _Unreadable(Exception):
    """A file that is not a readable checkpoint: ``str`` says why, ``short`` briefly;
    ``damaged`` whether its bytes are (else it is well formed, but not one to read)."""

    def __init__(self, message, short="is damaged", damaged=True):
        super().__init__(message)
        self.short = short
        self.damaged = damaged


def unreadable_error(err, message):
    """The ``CheckpointError`` of the kind ``err`` (an ``_Unreadable``) is, saying ``message``."""
    return (DamagedCheckpointError if err.damaged else CheckpointError)(message)


def read(path, names):
    """``(header, arrays)`` of the checkpoint at ``path``: the V2 checkpoint of which
    ``path`` is the prefix (where ``path.index`` is a file), else an earlier gradflow's
    file, read into the same header; the arrays of ``names`` only. Raises
    ``_Unreadable``."""
    if not tf_checkpoint.is_tf_checkpoint(path):
        return _load(path, names)
    try:
        arrays, described = tf_checkpoint.load(path, names)
    except tf_checkpoint.TFCheckpointError as err:
        raise _Unreadable(f"is a TensorFlow checkpoint that cannot be read: {err}",
                          err.short, err.damaged) from None
    except MemoryError:
        raise _Unreadable("is a TensorFlow checkpoint too large to read into memory",
                          "is too large", False) from None
    return {"names": list(described), "dtypes": [d for d, _ in described.values()],
            "shapes": [list(s) for _, s in described.values()]}, arrays


def _load(path, names):
    """The header and the arrays of ``names`` in the file, read fully (so damage shows)."""
    try:
        with open(path, "rb") as f:
            start = f.read(8)
        size = os.path.getsize(path)
    except OSError as err:
        raise _Unreadable(f"cannot be read ({type(err).__name__}: {err})", "cannot be read",
                          False) from None
    if size == 0:
        raise _Unreadable("is damaged: the file is empty (0 bytes)", "is empty")
    if not start.startswith(b"PK"):
        raise _Unreadable(f"is not a checkpoint, or is corrupt: there is no {path}.index, and "
                          f"the file is not the .npz of an earlier gradflow either (it starts "
                          f"with {start!r})", "is not a checkpoint")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise _Unreadable(f"is damaged: the archive ends too soon, after {size} bytes, as when a "
                          f"copy or a write is cut short by a crash or a full disk "
                          f"({type(err).__name__}: {err})", "is damaged") from None
    with archive:
        members = archive.namelist()
    if f"{_HEADER_KEY}.npy" not in members:
        raise _Unreadable(f"is a .npz archive but not a gradflow checkpoint: it has no "
                          f"{_HEADER_KEY} entry (it holds {', '.join(members[:10])})",
                          "is not a checkpoint", False)
    described = check_npz(path, "", _Damaged)  # every array's size, before any is read
    try:
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(npz[_HEADER_KEY].tobytes().decode("utf-8"))
            arrays = {n: npz[n] for n in names if n in npz.files and n != _HEADER_KEY}
    except MemoryError:
        raise _Unreadable("is too large to read into memory", "is too large", False) from None
    except Exception as err:  # zip, zlib, npy and JSON errors come in many types
        raise _Unreadable(f"is damaged: the data in it is corrupt ({type(err).__name__}: {err})",
                          "is damaged") from None
    described.pop(_HEADER_KEY)
    _check_header(header, {k: list(shape) for k, (shape, _) in described.items()})
    return header, arrays


class _Damaged(_Unreadable):
    """What ``check_npz`` raises, its message worded as ``_Unreadable``'s."""

    def __init__(self, message):
        rest = message.removeprefix(" is damaged: ").removeprefix(": ")
        super().__init__(f"is damaged: {rest}", "is damaged")


def _check_header(header, shapes_in_file):
    """Raise ``_Unreadable`` unless ``header`` is a checkpoint header of this format that
    describes exactly the arrays of the file (``shapes_in_file``: name -> shape)."""
    version = header.get("format_version") if isinstance(header, dict) else None
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        raise _Unreadable(f"was written in checkpoint format version {version!r}; this gradflow "
                          f"reads version {FORMAT_VERSION}"
                          + ("; upgrade gradflow to read it" if newer else ""),
                          f"has format version {version!r}", isinstance(version, int))
    names, shapes, kinds = (header.get(k) for k in ("names", "shapes", "dtypes"))
    problem = None
    if not _list_of(names, str) or len(set(names)) != len(names):
        problem = "its header's 'names' is not a list of distinct names"
    elif not _list_of(shapes, list) or len(shapes) != len(names) or not all(
            _list_of(s, int) and all(d >= 0 for d in s) for s in shapes):
        problem = "its header's 'shapes' is not a list of one shape per name"
    elif not _list_of(kinds, str) or len(kinds) != len(names):
        problem = "its header's 'dtypes' is not a list of one dtype name per name"
    elif header.get("global_step") is not None and not _list_of([header["global_step"]], int):
        problem = f"its header's 'global_step' is {header['global_step']!r}, not an int"
    elif sorted(names) != sorted(shapes_in_file):
        keys = set(shapes_in_file)
        problem = (f"its header lists {_few(set(names) - keys) or 'no missing array'} "
                   f"and not {_few(keys - set(names)) or 'no extra array'}: the header "
                   "and the arrays in it differ")
    else:
        wrong = [n for n, s in zip(names, shapes) if shapes_in_file[n] != s]
        if wrong:
            problem = f"the array {wrong[0]!r} is not of the shape its header gives"
    if problem:
        raise _Unreadable(f"is damaged: {problem}", "is damaged")


def _list_of(value, kind):
    return isinstance(value, list) and all(
        isinstance(v, kind) and not (kind is int and isinstance(v, bool)) for v in value)


def _few(names):
    return ", ".join(repr(n) for n in sorted(names)[:5])


# -- the files of a folder's checkpoints ---------------------------------------------


def is_old_checkpoint_file(path):
    """Whether ``path`` is a readable .npz with a gradflow header (its contents unchecked):
    a checkpoint of the single-file format of earlier gradflow versions."""
    try:
        with zipfile.ZipFile(path) as archive:
            return f"{_HEADER_KEY}.npy" in archive.namelist()
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def is_bundle(prefix):
    """Whether ``prefix.index`` is a file that ends as a checkpoint's index does (its
    contents unchecked)."""
    try:
        with open(prefix + INDEX_SUFFIX, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() < 8:
                return False
            f.seek(-8, os.SEEK_END)
            return int.from_bytes(f.read(8), "little") == MAGIC
    except OSError:
        return False


def listdir(folder):
    """The entries of ``folder``; none where it cannot be listed."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def files_of(folder, name):
    """The paths of checkpoint ``name``'s files in ``folder``, its index first, then its data
    files, its ``.meta`` and an earlier gradflow's file of that name (those that exist or
    not: the caller removes what is there)."""
    path = os.path.join(folder, name)
    found = [path + INDEX_SUFFIX]
    found += [os.path.join(folder, e) for e in sorted(listdir(folder))
              if re.fullmatch(re.escape(name) + r"\.data-\d{5}-of-\d{5}", e)]
    found.append(path + ".meta")
    if is_old_checkpoint_file(path):
        found.append(path)
    return found


def saved_step(header, arrays):
    """The global step a checkpoint was saved at: its header's (an earlier gradflow's
    file), else its scalar integer ``global_step`` tensor, else ``None``."""
    if header.get("global_step") is not None:
        return header["global_step"]
    step = arrays.get("global_step")
    if step is not None and step.shape == () and step.dtype.kind in "iu":
        return int(step)
    return None


# -- the folder's ``checkpoint`` index ---------------------------------------------------


def index_state(folder, index_name):
    """The folder's index as a dict, or ``None``; and what is wrong with it, or ``None``."""
    index_path = os.path.join(folder, index_name)
    try:
        with open(index_path, "rb") as f:
            raw = f.read(_LARGEST_INDEX_FILE + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as err:
        return None, f"it cannot be read ({type(err).__name__}: {err})"
    if len(raw) > _LARGEST_INDEX_FILE:
        return None, f"it is larger than {_LARGEST_INDEX_FILE} bytes, more than any index"
    if raw.lstrip().startswith((b"model_checkpoint_path:", b"all_model_checkpoint_paths:")):
        try:  # TensorFlow's index, a text protobuf
            index = _relative_entries(tf_checkpoint.read_index_text(raw))
        except tf_checkpoint.TFCheckpointError as err:
            return None, f"it is a TensorFlow index that cannot be read: {err}"
    else:
        try:
            index = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            return None, f"it is not valid JSON ({type(err).__name__}: {err})"
    return _checked_index(index, folder)


def _checked_index(index, folder):
    paths = index.get("all_model_checkpoint_paths") if isinstance(index, dict) else None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return None, "it has no list of checkpoint names under 'all_model_checkpoint_paths'"
    newest = index.get("model_checkpoint_path")
    if newest is not None and not isinstance(newest, str):
        return None, f"its 'model_checkpoint_path' is {newest!r}, not a name"
    for entry in paths + ([newest] if newest is not None else []):
        if not _is_plain_name(entry):
            return None, (f"it lists {entry!r}, which is not a file name inside the folder "
                          f"(an index may name only files in its own folder)")
    stamps = index.get("all_model_checkpoint_timestamps")
    if isinstance(stamps, list) and len(stamps) == len(paths) and not all(map(_is_time, stamps)):
        return None, "its 'all_model_checkpoint_timestamps' are not all numbers"
    if not isinstance(stamps, list) or len(stamps) != len(paths):
        stamps = [_mtime(os.path.join(folder, p)) for p in paths]
    preserved = index.get("last_preserved_timestamp") or 0.0
    if not _is_time(preserved):
        return None, f"its 'last_preserved_timestamp' is {preserved!r}, not a number"
    return {"model_checkpoint_path": newest if newest is not None else
            (paths[-1] if paths else None),
            "all_model_checkpoint_paths": paths,
            "all_model_checkpoint_timestamps": [float(t) for t in stamps],
            "last_preserved_timestamp": float(preserved)}, None


def _is_time(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond any float
        return False


def _relative_entries(index):
    """A TensorFlow index with each entry as a name in the index's own folder: TensorFlow
    writes the path it saved to, absolute where that was, and a folder that was copied
    or moved since still holds its checkpoints. Nothing outside the folder is read."""
    index["all_model_checkpoint_paths"] = [os.path.basename(p)
                                           for p in index["all_model_checkpoint_paths"]]
    if index["model_checkpoint_path"] is not None:
        index["model_checkpoint_path"] = os.path.basename(index["model_checkpoint_path"])
    return index


def _is_plain_name(entry):
    """Whether an index entry names a file directly inside the index's folder."""
    return (entry not in ("", ".", "..") and "\0" not in entry
            and os.path.basename(entry) == entry
            and not (os.path.altsep and os.path.altsep in entry)
            and not os.path.isabs(entry))


def _mtime(path):
    for candidate in (path, path + ".index"):  # a TensorFlow checkpoint's time: its index's
        try:
            return os.path.getmtime(candidate)
        except (OSError, ValueError):
            pass
    return 0.0
