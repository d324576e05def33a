"""The PyTorch backend, through array-api-compat: CPU, or CUDA when present."""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import Backend
from gradflow.ops.index_ops import bind_gather_grad


def _scatter_add_rows(xp, rows, indices, num_rows):
    import torch

    out = torch.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, indices, rows)


class TorchBackend(Backend):
    name = "torch"

    def asarray(self, host):
        import torch

        if not host.flags.writeable or not host.flags.c_contiguous:
            host = np.array(host, copy=True, order="C")
        return torch.from_numpy(host).to(self.device)

    def is_native(self, value):
        import torch

        return isinstance(value, torch.Tensor)

    def to_numpy(self, array):
        return array.detach().cpu().numpy().copy()

    def copy(self, array):
        return array.clone()

    def synchronize(self):
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def unavailable_reason(device=None):
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if device is not None and str(device).startswith("cuda") and not torch.cuda.is_available():
        return "PyTorch has no CUDA device here"
    return None


def create(device=None):
    import array_api_compat.torch as xp
    import torch

    return TorchBackend(xp, torch.device(device or "cpu"),
                        {"gather_grad": bind_gather_grad(_scatter_add_rows)})
