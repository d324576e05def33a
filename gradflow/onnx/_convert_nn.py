"""ONNX converters of the convolution, pooling and LSTM-step ops.

gradflow is NHWC with HWIO filters; ONNX's Conv and pools are NCHW with OIHW
filters, so each is written between two Transposes (ONNX Runtime folds the
transposes of constant filters, and a memo reuses the NCHW copy of a value
that feeds several of them). TF1's SAME padding puts the odd cell at the end,
which is ONNX's ``SAME_UPPER``; explicit pads are written where the spatial
size is known.
"""

from __future__ import annotations

import numpy as np

from gradflow.onnx._builder import converts, fail
from gradflow.prim.conv import window_geometry
from gradflow.prim.rnn import _gate_vectors

_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _nchw(m, name, hint):
    key = ("nchw", name)
    if key not in m.memo:
        m.memo[key] = m.add("Transpose", [name], hint + "/nchw", perm=_TO_NCHW)
    return m.memo[key]


def _window_attrs(node, ksize):
    """``strides`` and the padding (explicit ``pads``, or ``auto_pad``) of a window op."""
    strides = [int(s) for s in node.attrs["strides"]]
    attrs = {"strides": strides}
    if node.attrs["padding"] == "VALID":
        attrs["pads"] = [0, 0, 0, 0]
        return attrs
    shape = node.inputs[0].shape
    if shape[1] is None or shape[2] is None:
        attrs["auto_pad"] = "SAME_UPPER"
        return attrs
    _, _, (top, bottom), (left, right) = window_geometry(shape, ksize, strides, "SAME")
    attrs["pads"] = [top, left, bottom, right]
    return attrs


def _windowed(m, node, op_type, inputs, **attrs):
    """``op_type`` over the NCHW copy of ``inputs[0]``, the result back in NHWC."""
    x = _nchw(m, inputs[0], node.name)
    out = m.add(op_type, [x] + list(inputs[1:]), node.name + "/nchw_out", **attrs)
    m.memo[("nchw", node.name)] = out
    nhwc = m.add("Transpose", [out], node.name, perm=_TO_NHWC)
    m.memo[("nchw", nhwc)] = out
    return nhwc


@converts("conv2d")
def _conv2d(m, node, ins):
    kh, kw = node.inputs[1].shape[:2]
    w = m.add("Transpose", [ins[1]], node.name + "/filter_oihw", perm=[3, 2, 0, 1])
    return _windowed(m, node, "Conv", [ins[0], w], kernel_shape=[kh, kw],
                     **_window_attrs(node, (kh, kw)))


@converts("max_pool", "avg_pool")
def _pool(m, node, ins):
    ksize = [int(k) for k in node.attrs["ksize"]]
    if node.type == "max_pool":
        return _windowed(m, node, "MaxPool", ins, kernel_shape=ksize,
                         **_window_attrs(node, ksize))
    return _windowed(m, node, "AveragePool", ins, kernel_shape=ksize, count_include_pad=0,
                     **_window_attrs(node, ksize))


# -- the LSTM step: z -> a = gates(z), c = f c_prev + i j, h = o tanh(c) ---------------


@converts("lstm_gates")
def _lstm_gates(m, node, ins):
    """``tanh(z * scale + shift) * mul + add``: sigmoid(x) = tanh(x / 2) / 2 + 1/2 gives
    the i, f, o gates and the plain tanh the j block, as gradflow computes them."""
    import array_api_compat.numpy as xnp

    if node.shape[-1] is None:
        raise fail(node, "has a gate axis of unknown size; ONNX export needs the LSTM's units")
    dt = node.dtype.as_numpy_dtype
    # gradflow's own vectors, for a row of gates of this width
    scale, shift, mul, add = _gate_vectors(xnp, np.empty((1, node.shape[-1]), dt),
                                           float(node.attrs["forget_bias"]))
    t = m.add("Mul", [ins[0], m.const(scale, dt)], node.name + "/scaled")
    t = m.add("Tanh", [m.add("Add", [t, m.const(shift, dt)], node.name + "/shifted")],
              node.name + "/tanh")
    return m.add("Add", [m.add("Mul", [t, m.const(mul, dt)], node.name + "/mul"),
                         m.const(add, dt)], node.name)


def _gate(m, a, units, k, hint):
    """Block ``k`` (i, j, f, o) of the activated gates ``a`` [batch, 4 * units]."""
    key = ("gate", a, k)
    if key not in m.memo:
        m.memo[key] = m.add("Slice", [a, m.const([k * units]), m.const([(k + 1) * units]),
                                      m.const([1])], f"{hint}/gate{'ijfo'[k]}")
    return m.memo[key]


