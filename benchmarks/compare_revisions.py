"""Two git revisions of gradflow timed in one process: per-op overhead and the MLP step.

The steps are those of ``overhead.py`` and ``mnist_mlp.py``, built once per revision.

Each revision's ``gradflow`` package is exported with ``git archive`` into a
temporary folder under another package name, so both import side by side and
their timings alternate in the same process (the only way ratios between two
versions mean something on a shared machine).

Each copy keeps its own thread policy (``gradflow.backends.cpu.threads``). Where the two
revisions use the thread pools differently (one multiplies through oneDNN's OpenMP
pool, the other through OpenBLAS), the copies disturb each other and the revision in
the second slot looked slower in both orders (1.20x and 1.11x, comparing b94c319 and
17a543c); run both orders, or compare such a change inside one revision.

    python benchmarks/compare_revisions.py HEAD~3 HEAD [--threads 1] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib
import io
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from timing import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv()  # before NumPy loads its BLAS
import numpy as np  # noqa: E402


def export(revision, package, into):
    """Write ``gradflow/`` of ``revision`` as package ``package`` under ``into``."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "gradflow"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            rel = pathlib.Path(member.name).relative_to("gradflow")
            target = into / package / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = tar.extractfile(member).read()
            if member.name.endswith(".py"):
                text = re.sub(r"\bgradflow\b(?=[.\s])", package, data.decode())
                data = text.encode()
            target.write_bytes(data)


def best(fn, seconds):
    """The fastest of many calls of ``fn`` over about ``seconds``, in seconds."""
    out, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per case and round")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads")
    args = parser.parse_args(argv)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gf-revisions-"))
    sys.path.insert(0, str(tmp))
    modules = {}
    for label, rev in (("old", args.old), ("new", args.new)):
        export(rev, f"gradflow_{label}", tmp)
        modules[label] = importlib.import_module(f"gradflow_{label}")
    import mnist_mlp
    import overhead

    x0 = np.linspace(0, 1, overhead.SIZE, dtype=np.float32)
    rng = np.random.default_rng(0)
    xs = rng.random((128, 784), dtype=np.float32)
    ys = rng.integers(0, 10, 128).astype(np.int64)
    cases = {}
    for label, gf in modules.items():
        cases[("overhead (us/op)", label)] = (
            overhead.gradflow_run(x0, "numpy", gf=gf), 2 * overhead.CHAIN)
        step = mnist_mlp.gradflow_step(mnist_mlp.init_weights(), xs, ys, "numpy", gf=gf)
        for _ in range(3):
            step()
        cases[("MLP step, batch 128 (ms)", label)] = (step, 1)
    times = {key: float("inf") for key in cases}
    for _ in range(args.rounds):  # alternate, so both see the same machine
        for key, (fn, _) in cases.items():
            times[key] = min(times[key], best(fn, args.seconds))
    print(f"old = {args.old}, new = {args.new}; best of {args.rounds} rounds")
    for what in dict.fromkeys(k[0] for k in cases):
        scale = 1e6 if "us" in what else 1e3
        old = times[(what, "old")] / cases[(what, "old")][1] * scale
        new = times[(what, "new")] / cases[(what, "new")][1] * scale
        print(f"  {what:26s} old {old:8.3f}   new {new:8.3f}   new/old {new / old:5.3f}")


if __name__ == "__main__":
    main()
