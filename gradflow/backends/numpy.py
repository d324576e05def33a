"""The NumPy backend (CPU): the default."""

from __future__ import annotations

import array_api_compat.numpy as xp
import numpy as np

from gradflow.backends.base import Backend
from gradflow.backends.numpy_fused import lower_fused
from gradflow.backends.numpy_matmul import lower_matmul
from gradflow.backends.numpy_reduce import lower_unbroadcast
from gradflow.backends.numpy_rnn import LOWERINGS as RNN_LOWERINGS
from gradflow.backends.numpy_windows import LOWERINGS as WINDOW_LOWERINGS
from gradflow.ops.index_ops import bind_gather_grad
from gradflow.ops.registry import add_lowering


def _scatter_add_rows(xp_, rows, indices, num_rows):
    """``out[indices[k]] += rows[k]``, deterministically and faster than ``np.add.at``
    (which is slow on 2-D rows): a one-hot matrix product while that matrix is small
    and the rows are finite, else sort the rows by index and sum each run with
    ``np.add.reduceat``."""
    count = indices.shape[0]
    if count == 0:
        return np.zeros((num_rows,) + rows.shape[1:], dtype=rows.dtype)
    # the product spreads a NaN or infinity of one row to every row (0 * nan): only
    # finite rows take it
    if num_rows * count <= 1 << 22 and np.isfinite(rows).all():
        one_hot = (np.arange(num_rows)[:, None] == indices[None, :]).astype(rows.dtype)
        return one_hot @ rows
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    out = np.zeros((num_rows,) + rows.shape[1:], dtype=rows.dtype)
    out[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out


def _relu_grad(xp_):
    def relu_grad(g, x):
        return np.multiply(g, x > 0)

    return relu_grad


class NumpyBackend(Backend):
    name = "numpy"

    def asarray(self, host):
        return np.asarray(host)

    def is_native(self, value):
        return isinstance(value, np.ndarray)

    def to_numpy(self, array):
        return np.array(array, copy=True)

    def copy(self, array):
        return np.array(array, copy=True)

    def accepts_out(self, fn):
        return (isinstance(fn, np.ufunc) and fn.nout == 1) or getattr(fn, "accepts_out", False)

    def overwrites_inputs_safely(self, fn):
        # a ufunc writing over its own input keeps its vectorized loops
        return isinstance(fn, np.ufunc) and fn.nout == 1

    def fused(self, program, bind):
        shape = program.members[program.outputs[-1]].shape
        return lower_fused(program, bind, shape)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)


# this backend's own kernels, on the ops' records (OpDef.lowerings["numpy"])
LOWERINGS = {
    "gather_grad": bind_gather_grad(_scatter_add_rows),
    "relu_grad": _relu_grad,
    "matmul": lower_matmul,
    "unbroadcast": lower_unbroadcast,
    **RNN_LOWERINGS,
    **WINDOW_LOWERINGS,
}
for _op, _lower in LOWERINGS.items():
    add_lowering(_op, NumpyBackend.name, _lower)


def unavailable_reason(device=None):
    if device is not None and str(device) != "cpu":
        return (f"NumPy runs on the CPU only, so it cannot use device {device!r}; leave "
                "device out (or pass device='cpu'), or use a GPU backend: backend='cupy', or "
                "backend='torch' with device='cuda'")
    return None


def create(device=None):
    return NumpyBackend(xp, "cpu")
