"""Developer sessions: tests on each CPU backend, the GPU suite, lint, the docs."""

import os
from pathlib import Path

import nox

CPU_BACKENDS = ["numpy", "array_api_strict", "torch"]


@nox.session
@nox.parametrize("backend", CPU_BACKENDS)
def tests(session, backend):
    """The test suite with ``backend`` as the default backend."""
    session.install("torch==2.13.0")
    session.install("-e", ".[test,examples,fast]")
    session.run("pytest", "-q", *session.posargs, env={"GRADFLOW_BACKEND": backend})


@nox.session
def tests_without_numba(session):
    """The test suite on the plain-NumPy paths (no compiled kernels)."""
    session.install("torch==2.13.0")
    session.install("-e", ".[test,examples]")
    session.run("pytest", "-q", *session.posargs, env={"GRADFLOW_NUMBA": "0"})


@nox.session
def gpu(session):
    """The test suite on CuPy (needs an NVIDIA GPU)."""
    session.install("-e", ".[test,examples,cupy]")
    session.run("pytest", "-q", *session.posargs, env={"GRADFLOW_BACKEND": "cupy"})


@nox.session
def docs(session):
    """Build the documentation site (tutorials executed) with warnings as errors, then
    check its internal links. Open docs/_build/html/index.html afterwards."""
    session.install("torch==2.13.0")
    session.install("-e", ".[docs,fast]")
    data = os.environ.get("GRADFLOW_DATA", str(Path(__file__).resolve().parent.parent
                                               / "shared" / "data"))
    session.run("sphinx-build", "-b", "html", "-W", "--keep-going", "-q", "docs",
                "docs/_build/html", *session.posargs, env={"GRADFLOW_DATA": data})
    session.run("python", "docs/check_links.py", "docs/_build/html")


@nox.session
def lint(session):
    session.install("ruff")
    session.run("ruff", "check", "gradflow", "tests", "examples", "benchmarks", "docs")


@nox.session
def fuzz(session):
    """The fuzzer of tests/test_fuzz.py with many more examples than the normal run."""
    session.install("torch==2.13.0")
    session.install("-e", ".[test,examples,fast]")
    session.run("pytest", "-q", "-s", "tests/test_fuzz.py", *session.posargs,
                env={"GRADFLOW_FUZZ_EXAMPLES": "5000"})


@nox.session
def isa_matrix(session):
    """The CPU kernels under each instruction set (SSE4.1, AVX2, AVX-512: oneDNN's cap,
    numba's target, OpenBLAS's core type), the differential fuzzer of
    tests/test_isa_fuzz.py with 2,000 geometries of each kind per level."""
    session.install("torch==2.13.0")
    session.install("-e", ".[test,fast]")
    session.run("pytest", "-q", "-m", "isa_matrix", "tests/test_isa_matrix.py", *session.posargs,
                env={"GRADFLOW_ISA_FUZZ": "2000"})


@nox.session
def file_fuzz(session):
    """The fuzzer over files (tests/test_file_fuzz.py) with 5,000 mutated files."""
    session.install("torch==2.13.0")
    session.install("-e", ".[test,fast]")
    session.run("pytest", "-q", "tests/test_file_fuzz.py", *session.posargs,
                env={"GRADFLOW_FILE_FUZZ_EXAMPLES": "5000"})
