"""numba, when installed: compiled, multithreaded loops for the NumPy backend.

numba is optional (``pip install 'gradflow[fast]'``). Everything that uses it
has a plain-NumPy path that gives the same numbers to float tolerance, taken
when numba is missing or when ``$GRADFLOW_NUMBA`` is ``0``.

Generated kernels are written as small Python modules under the kernel cache
directory (``$GRADFLOW_CACHE``, else ``~/.cache/gradflow``) and compiled with
numba's ``cache=True``, so a kernel that one process compiled loads in
milliseconds in the next instead of being compiled again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import threading

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
                 "(pip install 'gradflow[fast]' for compiled ones)")
        return None
    return numba


def cache_dir() -> str:
    """Where generated kernel modules (and numba's compiled code beside them) live."""
    root = os.environ.get("GRADFLOW_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "gradflow")
    path = os.path.join(root, "kernels")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:  # a read-only home: compile per process instead
        path = os.path.join(tempfile.gettempdir(), f"gradflow-kernels-{os.getuid()}")
        os.makedirs(path, exist_ok=True)
    return path


def load_kernel(source: str, name: str):
    """The function ``name`` defined by the Python ``source`` (which uses numba's
    ``cache=True``), loaded once per process; the module file is named by a hash of
    the source, so equal kernels share one compiled cache entry across processes."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:20]
    key = (digest, name)
    with _lock:
        fn = _kernels.get(key)
        if fn is not None:
            return fn
        module_name = f"gradflow_kernel_{digest}"
        path = os.path.join(cache_dir(), module_name + ".py")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(source)
            os.replace(tmp, path)  # atomic: another process may write the same file
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        fn = _kernels[key] = getattr(module, name)
        return fn
