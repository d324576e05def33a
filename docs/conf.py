"""Sphinx configuration of gradflow's documentation (built by ``nox -s docs``)."""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))
# the tutorials read MNIST from $GRADFLOW_DATA/mnist; in a checkout that is ../shared/data.
# Their kernels run in docs/tutorials/ (and this file in docs/), so a relative path, as in
# README's `GRADFLOW_DATA=../shared/data python -m sphinx ...`, is made absolute here, from
# the checkout's root, where README's commands run.
_data = os.environ.get("GRADFLOW_DATA") or str(ROOT.parent / "shared" / "data")
os.environ["GRADFLOW_DATA"] = os.path.abspath(os.path.join(ROOT, _data))

project = "gradflow"
author = "the gradflow developers"
copyright = "2026, the gradflow developers"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_nb",
    "gradflow_api",
]

exclude_patterns = ["_build", "jupyter_execute", ".jupyter_cache"]
html_theme = "furo"
html_title = "gradflow"

# API reference: the page generator (gradflow_api) lists the names; autodoc fills them in
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_inherit_docstrings = True
add_module_names = False

# tutorials are MyST markdown notebooks, run at every build (cached between local builds)
nb_execution_mode = "cache"
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_timeout = 240
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
