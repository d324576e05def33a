"""The cuDNN LSTM lowering's wiring on the CPU: ``CudnnLstm`` and the ``lstm_seq``
lowerings (``backends/cupy/cudnn_rnn.py``) run against a stand-in for libcudnn that
follows the cuDNN API reference's argument lists and computes with cuDNN's LSTM
equations (``test_cudnn_rnn``'s NumPy LSTM) on the host memory behind the pointers it is
given, and a stand-in for CuPy over NumPy. A NumPy session given the CuPy backend's
passes and these lowerings trains to the plain session's numbers: every pointer,
descriptor and size goes where the library reads it, and the weight conversion and the
gate order are right. (What only the real library can say, ``tests/test_cudnn_rnn_gpu.py``
checks on a GPU.)"""

from __future__ import annotations

import ctypes
import functools
import sys
import types

import numpy as np
from test_cudnn_rnn import _char_lstm, _cudnn_backward, _cudnn_forward

from gradflow.backends.cupy import cudnn_layout as layout
from gradflow.backends.cupy import cudnn_rnn


class _Device(np.ndarray):
    """A NumPy array with CuPy's ``.data.ptr``."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def _fake_cupy():
    def made(fn):
        return lambda *a, **k: fn(*a, **k).view(_Device)

    return types.SimpleNamespace(
        zeros=made(np.zeros), empty=made(np.empty), full=made(np.full), asarray=np.asarray,
        copyto=np.copyto, add=np.add,
        cuda=types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(ptr=0)))


def _at(address, shape):
    n = int(np.prod(shape))
    return np.ctypeslib.as_array((ctypes.c_double * n).from_address(address)).reshape(shape)


def _set(ref, value):
    ref._obj.value = value


class _FakeCudnn:
    """libcudnn's RNN calls as ``CudnnLstm`` makes them (float64, one layer)."""

    def __init__(self):
        self.ids, self.descs, self.saved, self.calls = 100, {}, {}, []

    def __getattr__(self, name):  # every other creator: a new handle
        if not name.startswith("cudnnCreate"):
            raise AttributeError(name)
        return self._create

    def _create(self, ref):
        self.ids += 1
        _set(ref, self.ids)
        return 0

    def cudnnGetVersion(self):
        return 90100

    def cudnnGetErrorString(self, status):
        return b"CUDNN_STATUS_TEST"

    def cudnnSetStream(self, handle, stream):
        return 0

    def cudnnSetDropoutDescriptor(self, desc, handle, dropout, states, size, seed):
        assert dropout == 0.0 and states is None and size == 0
        return 0

    def cudnnSetRNNDescriptor_v8(self, desc, algo, cell, bias, direction, mode, dtype, prec,
                                 math, inputs, hidden, proj, layers, dropout, aux):
        assert (cell, bias, direction, mode, dtype, prec) == (2, 2, 0, 0, 1, 1)
        assert proj == hidden and layers == 1 and inputs == 4 * hidden
        self.hidden, self.inputs = hidden, inputs
        return 0

    def cudnnSetRNNDataDescriptor(self, desc, dtype, kind, steps, batch, size, lengths, fill):
        assert kind == 1 and list(lengths) == [steps] * batch and fill is None
        self.descs[desc.value] = (steps, batch, size)
        return 0

    def cudnnSetTensorNdDescriptor(self, desc, dtype, n, dims, strides):
        assert n == 3 and list(dims)[0] == 1 and list(strides)[2] == 1
        self.descs[desc.value] = tuple(dims)[1:]
        return 0

    def cudnnGetRNNWeightSpaceSize(self, handle, rnn, ref):
        _set(ref, 8 * layout.expected_offsets(self.inputs, self.hidden)[1])
        return 0

    def cudnnGetRNNWeightParams(self, handle, rnn, pseudo, size, base, lin, m_desc, m_ref,
                                b_desc, b_ref):
        offsets, _ = layout.expected_offsets(self.inputs, self.hidden)
        kind = "W" if lin < 4 else "R"
        _set(m_ref, base + 8 * offsets[kind, lin % 4][0])
        _set(b_ref, base + 8 * offsets["b" + kind, lin % 4][0])
        return 0

    def cudnnGetRNNTempSpaceSizes(self, handle, rnn, mode, x_desc, work, reserve):
        assert mode == 1
        _set(work, 64)
        _set(reserve, 128)
        return 0

    def _parts(self, weights):
        offsets, total = layout.expected_offsets(self.inputs, self.hidden)
        return layout.views(_at(weights, (total,)), offsets)

    def _seq(self, desc, address):
        steps, batch, size = self.descs[desc.value]
        flat = _at(address, (steps * batch, size))
        return [flat[t * batch:(t + 1) * batch] for t in range(steps)]

    def cudnnRNNForward(self, handle, rnn, mode, lengths, x_desc, x, y_desc, y, h_desc, hx,
                        hy, c_desc, cx, cy, w_size, w, work_size, work, r_size, reserve):
        assert mode == 1 and hy is None and lengths and w_size and r_size == 128
        state = self.descs[h_desc.value]
        saved = _cudnn_forward(self._parts(w), self._seq(x_desc, x), _at(hx, state),
                               _at(cx, state))
        for t, out in enumerate(self._seq(y_desc, y)):
            out[...] = saved[t][-1]
        _at(cy, state)[...] = saved[-1][-2]
        self.saved[reserve] = saved
        self.calls.append("forward")
        return 0

    def cudnnRNNBackwardData_v8(self, handle, rnn, lengths, y_desc, y, dy, x_desc, dx, h_desc,
                                hx, dhy, dhx, c_desc, cx, dcy, dcx, w_size, w, work_size, work,
                                r_size, reserve):
        assert dhy is None and dcy is None and lengths
        saved = self.saved[reserve]
        np.testing.assert_array_equal(np.concatenate(self._seq(y_desc, y)),
                                      np.concatenate([s[-1] for s in saved]))
        _, dxs, _, (dh0, dc0) = _cudnn_backward(self._parts(w), saved, self._seq(y_desc, dy))
        for t, out in enumerate(self._seq(x_desc, dx)):
            out[...] = dxs[t]
        state = self.descs[h_desc.value]
        _at(dhx, state)[...] = dh0
        _at(dcx, state)[...] = dc0
        self.calls.append("backward")
        return 0


