"""cuDNN 9's RNN kernels through ctypes, and the CuPy lowerings of ``lstm_seq`` and
``lstm_seq_grad`` (``prim/rnn_seq.py``, made by ``passes/cudnn_rnn.py``).

CuPy 14 has no cuDNN binding, so this module binds the few functions of libcudnn 9's RNN
API it needs (``_SIGNATURES``). The library is the one PyTorch's wheels install,
``nvidia/cudnn/lib/libcudnn.so.9`` under a site-packages directory (the ``nvidia-cudnn-cu13``
wheel), or the file ``$GRADFLOW_CUDNN`` names. Signatures, enum values and the weight
layout follow NVIDIA's cuDNN API reference, "cudnn_adv library" (RNN functions:
https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-adv-library.html) and
"cudnn_ops library" (tensor descriptors, cudnnGetErrorString:
https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-ops-library.html); the
argument lists were checked against the generated header bindings of ``rcudnn-sys``
(docs.rs/rcudnn-sys, ``cudnnRNNForward``, ``cudnnRNNBackwardData_v8``...).

How a TF1 LSTM layer runs on cuDNN (``CudnnLstm``): the plan's input projection of every
step (one GEMM already, ``batch_matmuls``) is cuDNN's input, of size ``4 * units``, and
cuDNN's input matrices ``W_g`` pick each gate's block of it (a 0/1 matrix, set once), so
cuDNN's input gradient is exactly each step's pre-activation gradient ``dz_t`` in TF's
order, from which the plan's own products make the weight and bias gradients. The
recurrent matrices ``R_g`` and the bias are converted from TF's layout before each
forward (``RecurrentFiller``: four copies; ``cudnn_layout`` has the packing for a whole
TF kernel too).
"""

from __future__ import annotations

import ctypes
import glob
import os
import site
import sys
import threading
import warnings

import numpy as np

from gradflow.backends.cupy.cudnn_layout import (
    RecurrentFiller,
    expected_offsets,
    fill_input_selection,
    views,
)
from gradflow.backends.cupy.emit import _contiguous, _into, _outputs
from gradflow.prim.registry import REGISTRY

# enum values of cudnn_adv.h / cudnn_graph.h (cuDNN 9)
LSTM, DOUBLE_BIAS, UNIDIRECTIONAL, LINEAR_INPUT = 2, 2, 0, 0
# cudnnRNNAlgo_t; the persistent kernels keep the recurrent weights on chip (cuDNN's
# "Persistent RNNs"); PERSIST_DYNAMIC needs cudnnBuildRNNDynamic, not bound here
ALGOS = {"standard": 0, "persist_static": 1, "persist_static_small_h": 3}
DATA_FLOAT, DATA_DOUBLE = 0, 1
# FMA: no TF32 rounding of float32 (PyTorch's choice too unless allow_tf32)
DEFAULT_MATH, FMA_MATH = 0, 3
FWD_TRAINING = 1
SEQ_MAJOR_PACKED = 1
PADDED_IO_DISABLED = 0

_P, _I, _S = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_PP, _PS, _PI = ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t), \
    ctypes.POINTER(ctypes.c_int)
_SIGNATURES = {
    "cudnnGetVersion": (ctypes.c_size_t, []),
    "cudnnGetErrorString": (ctypes.c_char_p, [_I]),
    "cudnnCreate": (_I, [_PP]),
    "cudnnSetStream": (_I, [_P, _P]),
    "cudnnCreateRNNDescriptor": (_I, [_PP]),
    "cudnnSetRNNDescriptor_v8": (_I, [_P, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _I, _P,
                                      ctypes.c_uint32]),
    "cudnnCreateDropoutDescriptor": (_I, [_PP]),
    "cudnnSetDropoutDescriptor": (_I, [_P, _P, ctypes.c_float, _P, _S, ctypes.c_ulonglong]),
    "cudnnCreateRNNDataDescriptor": (_I, [_PP]),
    "cudnnSetRNNDataDescriptor": (_I, [_P, _I, _I, _I, _I, _I, _PI, _P]),
    "cudnnCreateTensorDescriptor": (_I, [_PP]),
    "cudnnSetTensorNdDescriptor": (_I, [_P, _I, _I, _PI, _PI]),
    "cudnnGetRNNWeightSpaceSize": (_I, [_P, _P, _PS]),
    "cudnnGetRNNWeightParams": (_I, [_P, _P, ctypes.c_int32, _S, _P, ctypes.c_int32, _P, _PP,
                                     _P, _PP]),
    "cudnnGetRNNTempSpaceSizes": (_I, [_P, _P, _I, _P, _PS, _PS]),
    "cudnnRNNForward": (_I, [_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P,
                             _S, _P, _S, _P, _S, _P]),
    "cudnnRNNBackwardData_v8": (_I, [_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P,
                                     _P, _P, _S, _P, _S, _P, _S, _P]),
    "cudnnRNNBackwardWeights_v8": (_I, [_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _S, _P, _S,
                                        _P, _S, _P]),
}
# loaded before the shim so that its dlopen of them finds them (cuDNN 9 is split)
_PARTS = ("libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
          "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9",
          "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9")


