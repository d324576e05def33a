"""One planned nvmath-python matrix product over fixed buffers: ``out = op(a) @ op(b) + bias``.

A plan's matmul is built once on the plan's own arrays (the two operands, the
optional bias and the result, arrays that stay the same objects for the life of
the plan), planned once, and then executed any number of times after new
contents were written into those arrays. Nothing is allocated per execution
and the result always lands in ``out``, which is what CUDA graph capture needs:
a replayed graph reads and writes the addresses of its capture.

Two nvmath-python front ends do the work:

* NumPy arrays: the generic ``nvmath.linalg.Matmul`` with CPU execution (MKL,
  from ``nvmath-python[cpu]``). The bias is written into ``out`` before each
  product and added with ``beta=1``; without one, ``beta=0`` ignores ``out``.
* CuPy arrays: ``nvmath.linalg.advanced.Matmul`` (cuBLASLt), the one that CuPy
  stream capture was measured to capture. cuBLASLt adds its ``BIAS`` epilogue
  along the result's rows in column-major terms, so the product is computed
  transposed, ``out.T = op(b).T @ op(a).T``, which puts ``bias`` along the rows
  of ``out.T`` and makes ``out.T`` the column-major result cuBLASLt prefers.
  ``allow_tf32`` selects the ``COMPUTE_32F_FAST_TF32`` compute type for float32
  (as ``torch.backends.cuda.matmul.allow_tf32`` does); FP32 is the default.

``transpose_a`` and ``transpose_b`` mean what they mean in TF1's ``matmul``:
the stored ``a`` is ``(K, M)`` and is used transposed (as a strided view, never
copied). A product with an empty extent (nvmath refuses those) is filled
directly: zeros, plus the bias.

Example::

    >>> import numpy as np
    >>> a, b = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    >>> out = np.empty((2, 4), np.float32)
    >>> with PlannedMatmul(a, b, out, transpose_b=True, num_threads=1) as mm:
    ...     mm.execute()[0, 0]
    3.0
"""

from __future__ import annotations

import threading

CPU_DTYPES = ("float32", "float64")
CUDA_DTYPES = ("float16", "float32", "float64")


def unavailable_reason():
    """Why nvmath-python cannot be used here, or None when it can."""
    try:
        import nvmath.linalg  # noqa: F401
    except ImportError as err:
        return (f"nvmath-python is not installed ({err}): pip install 'nvmath-python[cpu]' "
                "for the CPU, 'nvmath-python[cu12]' or 'nvmath-python[cu13]' for NVIDIA GPUs")
    except Exception as err:  # a broken CUDA or MKL install fails at import time
        return f"nvmath-python failed to import ({type(err).__name__}: {err})"
    return None


def result_shape(a_shape, b_shape, transpose_a=False, transpose_b=False):
    """``(..., M, N)`` of ``op(a) @ op(b)`` (the same leading batch extents, if any),
    checking that the inner extents agree."""
    batch, a_shape, b_shape = tuple(a_shape[:-2]), tuple(a_shape[-2:]), tuple(b_shape[-2:])
    m, k = (a_shape[1], a_shape[0]) if transpose_a else a_shape
    k2, n = (b_shape[1], b_shape[0]) if transpose_b else b_shape
    if k != k2:
        raise ValueError(f"matmul: inner dimensions differ: op(a) is {m}x{k}, op(b) is {k2}x{n}")
    return batch + (m, n)


def _mT(x):
    """``x`` with its last two axes swapped (a matrix, or each matrix of a batch)."""
    return x.swapaxes(-1, -2)


