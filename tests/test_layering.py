"""The package's layers import downward only, as the contract in ``.importlinter`` orders
them: graph -> prim -> ops -> autodiff -> passes -> schedule -> executor -> backends ->
capture -> session -> data/summary/graph_io -> train -> the tools over them.

``test_the_import_contract_holds`` runs import-linter (``lint-imports``) on it, which
also follows imports through other modules. The other tests read the same
contract and check every import written in gradflow's source (at the top of a module
and inside functions alike) without import-linter: a module may import its own layer
and the ones below, a sibling of an independent group (``a | b``) not even that, and
the exceptions are the contract's ``ignore_imports``, each argued there."""

from __future__ import annotations

import ast
import configparser
import pathlib
import re
import subprocess
import sys

import pytest

import gradflow

ROOT = pathlib.Path(gradflow.__file__).parent
CONTRACT = ROOT.parent / ".importlinter"
_SECTION = "importlinter:contract:layers"


def _contract():
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    return parser[_SECTION]


def _layers():
    """``{top-level name: (line, independent)}``: the line of the contract's layer list
    (0 at the bottom) and whether its siblings must not import each other."""
    lines = [ln.strip() for ln in _contract()["layers"].splitlines() if ln.strip()]
    layers = {}
    for height, line in enumerate(reversed(lines)):
        for name in re.split(r"[|:]", line):
            layers[name.strip()] = (height, "|" in line)
    return layers


def _pattern(expression):
    """A regex for one side of an import expression (``*``: one segment, ``**``: any)."""
    parts = [r"[^.]+(?:\.[^.]+)*" if p == "**" else r"[^.]+" if p == "*" else re.escape(p)
             for p in expression.strip().split(".")]
    return re.compile(r"\.".join(parts) + "$")


def _ignored():
    """The contract's exceptions: ``(expression, importer regex, imported regex)``."""
    found = []
    for line in _contract().get("ignore_imports", "").splitlines():
        if "->" in line:
            importer, imported = line.split("->")
            found.append((line.strip(), _pattern(importer), _pattern(imported)))
    return found


def _module_of(path):
    return ("gradflow." + ".".join(path.relative_to(ROOT).with_suffix("").parts)) \
        .removesuffix(".__init__")


def _modules():
    return {_module_of(path): path for path in ROOT.rglob("*.py")}


def _imports(path, module, modules):
    """The gradflow modules that ``path`` (the module ``module``) imports, by full name."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:  # from gradflow import session: the module itself
                name = f"{base}.{alias.name}"
                yield name if name in modules else base


def _top(module):
    """The child of gradflow that ``module`` lies in ("" for the package itself)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "gradflow" and len(parts) > 1 else \
        "" if module == "gradflow" else None


def _upward(own, other, layers):
    """Whether the top-level ``own`` may not import ``other``."""
    if other == "":  # the package itself imports every layer: the top one's to import
        other = max(layers, key=lambda name: layers[name][0])
    if own == other or other not in layers:
        return False
    (mine, independent), (theirs, _) = layers[own], layers[other]
    return theirs > mine or (theirs == mine and independent)


def _import_pairs():
    modules = _modules()
    for module, path in sorted(modules.items()):
        for imported in _imports(path, module, modules):
            if _top(imported) is not None:
                yield module, imported


def _violations():
    layers, ignored = _layers(), _ignored()
    found = {}
    for module, imported in _import_pairs():
        own = _top(module)
        if own in layers and _upward(own, _top(imported), layers) and not any(
                a.match(module) and b.match(imported) for _, a, b in ignored):
            found.setdefault(module, set()).add(imported)
    return found


def test_every_child_of_gradflow_has_a_layer():
    layers = _layers()
    children = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert children - set(layers) == set(), "place these in a layer of .importlinter"
    assert set(layers) - children == set(), ".importlinter names modules that are gone"


def test_layers_import_downward_only():
    found = _violations()
    assert not found, "imports that run up the layers of .importlinter: " + "; ".join(
        f"{m} imports {sorted(v)}" for m, v in found.items())


def test_every_exception_is_still_an_import():
    """An exception whose import no longer happens is taken off the contract."""
    pairs = set(_import_pairs())
    stale = [text for text, a, b in _ignored()
             if not any(a.match(m) and b.match(i) for m, i in pairs)]
    assert not stale, f".importlinter excepts imports that no longer happen: {stale}"


def test_the_import_contract_holds():
    """``lint-imports`` on ``.importlinter``: the layers, through indirect imports too."""
    pytest.importorskip("importlinter", reason="import-linter is not installed (the "
                        "`test` extra installs it); the tests above check the direct imports")
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(CONTRACT)!r}, no_cache=True, "
            "no_logo=True))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_folder_of_modules_is_a_package():
    """setuptools' ``packages.find`` (pyproject.toml) ships only folders with an
    ``__init__.py``: ``gradflow/ops`` had none, so a wheel (``pip install .``, not -e)
    held no op at all."""
    missing = sorted(str(d.relative_to(ROOT.parent)) for d in ROOT.rglob("*")
                     if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))
                     and not (d / "__init__.py").exists())
    assert not missing, f"folders of modules without __init__.py: {missing}"
