"""Array backends: one module per array library, loaded only when asked for.

>>> gradflow.backends.available()
{'numpy': None, 'array_api_strict': None, 'torch': None,
 'cupy': 'CuPy is not installed: pip install cupy-cuda12x ...'}

Each module's ``unavailable_reason(device=None)`` says what is wrong and what
to do about it; ``get`` adds where the name came from and what can run here.
"""

from __future__ import annotations

import difflib
import importlib
import os

from gradflow.backends.base import Backend
from gradflow.errors import BackendUnavailableError

ENV_VAR = "GRADFLOW_BACKEND"
_DEFAULT = "numpy"

# name -> the module that implements it
_MODULES = {
    "numpy": "gradflow.backends.numpy.backend",
    "array_api_strict": "gradflow.backends.array_api_strict",
    "torch": "gradflow.backends.torch.backend",
    "cupy": "gradflow.backends.cupy.backend",
}


def names() -> list[str]:
    """Every backend gradflow knows, available here or not."""
    return list(_MODULES)


def _module(name):
    return importlib.import_module(_MODULES[name])


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
    return os.environ.get(ENV_VAR, "").strip() or _DEFAULT


def get(backend=None, device=None) -> Backend:
    """A Backend object for a name (or ``None`` for the default) and a device."""
    if isinstance(backend, Backend):
        return backend
    from_env = backend is None and bool(os.environ.get(ENV_VAR, "").strip())
    if backend is not None and not isinstance(backend, str):
        raise BackendUnavailableError(_not_a_name_message(backend))
    name = default_name() if backend is None else backend
    if name not in _MODULES:
        raise BackendUnavailableError(_unknown_message(name, from_env))
    reason = _module(name).unavailable_reason(device)
    if reason is not None:
        on = "" if device is None else f" on device {device!r}"
        chosen = (f" (chosen by ${ENV_VAR}={name!r}: set it to an available backend, or unset "
                  f"it to get {_DEFAULT})") if from_env else ""
        raise BackendUnavailableError(
            f"backend {name!r} cannot run here{on}{chosen}: {reason}. Available here: "
            f"{_listing(_available_names())}")
    return _module(name).create(device)


def _available_names():
    return [n for n, reason in available().items() if reason is None]


def _listing(items):
    return ", ".join(items) or "none"


def _guess(name):
    """The known backend ``name`` was probably meant to be, as a sentence, or ``""``."""
    lowered = name.strip().lower().replace("-", "_")
    if lowered in _MODULES and lowered != name:
        return f" Did you mean {lowered!r}? Names are lower case."
    close = difflib.get_close_matches(lowered, list(_MODULES), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _unknown_message(name, from_env):
    known = (f"gradflow knows {_listing(_MODULES)}; available here: "
             f"{_listing(_available_names())}.")
    if from_env:
        return (f"${ENV_VAR} is {name!r}, which is not a backend (unknown backend {name!r})."
                f"{_guess(name)} {known} Set {ENV_VAR} to one of the available ones, or unset it "
                f"to get {_DEFAULT}.")
    return (f"unknown backend {name!r}.{_guess(name)} {known} Pass one of the available names "
            "as backend=, or a gradflow backend object.")


def _not_a_name_message(backend):
    hint = ""
    module = getattr(backend, "__name__", None)
    if isinstance(module, str) and module.split(".")[0] in _MODULES:
        hint = f" Did you mean backend={module.split('.')[0]!r}?"
    return (f"backend must be a backend name such as {_DEFAULT!r} or a gradflow backend object, "
            f"not {type(backend).__name__} {backend!r}.{hint} Known backends: "
            f"{_listing(_MODULES)}; available here: {_listing(_available_names())}.")
