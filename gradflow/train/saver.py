"""Checkpoints: save and restore variable values in TensorFlow's own layout.

A checkpoint ``prefix`` is TensorFlow's V2 bundle, as TensorFlow's Saver writes it:
``prefix.index`` (each variable's name, dtype, shape, and the place and CRC-32C of its
bytes) and ``prefix.data-00000-of-00001`` (the values, little-endian), written by
``tf_checkpoint_writer``; TensorFlow's ``tf.train.load_checkpoint`` and Saver read them.
Both files are written to temporaries in the same folder, fsynced and renamed into
place, data file first, so a failed save never damages an earlier checkpoint. The
``checkpoint`` index in the folder lists the recent checkpoints, newest last, in
TensorFlow's text format (TF1's ``CheckpointState`` fields), by their names in the
folder, so a copied or moved folder keeps its checkpoints.

``Saver.restore`` reads the checkpoints TensorFlow writes (sharded ones too: any
``prefix.data-<k>-of-<n>``, listed by TensorFlow's text ``checkpoint`` index:
``gradflow.train.tf_checkpoint``), and the single ``.npz`` files earlier versions of
gradflow wrote (listed by a JSON ``checkpoint`` index), so a program resumes from either.

Every error says which file is wrong, what is wrong with it and what to do:
a missing file lists the checkpoints that do exist beside it, and a damaged
one names the newest earlier checkpoint that loads.
"""

from __future__ import annotations

import difflib
import os
import re
import time
import warnings

import numpy as np

from gradflow import tf_logging
from gradflow.atomic_files import write_atomically
from gradflow.errors import FailedPreconditionError
from gradflow.graph import get_default_graph
from gradflow.graph_io.meta_graph import write_saver_meta_graph
from gradflow.session import Session
from gradflow.train import tf_checkpoint, tf_checkpoint_writer
from gradflow.train.checkpoint_files import (
    CheckpointError,
    CheckpointNotFoundError,
    DamagedCheckpointError,  # noqa: F401 - gradflow.train.saver.DamagedCheckpointError
    _mtime,
    _Unreadable,
    files_of,
    is_bundle,
    is_old_checkpoint_file,
    listdir,
    saved_step,
    unreadable_error,
)
from gradflow.train.checkpoint_files import index_state as _index_state
from gradflow.train.checkpoint_files import read as _read
from gradflow.variables import GLOBAL_VARIABLES, Variable

INDEX_NAME = "checkpoint"
_TF_SUFFIXES = (".meta", ".data-00000-of-00001")  # a TF checkpoint's files but its index
_SCAN_LIMIT = 200  # files looked at when listing the checkpoints of a folder

# What the last gf.train.latest_checkpoint call saw: (folder, result, finding).
# Saver.restore(sess, None) reads it to say where no checkpoint was found.
_last_search = None


class CheckpointState:
    """TF1's ``CheckpointState``: what a folder's ``checkpoint`` index records.

    ``model_checkpoint_path`` is the newest checkpoint, ``all_model_checkpoint_paths``
    the ones still kept, oldest first; paths are joined with the folder, as in TF1.
    """

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths,
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self) -> str:
        return (f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
                f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})")


