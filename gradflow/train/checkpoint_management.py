"""TF1's helpers over a folder of checkpoints and its ``checkpoint`` index:
``generate_checkpoint_state_proto``, ``update_checkpoint_state``,
``get_checkpoint_mtimes``, ``remove_checkpoint`` and ``checkpoints_iterator`` (the
evaluation loop's wait for each new checkpoint).

The index is written as TensorFlow's text ``CheckpointState`` (what ``Saver.save``
writes), atomically; gradflow's readers take each entry's file name in the index's own
folder, so an index naming paths elsewhere still only lists what that folder holds.
"""

from __future__ import annotations

import glob
import os
import time

from gradflow import tf_logging
from gradflow.atomic_files import write_atomically
from gradflow.train import tf_checkpoint
from gradflow.train.saver import INDEX_NAME, CheckpointState, latest_checkpoint

__all__ = ["checkpoints_iterator", "generate_checkpoint_state_proto",
           "get_checkpoint_mtimes", "remove_checkpoint", "update_checkpoint_state"]


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    """The ``CheckpointState`` of ``model_checkpoint_path`` and
    ``all_model_checkpoint_paths`` (to which the newest is added when it is not last);
    where ``save_dir`` is relative, relative paths are made relative to it (TF1).

    >>> gf.train.generate_checkpoint_state_proto("run", "run/model-10").model_checkpoint_path
    'model-10'
    """
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        tf_logging.info("%s is not in all_model_checkpoint_paths. Manually adding it.",
                        model_checkpoint_path)
        paths.append(model_checkpoint_path)
    stamps = list(all_model_checkpoint_timestamps or [])
    if stamps and len(stamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"({len(stamps)} vs {len(paths)})")
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, stamps,
                           last_preserved_timestamp or 0.0)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None):
    """Write ``save_dir``'s index (``latest_filename``, default ``checkpoint``) to name
    ``model_checkpoint_path`` as the newest checkpoint, atomically (TF1).

    >>> gf.train.update_checkpoint_state("/tmp/run", "/tmp/run/model-10")
    """
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                            all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps,
                                            last_preserved_timestamp)
    index_path = os.path.join(save_dir, latest_filename or INDEX_NAME)
    newest = state.model_checkpoint_path
    if not os.path.isabs(newest):
        newest = os.path.join(save_dir, newest)
    if os.path.abspath(newest) == os.path.abspath(index_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           f"checkpoint state.  Please use a different save path.")
    text = tf_checkpoint.write_index_text({
        "model_checkpoint_path": state.model_checkpoint_path,
        "all_model_checkpoint_paths": state.all_model_checkpoint_paths,
        "all_model_checkpoint_timestamps": state.all_model_checkpoint_timestamps,
        "last_preserved_timestamp": state.last_preserved_timestamp})
    write_atomically(index_path, text)


def _first_mtime(pattern):
    found = sorted(glob.glob(glob.escape(pattern)))
    return os.stat(found[0]).st_mtime_ns / 1e9 if found else None


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification times of the checkpoints ``checkpoint_prefixes`` (each its
    ``.index`` file, or the file at the prefix), in seconds; missing ones are left out
    (TF1).

    >>> gf.train.get_checkpoint_mtimes([saver.save(sess, "/tmp/model")])
    [1700000000.25]
    """
    mtimes = []
    for prefix in checkpoint_prefixes:
        mtime = _first_mtime(prefix + ".index")
        if mtime is None:
            mtime = _first_mtime(prefix)
        if mtime is not None:
            mtimes.append(mtime)
    return mtimes


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2,
                      meta_graph_suffix="meta"):
    """Delete the checkpoint ``checkpoint_prefix``: its ``.index`` and data files (V2) or
    the file at the prefix (V1), and its ``.meta``; files already gone are skipped with a
    warning (TF1). The index of its folder is left as it is.

    >>> gf.train.remove_checkpoint("/tmp/run/model-10")
    """
    doomed = [f"{checkpoint_prefix}.{meta_graph_suffix}"]
    if int(checkpoint_format_version) == 2:
        doomed.append(checkpoint_prefix + ".index")
        doomed += sorted(glob.glob(glob.escape(checkpoint_prefix) + ".data-?????-of-?????"))
    else:
        doomed.append(checkpoint_prefix)
    for path in doomed:
        try:
            os.remove(path)
        except OSError as err:
            tf_logging.warning("Ignoring: %s", err)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yield the path of each new checkpoint of ``checkpoint_dir`` as it appears, at most
    one per ``min_interval_secs``; after ``timeout`` seconds without one it ends, or asks
    ``timeout_fn()`` and ends when that returns True (TF1).

    >>> for path in gf.train.checkpoints_iterator("/tmp/run", timeout=600):
    ...     evaluate(path)
    """
    last = None
    while True:
        path = _wait_for_new_checkpoint(checkpoint_dir, last, timeout)
        if path is None:
            if timeout_fn is None:
                tf_logging.info("Timed-out waiting for a checkpoint.")
                return
            if timeout_fn():
                return
            continue
        started = time.time()
        last = path
        yield path
        rest = started + min_interval_secs - time.time()
        if rest > 0:
            time.sleep(rest)


def _wait_for_new_checkpoint(checkpoint_dir, last, timeout, seconds_to_sleep=1):
    """The newest checkpoint of ``checkpoint_dir`` once it is not ``last``; None after
    ``timeout`` seconds."""
    tf_logging.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop = None if timeout is None else time.time() + timeout
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last:
            tf_logging.info("Found new checkpoint at %s", path)
            return path
        if stop is not None and time.time() + seconds_to_sleep > stop:
            return None
        time.sleep(seconds_to_sleep)
