"""The 3-D convolution and pooling primitives (NDHWC, TF1 ``SAME``/``VALID`` padding), their
adjoints, and the argmax of 2-D max pooling (``nn.max_pool_with_argmax``).

Written as ``gradflow.prim.conv`` writes the 2-D ones, with Array API calls only:
padding is a concat of full arrays along each spatial axis, the cells of the windows
are ``kd * kh * kw`` strided basic slices; a convolution stacks them (im2col) for one
matmul, pooling combines them elementwise, and the adjoints add back through the same
slices. Every gradient is a primitive with gradient rules, so second order works.
TF1's functions over them are in ``gradflow.ops.conv3d_ops``.
"""

from __future__ import annotations

import functools
import math

from array_api_compat import device as _device

from gradflow import dtypes as _dtypes
from gradflow.prim import rules
from gradflow.prim.conv import _cells, _out_dim, _window, first_max_masks
from gradflow.prim.registry import apply, register

_AXES = (1, 2, 3)  # the spatial axes of NDHWC

# -- window arithmetic ------------------------------------------------------------


def _geometry(shape, ksize, strides, padding):
    """Per spatial axis of NDHWC ``shape``: (out, pad_before, pad_after), TF1's rules."""
    return [_window(shape[a], k, s, padding) for a, k, s in zip(_AXES, ksize, strides)]


def _pad(xp, x, pads, value=0.0):
    """``x`` with ``pads[i] = (before, after)`` cells of ``value`` on spatial axis i."""
    for axis, (before, after) in zip(_AXES, pads):
        if not (before or after):
            continue
        parts = []
        for p in (before, after):
            shape = list(x.shape)
            shape[axis] = p
            parts.append(xp.full(tuple(shape), value, dtype=x.dtype, device=_device(x)))
        x = xp.concat([parts[0], x, parts[1]], axis=axis)
    return x


def _offsets(ksize):
    """The window cells' offsets ``(i, j, k)``, row-major."""
    return [(i, j, k) for i in range(ksize[0]) for j in range(ksize[1]) for k in range(ksize[2])]


def _slices(offset, geometry, strides):
    return (slice(None),) + tuple(slice(o, o + (g[0] - 1) * s + 1, s)
                                  for o, g, s in zip(offset, geometry, strides)) + (slice(None),)


def _cells3(xp, x, ksize, strides, padding, value=0.0):
    """The cells of every window: each a strided slice (N, OD, OH, OW, C) of ``x``
    padded with ``value``."""
    geometry = _geometry(x.shape, ksize, strides, padding)
    x = _pad(xp, x, [g[1:] for g in geometry], value)
    return [x[_slices(o, geometry, strides)] for o in _offsets(ksize)]


def _uncells3(xp, cells, like_shape, ksize, strides, padding):
    """The adjoint of ``_cells3``: each cell array added back onto the pixels it came from."""
    geometry = _geometry(like_shape, ksize, strides, padding)
    padded = (like_shape[0],) + tuple(like_shape[a] + g[1] + g[2]
                                      for a, g in zip(_AXES, geometry)) + (like_shape[4],)
    out = xp.zeros(padded, dtype=cells[0].dtype, device=_device(cells[0]))
    for offset, cell in zip(_offsets(ksize), cells):
        key = _slices(offset, geometry, strides)
        out[key] = out[key] + cell
    keep = (slice(None),) + tuple(slice(g[1], g[1] + like_shape[a])
                                  for a, g in zip(_AXES, geometry)) + (slice(None),)
    return out[keep]


def _out_shape(shape, ksize, strides, padding, channels, what):
    if len(shape) != 5:
        raise ValueError(f"{what} needs a rank-5 input (NDHWC), got {tuple(shape)}")
    return (shape[0],) + tuple(_out_dim(shape[a], k, s, padding)
                               for a, k, s in zip(_AXES, ksize, strides)) + (channels,)


# -- conv3d and its two adjoints ------------------------------------------------------


def _conv_impl(xp, x, w, strides, padding):
    *ksize, c, co = w.shape
    cols = xp.stack(_cells3(xp, x, ksize, strides, padding), axis=4)
    lead = cols.shape[:4]
    out = xp.reshape(cols, (math.prod(lead), math.prod(ksize) * c)) @ \
        xp.reshape(w, (math.prod(ksize) * c, co))
    return xp.reshape(out, tuple(lead) + (co,))


