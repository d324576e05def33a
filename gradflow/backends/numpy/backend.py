"""The NumPy backend (CPU): the default."""

from __future__ import annotations

import math

import array_api_compat.numpy as xp
import ml_dtypes
import numpy as np

from gradflow import dtypes
from gradflow.backends.base import Backend, KeptArrays
from gradflow.backends.cpu.numba_support import get_numba
from gradflow.backends.half import widened, widens
from gradflow.backends.numpy import windows as numpy_windows
from gradflow.backends.numpy.attention import LOWERINGS as ATTENTION_LOWERINGS
from gradflow.backends.numpy.fused import lower_fused
from gradflow.backends.numpy.layer_norm import LOWERINGS as LAYER_NORM_LOWERINGS
from gradflow.backends.numpy.lstm_seq import LOWERINGS as LSTM_SEQ_LOWERINGS
from gradflow.backends.numpy.lstm_seq import fuse_lstm_layers
from gradflow.backends.numpy.matmul import lower_matmul
from gradflow.backends.numpy.out import LOWERINGS as OUT_LOWERINGS
from gradflow.backends.numpy.reduce import lower_unbroadcast
from gradflow.backends.numpy.rnn import LOWERINGS as RNN_LOWERINGS
from gradflow.backends.numpy.segment import segment_reducer
from gradflow.backends.numpy.windows import LOWERINGS as WINDOW_LOWERINGS
from gradflow.backends.onednn import library as onednn
from gradflow.ops.index_ops import bind_gather_grad
from gradflow.ops.segment_ops import bind_segments
from gradflow.passes.conv_layouts import fold_conv_layouts
from gradflow.passes.lstm_steps import contiguous_recurrent_transposes
from gradflow.prim.index_checks import check_ids
from gradflow.prim.registry import add_lowering