@converts("lstm_c")
def _lstm_c(m, node, ins):
    a, c_prev = ins
    units = node.inputs[0].shape[-1] // 4
    i, j, f = (_gate(m, a, units, k, node.name) for k in range(3))
    kept = m.add("Mul", [f, c_prev], node.name + "/kept")
    return m.add("Add", [kept, m.add("Mul", [i, j], node.name + "/new")], node.name)


@converts("lstm_h")
def _lstm_h(m, node, ins):
    a, c = ins
    o = _gate(m, a, node.inputs[0].shape[-1] // 4, 3, node.name)
    return m.add("Mul", [o, m.add("Tanh", [c], node.name + "/tanh")], node.name)


@converts("gru_rh")
def _gru_rh(m, node, ins):
    """``r * h``: the first half of the gates (``gradflow/prim/gru.py``)."""
    gates, h = ins
    r = _gate(m, gates, node.inputs[0].shape[-1] // 2, 0, node.name)
    return m.add("Mul", [r, h], node.name)


@converts("gru_h")
def _gru_h(m, node, ins):
    """``u * h + (1 - u) * tanh(zc)``, ``u`` the second half of the gates."""
    gates, zc, h = ins
    u = _gate(m, gates, node.inputs[0].shape[-1] // 2, 1, node.name)
    one = m.const(1.0, node.dtype.as_numpy_dtype)
    keep = m.add("Mul", [u, h], node.name + "/kept")
    new = m.add("Mul", [m.add("Sub", [one, u], node.name + "/1-u"),
                        m.add("Tanh", [zc], node.name + "/tanh")], node.name + "/new")
    return m.add("Add", [keep, new], node.name)


def _sigmoid_of(m, x, name, dt):
    """``tanh(x / 2) / 2 + 1/2``, as gradflow computes a sigmoid."""
    half = m.const(0.5, dt)
    t = m.add("Tanh", [m.add("Mul", [x, half], name + "/half")], name + "/tanh")
    return m.add("Add", [m.add("Mul", [t, half], name + "/scaled"), half], name)


@converts("lstm_peep_c")
def _lstm_peep_c(m, node, ins):
    """The peephole/clipped cell state (``gradflow/prim/lstm_peephole.py``)."""
    z, c_prev, *w = ins
    dt, name = node.dtype.as_numpy_dtype, node.name
    i, j, f = (_gate(m, z, node.inputs[0].shape[-1] // 4, k, name) for k in range(3))
    f = m.add("Add", [f, m.const(node.attrs["forget_bias"], dt)], name + "/fb")
    if w:
        i = m.add("Add", [i, m.add("Mul", [w[0], c_prev], name + "/wi")], name + "/ip")
        f = m.add("Add", [f, m.add("Mul", [w[1], c_prev], name + "/wf")], name + "/fp")
    kept = m.add("Mul", [_sigmoid_of(m, f, name + "/sf", dt), c_prev], name + "/kept")
    new = m.add("Mul", [_sigmoid_of(m, i, name + "/si", dt),
                        m.add("Tanh", [j], name + "/tj")], name + "/new")
    clip = node.attrs["cell_clip"]
    if clip is None:
        return m.add("Add", [kept, new], name)
    c = m.add("Add", [kept, new], name + "/raw")
    return m.add("Min", [m.add("Max", [c, m.const(-clip, dt)], name + "/lo"),
                         m.const(clip, dt)], name)


@converts("lstm_peep_h")
def _lstm_peep_h(m, node, ins):
    z, c, *w = ins
    dt, name = node.dtype.as_numpy_dtype, node.name
    o = _gate(m, z, node.inputs[0].shape[-1] // 4, 3, name)
    if w:
        o = m.add("Add", [o, m.add("Mul", [w[0], c], name + "/wo")], name + "/op")
    return m.add("Mul", [_sigmoid_of(m, o, name + "/so", dt), m.add("Tanh", [c], name + "/tc")],
                 name)


@converts("batch_zeros")
def _batch_zeros(m, node, ins):
    from onnx import numpy_helper

    batch = m.add("Reshape", [m.add("Cast", ins, node.name + "/batch", to=7),
                              m.const([1])], node.name + "/batch1")
    shape = m.add("Concat", [batch, m.const(list(node.attrs["tail"]))], node.name + "/shape",
                  axis=0)
    zero = numpy_helper.from_array(np.zeros(1, node.dtype.as_numpy_dtype), "value")
    return m.add("ConstantOfShape", [shape], node.name, value=zero)