class Saver:
    """Saves and restores variables (default: every global variable of the graph).

    The arguments are TF1's. ``var_list`` is a list (or set) of variables, saved
    under their names, or a dict name -> variable. ``max_to_keep`` recent
    checkpoints stay in the folder; ``None`` or 0 keeps all. Of the checkpoints
    that ``max_to_keep`` would delete, one every ``keep_checkpoint_every_n_hours``
    hours of this Saver's life is kept on disk (and leaves the index).
    ``reshape=True`` restores a saved value into a variable of another shape with
    the same number of elements. ``pad_step_number=True`` writes the step as 8
    digits. ``allow_empty=True`` makes a Saver with no variables do nothing
    instead of raising.

    Accepted and ignored, since gradflow writes one data file per checkpoint (a
    TensorFlow Saver on one device does too) in TensorFlow's V2 layout, and no graph
    protobufs: ``sharded``, ``name``, ``restore_sequentially``, ``defer_build``,
    ``write_version`` (the V1 layout is never written), ``save_relative_paths`` (the
    index always holds paths relative to its folder) and ``filename``. ``saver_def``
    and ``builder`` are refused.

    >>> saver = gf.train.Saver()
    >>> path = saver.save(sess, "ckpt/model", global_step=step)
    >>> saver.restore(sess, gf.train.latest_checkpoint("ckpt"))
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None,
                 restore_sequentially=False, saver_def=None, builder=None,
                 defer_build=False, allow_empty=False, write_version=None,
                 pad_step_number=False, save_relative_paths=False, filename=None):
        for arg, value in (("saver_def", saver_def), ("builder", builder)):
            if value is not None:
                raise NotImplementedError(
                    f"Saver({arg}=...) is not supported: gradflow checkpoints are not "
                    "built from graph protobufs; pass var_list= (or nothing, for every "
                    "global variable) instead")
        if max_to_keep is not None and (isinstance(max_to_keep, bool)
                                        or not isinstance(max_to_keep, (int, np.integer))
                                        or max_to_keep < 0):
            raise ValueError(f"Saver: max_to_keep must be an int >= 0 (or None or 0 to keep "
                             f"every checkpoint), got {max_to_keep!r}")
        hours = keep_checkpoint_every_n_hours
        if hours is not None and (not isinstance(hours, (int, float, np.number))
                                  or isinstance(hours, bool) or not hours > 0):
            raise ValueError("Saver: keep_checkpoint_every_n_hours must be a number of hours "
                             f"> 0, got {hours!r}")
        items = _var_items(var_list)
        names = [n for n, _ in items]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"Saver: several variables share the names {duplicates}; give "
                             "them distinct names (name=...), or pass var_list as a dict "
                             "that maps a distinct name to each variable")
        if not items and not allow_empty:
            where = "in var_list" if var_list is not None else "in the default graph"
            raise ValueError(f"Saver: no variables to save ({where}); create the variables "
                             "before the Saver, pass var_list=, or pass allow_empty=True for "
                             "a Saver that does nothing")
        self._vars = dict(items)
        self._max_to_keep = max_to_keep
        self._reshape = bool(reshape)
        self._pad_step_number = bool(pad_step_number)
        self._keep_every = None if hours is None or hours >= 10000.0 else float(hours) * 3600
        self._next_keep_time = _now() + (self._keep_every or 0.0)
        self._written = set()  # absolute paths of the checkpoints this Saver wrote

    def build(self):
        """TF1's ``Saver.build``: nothing to build in gradflow."""

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Write the variables' values to ``save_path[-global_step]``; return that path.

        A variable this session has not given a value yet gets its initial value
        first (as on the first run that needs it), and that value is saved.
        ``latest_filename`` names the index file (default ``"checkpoint"``);
        ``write_state=False`` writes neither the index nor deletes old checkpoints.
        ``write_meta_graph`` writes the graph to ``<path>.<meta_graph_suffix>`` for
        ``gf.train.import_meta_graph`` (``gradflow.graph_io.meta_graph``).
        Returns ``None`` for an empty Saver (``allow_empty``).
        """
        _check_session(sess, "save", save_path)
        index_name = _index_name(latest_filename)
        base = _path_string(save_path, "Saver.save")
        step = _step_value(sess, global_step)
        if step is not None:
            base = f"{base}-{step:08d}" if self._pad_step_number else f"{base}-{step}"
        if os.path.isdir(base):
            raise ValueError(f"Saver.save: {base} is a folder; save_path is a file path and "
                             f"the prefix of the checkpoint's name, such as "
                             f"{os.path.join(base, 'model')!r}")
        if not self._vars:
            return None
        self._check_graph(sess, "save")
        arrays = self._values(sess)
        _write_checkpoint(base, arrays)
        self._written.add(os.path.abspath(base))
        if is_old_checkpoint_file(base):  # what an earlier gradflow saved here: replaced
            os.remove(base)
        if write_state:
            self._update_index(base, index_name)
        if write_meta_graph:
            write_saver_meta_graph(self, sess, base, meta_graph_suffix)
        return base

    def restore(self, sess, save_path):
        """Set the variables from the checkpoint at ``save_path``; all or nothing.

        Nothing changes when the file is missing, damaged or does not match the
        variables; the error says why, and which checkpoint of the folder would do.
        """
        if save_path is None:
            raise CheckpointError(_none_path_message())
        _check_session(sess, "restore", save_path)
        path = _path_string(save_path, "Saver.restore")
        if not self._vars:
            return
        self._check_graph(sess, "restore")
        if not _exists(path):
            raise CheckpointNotFoundError(_missing_file_message(path))
        try:
            header, arrays = _read(path, list(self._vars))
        except _Unreadable as err:
            raise unreadable_error(err, f"checkpoint {path} {err}; nothing was restored. "
                                        f"{self._intact_hint(path)}") from None
        problems = self._mismatches(header, arrays)
        if problems:
            raise CheckpointError(f"checkpoint {path} does not match the variables to "
                                  f"restore: {'; '.join(problems)}. Nothing was restored.")
        values = {var: self._value(name, var, arrays) for name, var in self._vars.items()}
        run = sess.run_state
        converted = {var: run.backend.asarray(np.array(v, copy=True))
                     for var, v in values.items()}
        with run.store_lock:
            run.store.update(converted)

    # -- helpers -------------------------------------------------------------------

    def _check_graph(self, sess, verb):
        foreign = [n for n, v in self._vars.items() if v.graph is not sess.graph]
        if foreign:
            raise ValueError(f"Saver.{verb}: the variables {foreign} belong to another graph "
                             "than the session's; create the Saver in the graph the session "
                             "runs (with graph.as_default(): saver = gf.train.Saver())")

    def _values(self, sess):
        """The variables' values as NumPy arrays; uninitialized ones get their initial value."""
        run = sess.run_state
        missing = [v for v in self._vars.values() if v not in run.store]
        if missing:
            sess.initialize_missing(missing)
        with run.store_lock:
            return {name: np.array(run.backend.to_numpy(run.store[var]), order="C")
                    for name, var in self._vars.items()}

    def _mismatches(self, header, arrays):
        """What keeps ``arrays`` from being restored into this Saver's variables."""
        problems = []
        saved = header.get("names") or sorted(arrays)
        missing = [n for n in self._vars if n not in arrays]
        if missing:
            listed = ", ".join(repr(n) for n in missing)
            problems.append(f"{'variable' if len(missing) == 1 else 'variables'} {listed} "
                            f"{'is' if len(missing) == 1 else 'are'} missing from the file "
                            f"(it holds {', '.join(repr(n) for n in saved)}); restore only saved "
                            "variables with gf.train.Saver(var_list=[...]), or map names to "
                            "variables with a dict")
        dtypes = dict(zip(saved, header.get("dtypes") or []))
        for name, var in self._vars.items():
            if name not in arrays:
                continue
            value = arrays[name]
            want = tuple(var.shape)
            if tuple(value.shape) != want and not (
                    self._reshape and value.size == int(np.prod(want, dtype=np.int64))):
                hint = ""
                if value.size == int(np.prod(want, dtype=np.int64)):
                    hint = " (same size: Saver(reshape=True) would reshape it)"
                problems.append(f"variable '{name}' has shape {tuple(value.shape)} in the file, "
                                f"the graph expects {want}{hint}")
            saved_dtype = dtypes.get(name)
            if saved_dtype != var.dtype.name or value.dtype != np.dtype(var.dtype.as_numpy_dtype):
                problems.append(f"variable '{name}' has dtype {saved_dtype or value.dtype} in the "
                                f"file, the graph expects {var.dtype.name} (create it with "
                                f"dtype={saved_dtype or value.dtype} to restore it)")
        return problems

    def _value(self, name, var, arrays):
        value = arrays[name]
        return value.reshape(tuple(var.shape)) if self._reshape else value

    def _intact_hint(self, damaged):
        """Which earlier checkpoint beside ``damaged`` loads and fits, checked by loading it."""
        folder = os.path.dirname(os.path.abspath(damaged))
        indexed, others = _scan(folder, INDEX_NAME)
        same = os.path.abspath(damaged)
        candidates = [p for p in indexed[::-1] + others[::-1] if os.path.abspath(p) != same]
        if not candidates:
            return (f"There is no other checkpoint in {folder}: restore a backup, or start "
                    "from the initial values.")
        failures = []
        for candidate in candidates:
            try:
                header, arrays = _read(candidate, list(self._vars))
            except _Unreadable as err:
                failures.append(f"{os.path.basename(candidate)} {err.short}")
                continue
            if self._mismatches(header, arrays):
                failures.append(f"{os.path.basename(candidate)} does not match these variables")
                continue
            step = saved_step(header, arrays)
            at = "" if step is None else f" (global step {step})"
            skipped = f" ({'; '.join(failures)})" if failures else ""
            return (f"The newest intact checkpoint in the same folder is {candidate}{at}"
                    f"{skipped}: it loads and matches these variables; "
                    f"saver.restore(sess, {candidate!r}) resumes from it.")
        return (f"No other checkpoint in {folder} can be restored ({'; '.join(failures)}): "
                "restore a backup, or start from the initial values.")

    def _update_index(self, path, index_name):
        folder = os.path.dirname(os.path.abspath(path))
        base = os.path.basename(path)
        state, problem = _index_state(folder, index_name)
        if problem is not None:  # nothing it lists is trusted or deleted: a new index replaces it
            message = (f"Saver.save: the checkpoint index {os.path.join(folder, index_name)} "
                       f"was damaged ({problem}); it is replaced by a new index that lists "
                       f"{base} only, and no file it listed was deleted")
            tf_logging.warning("%s", message)
            warnings.warn(message, stacklevel=3)
        old = list(zip(state["all_model_checkpoint_paths"],
                       state["all_model_checkpoint_timestamps"])) if state else []
        now = _now()
        recent = [(p, t) for p, t in old if p != base] + [(base, now)]
        preserved = state["last_preserved_timestamp"] if state else 0.0
        keep = self._max_to_keep
        if keep:
            while len(recent) > keep:
                name, stamp = recent.pop(0)
                if self._keep_every and stamp > self._next_keep_time:
                    self._next_keep_time += self._keep_every  # kept on disk, off the index
                    preserved = stamp
                    continue
                self._remove_old(folder, name, base)
        index = {"model_checkpoint_path": base,
                 "all_model_checkpoint_paths": [p for p, _ in recent],
                 "all_model_checkpoint_timestamps": [t for _, t in recent],
                 "last_preserved_timestamp": preserved}
        write_atomically(os.path.join(folder, index_name),
                         tf_checkpoint.write_index_text(index))

    def _remove_old(self, folder, name, newest):
        """Delete the rotated-out checkpoint ``name`` of ``folder`` (its index first, then
        its data files and ``.meta``), but only one this Saver wrote, or one named like
        this Saver's checkpoints (``newest`` without its step, then ``-<step>``) that is a
        checkpoint (as TF1's Saver deletes those of its series it recovered from the
        index): an index written by someone else never makes a save delete anything
        else."""
        path = os.path.join(folder, name)
        if os.path.abspath(path) not in self._written:
            prefix = re.sub(r"-\d+$", "", newest)
            if not (re.fullmatch(re.escape(prefix) + r"(-\d+)?", name)
                    and (is_bundle(path) or is_old_checkpoint_file(path))):
                return
        for doomed_path in files_of(folder, name):
            try:
                os.remove(doomed_path)
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                pass


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint listed in ``checkpoint_dir``, or ``None``.

    Listed checkpoints whose file is gone are skipped. An index file that
    exists but cannot be read raises a ``CheckpointError`` rather than looking
    like an empty folder.
    """
    global _last_search
    folder = _path_string(checkpoint_dir, "latest_checkpoint")
    index_name = _index_name(latest_filename)
    state = get_checkpoint_state(folder, index_name)
    found = None
    if state is not None:
        found = next((p for p in reversed(state.all_model_checkpoint_paths)
                      if _exists(p)), None)
    _last_search = (folder, found, None if found else _no_checkpoint_finding(folder, index_name))
    return found


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """TF1's ``get_checkpoint_state``: the folder's index as a :class:`CheckpointState`.

    ``None`` when the folder has no index. An index that exists but cannot be
    read raises a ``CheckpointError`` naming the file.
    """
    folder = _path_string(checkpoint_dir, "get_checkpoint_state")
    index_name = _index_name(latest_filename)
    state, problem = _index_state(folder, index_name)
    if problem is not None:
        raise CheckpointError(_bad_index_message(folder, index_name, problem))
    if state is None:
        return None
    paths = [os.path.join(folder, p) for p in state["all_model_checkpoint_paths"]]
    newest = state["model_checkpoint_path"]
    return CheckpointState(os.path.join(folder, newest) if newest else None, paths,
                           state["all_model_checkpoint_timestamps"],
                           state["last_preserved_timestamp"])


def checkpoint_exists(checkpoint_prefix):
    """TF1's ``checkpoint_exists``: whether a checkpoint is at this path (its ``.index``,
    or the file of an earlier gradflow)."""
    return _exists(_path_string(checkpoint_prefix, "checkpoint_exists"))


# -- helpers -----------------------------------------------------------------------


def _var_items(var_list):
    """``var_list`` as (name, variable) pairs, checked."""
    if var_list is None:
        var_list = get_default_graph().get_collection(GLOBAL_VARIABLES)
    if isinstance(var_list, dict):
        items = list(var_list.items())
        for key, _ in items:
            if not isinstance(key, str):
                raise TypeError(f"Saver: the keys of a var_list dict are the names to save "
                                f"under and must be str, got {key!r}")
    elif isinstance(var_list, (list, tuple, set, frozenset)):
        ordered = sorted(var_list, key=lambda v: str(getattr(v, "name", v))) \
            if isinstance(var_list, (set, frozenset)) else list(var_list)
        items = [(getattr(v, "name", None), v) for v in ordered]
    else:
        raise TypeError(f"Saver: var_list must be a list, tuple or set of variables, or a dict "
                        f"name -> variable, got {type(var_list).__name__} {var_list!r}")
    for name, var in items:
        if not isinstance(var, Variable):
            raise TypeError(f"Saver: {var!r} (under {name!r}) is not a gf.Variable; a Saver "
                            "saves variables only")
    return items


def _now():
    """The time in seconds (module-level so tests can move it)."""
    return time.time()


def _check_session(sess, verb, save_path):
    if not isinstance(sess, Session):
        swapped = " (the arguments are (sess, save_path): swapped?)" \
            if isinstance(save_path, Session) else ""
        raise TypeError(f"Saver.{verb}: sess must be a gf.Session, got "
                        f"{type(sess).__name__} {sess!r}{swapped}")
    if sess.run_state.closed:
        raise FailedPreconditionError(f"Saver.{verb}: the session is closed, and its variable "
                                      f"values are gone; {verb} inside the `with gf.Session()` "
                                      "block, before the session closes")


def _path_string(path, where):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: expected a path (str or os.PathLike), got "
                        f"{type(path).__name__} {path!r}")
    return os.fspath(path)


def _index_name(latest_filename):
    if latest_filename is None:
        return INDEX_NAME
    if not isinstance(latest_filename, str) or not latest_filename \
            or os.path.basename(latest_filename) != latest_filename:
        raise ValueError(f"latest_filename must be a file name without a folder (the index "
                         f"kept beside the checkpoints), got {latest_filename!r}")
    return latest_filename


def _step_value(sess, global_step):
    """The global step as an int: from an int, or a variable's value in ``sess``."""
    if global_step is None:
        return None
    if hasattr(global_step, "graph"):
        global_step = sess.run(global_step)
    try:
        step = np.asarray(global_step)
        if step.shape != () or step.dtype.kind not in "iu":
            raise TypeError
        return int(step)
    except (TypeError, ValueError):
        raise TypeError(f"Saver.save: global_step must be an int, or a scalar integer variable "
                        f"or tensor such as gf.train.get_or_create_global_step(), got "
                        f"{global_step!r}") from None


