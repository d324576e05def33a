"""The CPU kernels under every instruction set they dispatch to on x86-64, on this one
machine: oneDNN picks its kernels by the instruction set it detects (capped by
``ONEDNN_MAX_CPU_ISA``), numba compiles for the host (``NUMBA_CPU_NAME``) and
OpenBLAS picks its kernels when it loads (``OPENBLAS_CORETYPE``). CI's machines
have AVX-512, so without the caps the AVX2 and SSE4.1 paths of other CPUs would go
untested: oneDNN 3.2's AVX2 filter gradient of a strided 1x1 convolution gave a wrong
gradient there (issue 44).

Each level runs the convolution, matmul, pooling, fused-kernel and LSTM-kernel tests
and the differential fuzzer (``test_isa_fuzz.py``) in a process of its own, against
float64 references. Marked ``isa_matrix``: README's test command leaves it out (it takes
minutes while numba's cache is cold); ``.ci/run`` runs it after that command
(``pytest -m isa_matrix``), and ``nox -s isa_matrix`` with 2,000 geometries of each
kind per level."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:  # the levels and their caps, shared with the benchmarks' runner
    from isa import LEVELS, level_env
finally:
    sys.path.remove(str(ROOT / "benchmarks"))
FILES = ["tests/test_isa_fuzz.py", "tests/test_onednn.py", "tests/test_onednn_matmul.py",
         "tests/test_conv.py", "tests/test_fusion.py", "tests/test_lstm_kernels.py",
         "tests/test_numpy_lowerings.py", "tests/test_lstm_seq_numpy.py",
         "tests/test_embedding_product.py"]
# which kernel oneDNN prefers for a few-channel input gradient is a speed choice made
# for AVX-512's kernels (``onednn_conv.input_gradient_kernel``); below it those kernels
# are not there and oneDNN's first choice runs, which the other tests check for numbers
NOT_NUMBERS = "not takes_its_faster_kernel"


def _flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.isa_matrix
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="the instruction-set caps are x86-64's")
@pytest.mark.parametrize("level", list(LEVELS))
def test_the_kernels_under_each_instruction_set(level):
    flag = LEVELS[level][0]
    if flag not in _flags():
        pytest.skip(f"this CPU has no {flag}, so its kernels cannot run here")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-k",
         NOT_NUMBERS, *FILES], cwd=ROOT, env=level_env(level), capture_output=True,
        text=True, timeout=900)
    assert run.returncode == 0, f"under {level}:\n{run.stdout[-6000:]}\n{run.stderr[-3000:]}"
    assert " passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]
