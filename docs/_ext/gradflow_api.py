"""Sphinx extension: writes api/*.rst from gradflow's public surface before reading sources.

Each module of ``public_api.MODULES`` gets one page: the module's docstring, then
every public function and class (classes with their documented members).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import public_api


def _page(module_name: str, title: str) -> str:
    module = importlib.import_module(module_name)
    lines = [title, "=" * len(title), "", f".. automodule:: {module_name}",
             "   :no-members:", ""]
    names = public_api.public_names(module_name)
    classes = [n for n in names if inspect.isclass(getattr(module, n))]
    functions = [n for n in names if n not in classes]
    for heading, group in (("Classes", classes), ("Functions", functions)):
        if not group:
            continue
        lines += [heading, "-" * len(heading), ""]
        for name in group:
            qualified = f"{module_name}.{name}"
            if name in classes:
                lines += [f".. autoclass:: {qualified}", "   :members:",
                          "   :show-inheritance:", ""]
            else:
                lines += [f".. autofunction:: {qualified}", ""]
    return "\n".join(lines)


def _index() -> str:
    lines = ["API reference", "=============", "",
             "Generated from the docstrings of gradflow's public names "
             "(``tests/test_docstrings.py`` fails on a public name without one).", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {module_name}" for module_name, _ in public_api.MODULES]
    return "\n".join(lines) + "\n"


def _write_if_changed(path: Path, text: str) -> None:
    # rewriting an unchanged page would make Sphinx re-read it on every build
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(app) -> None:
    folder = Path(app.srcdir) / "api"
    folder.mkdir(exist_ok=True)
    _write_if_changed(folder / "index.rst", _index())
    for module_name, title in public_api.MODULES:
        _write_if_changed(folder / f"{module_name}.rst", _page(module_name, title))


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
