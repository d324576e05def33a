"""Op specs of the 3-D convolution and pooling primitives, the argmax of 2-D max pooling
(gradflow/prim/conv3d.py) and the ``tf.nn`` functions over them and over the 2-D
convolution (gradflow/ops/conv3d_ops.py, ops/nn_extra_ops.py; issue 47), loaded by
op_specs.py: forward against NumPy loops over the windows, float64 finite differences and
second-order checks on every backend through test_ops.py."""

from __future__ import annotations

import itertools

import numpy as np
from op_specs import distinct, keep, np_conv2d, np_window, spec, uniform

import gradflow as gf
from gradflow.prim.registry import apply


def np_windows3(shape, ksize, strides, padding):
    """Yield (output position, [(input position, window offset)] of its real cells)."""
    geometry = [np_window(shape[a], k, s, padding) for a, k, s in zip((1, 2, 3), ksize, strides)]
    for out in itertools.product(*(range(g[0]) for g in geometry)):
        cells = []
        for off in itertools.product(*(range(k) for k in ksize)):
            pos = tuple(o * s + d - g[1] for o, s, d, g in zip(out, strides, off, geometry))
            if all(0 <= p < shape[a] for p, a in zip(pos, (1, 2, 3))):
                cells.append((pos, off))
        yield out, cells


def _out_shape(shape, ksize, strides, padding, channels):
    return (shape[0],) + tuple(np_window(shape[a], k, s, padding)[0]
                               for a, k, s in zip((1, 2, 3), ksize, strides)) + (channels,)


def np_conv3d(x, w, strides, padding):
    out = np.zeros(_out_shape(x.shape, w.shape[:3], strides, padding, w.shape[4]), x.dtype)
    for o, cells in np_windows3(x.shape, w.shape[:3], strides, padding):
        for pos, off in cells:
            out[(slice(None),) + o] += x[(slice(None),) + pos] @ w[off]
    return out


def np_conv3d_filter(x, g, w_shape, strides, padding):
    """The gradient of conv3d in its filter: each window's input times its output."""
    dw = np.zeros(w_shape, x.dtype)
    for o, cells in np_windows3(x.shape, w_shape[:3], strides, padding):
        for pos, off in cells:
            dw[off] += x[(slice(None),) + pos].T @ g[(slice(None),) + o]
    return dw


def np_conv3d_input(g, w, x_shape, strides, padding):
    """The gradient of conv3d in its input: each output scattered back through the filter."""
    dx = np.zeros(x_shape, g.dtype)
    for o, cells in np_windows3(x_shape, w.shape[:3], strides, padding):
        for pos, off in cells:
            dx[(slice(None),) + pos] += g[(slice(None),) + o] @ w[off].T
    return dx


def np_pool3d(x, ksize, strides, padding, kind):
    out = np.zeros(_out_shape(x.shape, ksize, strides, padding, x.shape[4]), x.dtype)
    for o, cells in np_windows3(x.shape, ksize, strides, padding):
        vals = np.stack([x[(slice(None),) + pos] for pos, _ in cells])
        out[(slice(None),) + o] = vals.max(0) if kind == "max" else vals.mean(0)
    return out


def np_max_select3d(h, x, ksize, strides, padding):
    """``h`` at the first maximum of ``x`` in each window."""
    out = np.zeros(_out_shape(x.shape, ksize, strides, padding, x.shape[4]), h.dtype)
    for o, cells in np_windows3(x.shape, ksize, strides, padding):
        vals = np.stack([x[(slice(None),) + pos] for pos, _ in cells])
        hs = np.stack([h[(slice(None),) + pos] for pos, _ in cells])
        out[(slice(None),) + o] = np.take_along_axis(hs, vals.argmax(0)[None], 0)[0]
    return out


def np_argmax(x, k, s, padding, include_batch):
    """TF1's flat index of each window's first maximum in NHWC ``x``."""
    n, h, w, c = x.shape
    (oh, pt), (ow, pl) = np_window(h, k, s, padding), np_window(w, k, s, padding)
    out = np.zeros((n, oh, ow, c), np.int64)
    for b, i, j, ch in itertools.product(range(n), range(oh), range(ow), range(c)):
        best, where = -np.inf, 0
        for a, d in itertools.product(range(k), range(k)):
            r, q = i * s + a - pt, j * s + d - pl
            if 0 <= r < h and 0 <= q < w and x[b, r, q, ch] > best:
                best, where = x[b, r, q, ch], (r * w + q) * c + ch
        out[b, i, j, ch] = where + (b * h * w * c if include_batch else 0)
    return out


_CONV3D = ("conv3d", "conv3d_backprop_input", "conv3d_backprop_filter")
for _id, _strides, _pad in [("conv3d_same_strided", (2, 1, 2), "SAME"),
                            ("conv3d_valid", (1, 1, 1), "VALID")]:
    spec(_id, _CONV3D,
         lambda x, w, s=_strides, p=_pad: gf.nn.conv3d(x, w, (1,) + s + (1,), p),
         [uniform(1, 3, 3, 3, 2), uniform(2, 2, 1, 2, 2)],
         lambda x, w, s=_strides, p=_pad: np_conv3d(x, w, s, p),
         dynamic=keep(1, 0, 1, 2, 3, 4), tol={"float32": (1e-4, 1e-5)})