class CudnnUnavailable(RuntimeError):
    """libcudnn 9 could not be found or loaded."""


class CudnnError(RuntimeError):
    """A cuDNN call returned an error status."""


def library_path():
    """The libcudnn 9 this module loads: ``$GRADFLOW_CUDNN``, else PyTorch's wheel's under
    a site-packages directory; ``CudnnUnavailable`` naming where it looked otherwise."""
    named = os.environ.get("GRADFLOW_CUDNN")
    if named:
        if not os.path.isfile(named):
            raise CudnnUnavailable(f"GRADFLOW_CUDNN={named!r} is not a file (it should name "
                                   "libcudnn.so.9)")
        return named
    roots = list(dict.fromkeys(sys.path + site.getsitepackages() +
                               [site.getusersitepackages()]))
    for root in roots:
        hits = glob.glob(os.path.join(root, "nvidia", "cudnn", "lib", "libcudnn.so.9*"))
        if hits:
            return sorted(hits)[0]
    raise CudnnUnavailable("libcudnn.so.9 not found: no nvidia/cudnn/lib/libcudnn.so.9 under "
                           f"{len(roots)} site-packages/sys.path directories (install "
                           "nvidia-cudnn-cu13, PyTorch's, or set GRADFLOW_CUDNN to the file)")


_LOADED = {}
_LOCK = threading.Lock()


def load():
    """The bound library (a ``ctypes.CDLL`` with ``_SIGNATURES`` set), loaded once;
    ``CudnnUnavailable`` if it is missing, not version 9, or lacks a function."""
    with _LOCK:
        if "lib" not in _LOADED:
            try:
                _LOADED["lib"] = _load(library_path())
            except CudnnUnavailable as err:
                _LOADED["lib"] = err
        found = _LOADED["lib"]
    if isinstance(found, Exception):
        raise found
    return found


def available() -> bool:
    """Whether ``load()`` succeeds (the CuPy backend's kernel pass runs only then)."""
    try:
        load()
    except CudnnUnavailable:
        return False
    return True


def _load_parts(folder):
    """Load cuDNN 9's sub-libraries beside the shim (it opens them by name, which finds
    them loaded); the names of those that failed."""
    failed = []
    for part in _PARTS:
        full = os.path.join(folder, part)
        if os.path.exists(full):
            try:
                ctypes.CDLL(full, mode=ctypes.RTLD_GLOBAL)
            except OSError:  # noqa: PERF203 - tried again after the dependencies
                failed.append(part)
    return failed


def _load_dependencies(folder):
    """The NVIDIA wheels' libraries cuDNN needs (cuBLAS, NVRTC...), from the wheels beside
    its own (``nvidia/*/lib``), as PyTorch loads them: only where a sub-library did not
    load, and without their symbols in the global scope (CuPy has its own)."""
    nvidia = os.path.dirname(os.path.dirname(folder))
    for pattern in ("libcudart.so.*", "libnvrtc.so.*", "libcublasLt.so.*", "libcublas.so.*"):
        for full in sorted(glob.glob(os.path.join(nvidia, "*", "lib", pattern))):
            try:
                ctypes.CDLL(full)
            except OSError:  # noqa: PERF203 - the sub-library's error says what is missing
                pass