class PlannedMatmul:
    """``out = op(a) @ op(b) (+ bias)`` planned once on fixed buffers: matrices, or (without
    bias) batches of matrices of one batch shape; see the module doc.

    ``execute()`` reads the arrays' current contents and returns ``out`` itself.
    ``stream`` (CuPy only) is the stream the product is planned and executed on;
    ``num_threads`` (NumPy only) caps MKL's threads. Call ``free()`` (or use the
    object as a context manager) to release nvmath's resources.
    """

    def __init__(self, a, b, out, *, transpose_a=False, transpose_b=False, bias=None,
                 allow_tf32=False, stream=None, num_threads=None):
        self.a, self.b, self.out, self.bias = a, b, out, bias
        self.stream = stream
        self.on_gpu = type(out).__module__.split(".")[0] == "cupy"
        self._check(transpose_a, transpose_b)
        op_a = _mT(a) if transpose_a else a
        op_b = _mT(b) if transpose_b else b
        self._mm = None
        self.captured = False  # executed inside a CUDA graph capture
        if 0 in op_a.shape or 0 in op_b.shape:
            return  # filled directly by execute
        self._copies = False  # the product comes back in nvmath's array, copied into out
        if self.on_gpu:
            device_current_in_thread(out)
            try:
                self._mm = _cuda_matmul(op_a, op_b, out, bias, allow_tf32, stream)
            except Exception:  # an in-place product that cuBLASLt refuses: copy the result
                self._mm = _cuda_matmul(op_a, op_b, out, bias, allow_tf32, stream,
                                        inplace=False)
                self._copies = True
        else:
            self._mm = _cpu_matmul(op_a, op_b, out, bias, num_threads)

    def _check(self, transpose_a, transpose_b):
        arrays = {"a": self.a, "b": self.b, "out": self.out}
        if self.bias is not None:
            arrays["bias"] = self.bias
        allowed = CUDA_DTYPES if self.on_gpu else CPU_DTYPES
        for name, array in arrays.items():
            if str(array.dtype) != str(self.out.dtype) or str(array.dtype) not in allowed:
                raise TypeError(f"matmul through nvmath-python: {name} is {array.dtype}; all "
                                f"arrays must share one dtype of {', '.join(allowed)}")
            rank = 1 if name == "bias" else (2 if self.bias is not None else self.out.ndim)
            if array.ndim != rank or (name != "bias" and (
                    rank < 2 or tuple(array.shape[:-2]) != tuple(self.out.shape[:-2]))):
                raise ValueError(f"matmul through nvmath-python: {name} has shape "
                                 f"{tuple(array.shape)}; a, b and out are matrices (or "
                                 f"batches of one shape, without bias), bias a vector")
        shape = result_shape(self.a.shape, self.b.shape, transpose_a, transpose_b)
        if tuple(self.out.shape) != shape:
            raise ValueError(f"matmul through nvmath-python: out has shape {tuple(self.out.shape)}"
                             f", the product has {shape}")
        if self.bias is not None and tuple(self.bias.shape) != shape[-1:]:
            raise ValueError(f"matmul through nvmath-python: bias has shape "
                             f"{tuple(self.bias.shape)}, the product's rows have {shape[1]}")
        if not self.out.flags.c_contiguous:
            raise ValueError("matmul through nvmath-python: out must be C-contiguous")

    def execute(self):
        """Compute the product from the buffers' current contents into ``out``; return ``out``."""
        if self._mm is None:
            self.out[...] = 0 if self.bias is None else self.bias
        elif self.on_gpu:
            device_current_in_thread(self.out)
            self.captured = self.captured or _stream(self.stream).is_capturing()
            result = self._mm.execute(stream=self.stream)
            if self._copies:
                _mT(self.out)[...] = result  # the problem's column-major result
        else:
            if self.bias is not None:
                self.out[...] = self.bias
            self._mm.execute()
        return self.out

    def free(self):
        """Release nvmath's plan and workspace; the object cannot execute afterwards."""
        if self._mm is not None:
            if self.captured:
                # nvmath would wait for the event its last execution recorded, which a
                # capture recorded into its graph (not a real event): wait for the stream
                _stream(self.stream).synchronize()
                self._mm.last_compute_event = None
            self._mm.free()
            self._mm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()


_THREAD = threading.local()


def device_current_in_thread(array):
    """Make ``array``'s GPU current in this thread for cuda.core, under nvmath, once per
    thread and device: a thread that had not (one of several running one Session) failed
    its first product with "Device 0 is not yet initialized" (seen on an H100)."""
    device_id = array.device.id
    done = getattr(_THREAD, "devices", None)
    if done is None:
        done = _THREAD.devices = set()
    if device_id not in done:
        try:
            from cuda.core import Device
        except ImportError:  # cuda-core before 0.3
            from cuda.core.experimental import Device
        Device(device_id).set_current()
        done.add(device_id)


def _stream(stream):
    """``stream``, or CuPy's current stream where it is None (nvmath's default)."""
    if stream is not None:
        return stream
    import cupy

    return cupy.cuda.get_current_stream()


def _cpu_matmul(op_a, op_b, out, bias, num_threads):
    import nvmath.linalg

    mm = nvmath.linalg.Matmul(op_a, op_b, c=out, beta=0.0 if bias is None else 1.0,
                              options={"inplace": True},
                              execution=nvmath.linalg.ExecutionCPU(num_threads=num_threads))
    mm.plan()
    return mm


def _cuda_matmul(op_a, op_b, out, bias, allow_tf32, stream, inplace=True):
    from nvmath.linalg.advanced import Matmul, MatmulComputeType, MatmulEpilog

    options = {"inplace": True} if inplace else {}
    if allow_tf32 and str(out.dtype) == "float32":
        options["compute_type"] = MatmulComputeType.COMPUTE_32F_FAST_TF32
    # out^T = op(b)^T @ op(a)^T (of each matrix of a batch): column-major out^T, the
    # bias along its rows
    if inplace:
        mm = Matmul(_mT(op_b), _mT(op_a), c=_mT(out), beta=0.0, options=options, stream=stream)
    else:  # the reference's form: a result array of nvmath's own
        mm = Matmul(_mT(op_b), _mT(op_a), options=options, stream=stream)
    if bias is None:
        mm.plan(stream=stream)
    else:
        mm.plan(epilog=MatmulEpilog.BIAS, epilog_inputs={"bias": bias}, stream=stream)
    return mm
