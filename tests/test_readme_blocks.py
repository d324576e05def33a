"""README.md's code blocks, and the documentation pages' plain ones, run as written.

Every ```python block of README.md and of the markdown pages under docs/ runs here
(the tutorials' ```{code-cell} blocks are not among them: the documentation build
executes those). The python blocks of one section (the text under one heading)
run in order in one namespace, with a default graph of their own, in a scratch
folder laid out like the checkout: ``examples/`` is the checkout's, and
``../shared/data`` holds the MNIST folder this machine has, so README's commands
(``GRADFLOW_DATA=../shared/data python examples/...``) work there as written and
nothing is written into the checkout.

Two HTML comments, each on the line right before a block, say otherwise:

- ``<!-- not run: REASON -->`` before a python block that cannot run here by
  design (it needs a GPU, or an MPI job): the test skips it, with REASON;
- ``<!-- run: REASON -->`` before a bash block that a python block after it needs
  (it writes the file that block reads): the test runs it with ``bash``, in order.

Blocks that read MNIST skip when it is not on disk (set GRADFLOW_DATA). A section with
a block that reads MNIST runs in a child process, all its blocks in order when the first
of them is asked for (each block's test then reports that block's own outcome): the
whole dataset in float32 is 200 MB more at the suite's peak otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import gradflow as gf
from gradflow.data import mnist

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md",
         *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)]

FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
MARKER = re.compile(r"^<!--\s*(?P<kind>not run|run)\s*:\s*(?P<reason>.*?)\s*-->\s*$")
# the kind of block each marker may stand before
MARKER_LANGS = {"not run": "python", "run": "bash"}


@dataclass
class Block:
    page: str        # relative to the checkout, e.g. "README.md"
    line: int        # of the opening fence, 1-based
    lang: str
    code: str
    section: tuple   # (page, line of the heading, heading)
    marker: tuple | None = None  # (kind, reason) of the comment right before it

    @property
    def runs(self):
        if self.lang == "python":
            return self.marker is None or self.marker[0] != "not run"
        return self.lang == "bash" and self.marker is not None and self.marker[0] == "run"


def parse(path):
    """The fenced blocks of ``path``, and its markers that stand before no block of their
    kind, as ``("PAGE:LINE", why)``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = path.relative_to(ROOT).as_posix()
    blocks, misplaced = [], []
    section = (page, 0, page)
    pending = None  # a marker waiting for its block: (line, kind, reason)
    i = 0
    while i < len(lines):
        text = lines[i]
        opening = FENCE.match(text)
        if opening:
            fence, info = opening["fence"], opening["info"].lower()
            end = i + 1
            while end < len(lines) and not (lines[end].startswith(fence[0] * len(fence))
                                            and not lines[end].strip(fence[0]).strip()):
                end += 1
            marker = None
            if pending is not None:
                if MARKER_LANGS[pending[1]] == info:
                    marker = pending[1:]
                else:
                    misplaced.append((pending[0], f"stands before a ```{info} block"))
                pending = None
            blocks.append(Block(page, i + 1, info, "\n".join(lines[i + 1:end]) + "\n",
                                section, marker))
            i = end + 1
            continue
        if text.strip():
            if pending is not None:
                misplaced.append((pending[0], "stands before no code block"))
                pending = None
            heading = HEADING.match(text)
            marked = MARKER.match(text.strip())
            if heading:
                section = (page, i + 1, heading["title"])
            elif marked:
                pending = (i + 1, marked["kind"], marked["reason"])
        i += 1
    if pending is not None:
        misplaced.append((pending[0], "stands before no code block"))
    return blocks, [(f"{page}:{line}", why) for line, why in misplaced]


BLOCKS, MISPLACED = [], []
for _page in PAGES:
    _blocks, _misplaced = parse(_page)
    BLOCKS += [b for b in _blocks if b.lang == "python" or b.runs]
    MISPLACED += _misplaced
SECTIONS: dict[tuple, list[Block]] = {}
for _block in BLOCKS:
    SECTIONS.setdefault(_block.section, []).append(_block)


def test_the_markers_stand_right_before_their_blocks():
    """A ``not run`` comment right before a ```python block, a ``run`` one right before a
    ```bash block, each with its reason: anything else would be ignored, silently."""
    assert MISPLACED == []
    assert all(b.marker[1] for b in BLOCKS if b.marker is not None), "a marker without a reason"
    assert any(b.page == "README.md" for b in BLOCKS)


# -- where the blocks run ------------------------------------------------------------------


def _mnist_folder():
    """The folder ``gf.data.mnist.load()`` reads here, or None (it would download)."""
    for folder in mnist.candidate_dirs():
        if all((folder / n).is_file() or (folder / f"{n}.gz").is_file() for n in mnist.FILES):
            return folder
    return None


@dataclass
class SectionRun:
    """One section's scratch checkout, namespace, default graph and progress."""
    folder: Path
    namespace: dict = field(default_factory=lambda: {"__name__": "__readme__"})
    graph: gf.Graph = field(default_factory=gf.Graph)
    done: int = 0  # blocks of the section run (or skipped) so far
    outcomes: dict | None = None  # line -> traceback or None, where a child ran the section