def _write_checkpoint(base, arrays):
    """Write ``arrays`` as the checkpoint ``base`` (module-level so tests can fail it)."""
    tf_checkpoint_writer.write(base, arrays)


def _bad_index_message(folder, index_name, problem):
    indexed, others = _scan(folder, None)
    found = (f"checkpoint files there: {_names(others)}; restore one by its path"
             if others else "no checkpoint file is there")
    return (f"the checkpoint index {os.path.join(folder, index_name)} is damaged: {problem}. "
            f"Delete it (the next Saver.save writes a new one) or repair it; {found}")


def _scan(folder, index_name):
    """The checkpoints of ``folder``: (listed in the index and present, oldest first;
    other checkpoints there, of either format, oldest first by modification time)."""
    state = _index_state(folder, index_name)[0] if index_name else None
    listed = state["all_model_checkpoint_paths"] if state else []
    indexed = [os.path.join(folder, p) for p in listed if _exists(os.path.join(folder, p))]
    entries = sorted(listdir(folder))[:_SCAN_LIMIT]
    skip = set(listed) | {INDEX_NAME, index_name}
    others = set()
    for entry in entries:
        path = os.path.join(folder, entry)
        if entry.startswith("."):
            continue
        name = entry.removesuffix(tf_checkpoint_writer.INDEX_SUFFIX)
        if name != entry and name not in skip and is_bundle(os.path.join(folder, name)):
            others.add(os.path.join(folder, name))
        elif entry not in skip and os.path.isfile(path) and is_old_checkpoint_file(path):
            others.add(path)
    return indexed, sorted(others, key=lambda p: (_mtime(p), p))


