"""gradflow's public surface, as the API reference and tests/test_docstrings.py see it.

A module with ``__all__`` exports exactly those names. ``gradflow`` itself (TF1's
``tf`` namespace) exports every name without a leading underscore. Other modules
without ``__all__`` export the functions and classes defined in them, plus the
re-exports listed in ``REEXPORTS``.
"""

from __future__ import annotations

import importlib
import inspect
import types

# (module, title) in the order of the API reference
MODULES = [
    ("gradflow", "gf: graphs, sessions, ops"),
    ("gradflow.nn", "gf.nn"),
    ("gradflow.nn.rnn_cell", "gf.nn.rnn_cell"),
    ("gradflow.layers", "gf.layers"),
    ("gradflow.train", "gf.train"),
    ("gradflow.data", "gf.data"),
    ("gradflow.data.mnist", "gf.data.mnist"),
    ("gradflow.losses", "gf.losses"),
    ("gradflow.metrics", "gf.metrics"),
    ("gradflow.summary", "gf.summary"),
    ("gradflow.distributed", "gf.distributed"),
    ("gradflow.onnx", "gf.onnx"),
    ("gradflow.saved_model", "gf.saved_model"),
    ("gradflow.timeline", "gf.timeline"),
    ("gradflow.errors", "gf.errors"),
    ("gradflow.backends", "gf.backends"),
]

# names a module without __all__ imports from elsewhere and offers as its own (TF1's layout)
REEXPORTS = {"gradflow.layers": ["batch_normalization"]}


def documentable(obj) -> bool:
    """Functions and classes of gradflow (not constants, modules or foreign objects)."""
    if not (inspect.isroutine(obj) or inspect.isclass(obj)):
        return False
    return (getattr(obj, "__module__", None) or "").startswith("gradflow")


def public_names(module_name: str) -> list[str]:
    """The documentable public names of one module, sorted."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        names = list(module.__all__)
    elif module_name == "gradflow":
        names = [n for n in dir(module) if not n.startswith("_")]
    else:
        names = [n for n, v in vars(module).items()
                 if not n.startswith("_") and getattr(v, "__module__", None) == module_name]
        names += REEXPORTS.get(module_name, [])
    names = [n for n in names if not isinstance(getattr(module, n), types.ModuleType)]
    return sorted(n for n in set(names) if documentable(getattr(module, n)))


def public_members(cls) -> list[str]:
    """Public methods and properties that gradflow's classes define on ``cls`` or its bases."""
    names = set()
    for base in inspect.getmro(cls):
        if not (base.__module__ or "").startswith("gradflow"):
            continue
        for name, value in vars(base).items():
            if name.startswith("_"):
                continue
            if isinstance(value, (property, staticmethod, classmethod)) or inspect.isroutine(value):
                names.add(name)
    return sorted(names)


def member_doc(cls, name) -> str | None:
    """The docstring autodoc shows for ``cls.name`` (inherited from a base where not set)."""
    for base in inspect.getmro(cls):
        value = vars(base).get(name)
        if value is None:
            continue
        # a property's own doc (``property(fget, doc=...)``) comes before its getter's
        func = value if isinstance(value, property) else getattr(value, "__func__", value)
        doc = inspect.getdoc(func)
        if doc:
            return doc
    return None


def missing_docstrings() -> list[str]:
    """Every public name, method and property of the surface that has no docstring."""
    missing = []
    for module_name, _ in MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            obj = getattr(module, name)
            if not inspect.getdoc(obj):
                missing.append(f"{module_name}.{name}")
            if inspect.isclass(obj):
                missing += [f"{module_name}.{name}.{m}" for m in public_members(obj)
                            if member_doc(obj, m) is None]
    return missing
