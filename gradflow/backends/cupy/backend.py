"""The CuPy backend (NVIDIA GPUs). CuPy is imported only when this backend is asked for."""

from __future__ import annotations

import functools
import os

import ml_dtypes
import numpy as np

from gradflow import dtypes
from gradflow.backends.base import Backend
from gradflow.backends.capture import CaptureGate
from gradflow.backends.cupy import attention as cupy_attention
from gradflow.backends.cupy import cudnn_rnn as cupy_cudnn_rnn
from gradflow.backends.cupy import emit as cupy_emit
from gradflow.backends.cupy import matmul as cupy_matmul
from gradflow.backends.cupy import random as cupy_random
from gradflow.backends.cupy import rnn as cupy_rnn
from gradflow.backends.cupy import transformer as cupy_transformer
from gradflow.backends.half import widened, widens
from gradflow.ops.index_ops import bind_gather_grad
from gradflow.passes.cudnn_rnn import fuse_lstm_sequences
from gradflow.passes.fusion import absorb_draws, absorb_row_sums
from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence
from gradflow.prim.registry import add_lowering

# CuPy 14 takes ml_dtypes.bfloat16 as its bfloat16 ("minimal support": most of cupy,
# little of cupyx; CUDA 12.2 or later to compile it; NumPy 2.1.2 or later). Not run here
# (no GPU): CuPy 13 has no bfloat16, and its arrays of it fail when made.
for _namespace in ("array_api_compat.cupy", "cupy"):
    dtypes.add_resolution(_namespace, "bfloat16", np.dtype(ml_dtypes.bfloat16))


def _scatter_add_rows(xp, rows, indices, num_rows):
    import cupy

    out = cupy.zeros((num_rows,) + tuple(rows.shape[1:]), dtype=rows.dtype)
    cupy.add.at(out, indices, rows)  # cupyx.scatter_add is deprecated in its favour
    return out


class CupyBackend(Backend):
    """CuPy on one CUDA device. Every run happens on the backend's own stream
    (``running``), so captured replays and uncaptured runs stay in order. It is a
    blocking stream (it waits for, and is waited for by, the legacy default stream)
    so that a copy made outside a run (an initial value, a restored checkpoint, a
    fetch) is ordered with the runs without an explicit synchronization; the
    schedule's arena, fused kernels, planned matmuls and graph capture are in
    ``gradflow.backends.cupy.emit``."""

    name = "cupy"
    captures = True
    # LSTM steps with their recurrent products inside (passes/lstm_recurrence.py); the
    # benchmark turns it off on a session's backend to time the op-by-op steps
    lstm_recurrence = True
    # a whole unrolled LSTM layer as cuDNN's RNN each way (passes/cudnn_rnn.py), where
    # libcudnn 9 loads (backends/cupy/cudnn_rnn.py); the benchmark compares it off and on.
    # Off unless GRADFLOW_CUDNN_RNN=1 until a GPU has run it: its ctypes calls are
    # written from NVIDIA's reference and tested against a stand-in library only, and a
    # wrong call into libcudnn would end the process, where the step kernels are proven
    cudnn_rnn = os.environ.get("GRADFLOW_CUDNN_RNN", "0").strip() == "1"
    cudnn_rnn_algo = "standard"  # or "persist_static", ... (cupy/cudnn_rnn.py's ALGOS)

    def __init__(self, xp, device=None, overrides=None):
        super().__init__(xp, device, overrides)
        self._stream = None
        self.gate = CaptureGate()  # copies in and out wait while a thread captures
        self.overrides.setdefault("matmul", cupy_matmul.lower_matmul(self))
        for op, lower in cupy_emit.conv_lowerings(self).items():
            self.overrides.setdefault(op, lower)

    @property
    def stream(self):
        import cupy

        if self._stream is None:
            with self.device:
                self._stream = cupy.cuda.Stream()
        return self._stream

    def running(self):
        return self.stream

    def capturer(self):
        return cupy_emit.CudaGraphCapturer(self.stream)

    def is_ufunc(self, fn):
        import cupy

        return isinstance(fn, cupy.ufunc) and fn.nout == 1

    @staticmethod
    def copy_to(dest, value):
        import cupy

        cupy.copyto(dest, value, casting="unsafe")

    def empty(self, shape, dtype):
        import cupy

        with self.device:
            return cupy.empty(shape, dtype)

    def copy_into(self, array, value):
        import cupy

        with self.gate.run():
            if isinstance(value, cupy.ndarray):
                cupy.copyto(array, value)
            else:
                array.set(value, stream=self.stream)

    def fused(self, program, bind):
        import cupy

        return cupy_emit.fused_kernel(program, [bind(m) for m in program.members], cupy,
                                      self.in_turn)

    def random_source(self, session, node):
        """The device's draw of ``node`` (``cupy_random``), or None for the host's."""
        return cupy_random.random_source(session, node)

    def draws_on_device(self, node):
        return cupy_random.draws_on_device(node)

    @property
    def kernel_passes(self):
        """Passes after the graph compiler's, for what this backend's printed kernels do:
        row sums (``cuda_kernels.print_row_kernel``) and draws (``print_draw_kernel``)
        inside fused kernels, and LSTM steps with their recurrent products inside
        (``cupy_rnn``), then whole LSTM layers as cuDNN's RNN where libcudnn 9 loads
        (``cupy_cudnn_rnn``; the steps stay the fallback)."""
        passes = (absorb_row_sums,
                  functools.partial(absorb_draws, draws_in_kernel=cupy_random.draws_on_device))
        if not self.lstm_recurrence:
            return passes
        cudnn = self.cudnn_rnn and cupy_cudnn_rnn.available()
        sequences = functools.partial(fuse_lstm_sequences, accepts=functools.partial(
            cupy_cudnn_rnn.accepts, tf32=self.allow_tf32, algo=self.cudnn_rnn_algo))
        return passes + (fuse_lstm_recurrence,) + ((sequences,) if cudnn else ())

    def asarray(self, host):
        import cupy

        with self.gate.run(), self.device:
            return cupy.asarray(host)

    def is_native(self, value):
        import cupy

        return isinstance(value, cupy.ndarray)

    def bound(self, node, fn):
        """Half-precision ops in float32, rounded once, but matmul (cuBLAS's own float32
        accumulation): ``gradflow.backends.half``."""
        if not widens(node, native=("matmul",)):
            return fn
        import cupy

        return widened(node, fn, cupy)

    def to_numpy(self, array):
        import cupy

        if not isinstance(array, cupy.ndarray):
            return cupy.asnumpy(array)
        with self.gate.run():
            return array.get(stream=self.stream)  # waits for the runs that wrote it

    def copy(self, array):
        return array.copy()

    def synchronize(self):
        self.device.synchronize()


