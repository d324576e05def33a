"""Checkpoints: save and restore variable values in one backend-neutral file.

A checkpoint is one ``.npz`` archive written with NumPy: each variable under
its name, plus ``__header__`` (JSON as bytes: format version, names, shapes,
dtypes, global step). Files are written to a temporary file in the same
folder, fsynced and renamed into place, so a failed save never damages an
earlier checkpoint. A JSON ``checkpoint`` index in the folder lists the
recent checkpoints, newest last.
"""

from __future__ import annotations

import io
import json
import os
import tempfile

import numpy as np

from gradflow.errors import FailedPreconditionError, InvalidArgumentError
from gradflow.graph import get_default_graph
from gradflow.variables import GLOBAL_VARIABLES

FORMAT_VERSION = 1
INDEX_NAME = "checkpoint"
_HEADER_KEY = "__header__"


class CheckpointError(InvalidArgumentError):
    """A checkpoint is missing, unreadable, or does not match the variables to restore."""


class Saver:
    """Saves and restores variables (default: every global variable of the graph).

    ``var_list`` is a list of variables (saved under their names) or a dict
    name -> variable. ``max_to_keep`` recent checkpoints stay in the folder;
    ``None`` or 0 keeps all.

    >>> saver = gf.train.Saver()
    >>> path = saver.save(sess, "ckpt/model", global_step=step)
    >>> saver.restore(sess, gf.train.latest_checkpoint("ckpt"))
    """

    def __init__(self, var_list=None, max_to_keep=5):
        if var_list is None:
            var_list = get_default_graph().get_collection(GLOBAL_VARIABLES)
        if isinstance(var_list, dict):
            items = list(var_list.items())
        else:
            items = [(v.name, v) for v in var_list]
        names = [name for name, _ in items]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"Saver: several variables share the names {duplicates}")
        if not items:
            raise ValueError("Saver: no variables to save")
        self._vars = dict(items)
        self._max_to_keep = max_to_keep

    def save(self, sess, save_path, global_step=None):
        """Write the variables' values to ``save_path[-global_step]``; return that path."""
        step = _step_value(sess, global_step)
        path = os.fspath(save_path) if step is None else f"{os.fspath(save_path)}-{step}"
        arrays = self._values(sess)
        header = {
            "format_version": FORMAT_VERSION,
            "names": list(arrays),
            "shapes": [list(a.shape) for a in arrays.values()],
            "dtypes": [self._vars[n].dtype.name for n in arrays],
            "global_step": step,
        }
        buffer = io.BytesIO()
        _write_npz(buffer, {_HEADER_KEY: _encode_header(header), **arrays})
        _write_atomically(path, buffer.getvalue())
        self._update_index(path)
        return path

    def restore(self, sess, save_path):
        """Set the variables from the checkpoint at ``save_path``; all or nothing."""
        path = os.fspath(save_path)
        header, arrays = _read_checkpoint(path, list(self._vars))
        values = {}
        for name, var in self._vars.items():
            values[var] = _checked(path, name, var, header, arrays)
        backend = sess.backend
        converted = {var: backend.asarray(np.array(v, copy=True)) for var, v in values.items()}
        sess._store.update(converted)

    def _values(self, sess):
        out = {}
        for name, var in self._vars.items():
            if var not in sess._store:
                raise FailedPreconditionError(
                    f"cannot save variable '{name}': it is not initialized in this session")
            out[name] = np.array(sess.backend.to_numpy(sess._store[var]), order="C")
        return out

    def _update_index(self, path):
        folder = os.path.dirname(os.path.abspath(path))
        base = os.path.basename(path)
        recent = [p for p in _read_index(folder) if p != base] + [base]
        keep = self._max_to_keep
        if keep:
            for old in recent[:-keep]:
                try:
                    os.remove(os.path.join(folder, old))
                except FileNotFoundError:
                    pass
            recent = recent[-keep:]
        index = {"model_checkpoint_path": base, "all_model_checkpoint_paths": recent}
        _write_atomically(os.path.join(folder, INDEX_NAME), json.dumps(index).encode())


def latest_checkpoint(checkpoint_dir):
    """The path of the newest checkpoint listed in ``checkpoint_dir``, or ``None``."""
    folder = os.fspath(checkpoint_dir)
    recent = _read_index(folder)
    for base in reversed(recent):
        path = os.path.join(folder, base)
        if os.path.isfile(path):
            return path
    return None


# -- helpers -----------------------------------------------------------------------


def _step_value(sess, global_step):
    """The global step as an int: from an int, or a variable's value in ``sess``."""
    if global_step is None:
        return None
    if hasattr(global_step, "graph"):
        global_step = sess.run(global_step)
    return int(global_step)


def _encode_header(header):
    return np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)


def _write_npz(file, arrays):
    """Write ``arrays`` to ``file`` as an uncompressed .npz (module-level so tests can fail it)."""
    np.savez(file, **arrays)


def _write_atomically(path, data):
    """Write ``data`` to a temp file beside ``path``, fsync, then rename it over ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _read_index(folder):
    try:
        with open(os.path.join(folder, INDEX_NAME), encoding="utf-8") as f:
            index = json.load(f)
        return list(index.get("all_model_checkpoint_paths", []))
    except (OSError, ValueError, AttributeError):
        return []


def _read_checkpoint(path, names):
    """The header and the arrays of ``names`` present in the file (read fully, then closed)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path}: no such file (use "
                              "gf.train.latest_checkpoint(folder) to find the newest one)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(npz[_HEADER_KEY].tobytes().decode("utf-8"))
            arrays = {n: npz[n] for n in names if n in npz.files}
    except Exception as err:  # zip, npy and JSON errors come in many types
        raise CheckpointError(f"checkpoint {path}: the file is corrupt or not a gradflow "
                              f"checkpoint ({type(err).__name__}: {err})") from None
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {path}: format version "
                              f"{header.get('format_version')!r}, expected {FORMAT_VERSION}")
    return header, arrays


def _checked(path, name, var, header, arrays):
    """The saved value of ``name``, after checking its presence, shape and dtype."""
    if name not in arrays:
        raise CheckpointError(f"checkpoint {path}: variable '{name}' is missing from the "
                              "file")
    value = arrays[name]
    want_shape = tuple(var.shape)
    if tuple(value.shape) != want_shape:
        raise CheckpointError(f"checkpoint {path}: variable '{name}' has shape "
                              f"{tuple(value.shape)} in the file, the graph expects "
                              f"{want_shape}")
    names = header.get("names", [])
    saved_dtype = header["dtypes"][names.index(name)] if name in names else None
    if saved_dtype != var.dtype.name or value.dtype != np.dtype(var.dtype.as_numpy_dtype):
        raise CheckpointError(f"checkpoint {path}: variable '{name}' has dtype "
                              f"{saved_dtype or value.dtype} in the file, the graph expects "
                              f"{var.dtype.name}")
    return value

