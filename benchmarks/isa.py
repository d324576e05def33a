"""Run a benchmark (or any command) with every CPU library capped at one x86-64
instruction set, gradflow's and its peers' alike, so that a figure taken on an AVX-512
machine says what an AVX2 or SSE4.1 machine would see:

    python benchmarks/isa.py avx2 benchmarks/mnist_mlp.py --seconds 1

Levels: ``sse41``, ``avx2``, ``avx512`` (``host`` runs the command as it is). The caps:
oneDNN's ``ONEDNN_MAX_CPU_ISA`` (gradflow's convolutions and products, and PyTorch's
and TensorFlow's oneDNN), numba's target (``NUMBA_CPU_NAME``, no extra features),
OpenBLAS's kernels (``OPENBLAS_CORETYPE``), PyTorch's own kernels
(``ATEN_CPU_CAPABILITY``), XLA's code generation for JAX and TensorFlow
(``--xla_cpu_max_isa``) and MKL's (``MKL_ENABLE_INSTRUCTIONS``).
``tests/test_isa_matrix.py`` runs the kernel tests under the same levels.
"""

from __future__ import annotations

import os
import sys

# level: (the cpuinfo flag it needs, oneDNN, numba, OpenBLAS, ATen, XLA, MKL)
LEVELS = {
    "sse41": ("sse4_1", "SSE41", "nehalem", "Nehalem", "default", "SSE4_2", "SSE4_2"),
    "avx2": ("avx2", "AVX2", "haswell", "Haswell", "avx2", "AVX2", "AVX2"),
    "avx512": ("avx512f", "AVX512_CORE", "skylake-avx512", "SkylakeX", "avx512", "AVX512",
               "AVX512"),
}


def level_env(level, base=None):
    """``base`` (the process's environment) with every library capped at ``level``."""
    env = dict(os.environ if base is None else base)
    if level == "host":
        return env
    _, onednn, numba, openblas, aten, xla, mkl = LEVELS[level]
    flags = env.get("XLA_FLAGS", "")
    env.update(ONEDNN_MAX_CPU_ISA=onednn, NUMBA_CPU_NAME=numba, NUMBA_CPU_FEATURES="",
               OPENBLAS_CORETYPE=openblas, ATEN_CPU_CAPABILITY=aten,
               MKL_ENABLE_INSTRUCTIONS=mkl, XLA_FLAGS=f"{flags} --xla_cpu_max_isa={xla}".strip())
    return env


def main(argv):
    if len(argv) < 2 or argv[0] not in (*LEVELS, "host"):
        raise SystemExit(f"usage: isa.py {{{','.join(LEVELS)},host}} SCRIPT [ARGS...]")
    level, command = argv[0], argv[1:]
    if command[0].endswith(".py"):
        command = [sys.executable] + command
    print(f"# instruction set: {level}", flush=True)
    os.execvpe(command[0], command, level_env(level))


if __name__ == "__main__":
    main(sys.argv[1:])