def _load(path):
    folder = os.path.dirname(path)
    if _load_parts(folder):
        _load_dependencies(folder)
        _load_parts(folder)
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as err:
        raise CudnnUnavailable(f"cannot load {path}: {err}") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name, None)
        if fn is None:
            raise CudnnUnavailable(f"{path} has no {name} (cuDNN 9 is needed)")
        fn.restype, fn.argtypes = restype, argtypes
    version = lib.cudnnGetVersion()
    if version // 10000 != 9:
        raise CudnnUnavailable(f"{path} is cuDNN {version}, not 9")
    return lib


def call(lib, name, *args):
    """``lib.name(*args)``; ``CudnnError`` naming the call and cuDNN's message if it fails."""
    status = getattr(lib, name)(*args)
    if status != 0:
        message = lib.cudnnGetErrorString(status).decode(errors="replace")
        raise CudnnError(f"{name} failed: status {status} ({message})")


def _made(lib, creator):
    handle = ctypes.c_void_p()
    call(lib, creator, ctypes.byref(handle))
    return handle


def _ints(values):
    return (ctypes.c_int * len(values))(*values)


class CudnnLstm:
    """One LSTM layer's cuDNN state, made when the plan is compiled (capture needs fixed
    pointers): the descriptors, the weight space (its input matrices set once), and the
    work space, reserve space and sequence lengths of ``steps`` x ``batch``."""

    def __init__(self, steps, batch, units, dtype, tf32=False, algo="standard"):
        import cupy

        self.lib = lib = load()
        self.steps, self.batch, self.units = steps, batch, units
        self.dtype = dtype = np.dtype(dtype)
        kind = {np.dtype(np.float32): DATA_FLOAT, np.dtype(np.float64): DATA_DOUBLE}.get(dtype)
        if kind is None:
            raise CudnnError(f"no cuDNN LSTM of {dtype} here (float32/float64 only)")
        self.handle = _made(lib, "cudnnCreate")
        dropout = _made(lib, "cudnnCreateDropoutDescriptor")
        call(lib, "cudnnSetDropoutDescriptor", dropout, self.handle, 0.0, None, 0, 0)
        self.rnn = _made(lib, "cudnnCreateRNNDescriptor")
        inputs = 4 * units
        if algo not in ALGOS:
            raise CudnnError(f"unknown cuDNN RNN algorithm {algo!r} (one of {sorted(ALGOS)})")
        call(lib, "cudnnSetRNNDescriptor_v8", self.rnn, ALGOS[algo], LSTM, DOUBLE_BIAS,
             UNIDIRECTIONAL, LINEAR_INPUT, kind, kind,
             FMA_MATH if kind == DATA_FLOAT and not tf32 else DEFAULT_MATH, inputs, units,
             units, 1,
             dropout, PADDED_IO_DISABLED)
        self._dropout = dropout  # the RNN descriptor refers to it
        lengths = _ints([steps] * batch)
        self.x_desc, self.y_desc = (self._data(kind, lengths, size) for size in (inputs, units))
        self.h_desc = _made(lib, "cudnnCreateTensorDescriptor")
        call(lib, "cudnnSetTensorNdDescriptor", self.h_desc, kind, 3, _ints([1, batch, units]),
             _ints([batch * units, units, 1]))
        self.weights = self._weight_space(cupy, inputs)
        work, reserve = ctypes.c_size_t(), ctypes.c_size_t()
        call(lib, "cudnnGetRNNTempSpaceSizes", self.handle, self.rnn, FWD_TRAINING,
             self.x_desc, ctypes.byref(work), ctypes.byref(reserve))
        self.work = cupy.empty(max(work.value, 1), dtype=np.uint8)
        self.reserve = cupy.empty(max(reserve.value, 1), dtype=np.uint8)
        self.seq_lengths = cupy.full(batch, steps, dtype=np.int32)
        # outputs no node reads (cuDNN writes them anyway): no allocation per run
        self.dhx, self.spare_c = (cupy.empty((batch, units), dtype=dtype) for _ in range(2))

    def _data(self, kind, lengths, size):
        desc = _made(self.lib, "cudnnCreateRNNDataDescriptor")
        call(self.lib, "cudnnSetRNNDataDescriptor", desc, kind, SEQ_MAJOR_PACKED, self.steps,
             self.batch, size, lengths, None)
        return desc

    def _weight_space(self, cupy, inputs):
        """The weight space and its parts as views, where ``cudnnGetRNNWeightParams``
        puts them (``layout_matches``: whether that is ``expected_offsets``)."""
        lib, size = self.lib, ctypes.c_size_t()
        call(lib, "cudnnGetRNNWeightSpaceSize", self.handle, self.rnn, ctypes.byref(size))
        offsets, total = expected_offsets(inputs, self.units)
        item = self.dtype.itemsize
        if size.value != total * item:
            raise CudnnError(f"cuDNN's weight space is {size.value} bytes, the LSTM layout "
                             f"{total * item}")
        flat = cupy.zeros(total, dtype=self.dtype)
        base = flat.data.ptr
        m_desc, b_desc = (_made(lib, "cudnnCreateTensorDescriptor") for _ in range(2))
        found = {}
        for layer_id in range(8):
            m, b = ctypes.c_void_p(), ctypes.c_void_p()
            call(lib, "cudnnGetRNNWeightParams", self.handle, self.rnn, 0, size.value, base,
                 layer_id, m_desc, ctypes.byref(m), b_desc, ctypes.byref(b))
            kind, gate = ("W" if layer_id < 4 else "R"), layer_id % 4
            for key, ptr in (((kind, gate), m.value), (("b" + kind, gate), b.value)):
                found[key] = ((ptr - base) // item, offsets[key][1])
        # the library's own offsets are used; the documented packing is checked on the GPU
        self.layout_matches = found == offsets
        self.parts, self._found, self._fillers = views(flat, found), found, {}
        fill_input_selection(self.parts, self.units, cupy)
        return flat

    def _sizes(self):
        return (self.weights.nbytes, self.weights.data.ptr, self.work.nbytes,
                self.work.data.ptr, self.reserve.nbytes, self.reserve.data.ptr)

    def _filler(self, forget_bias):
        import cupy

        filler = self._fillers.get(forget_bias)
        if filler is None:
            filler = self._fillers[forget_bias] = RecurrentFiller(
                self.weights, self._found, self.parts, self.units, forget_bias, cupy)
        return filler

    def forward(self, x, h0, w, row, c0, forget_bias, y, cy):
        """``y`` (every step's h) and ``cy`` (the last c) of the layer; the reserve space
        keeps what ``backward`` needs."""
        import cupy

        call(self.lib, "cudnnSetStream", self.handle, cupy.cuda.get_current_stream().ptr)
        self._filler(forget_bias)(w, row)
        call(self.lib, "cudnnRNNForward", self.handle, self.rnn, FWD_TRAINING,
             self.seq_lengths.data.ptr, self.x_desc, x.data.ptr, self.y_desc, y.data.ptr,
             self.h_desc, h0.data.ptr, None, self.h_desc, c0.data.ptr, cy.data.ptr,
             *self._sizes())

    def backward(self, dy, y, h0, c0, dx, dc0):
        """``dx`` (each step's gate pre-activation gradient, TF's order) and ``dc0`` from
        ``dy``, after ``forward`` on the same stream with the same weights."""
        import cupy

        call(self.lib, "cudnnSetStream", self.handle, cupy.cuda.get_current_stream().ptr)
        call(self.lib, "cudnnRNNBackwardData_v8", self.handle, self.rnn,
             self.seq_lengths.data.ptr, self.y_desc, y.data.ptr, dy.data.ptr, self.x_desc,
             dx.data.ptr, self.h_desc, h0.data.ptr, None, self.dhx.data.ptr, self.h_desc,
             c0.data.ptr, None, dc0.data.ptr, *self._sizes())


def _layer(link, x=None, c0=None, tf32=False, algo="standard"):
    """``link``'s ``CudnnLstm`` (made when first asked for: at plan compile time from the
    sizes the pass left, else from the first arrays), or None where cuDNN refused: the
    op's own function runs then."""
    if link is None or (link.state is None and link.sizes is None and x is None):
        return None
    if link.state is None:
        sizes = link.sizes or (x.shape[0] // c0.shape[0], *c0.shape, x.dtype)
        try:
            link.state = CudnnLstm(*sizes, tf32=tf32, algo=algo)
        except (CudnnUnavailable, CudnnError, ctypes.ArgumentError) as err:
            warnings.warn(f"cuDNN's LSTM refused ({err}); the layer runs step by step",
                          RuntimeWarning, stacklevel=2)
            link.state = False
    return link.state or None


def accepts(link, tf32=False, algo="standard"):
    """Whether cuDNN takes the layer of ``link`` (``passes.cudnn_rnn.SequenceLink``, its
    sizes set): its ``CudnnLstm`` is made now, at plan compile time, and kept in the
    link; where cuDNN refuses (a warning says why) the pass leaves the layer's steps.
    ``tf32``: float32 products may round to TF32 (``Session(allow_tf32=True)``; cuDNN's
    default math), else FMA only; ``algo`` one of ``ALGOS``."""
    return _layer(link, tf32=tf32, algo=algo) is not None


def _fits(layer, arrays, shapes):
    return layer is not None and all(a.shape == s and a.dtype == layer.dtype
                                     for a, s in zip(arrays, shapes)) and _contiguous(arrays)


def _spare(out, layer):
    """``out`` with the layer's spare state array for an unread second output."""
    first, second = out or (None, None)
    return first, layer.spare_c if second is None else second


def _marked(fn):
    fn.accepts_out = True
    fn.reads_whole_inputs = True
    return fn


def lower_lstm_seq(xp, forget_bias, steps, link=None):
    """``lstm_seq``: one ``cudnnRNNForward`` (training mode) where the arrays are C-ordered
    float32/float64 of the layer's sizes; else the op's Array API function."""
    impl = REGISTRY["lstm_seq"].impl
    if _layer(link) is not None:  # the descriptors and the spaces now, at plan compile time
        link.state._filler(forget_bias)

    def seq(x, h0, w, row, c0, out=None):
        layer = _layer(link, x, c0)
        if layer is not None:
            t, (b, u) = layer.steps, c0.shape
            ok = _fits(layer, (x, h0, w, row, c0), ((t * b, 4 * u), (b, u), (u, 4 * u),
                                                     (4 * u,), (b, u)))
        if layer is None or not ok:
            return _into(out, impl(xp, x, h0, w, row, c0, forget_bias=forget_bias,
                                   steps=steps))
        y, cy = _outputs(_spare(out, layer), ((t * b, u), (b, u)), x.dtype)
        if not _contiguous((y, cy)):
            return _into(out, impl(xp, x, h0, w, row, c0, forget_bias=forget_bias,
                                   steps=steps))
        layer.forward(x, h0, w, row, c0, forget_bias, y, cy)
        return y, cy

    return _marked(seq)


def lower_lstm_seq_grad(xp, forget_bias, steps, link=None):
    """``lstm_seq_grad``: one ``cudnnRNNBackwardData_v8`` from the forward's reserve space
    where the forward ran on cuDNN; else the op's Array API function."""
    impl = REGISTRY["lstm_seq_grad"].impl

    def seq_grad(dy, x, h0, w, row, c0, y, out=None):
        layer = link.state if link is not None and link.state else None
        if layer is not None:
            t, (b, u) = layer.steps, c0.shape
            ok = _fits(layer, (dy, x, h0, c0, y), ((t * b, u), (t * b, 4 * u), (b, u), (b, u),
                                                   (t * b, u)))
        if layer is None or not ok:
            return _into(out, impl(xp, dy, x, h0, w, row, c0, y, forget_bias=forget_bias,
                                   steps=steps))
        dx, dc0 = _outputs(_spare(out, layer), ((t * b, 4 * u), (b, u)), x.dtype)
        if not _contiguous((dx, dc0)):
            return _into(out, impl(xp, dy, x, h0, w, row, c0, y, forget_bias=forget_bias,
                                   steps=steps))
        layer.backward(dy, y, h0, c0, dx, dc0)
        return dx, dc0

    return _marked(seq_grad)


LOWERINGS = {"lstm_seq": lower_lstm_seq, "lstm_seq_grad": lower_lstm_seq_grad}