def _names(paths):
    return ", ".join(os.path.basename(p) for p in paths)


def _no_checkpoint_finding(folder, index_name):
    """Why ``folder`` has no checkpoint to restore, in words."""
    if not os.path.exists(folder):
        return f"the folder {folder} does not exist"
    if not os.path.isdir(folder):
        return f"{folder} is a file, not a folder"
    state, _ = _index_state(folder, index_name)
    _, others = _scan(folder, index_name)
    unlisted = (f"; it holds checkpoint files not in an index ({_names(others)}): restore one "
                "by its path") if others else ""
    if state is None:
        return f"{folder} has no '{index_name}' index, so nothing was saved there{unlisted}"
    if not state["all_model_checkpoint_paths"]:
        return f"the index in {folder} lists no checkpoint{unlisted}"
    return (f"the index in {folder} lists {', '.join(state['all_model_checkpoint_paths'])}, "
            f"but none of these files exists (moved or deleted?){unlisted}")


def _none_path_message():
    start = ("Saver.restore: save_path is None. gf.train.latest_checkpoint returns None when "
             "it finds no checkpoint")
    if _last_search is not None and _last_search[1] is None:
        folder, _, finding = _last_search
        return (f"{start}, and its last search, in {folder}, found none: {finding}. Check the "
                "folder name, or start from the initial values when there is nothing to "
                "resume (`if path: saver.restore(sess, path)`).")
    return (f"{start}; pass the path of a checkpoint file, and check the folder you gave "
            "gf.train.latest_checkpoint.")