_RUNS: dict[tuple, SectionRun] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_sessions():
    yield
    for run in _RUNS.values():
        _close(run)
    _RUNS.clear()


def _close(run):
    for value in list(run.namespace.values()):
        if isinstance(value, gf.Session):
            value.close()


def _scratch_checkout(tmp_path_factory, block):
    """A scratch ``main`` folder to run in: its ``examples`` is the checkout's (a link), and
    its ``../shared/data/mnist`` the MNIST folder found here (when there is one)."""
    top = tmp_path_factory.mktemp(re.sub(r"\W+", "_", f"{block.page}_{block.section[1]}"))
    checkout = top / "main"
    checkout.mkdir()
    (checkout / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    data = top / "shared" / "data"
    data.mkdir(parents=True)
    folder = _mnist_folder()
    if folder is not None:
        (data / "mnist").symlink_to(folder.resolve(), target_is_directory=True)
    return checkout


def _run(block, run):
    if block.lang == "bash":
        env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                      os.environ.get("PATH", "")]))
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=run.folder,
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (f"{block.page}:{block.line}: exit status "
                                      f"{done.returncode}\n{done.stdout[-3000:]}\n"
                                      f"{done.stderr[-3000:]}")
        return
    # padded so that a traceback names the page's own line numbers
    code = compile("\n" * block.line + block.code, str(ROOT / block.page), "exec")
    with run.graph.as_default():
        exec(code, run.namespace)


def _id(block):
    return f"{block.page}:{block.line}"


def _cannot_run_here(block):
    """Why ``block`` cannot run on this machine (it reads MNIST, which is not here), or None."""
    if _reads_mnist(block) and _mnist_folder() is None:
        return "MNIST is not on disk here (set GRADFLOW_DATA to the folder of mnist/)"
    return None


def _reads_mnist(block):
    return "mnist" in block.code


# -- a section in a child process ------------------------------------------------------------


def _run_in_child(blocks, folder):
    """Run ``blocks`` (one section's, in order) in a child Python in ``folder``:
    ``{line: None or the traceback}`` of every block that runs."""
    lines = [b.line for b in blocks if b.runs]
    job = json.dumps({"page": blocks[0].page, "lines": lines})
    command = [sys.executable, "-c", "import test_readme_blocks as t; t.child_main()"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(command, input=job, cwd=folder, env=env, capture_output=True,
                          text=True, timeout=900)
    outcomes = {}
    for text in done.stdout.splitlines():
        if text.startswith("BLOCK "):
            line, error = json.loads(text[6:])
            outcomes[line] = error
    for line in lines:  # a block the child never reported: it died before or during it
        outcomes.setdefault(line, f"the child process ended (status {done.returncode}) "
                                  f"before it reported this block\n{done.stderr[-3000:]}")
    return outcomes


def child_main():
    """The child's side of ``_run_in_child``: the section's blocks from stdin's job, each
    outcome one ``BLOCK [line, traceback or null]`` line on stdout."""
    job = json.loads(sys.stdin.read())
    by_line = {b.line: b for b in BLOCKS if b.page == job["page"]}
    run = SectionRun(Path.cwd())
    for line in job["lines"]:
        try:
            _run(by_line[line], run)
            error = None
        except BaseException:  # reported to the parent, which fails that block's test
            error = traceback.format_exc()
        print("BLOCK " + json.dumps([line, error]), flush=True)
    _close(run)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang in ("python", "bash")], ids=_id)
def test_block_runs_as_written(block, tmp_path_factory, monkeypatch):
    if not block.runs:
        pytest.skip(f"{_id(block)} is marked not run: {block.marker[1]}")
    blocks = SECTIONS[block.section]
    index = blocks.index(block)
    for earlier in [*blocks[:index], block]:  # what this block may build on
        reason = earlier.runs and _cannot_run_here(earlier)
        if reason:
            pytest.skip(reason if earlier is block else f"it follows {_id(earlier)}: {reason}")
    data = os.environ.get("GRADFLOW_DATA")
    if data:  # the blocks run in another folder
        monkeypatch.setenv("GRADFLOW_DATA", os.path.abspath(data))
    run = _RUNS.get(block.section)
    if run is None:
        run = _RUNS[block.section] = SectionRun(_scratch_checkout(tmp_path_factory, block))
        if any(_reads_mnist(b) for b in blocks if b.runs):
            run.outcomes = _run_in_child(blocks, run.folder)
    monkeypatch.chdir(run.folder)
    try:
        if run.outcomes is not None:
            error = run.outcomes[block.line]
            assert error is None, f"{_id(block)} failed in the section's child process:\n{error}"
            return
        # the section's earlier blocks first, where this one was chosen alone (-k, xdist)
        for earlier in blocks[run.done:index]:
            if earlier.runs:
                _run(earlier, run)
            run.done += 1
        _run(block, run)
        run.done = index + 1
    finally:
        if index == len(blocks) - 1:  # the section is done: its values (MNIST) go too
            _close(run)
            run.namespace.clear()
            del _RUNS[block.section]
