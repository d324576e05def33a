"""The PyTorch backend, through array-api-compat: CPU, or CUDA when present."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gradflow.backends.base import Backend
from gradflow.backends.torch.out import LOWERINGS as OUT_LOWERINGS
from gradflow.ops.index_ops import _as_index, bind_gather_grad, is_run_time_key, resolve_key
from gradflow.ops.segment_ops import bind_segments
from gradflow.prim.registry import add_lowering


def _scatter_add_rows(xp, rows, indices, num_rows):
    import torch

    out = torch.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype, device=rows.device)
    return out.index_add_(0, indices, rows)


_SCATTER_REDUCE = {"sum": "sum", "prod": "prod", "max": "amax", "min": "amin"}


def _reduce_rows(xp, reduce, rows, ids, num, presorted, empty):
    """The segment reductions' ``reduce_rows`` (``gradflow.ops.segment_ops``) in one
    ``scatter_reduce_`` (rows of no segment keep ``empty``), instead of the Array API
    form's sort and ``log2 n`` passes."""
    import torch

    kept = ids >= 0
    if not bool(kept.all()):
        rows, ids = rows[kept], ids[kept]
    out = torch.full((num, rows.shape[1]), empty, dtype=rows.dtype, device=rows.device)
    if ids.shape[0] == 0:
        return out
    index = ids[:, None].expand(-1, rows.shape[1])
    return out.scatter_reduce_(0, index, rows, _SCATTER_REDUCE[reduce], include_self=False)


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
    if is_run_time_key(key):  # the rank was unknown at build time: per value's shape
        return lambda x: _getitem(xp, resolve_key(key, x.shape))(x)
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
    if is_run_time_key(key):
        return lambda g, x: _getitem_grad(xp, resolve_key(key, x.shape))(g, x)
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
        if host.dtype == _BFLOAT16:  # torch.from_numpy knows no ml_dtypes: the same bits
            return torch.from_numpy(host.view(np.int16)).view(torch.bfloat16).to(self.device)
        return torch.from_numpy(host).to(self.device)

    def is_native(self, value):
        import torch

        return isinstance(value, torch.Tensor)

    def to_numpy(self, array):
        import torch

        if array.dtype == torch.bfloat16:  # the same bits, as ml_dtypes.bfloat16
            return array.detach().cpu().view(torch.int16).numpy().view(_BFLOAT16).copy()
        return array.detach().cpu().numpy().copy()

    def copy(self, array):
        return array.clone()

    @staticmethod
    def copy_to(dest, value):
        dest.copy_(value)

    def empty(self, shape, dtype):
        import torch

        return torch.empty(shape, dtype=_TORCH_DTYPES[np.dtype(dtype)], device=self.device)

    def copy_into(self, array, value):
        array.copy_(self.asarray(value) if isinstance(value, np.ndarray) else value)

    def synchronize(self):
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


# this backend's own kernels, on the ops' records (OpDef.lowerings["torch"])
for _op, _lower in (("gather_grad", bind_gather_grad(_scatter_add_rows)),
                    ("getitem", _getitem), ("getitem_grad", _getitem_grad),
                    *OUT_LOWERINGS.items(), *bind_segments(_reduce_rows).items()):
    add_lowering(_op, TorchBackend.name, _lower)


class _TorchDtypes(dict):
    """NumPy dtype -> torch dtype, looked up once per dtype."""

    def __missing__(self, dtype):
        import torch

        self[dtype] = torch.bfloat16 if dtype == _BFLOAT16 else \
            torch.from_numpy(np.empty(0, dtype)).dtype
        return self[dtype]


_TORCH_DTYPES = _TorchDtypes()
_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def unavailable_reason(device=None):
    try:
        import torch
    except ImportError:
        return ("PyTorch is not installed: pip install torch (the CPU-only build: pip install "
                "torch --index-url https://download.pytorch.org/whl/cpu; for a GPU, a CUDA "
                "build of PyTorch from pytorch.org)")
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        return (f"{device!r} is not a PyTorch device name; use 'cpu', 'cuda' or 'cuda:N' "
                "(or leave device out for the CPU)")
    if dev.type == "cuda":
        return _cuda_problem(torch, dev)
    if dev.type == "mps" and not torch.backends.mps.is_available():
        return (f"PyTorch {torch.__version__} is installed, but MPS (the Apple GPU) is not "
                "available to it here; use device='cpu'")
    return None


def _cuda_problem(torch, dev):
    """Why ``torch`` cannot use the CUDA device ``dev`` and what to do, or None if it can."""
    version = torch.__version__
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            why = ("it is a CPU-only build (torch.version.cuda is None), so it has no CUDA "
                   "device to use. Use device='cpu', or install a CUDA build of PyTorch "
                   "(pytorch.org) on a machine with an NVIDIA GPU")
        else:
            why = (f"it is built for CUDA {torch.version.cuda} but finds no CUDA device (no "
                   "NVIDIA GPU, a driver older than that CUDA, or CUDA_VISIBLE_DEVICES hides "
                   "it; nvidia-smi should list the GPU). Use device='cpu' without a GPU")
        return f"PyTorch {version} is installed, but CUDA is not available: {why}"
    count = torch.cuda.device_count()
    if dev.index is not None and dev.index >= count:
        return (f"PyTorch {version} sees {count} CUDA device{'s' if count > 1 else ''} "
                f"(cuda:0 to cuda:{count - 1}), so there is no cuda:{dev.index}")
    return None


def create(device=None):
    import array_api_compat.torch as xp
    import torch

    return TorchBackend(xp, torch.device(device or "cpu"))