spec("conv3d_ncdhw", _CONV3D + ("transpose",),
     lambda x, w: gf.nn.conv3d(x, w, [1, 1, 1, 2, 2], "SAME", data_format="NCDHW"),
     [uniform(1, 2, 2, 3, 3), uniform(2, 2, 2, 2, 2)],
     lambda x, w: np_conv3d(x.transpose(0, 2, 3, 4, 1), w, (1, 2, 2), "SAME")
     .transpose(0, 4, 1, 2, 3), dynamic=keep(1, 0, 1, 2, 3, 4), tol={"float32": (1e-4, 1e-5)})
spec("conv3d_transpose", _CONV3D + ("fill",),
     lambda g, w: gf.nn.conv3d_transpose(g, w, [1, 3, 3, 3, 2], [1, 2, 1, 2, 1], "SAME"),
     [uniform(1, 2, 3, 2, 2), uniform(2, 2, 1, 2, 2)],
     lambda g, w: np_conv3d_input(g, w, (1, 3, 3, 3, 2), (2, 1, 2), "SAME"),
     dynamic=keep(1, 0, 1, 2, 3, 4), tol={"float32": (1e-4, 1e-5)})
spec("conv3d_backprop_filter_fn", _CONV3D + ("fill",),
     lambda x, g: gf.nn.conv3d_backprop_filter(x, [2, 2, 1, 2, 2], g, [1, 2, 1, 2, 1], "SAME"),
     [uniform(1, 3, 3, 3, 2), uniform(1, 2, 3, 2, 2)],
     lambda x, g: np_conv3d_filter(x, g, (2, 2, 1, 2, 2), (2, 1, 2), "SAME"),
     dynamic=None, tol={"float32": (1e-4, 1e-5)})

for _kind, _op in (("max", "max_pool3d"), ("avg", "avg_pool3d")):
    for _shape, _k, _s, _pad in [((1, 3, 3, 2, 2), (2, 2, 2), (2, 2, 2), "SAME"),
                                  ((2, 3, 2, 3, 1), (2, 1, 2), (1, 1, 2), "VALID")]:
        spec(f"{_op}_{_pad.lower()}_k{''.join(map(str, _k))}", (_op, f"{_op}_grad"),
             lambda x, o=_op, k=_k, s=_s, p=_pad: getattr(gf.nn, o)(x, k, s, p),
             [distinct(*_shape)],
             lambda x, t=_kind, k=_k, s=_s, p=_pad: np_pool3d(x, k, s, p, t))
spec("max_pool3d_select", ("max_pool3d_select", "max_pool3d_grad"),
     lambda h, x: apply("max_pool3d_select", [h, x], ksize=(2, 2, 2), strides=(2, 2, 2),
                        padding="SAME"),
     [uniform(1, 3, 3, 2, 2), distinct(1, 3, 3, 2, 2)],
     lambda h, x: np_max_select3d(h, x, (2, 2, 2), (2, 2, 2), "SAME"), grad=(0,))

for _pad, _batch in (("SAME", False), ("VALID", True)):
    spec(f"max_pool_argmax_{_pad.lower()}", "max_pool_argmax",
         lambda x, p=_pad, b=_batch: gf.nn.max_pool_with_argmax(
             x, [1, 2, 2, 1], [1, 2, 2, 1], p, include_batch_in_index=b)[1],
         [distinct(2, 5, 3, 2)], lambda x, p=_pad, b=_batch: np_argmax(x, 2, 2, p, b))

# the conv2d adjoints and conv1d_transpose as TF1's public functions
spec("conv2d_backprop_filter_fn", ("conv2d_backprop_filter", "conv2d_backprop_input", "conv2d",
                                   "fill"),
     lambda x, g: gf.nn.conv2d_backprop_filter(x, [3, 3, 2, 2], g, [1, 2, 2, 1], "SAME"),
     [uniform(1, 5, 4, 2), uniform(1, 3, 2, 2)],
     lambda x, g: _np_conv2d_filter(x, g), dynamic=None, tol={"float32": (1e-4, 1e-5)})
spec("conv1d_transpose_fn", ("conv2d_transpose", "conv2d", "conv2d_backprop_filter",
                             "expand_dims", "squeeze"),
     lambda x, f: gf.nn.conv1d_transpose(x, f, [2, 8, 2], 2, "SAME"),
     [uniform(2, 4, 3), uniform(3, 2, 3)],
     lambda x, f: _np_conv1d_transpose(x, f, 8, 2), dynamic=keep(1, 0, 1, 2),
     tol={"float32": (1e-4, 1e-5)})


def _np_conv2d_filter(x, g):
    """The gradient of a 3x3 stride-2 SAME conv2d in its filter, by finite sums."""
    dw = np.zeros((3, 3, x.shape[3], g.shape[3]), x.dtype)
    for a, b in itertools.product(range(3), range(3)):
        unit = np.zeros((3, 3, 1, 1))
        unit[a, b] = 1.0
        for c in range(x.shape[3]):
            single = np_conv2d(x[..., c:c + 1], unit, 2, "SAME")[..., 0]
            dw[a, b, c] = np.einsum("nhw,nhwd->d", single, g)
    return dw


def _np_conv1d_transpose(x, f, width, s):
    """Each input position scatters ``value * filter`` onto the output (SAME padding)."""
    n, w_in, _ = x.shape
    k, co, _ = f.shape
    pad = max((w_in - 1) * s + k - width, 0) // 2
    out = np.zeros((n, width + k + s * w_in, co), x.dtype)
    for i in range(w_in):
        for a in range(k):
            out[:, i * s + a, :] += x[:, i, :] @ f[a].T
    return out[:, pad:pad + width, :]
