"""Writing a file so that it is either the old one or the new one, never a part.

Checkpoints, their index and graph files are written through ``write_atomically``:
to a temporary file beside the target, flushed to disk, then renamed over it. A
process killed mid-write leaves its temporary behind; the next write into that
folder removes it (only files named as this module names them, of this user, by a
process that is gone).
"""

from __future__ import annotations

import os
import re
import tempfile


def write_atomically(path, data) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync, then rename it over ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    _remove_stale_temporaries(folder)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.{os.getpid()}.",
                               suffix=".tmp")
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


_TEMPORARY = re.compile(r"\..+\.(\d+)\.[A-Za-z0-9_]+\.tmp")


def _remove_stale_temporaries(folder):
    """Delete the temporaries that saves killed before their rename left in ``folder``:
    files of this user named as ``write_atomically`` names them, by a process that is
    gone (a save in progress in another process keeps its file)."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        match = _TEMPORARY.fullmatch(entry)
        if match is None or _process_alive(int(match.group(1))):
            continue
        path = os.path.join(folder, entry)
        try:
            if os.lstat(path).st_uid == os.getuid():
                os.remove(path)
        except OSError:
            pass


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or a pid this system cannot name: keep its file
    return True