def _missing_file_message(path):
    """``path`` is not a file: say so, and list the checkpoints that are there instead."""
    if os.path.isdir(path):
        indexed, _ = _scan(path, INDEX_NAME)
        use = f"; its newest checkpoint is {indexed[-1]}" if indexed else ""
        return (f"checkpoint {path} is a folder, not a checkpoint file{use}. Pass a checkpoint "
                f"file, such as gf.train.latest_checkpoint({path!r})")
    folder = os.path.dirname(os.path.abspath(path))
    message = f"checkpoint {path}: no such file"
    tf_files = [path + s for s in _TF_SUFFIXES if os.path.exists(path + s)]
    if tf_files:
        message += (f" ({_names(tf_files)} exists, but not {os.path.basename(path)}.index: "
                    "a TensorFlow checkpoint is read through its .index file)")
    if not os.path.isdir(folder):
        return f"{message}, and the folder {folder} does not exist."
    indexed, others = _scan(folder, INDEX_NAME)
    present = others + indexed
    if not present:
        return f"{message}, and {folder} holds no checkpoint."
    message += f". Checkpoints in {folder}: {_names(present)}"
    close = difflib.get_close_matches(os.path.basename(path),
                                      [os.path.basename(p) for p in present], n=1)
    message += f"; did you mean {os.path.join(folder, close[0])}?" if close else "."
    if indexed:
        message += (f" The newest is {indexed[-1]}, which "
                    f"gf.train.latest_checkpoint({folder!r}) returns.")
    return message


def _exists(path):
    """Whether a checkpoint is at ``path``: its ``.index``, or an earlier gradflow's file."""
    return os.path.isfile(path) or tf_checkpoint.is_tf_checkpoint(path)