def _scatter_add_rows(xp_, rows, indices, num_rows, out=None, scratch=None):
    """``out[indices[k]] += rows[k]`` over zeros, deterministically and faster than
    ``np.add.at`` (which is slow on 2-D rows): numba's loop summing in float64 (float32
    and float64 rows), else a one-hot matrix product while that matrix is small and the
    rows are finite, else sort the rows by index and sum each run with
    ``np.add.reduceat``. The loop is the fastest at every size measured (2-core VM, us,
    loop / product: 1000 rows from 2048 of 128 (BERT's embedding gradient) 66 / 3960;
    100 from 128 of 64, 2.8 / 24; 10 from 128 of 1, 0.9 / 4.0). With ``out``
    (``(num_rows, row size)``) and ``scratch`` (``KeptArrays``), the product path
    allocates nothing after its first call."""
    count = indices.shape[0]
    if count == 0:
        if out is None:
            return np.zeros((num_rows,) + rows.shape[1:], dtype=rows.dtype)
        out.fill(0)
        return out
    kernel = _scatter_kernel(rows.dtype)
    width = math.prod(rows.shape[1:])
    if kernel is not None and num_rows > 2 * count and num_rows * width >= 1 << 20:
        return _scatter_few_rows(kernel, rows, indices, num_rows, out)
    if kernel is not None:
        result = np.empty((num_rows,) + rows.shape[1:], dtype=rows.dtype) if out is None \
            else out
        total = np.empty((num_rows, width)) if scratch is None else \
            scratch.get_array("sums", (num_rows, width), np.float64)
        kernel(np.ascontiguousarray(rows).reshape(count, width), np.ascontiguousarray(indices),
               result.reshape(num_rows, width), total)
        return result
    # the product spreads a NaN or infinity of one row to every row (0 * nan): only
    # finite rows take it
    if num_rows * count <= 1 << 22 and _all_finite(rows, scratch):
        if scratch is None:
            one_hot = (np.arange(num_rows)[:, None] == indices[None, :]).astype(rows.dtype)
            return one_hot @ rows
        if ("positions", num_rows) not in scratch:
            scratch["positions", num_rows] = np.arange(num_rows)[:, None]
        positions = scratch["positions", num_rows]
        hits = scratch.get_array("hits", (num_rows, count), np.bool_)
        one_hot = scratch.get_array("one_hot", (num_rows, count), rows.dtype)
        np.equal(positions, indices[None, :], out=hits)
        np.copyto(one_hot, hits, casting="unsafe")
        return np.matmul(one_hot, rows, out=out)
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    result = np.zeros((num_rows,) + rows.shape[1:], dtype=rows.dtype) if out is None else out
    if out is not None:
        out.fill(0)
    result[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return result


def _scatter_few_rows(kernel, rows, indices, num_rows, out):
    """The numba scatter of few rows into many (a large, mostly zero result): summed by
    distinct index in a compact float64 buffer, so that nothing of the result's size is
    made but the result itself (not a float64 copy of it: twice a float32 result)."""
    count = indices.shape[0]
    width = math.prod(rows.shape[1:])
    present, rank = np.unique(indices, return_inverse=True)
    sums = np.empty((present.shape[0], width), dtype=rows.dtype)
    kernel(np.ascontiguousarray(rows).reshape(count, width), rank.reshape(-1), sums,
           np.empty((present.shape[0], width)))
    result = np.zeros((num_rows,) + rows.shape[1:], dtype=rows.dtype) if out is None else out
    if out is not None:
        out.fill(0)
    result.reshape(num_rows, width)[present] = sums
    return result


def _scatter_kernel(dtype):
    """The numba scatter-add of rows of ``dtype`` (float32, float64), or None."""
    if dtype not in (np.float32, np.float64) or get_numba() is None:
        return None
    from gradflow.backends.numpy.scatter_numba import scatter_add_rows

    return scatter_add_rows


def _all_finite(rows, scratch):
    if scratch is None:
        return bool(np.isfinite(rows).all())
    return bool(np.isfinite(rows, out=scratch.get_array("finite", rows.shape, np.bool_)).all())


def _lower_gather_grad(xp_, axis, validate=True):
    """``gather_grad`` into ``out=`` for the common case (axis 0: an embedding's
    gradient), through the product path's kept buffers; the op's impl otherwise."""
    general = bind_gather_grad(_scatter_add_rows)(xp_, axis, validate)
    scratch = KeptArrays(np.empty)

    def gather_grad(g, indices, params, out=None):
        if out is None or axis != 0:
            result = general(g, indices, params)
            if out is None:
                return result
            np.copyto(out, result)
            return out
        if validate:
            check_ids(np, indices, params.shape[0])
        flat = indices.reshape(-1)
        size = math.prod(params.shape[1:])
        rows = g.reshape(flat.shape[0], size)
        _scatter_add_rows(np, rows, flat, params.shape[0], out.reshape(params.shape[0], size),
                          scratch)
        return out

    gather_grad.accepts_out = True
    gather_grad.reads_whole_inputs = True
    return gather_grad


def _relu_grad(xp_):
    def relu_grad(g, x):
        return np.multiply(g, x > 0)

    return relu_grad


class NumpyBackend(Backend):
    name = "numpy"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # after the graph compiler's passes: NCHW convolutions as one op each where
        # oneDNN runs them (gradflow.passes.conv_layouts)
        if numpy_windows.ONEDNN and onednn.api() is not None:
            self.kernel_passes = (fold_conv_layouts,)
        # whole LSTM layers as one loop each way (gradflow.backends.numpy.lstm_seq), then
        # the backward products by w^T of the steps left read one row-major copy of it
        self.kernel_passes = tuple(self.kernel_passes) + (fuse_lstm_layers,
                                                          contiguous_recurrent_transposes)

    def asarray(self, host):
        return np.asarray(host)

    def bound(self, node, fn):
        # matmul keeps its half operands: its lowering multiplies them in float32 buffers
        # of its own (gradflow.backends.numpy.matmul), allocating nothing per step
        return widened(node, fn) if widens(node, native=("matmul",)) else fn

    def is_native(self, value):
        return isinstance(value, np.ndarray)

    def to_numpy(self, array):
        return np.array(array, copy=True)

    def copy(self, array):
        return np.array(array, copy=True)

    def is_ufunc(self, fn):
        return isinstance(fn, np.ufunc) and fn.nout == 1

    @staticmethod
    def copy_to(dest, value):
        np.copyto(dest, value, casting="unsafe")

    def fused(self, program, bind):
        shape = program.members[program.outputs[-1]].shape
        return lower_fused(program, [bind(m) for m in program.members], shape, self.in_turn)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def copy_into(self, array, value):
        np.copyto(array, value)


# NumPy's bfloat16 is ml_dtypes' (the namespace has no attribute of the name)
for _namespace in (xp.__name__, np.__name__):
    dtypes.add_resolution(_namespace, "bfloat16", np.dtype(ml_dtypes.bfloat16))

# this backend's own kernels, on the ops' records (OpDef.lowerings["numpy"])
LOWERINGS = {
    "gather_grad": _lower_gather_grad,
    "relu_grad": _relu_grad,
    "matmul": lower_matmul,
    "unbroadcast": lower_unbroadcast,
    **OUT_LOWERINGS,
    **ATTENTION_LOWERINGS,
    **LAYER_NORM_LOWERINGS,
    **RNN_LOWERINGS,
    **LSTM_SEQ_LOWERINGS,
    **WINDOW_LOWERINGS,
    **bind_segments(segment_reducer(_scatter_add_rows)),
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