def _backprop_input_impl(xp, g, w, x_like, strides, padding):
    *ksize, c, co = w.shape
    lead = g.shape[:4]
    cols = xp.reshape(g, (math.prod(lead), co)) @ \
        xp.matrix_transpose(xp.reshape(w, (math.prod(ksize) * c, co)))
    cols = xp.reshape(cols, tuple(lead) + (math.prod(ksize), c))
    cells = [cols[:, :, :, :, k, :] for k in range(cols.shape[4])]
    return _uncells3(xp, cells, tuple(x_like.shape), ksize, strides, padding)


def _backprop_filter_impl(xp, x, g, w_like, strides, padding):
    *ksize, c, co = w_like.shape
    cols = xp.stack(_cells3(xp, x, ksize, strides, padding), axis=4)
    rows = math.prod(cols.shape[:4])
    dw = xp.matrix_transpose(xp.reshape(cols, (rows, math.prod(ksize) * c))) @ \
        xp.reshape(g, (rows, co))
    return xp.reshape(dw, tuple(w_like.shape))


def conv3d_shape(x_shape, w_shape, strides, padding):
    """The NDHWC result shape of conv3d, or a ValueError saying what does not fit."""
    if len(x_shape) != 5 or len(w_shape) != 5:
        raise ValueError(f"conv3d needs a rank-5 input (NDHWC) and filter (DHWIO), got "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")
    *ksize, c, co = w_shape
    if None in ksize:
        raise ValueError("conv3d: the filter's spatial size must be known")
    if None not in (c, x_shape[4]) and c != x_shape[4]:
        raise ValueError(f"conv3d: the input has {x_shape[4]} channels, the filter expects {c}")
    return _out_shape(x_shape, ksize, strides, padding, co, "conv3d")


def _conv_infer(shapes, in_dtypes, strides, padding):
    rules.require_floating(in_dtypes[0], "input")
    return conv3d_shape(shapes[0], shapes[1], strides, padding), rules.same_dtype(in_dtypes[:2])


def _conv_grad(n, g):  # dx = conv^T(g, w), dw = cells(x)^T g
    x, w = n.inputs
    return [apply("conv3d_backprop_input", [g, w, x], **n.attrs),
            apply("conv3d_backprop_filter", [x, g, w], **n.attrs)]


def _backprop_input_grad(n, h):  # <h, Bi(g, w)> = <conv(h, w), g> = <w, Bf(h, g)>
    g, w, _ = n.inputs
    return [apply("conv3d", [h, w], **n.attrs),
            apply("conv3d_backprop_filter", [h, g, w], **n.attrs), None]


def _backprop_filter_grad(n, h):  # <h, Bf(x, g)> = <conv(x, h), g> = <x, Bi(g, h)>
    x, g, _ = n.inputs
    return [apply("conv3d_backprop_input", [g, h, x], **n.attrs),
            apply("conv3d", [x, h], **n.attrs), None]


register("conv3d", _conv_impl, _conv_infer, grad=_conv_grad)
register("conv3d_backprop_input", _backprop_input_impl,
         lambda s, d, strides, padding: (s[2], rules.same_dtype(d[:2])),
         grad=_backprop_input_grad)
register("conv3d_backprop_filter", _backprop_filter_impl,
         lambda s, d, strides, padding: (s[2], rules.same_dtype(d[:2])),
         grad=_backprop_filter_grad)


# -- 3-D pooling ----------------------------------------------------------------------


def _max_pool_impl(xp, x, ksize, strides, padding):
    return functools.reduce(xp.maximum, _cells3(xp, x, ksize, strides, padding, -math.inf))


def _first_max_masks(xp, x, ksize, strides, padding):
    return first_max_masks(xp, x, _cells3(xp, x, ksize, strides, padding, -math.inf))


def _max_pool_grad_impl(xp, g, x, ksize, strides, padding):
    masks = _first_max_masks(xp, x, ksize, strides, padding)
    return _uncells3(xp, [g * m for m in masks], tuple(x.shape), ksize, strides, padding)


def _max_pool_select_impl(xp, h, x, ksize, strides, padding):
    masks = _first_max_masks(xp, x, ksize, strides, padding)
    cells = _cells3(xp, h, ksize, strides, padding)
    return functools.reduce(xp.add, [c * m for c, m in zip(cells, masks)])


def _pool_infer(shapes, in_dtypes, ksize, strides, padding):
    s = shapes[-1]
    rules.require_floating(in_dtypes[0], "value")
    return _out_shape(s, ksize, strides, padding, s[4] if len(s) == 5 else None,
                      "3-D pooling"), in_dtypes[0]


def _avg_count(xp, like, ksize, strides, padding):
    """How many real (unpadded) cells each window covers, shaped (1, OD, OH, OW, 1)."""
    ones = xp.ones((1,) + tuple(like.shape[1:4]) + (1,), dtype=like.dtype,
                   device=_device(like))
    return functools.reduce(xp.add, _cells3(xp, ones, ksize, strides, padding))


def _avg_pool_impl(xp, x, ksize, strides, padding):
    total = functools.reduce(xp.add, _cells3(xp, x, ksize, strides, padding))
    return total / _avg_count(xp, x, ksize, strides, padding)


def _avg_pool_grad_impl(xp, g, x_like, ksize, strides, padding):
    g = g / _avg_count(xp, x_like, ksize, strides, padding)
    return _uncells3(xp, [g] * math.prod(ksize), tuple(x_like.shape), ksize, strides, padding)


def _same_as_second(s, d, **attrs):
    return s[1], d[0]


register("max_pool3d", _max_pool_impl, _pool_infer,  # dx: g at the first max of each window
         grad=lambda n, g: [apply("max_pool3d_grad", [g, n.inputs[0]], **n.attrs)])
register("max_pool3d_grad", _max_pool_grad_impl, _same_as_second,
         grad=lambda n, h: [apply("max_pool3d_select", [h, n.inputs[1]], **n.attrs), None])
register("max_pool3d_select", _max_pool_select_impl, _pool_infer,  # h at each argmax
         grad=lambda n, g: [apply("max_pool3d_grad", [g, n.inputs[1]], **n.attrs), None])
register("avg_pool3d", _avg_pool_impl, _pool_infer,  # dx: g / count spread over the window
         grad=lambda n, g: [apply("avg_pool3d_grad", [g, n.inputs[0]], **n.attrs)])
register("avg_pool3d_grad", _avg_pool_grad_impl, _same_as_second,
         grad=lambda n, h: [apply("avg_pool3d", [h], **n.attrs), None])


# -- the argmax of 2-D max pooling ----------------------------------------------------


def _argmax_impl(xp, x, ksize, strides, padding, include_batch, dtype):
    """TF1's flat index of each window's first maximum (row-major, padding never wins):
    ``(y * W + x) * C + c``, plus ``b * H * W * C`` with ``include_batch``."""
    n, h, w, c = x.shape
    cells = _cells(xp, x, ksize, strides, padding, -math.inf)
    top = functools.reduce(xp.maximum, cells)
    oh, ow = top.shape[1:3]
    (_, pt, _), (_, pl, _) = (_window(h, ksize[0], strides[0], padding),
                              _window(w, ksize[1], strides[1], padding))
    dev = _device(x)
    rows = xp.reshape(xp.arange(oh, dtype=xp.int64, device=dev) * strides[0] - pt,
                      (1, oh, 1, 1))
    cols = xp.reshape(xp.arange(ow, dtype=xp.int64, device=dev) * strides[1] - pl,
                      (1, 1, ow, 1))
    chan = xp.reshape(xp.arange(c, dtype=xp.int64, device=dev), (1, 1, 1, c))
    found = xp.zeros(top.shape, dtype=xp.bool, device=dev)
    index = xp.zeros(top.shape, dtype=xp.int64, device=dev)
    for k, cell in enumerate(cells):
        i, j = divmod(k, ksize[1])
        hit = (cell == top) & ~found
        found = found | hit
        index = xp.where(hit, ((rows + i) * w + cols + j) * c + chan, index)
    if include_batch:
        batch = xp.reshape(xp.arange(n, dtype=xp.int64, device=dev), (n, 1, 1, 1))
        index = index + batch * (h * w * c)
    return xp.astype(index, getattr(xp, dtype))


def _argmax_infer(shapes, in_dtypes, ksize, strides, padding, include_batch, dtype):
    s = shapes[0]
    if len(s) != 4:
        raise ValueError(f"max_pool_with_argmax needs a rank-4 input (NHWC), got {tuple(s)}")
    return (s[0], _out_dim(s[1], ksize[0], strides[0], padding),
            _out_dim(s[2], ksize[1], strides[1], padding), s[3]), _dtypes.as_dtype(dtype)


register("max_pool_argmax", _argmax_impl, _argmax_infer, grad=None)
