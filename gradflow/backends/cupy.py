"""The CuPy backend (NVIDIA GPUs). CuPy is imported only when this backend is asked for."""

from __future__ import annotations

from gradflow.backends.base import Backend
from gradflow.ops.index_ops import bind_gather_grad


def _scatter_add_rows(xp, rows, indices, num_rows):
    import cupy
    import cupyx

    out = cupy.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype)
    cupyx.scatter_add(out, indices, rows)
    return out


class CupyBackend(Backend):
    name = "cupy"

    def asarray(self, host):
        import cupy

        with self.device:
            return cupy.asarray(host)

    def is_native(self, value):
        import cupy

        return isinstance(value, cupy.ndarray)

    def to_numpy(self, array):
        import cupy

        return cupy.asnumpy(array)

    def copy(self, array):
        return array.copy()

    def synchronize(self):
        self.device.synchronize()


def unavailable_reason(device=None):
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    except Exception as err:  # a broken CUDA install fails at import time
        return f"CuPy failed to import ({err})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        return f"CuPy found no usable CUDA device ({err})"
    if count == 0:
        return "CuPy found no CUDA device"
    return None


def create(device=None):
    import array_api_compat.cupy as xp
    import cupy

    index = int(str(device).rsplit(":", 1)[-1]) if device not in (None, "cuda") else 0
    return CupyBackend(xp, cupy.cuda.Device(index),
                       {"gather_grad": bind_gather_grad(_scatter_add_rows)})
