"""The PyTorch backend, through array-api-compat: CPU, or CUDA when present."""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import Backend
from gradflow.ops.index_ops import _as_index, bind_gather_grad


def _scatter_add_rows(xp, rows, indices, num_rows):
    import torch

    out = torch.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, indices, rows)


# Torch slices only step forward: a negative-step slice becomes the same elements
# taken with a positive step, then flipped.


def _has_negative_step(index):
    return any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in index)


def _forward_steps(index, shape):
    """``index`` (ints and slices) with forward steps only, and the result axes to flip."""
    out, flips = [], []
    for k, size in zip(index, shape):
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            picked = range(*k.indices(size))
            k = slice(picked[-1], picked[0] + 1, -k.step) if picked else slice(0, 0)
            flips.append(sum(not isinstance(j, int) for j in out))
        out.append(k)
    return tuple(out), tuple(flips)


def _getitem(xp, key):
    index = _as_index(key)
    if not _has_negative_step(index):
        return lambda x: x[index]
    import torch

    plain = tuple(k for k in index if k is not None)
    new_axes = tuple(None if k is None else slice(None) for k in index if not isinstance(k, int))

    def getitem(x):
        forward, flips = _forward_steps(plain, x.shape)
        return torch.flip(x[forward], flips)[new_axes]

    return getitem


def _getitem_grad(xp, key):
    index = tuple(k for k in _as_index(key) if k is not None)
    import torch

    def getitem_grad(g, x):
        forward, flips = _forward_steps(index, x.shape)
        out = torch.zeros(x.shape, dtype=g.dtype, device=g.device)
        part = torch.reshape(g, out[forward].shape)
        out[forward] = torch.flip(part, flips) if flips else part
        return out

    return getitem_grad


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
                        {"gather_grad": bind_gather_grad(_scatter_add_rows),
                         "getitem": _getitem, "getitem_grad": _getitem_grad})