# this backend's own kernels, on the ops' records (OpDef.lowerings["cupy"])
add_lowering("gather_grad", CupyBackend.name, bind_gather_grad(_scatter_add_rows))
add_lowering("log_softmax", CupyBackend.name, cupy_emit.lower_log_softmax)
add_lowering("concat", CupyBackend.name, cupy_emit.lower_concat)
add_lowering("unbroadcast", CupyBackend.name, cupy_emit.lower_unbroadcast)
for _op, _lower in {**cupy_rnn.LOWERINGS, **cupy_cudnn_rnn.LOWERINGS}.items():
    add_lowering(_op, CupyBackend.name, _lower)
for _op, _lower in {**cupy_attention.LOWERINGS, **cupy_transformer.LOWERINGS}.items():
    add_lowering(_op, CupyBackend.name, _lower)
for _op in ("max_pool", "max_pool_grad", "max_pool_relu_grad"):
    add_lowering(_op, CupyBackend.name, getattr(cupy_emit, f"lower_{_op}"))


def unavailable_reason(device=None):
    index = _device_index(device)
    if index is None:
        return (f"CuPy runs on CUDA GPUs only, and {device!r} is not one: pass device='cuda' "
                "or 'cuda:N' (or leave it out); for the CPU use backend='numpy'")
    try:
        import cupy
    except ImportError:
        return ("CuPy is not installed: pip install cupy-cuda12x (cupy-cuda13x for a CUDA 13 "
                "driver), and it needs an NVIDIA GPU with its driver")
    except Exception as err:  # a broken CUDA install fails at import time
        return (f"CuPy is installed but failed to import ({type(err).__name__}: {err}); "
                "install the cupy-cudaNNx package that matches the CUDA version of the driver")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        return (f"CuPy {cupy.__version__} is installed but found no usable CUDA device "
                f"({type(err).__name__}: {err}); it needs an NVIDIA GPU and its driver "
                "(nvidia-smi should list the GPU), else use backend='numpy'")
    if count == 0:
        return ("CuPy is installed but found no CUDA device (is CUDA_VISIBLE_DEVICES empty?); "
                "without a GPU use backend='numpy'")
    if index >= count:
        return (f"CuPy sees {count} CUDA device{'s' if count > 1 else ''} (cuda:0 to "
                f"cuda:{count - 1}), so there is no cuda:{index}")
    return None


def _device_index(device):
    """The GPU number of ``device`` (None, "cuda", "cuda:N" or N), or None if it names none."""
    if device is None or str(device) == "cuda":
        return 0
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    kind, _, number = str(device).partition(":")
    return int(number) if kind == "cuda" and number.isdigit() else None


def create(device=None):
    import array_api_compat.cupy as xp
    import cupy

    index = int(str(device).rsplit(":", 1)[-1]) if device not in (None, "cuda") else 0
    return CupyBackend(xp, cupy.cuda.Device(index))
