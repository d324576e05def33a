"""numba, when installed: compiled, multithreaded loops for the NumPy backend.

numba is optional (``pip install numba``; from the gradflow checkout,
``pip install -e '.[fast]'`` brings it with oneDNN). Everything that uses it
has a plain-NumPy path that gives the same numbers to float tolerance, taken
when numba is missing or when ``$GRADFLOW_NUMBA`` is ``0``.

Generated kernels are written as small Python modules into a private kernel
cache folder (``$GRADFLOW_CACHE/kernels``, else ``~/.cache/gradflow/kernels``;
see :func:`cache_dir`) and compiled with numba's ``cache=True``, so a kernel
that one process compiled loads in milliseconds in the next instead of being
compiled again.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import stat
import sys
import threading
import types
import warnings

log = logging.getLogger("gradflow.numba")

_lock = threading.Lock()
_kernels: dict = {}


@functools.lru_cache(maxsize=None)
def get_numba():
    """The numba module, or None where it is missing or disabled (``GRADFLOW_NUMBA=0``)."""
    if os.environ.get("GRADFLOW_NUMBA", "").strip() == "0":
        return None
    try:
        import numba
    except ImportError:
        log.info("numba is not installed: fused kernels run as NumPy ufunc sequences "
                 "(pip install numba for compiled ones)")
        return None
    return numba


def on_team(kernel, team, *args):
    """``kernel(*args)`` (a numba ``parallel=True`` kernel) on ``team`` threads: numba's
    thread count of the calling thread is ``team`` for the call and what it was after,
    so that the program's own numba kernels keep the count it chose."""
    numba = get_numba()
    before = numba.get_num_threads()
    numba.set_num_threads(team)
    try:
        return kernel(*args)
    finally:
        numba.set_num_threads(before)


def cache_dir():
    """The private folder where generated kernel modules (and numba's compiled code
    beside them) live, or ``None`` when there is none to trust: kernels then compile
    in each process and nothing is cached.

    It is ``$GRADFLOW_CACHE/kernels``, else ``~/.cache/gradflow/kernels``, created with
    mode 0700. A folder that another user owns, or that group or others may write,
    is refused with a warning (numba's cache index files there are pickles, so a file
    someone else planted would run as this user); one of this user's that others may
    only read is made private. There is no fallback folder.
    """
    root = os.environ.get("GRADFLOW_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "gradflow")
    path = os.path.join(root, "kernels")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.stat(path)
    except OSError as err:
        return _refuse(path, f"it cannot be created ({type(err).__name__}: {err})")
    if not stat.S_ISDIR(info.st_mode):
        return _refuse(path, "it is not a folder")
    if info.st_uid != os.getuid():
        return _refuse(path, f"it is owned by uid {info.st_uid}, not by this user "
                             f"(uid {os.getuid()})")
    if info.st_mode & 0o022:
        return _refuse(path, f"it is group- or world-writable (mode "
                             f"{stat.S_IMODE(info.st_mode):o}), so another user could have "
                             "planted code in it")
    if info.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError as err:
            return _refuse(path, f"it cannot be made private ({type(err).__name__}: {err})")
    return path


_refused: set = set()  # folders already warned about


def _refuse(path, why):
    if path not in _refused:
        _refused.add(path)
        warnings.warn(f"gradflow: not caching compiled kernels in {path}: {why}. Kernels "
                      "compile in every process instead; set GRADFLOW_CACHE to a folder of "
                      "your own to cache them", stacklevel=3)
    return None


def module_name(source: str) -> str:
    """The name of the module that holds the kernel ``source``: a hash of its text."""
    return f"gradflow_kernel_{hashlib.sha1(source.encode()).hexdigest()[:20]}"


def load_kernel(source: str, name: str):
    """The function ``name`` defined by the Python ``source``, loaded once per process.

    The source's numba decorators take ``cache=CACHE``: the module is written to the
    private cache folder under a hash of its text (so equal kernels share one compiled
    cache entry across processes) and ``CACHE`` is true; without a cache folder it is
    false. The code run is always ``source`` itself, never the file's contents: a file
    there that differs from it is rewritten before numba reads its cache for it.
    """
    module = module_name(source)
    key = (module, name)
    with _lock:
        fn = _kernels.get(key)
        if fn is not None:
            return fn
        folder = cache_dir()
        path = None if folder is None else os.path.join(folder, module + ".py")
        if path is not None and not _holds(path, source):
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)  # atomic: another process may write the same file
        loaded = types.ModuleType(module)
        loaded.__file__ = path or f"<gradflow kernel {module}>"
        loaded.CACHE = path is not None
        sys.modules[module] = loaded  # numba's cached code finds its globals by module name
        exec(compile(source, loaded.__file__, "exec"), loaded.__dict__)
        fn = _kernels[key] = getattr(loaded, name)
        return fn


def _holds(path, source):
    try:
        with open(path) as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False