def _on_device(lower):
    """``lower`` with the NumPy executor's arrays seen as ``_Device`` arrays (no copy)."""
    def make(xp, **attrs):
        fn = lower(xp, **attrs)

        def run(*inputs, out=None):
            inputs = [np.ascontiguousarray(a).view(_Device) for a in inputs]
            if out is not None:
                out = tuple(None if o is None else o.view(_Device) for o in out)
            return tuple(np.asarray(r) for r in fn(*inputs, out=out))

        run.accepts_out = run.reads_whole_inputs = True
        return run

    return make


def test_a_numpy_session_through_the_cudnn_lowerings_trains_the_same(monkeypatch):
    import gradflow as gf
    from gradflow.passes.cudnn_rnn import fuse_lstm_sequences
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    fake = _FakeCudnn()
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(cudnn_rnn, "_LOADED", {"lib": fake})
    feed = np.random.default_rng(3).integers(0, 11, (4, 5)).astype(np.int32)

    def train(cudnn):
        graph, ids, loss, step, init, _ = _char_lstm(5, 6)
        with gf.Session(graph=graph) as sess:
            if cudnn:
                passes = (fuse_lstm_recurrence,
                          functools.partial(fuse_lstm_sequences, accepts=cudnn_rnn.accepts))
                monkeypatch.setattr(sess.backend, "kernel_passes", passes)
                for op, lower in cudnn_rnn.LOWERINGS.items():
                    monkeypatch.setitem(sess.backend.overrides, op, _on_device(lower))
            sess.run(init)
            return [sess.run([loss, step], {ids: feed})[0] for _ in range(4)]

    want = train(False)
    got = train(True)
    assert fake.calls == ["forward", "backward"] * 4
    np.testing.assert_allclose(got, want, rtol=1e-12)
