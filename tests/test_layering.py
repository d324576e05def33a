"""The package's layers import downward only: graph -> ops -> autodiff -> passes ->
schedule -> executor (the Python emitter) -> run_state -> backends (emitters; what they
need to capture is ``gradflow.backends.capture``) -> capture (driving a captured run
with a Session's run state) -> session.

Imports are read from the source (top-level and inside functions alike). The few
upward imports that remain are listed in ``KNOWN`` with the reason, so a new one
fails here until it is either removed or argued for."""

from __future__ import annotations

import ast
import pathlib

import gradflow

ROOT = pathlib.Path(gradflow.__file__).parent
LAYERS = ["graph", "ops", "autodiff", "passes", "schedule", "executor", "run_state", "backends",
          "capture", "session"]

# (importing module, imported layer): why it is allowed for now
KNOWN = {
    ("gradflow.ops.control_flow_ops", "autodiff"):
        "cond/while_loop build the gradients of their sub-graphs when asked for them",
    ("gradflow.ops.rnn_ops", "autodiff"):
        "the recurrent ops' gradient rules differentiate a cell's sub-graph",
}


def _layer(module):
    parts = module.split(".")
    if parts[0] != "gradflow" or len(parts) < 2:
        return None
    name = parts[1]
    return name if name in LAYERS else None


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            if node.module == "gradflow":  # from gradflow import session, ...
                for alias in node.names:
                    yield f"gradflow.{alias.name}"


def _violations():
    found = {}
    for path in ROOT.rglob("*.py"):
        module = "gradflow." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = _layer(module)
        if own is None:
            continue
        for imported in _imports(path):
            other = _layer(imported)
            if other is not None and LAYERS.index(other) > LAYERS.index(own):
                found.setdefault((module, other), []).append(imported)
    return found


def test_layers_import_downward_only():
    unexplained = {k: v for k, v in _violations().items() if k not in KNOWN}
    assert not unexplained, (
        "upward imports (module, layer it reaches up to): "
        + "; ".join(f"{m} imports {sorted(set(v))}" for (m, _), v in unexplained.items()))


def test_every_known_exception_still_exists():
    """An exception that no longer happens is taken off the list."""
    found = _violations()
    stale = [k for k in KNOWN if k not in found]
    assert not stale, f"KNOWN lists imports that no longer happen: {stale}"


def test_every_folder_of_modules_is_a_package():
    """setuptools' ``packages.find`` (pyproject.toml) ships only folders with an
    ``__init__.py``: ``gradflow/ops`` had none, so a wheel (``pip install .``, not -e)
    held no op at all."""
    missing = sorted(str(d.relative_to(ROOT.parent)) for d in ROOT.rglob("*")
                     if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py"))
                     and not (d / "__init__.py").exists())
    assert not missing, f"folders of modules without __init__.py: {missing}"
