"""Random ops on the GPU for the CuPy backend: one Philox stream per random node, its
offset in device memory, advanced by the drawing kernel itself (kernel text and NumPy
references: ``gradflow.backends.cuda.device_random``).

Because nothing about a draw passes through the host, a draw captured in a CUDA graph
draws the next numbers at every replay, and the draws of a Session are reproducible
from its seeds. Draws write into arrays that stay the same (allocated at the first
draw of a shape), so the graph's addresses hold.

Example (on a GPU)::

    >>> stream = DeviceRandomStream(seed=42)                  # doctest: +SKIP
    >>> u = stream.uniform((128, 512), "float32")             # doctest: +SKIP
    >>> h = stream.dropout(x, keep)   # x / keep * floor(keep + u), keep a device scalar
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import device_random
from gradflow.passes.ir import user_node

THREADS = 256
_MODULES = {}  # (device id, dtype) -> cupy.RawModule


def _module(dtype):
    import cupy

    key = (cupy.cuda.Device().id, dtype)
    if key not in _MODULES:
        _MODULES[key] = cupy.RawModule(code=device_random.kernel_source(dtype),
                                       options=device_random.OPTIONS)
    return _MODULES[key]


class DeviceRandomStream:
    """One random node's counter-based stream on the current CUDA device.

    ``seed`` is the stream's 64-bit key (``device_random.device_seed``); ``offset`` the
    first counter block. ``uniform`` and ``dropout`` launch one kernel each on the
    current CuPy stream and return their output array.
    """

    def __init__(self, seed, offset=0):
        import cupy

        self.seed = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)
        self.state = cupy.array([int(offset), 0], dtype=cupy.uint64)
        self._buffers = {}

    @property
    def offset(self):
        """The stream's current offset in counter blocks (a device-to-host copy)."""
        return int(self.state[0].get())

    def _buffer(self, role, shape, dtype, out):
        import cupy

        if out is not None:
            return out
        key = (role, tuple(shape), str(dtype))
        if key not in self._buffers:
            self._buffers[key] = cupy.empty(shape, dtype)
        return self._buffers[key]

    def _launch(self, name, dtype, n, args):
        kernel = _module(dtype).get_function(name)
        kernel((device_random.grid_for(n, THREADS),), (THREADS,),
               (self.seed, self.state, np.int64(n), *args))

    def uniform(self, shape, dtype, minval=0.0, maxval=1.0, out=None):
        """Uniform numbers on ``[minval, maxval)`` of ``shape`` and ``dtype`` (float32 or
        float64), written into ``out`` or into this stream's buffer for that shape."""
        dtype = _checked(dtype, "random_uniform")
        out = self._buffer("uniform", shape, dtype, out)
        self._launch(device_random.uniform_kernel_name(dtype), dtype, out.size,
                     (np.float64(minval), np.float64(maxval), out))
        return out

    def dropout(self, x, keep, out=None):
        """``x / keep * floor(keep + u)`` (``gf.nn.dropout``) in one kernel; ``keep`` is a
        0-d device array of ``x``'s dtype, read by the kernel (a new value needs no new
        capture)."""
        dtype = _checked(x.dtype, "dropout")
        if str(keep.dtype) != dtype or keep.size != 1 or not x.flags.c_contiguous:
            raise ValueError(f"dropout on the device: keep must be one {dtype} number and x "
                             f"C-contiguous; got keep {keep.dtype} of shape {keep.shape}")
        out = self._buffer("dropout", x.shape, dtype, out)
        self._launch(device_random.dropout_kernel_name(dtype), dtype, x.size, (keep, x, out))
        return out


def _checked(dtype, what):
    dtype = str(np.dtype(str(dtype)))
    if dtype not in device_random.DTYPES:
        raise TypeError(f"{what} on the device: {dtype} is not drawn there (float32 and "
                        "float64 are); the host draws it")
    return dtype


def draws_on_device(node):
    """Whether ``random_source`` draws ``node``'s numbers on the device: uniform float
    draws, except those of variables' initial values (``host_draw``: every backend
    starts from the same weights)."""
    return node.attrs.get("dist") == "random_uniform" and node.dtype is not None \
        and str(node.dtype.name) in device_random.DTYPES \
        and not getattr(user_node(node), "host_draw", False)


def random_source(run_state, node):
    """A callable drawing ``node``'s numbers on the device, or None where the host must
    draw them (a distribution or dtype the device kernels lack): the device counterpart
    of the executor's host random source. The stream is keyed from
    ``run_state.host_rng(node)``'s seeds. With an input, the callable takes the array
    whose shape the draw copies (``random_uniform_like``)."""
    attrs = node.attrs
    if not draws_on_device(node):
        return None
    stream = DeviceRandomStream(device_random.device_seed(run_state.host_rng(node)))
    dtype, low, high = node.dtype.name, attrs["minval"], attrs["maxval"]
    if node.inputs:
        def source(like):
            return stream.uniform(like.shape, dtype, low, high)
    else:
        shape = tuple(attrs["shape"])

        def source():
            return stream.uniform(shape, dtype, low, high)
    source.stream, source.bounds = stream, (float(low), float(high))  # for a fused kernel
    return source
