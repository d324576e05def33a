"""CuPy's NCCL bindings, imported with a message that says what is missing."""

from __future__ import annotations


def import_nccl():
    """``(cupy, cupy.cuda.nccl)``, or an ImportError that says what is missing."""
    try:
        import cupy
    except ImportError as err:
        raise ImportError(
            "the NCCL engine needs CuPy and an NVIDIA GPU: pip install cupy-cuda12x "
            "(cupy-cuda13x for a CUDA 13 driver); on the CPU use engine='mpi' "
            f"[{type(err).__name__}: {err}]") from None
    except Exception as err:  # a broken CUDA install fails at import time
        raise ImportError(f"the NCCL engine needs CuPy, which failed to import "
                          f"({type(err).__name__}: {err})") from None
    try:
        from cupy.cuda import nccl
    except ImportError as err:
        raise ImportError(
            f"CuPy {cupy.__version__} is installed without NCCL support (cupy.cuda.nccl "
            "failed to import); install NCCL for CuPy (python -m cupyx.tools.install_library "
            "--library nccl --cuda 12.x), or use engine='mpi' "
            f"[{type(err).__name__}: {err}]") from None
    if not getattr(nccl, "available", True):
        raise ImportError(f"CuPy {cupy.__version__} was built without NCCL "
                          "(cupy.cuda.nccl.available is False); use engine='mpi'")
    return cupy, nccl
