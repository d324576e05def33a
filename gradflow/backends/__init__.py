"""Array backends: one module per array library, loaded only when asked for.

>>> gradflow.backends.available()
{'numpy': None, 'array_api_strict': None, 'torch': None, 'cupy': 'no module named cupy ...'}
"""

from __future__ import annotations

import importlib
import os

from gradflow.backends.base import Backend
from gradflow.errors import BackendUnavailableError

# name -> (module, what to install)
_MODULES = {
    "numpy": ("gradflow.backends.numpy", "numpy (a core dependency)"),
    "array_api_strict": ("gradflow.backends.array_api_strict",
                         "pip install array-api-strict"),
    "torch": ("gradflow.backends.torch", "pip install 'gradflow[torch]'"),
    "cupy": ("gradflow.backends.cupy",
             "pip install 'gradflow[cupy]' (cupy-cuda12x; cupy-cuda13x works too) "
             "and an NVIDIA GPU with its driver"),
}


def names() -> list[str]:
    """Every backend gradflow knows, available here or not."""
    return list(_MODULES)


def _module(name):
    return importlib.import_module(_MODULES[name][0])


def available() -> dict[str, str | None]:
    """Each known backend mapped to ``None`` if it can run here, else the reason why not."""
    out = {}
    for name in _MODULES:
        try:
            out[name] = _module(name).unavailable_reason()
        except ImportError as err:  # pragma: no cover - our own modules always import
            out[name] = str(err)
    return out


def default_name() -> str:
    """The backend a Session gets without ``backend=``: ``$GRADFLOW_BACKEND`` or numpy."""
    return os.environ.get("GRADFLOW_BACKEND", "").strip() or "numpy"


def get(backend=None, device=None) -> Backend:
    """A Backend object for a name (or ``None`` for the default) and a device."""
    if isinstance(backend, Backend):
        return backend
    name = default_name() if backend is None else str(backend)
    if name not in _MODULES:
        raise BackendUnavailableError(
            f"unknown backend {name!r}; gradflow knows {', '.join(_MODULES)}; "
            f"available here: {', '.join(_available_names()) or 'none'}")
    module = _module(name)
    reason = module.unavailable_reason(device)
    if reason is not None:
        raise BackendUnavailableError(
            f"backend {name!r} cannot run here: {reason}. To use it: {_MODULES[name][1]}. "
            f"Available here: {', '.join(_available_names())}")
    return module.create(device)


def _available_names():
    return [n for n, reason in available().items() if reason is None]
