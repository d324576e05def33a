"""Compile CUDA C kernel text with the machine's g++ and call it from NumPy.

``cuda_host_include/cuda_compat.h`` defines the CUDA names the generated kernels
use (``__global__``, ``threadIdx``, ``atomicAdd``, ``__half``...) for the host,
so the very text a GPU would compile runs here, one thread per block, each
block a call. Tests that use it skip when g++ is missing.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_host_include")
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed: the CUDA C text "
                               "is compiled on the host with it")
# The host build must not contract a * b + c into an FMA either (the GPU kernels are
# built with --fmad=false); x86-64 without -march has no FMA, this makes it certain.
FLAGS = ["-O1", "-shared", "-fPIC", "-std=c++17", "-ffp-contract=off", "-fno-fast-math"]

C_TYPES = {"float16": "float16", "float32": "float", "float64": "double", "bool": "bool",
           "uint32": "unsigned int"}


def build(source, directory):
    """The ctypes library of ``source`` compiled with the compatibility header."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(directory, f"k{digest}.cpp")
    with open(path, "w") as f:
        f.write(source)
    lib = path[:-4] + ".so"
    if not os.path.exists(lib):
        result = subprocess.run([GXX, *FLAGS, "-I", INCLUDE, "-include",
                                 os.path.join(INCLUDE, "cuda_compat.h"), path, "-o", lib],
                                capture_output=True, text=True)
        if result.returncode:
            raise AssertionError(f"g++ rejected the kernel text:\n{result.stderr}\n{source}")
    return ctypes.CDLL(lib)


def build_printed(printed, directory):
    """``{kind: (lib, name)}`` for a kernel generator's ``{kind: (text, name)}``: the
    texts compiled together, one library, one g++ call."""
    lib = build("\n".join(text for text, _ in printed.values()), directory)
    return {kind: (lib, name) for kind, (_, name) in printed.items()}


def launch(lib, name, args, blocks=1):
    """Run kernel ``name`` as a grid of ``blocks`` one-thread blocks, one after another."""
    fn = getattr(lib, name)
    converted = [_arg(a) for a in args]
    for block in range(blocks):
        lib.gf_host_set_block(block, blocks)
        fn(*converted)


def _arg(value):
    if isinstance(value, np.ndarray):
        # C-ordered, or rows of a larger array (kernels that take a row stride)
        assert value.flags.c_contiguous or (value.ndim == 2
                                            and value.strides[1] == value.itemsize)
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, np.float32):
        return ctypes.c_float(value)
    if isinstance(value, float):  # Python floats and np.float64: C double
        return ctypes.c_double(value)
    if isinstance(value, (int, np.integer)):
        return ctypes.c_longlong(int(value)) if value < 2**63 else ctypes.c_ulonglong(value)
    raise TypeError(f"no host argument for {value!r}")


def elementwise_harness(kernel):
    """A host function ``gf_elementwise(n, C, x..., y...)`` running ``kernel.operation``
    per element, with each parameter declared as CuPy declares it (``float16 x0``...)
    and read by the input's kind: CuPy's broadcasting, done here by index."""
    index = {"full": "i", "row": "c", "col": "r", "scalar": "0"}
    ins = [p.split() for p in kernel.in_params.split(", ")]
    outs = [p.split() for p in kernel.out_params.split(", ")]
    params = ["long long n", "long long C"]
    params += [f"const {C_TYPES[t]} *in_{v}" for t, v in ins]
    params += [f"{C_TYPES[t]} *out_{v}" for t, v in outs]
    body = ["const long long r = i / C; const long long c = i - r * C; (void)r; (void)c;"]
    body += [f"const {C_TYPES[t]} {v} = in_{v}[{index[k]}];" for (t, v), k in
             zip(ins, kernel.kinds)]
    body += [f"{C_TYPES[t]} &{v} = out_{v}[i];" for t, v in outs]
    return (kernel.preamble + 'extern "C" void gf_elementwise(' + ", ".join(params)
            + ") {\n  for (long long i = 0; i < n; ++i) {\n    " + "\n    ".join(body)
            + "\n    {\n" + kernel.operation + "\n    }\n  }\n}\n")


def scratch_dir():
    """A directory for compiled kernels that lives as long as the test session."""
    return tempfile.mkdtemp(prefix="gradflow-cuda-host-")
