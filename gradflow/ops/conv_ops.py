"""2-D convolution and pooling (NHWC, TF1 ``SAME``/``VALID`` padding), and dropout.

Written with Array API calls only: padding is a concat of zeros, and the cells
of the windows are ``kh * kw`` strided basic slices. A convolution stacks them
on a new axis (im2col) for one matmul; pooling combines them elementwise. The
adjoints add back through the same strided slices. Every gradient is itself a
primitive with gradient rules, so second order works.
"""

from __future__ import annotations

import functools
import math

from array_api_compat import device as _device

from gradflow.ops import rules
from gradflow.ops.registry import apply, convert_to_tensor, register

# -- window arithmetic ------------------------------------------------------------


def _window(size, k, s, padding):
    """(out, pad_before, pad_after) of one spatial axis, as TF1 computes them."""
    if padding == "VALID":
        return (size - k) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def _out_dim(size, k, s, padding):
    if size is None:
        return None
    out = _window(size, k, s, padding)[0]
    if out < 1:
        raise ValueError(f"the window ({k}) is larger than the input ({size}) with VALID padding")
    return out


def _pad(xp, x, ph, pw, value=0.0):
    """``x`` (NHWC) with ``ph = (top, bottom)`` and ``pw = (left, right)`` cells of ``value``."""
    n, h, w, c = x.shape
    if any(ph):
        parts = [xp.full((n, p, w, c), value, dtype=x.dtype, device=_device(x)) for p in ph]
        x = xp.concat([parts[0], x, parts[1]], axis=1)
    if any(pw):
        h = x.shape[1]
        parts = [xp.full((n, h, p, c), value, dtype=x.dtype, device=_device(x)) for p in pw]
        x = xp.concat([parts[0], x, parts[1]], axis=2)
    return x


def window_geometry(shape, ksize, strides, padding):
    """(OH, OW, (top, bottom), (left, right)) of NHWC ``shape`` under a window, TF1 rules."""
    (kh, kw), (sh, sw) = ksize, strides
    oh, pt, pb = _window(shape[1], kh, sh, padding)
    ow, pl, pr = _window(shape[2], kw, sw, padding)
    return oh, ow, (pt, pb), (pl, pr)


def _cells(xp, x, ksize, strides, padding, value=0.0):
    """The ``kh * kw`` cells of every window, row-major: each a strided slice
    (N, OH, OW, C) of ``x`` padded with ``value``."""
    (kh, kw), (sh, sw) = ksize, strides
    oh, ow, ph, pw = window_geometry(x.shape, ksize, strides, padding)
    x = _pad(xp, x, ph, pw, value)
    return [x[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw, :]
            for i in range(kh) for j in range(kw)]


def _patches(xp, x, ksize, strides, padding):
    """The windows of ``x`` as an array (N, OH, OW, kh*kw, C) (im2col)."""
    return xp.stack(_cells(xp, x, ksize, strides, padding), axis=3)


def _uncells(xp, cells, like_shape, ksize, strides, padding):
    """The adjoint of ``_cells``: add each cell array back onto the pixels it came from."""
    kw, (sh, sw) = ksize[1], strides
    oh, ow, ph, pw = window_geometry(like_shape, ksize, strides, padding)
    n, h, w, c = like_shape
    out = xp.zeros((n, h + sum(ph), w + sum(pw), c), dtype=cells[0].dtype,
                   device=_device(cells[0]))
    disjoint = ksize[0] <= sh and kw <= sw  # windows that never share a pixel
    for k, cell in enumerate(cells):
        i, j = divmod(k, kw)
        key = (slice(None), slice(i, i + (oh - 1) * sh + 1, sh),
               slice(j, j + (ow - 1) * sw + 1, sw), slice(None))
        out[key] = cell if disjoint else out[key] + cell
    return out[:, ph[0]:ph[0] + h, pw[0]:pw[0] + w, :]


def _unpatch(xp, cols, like_shape, ksize, strides, padding):
    """The adjoint of ``_patches``."""
    cells = [cols[:, :, :, k, :] for k in range(cols.shape[3])]
    return _uncells(xp, cells, like_shape, ksize, strides, padding)


# -- conv2d and its two adjoints ------------------------------------------------------


def _conv_impl(xp, x, w, strides, padding):
    kh, kw, c, co = w.shape
    cols = _patches(xp, x, (kh, kw), strides, padding)
    n, oh, ow = cols.shape[:3]
    out = xp.reshape(cols, (n * oh * ow, kh * kw * c)) @ xp.reshape(w, (kh * kw * c, co))
    return xp.reshape(out, (n, oh, ow, co))


def _backprop_input_impl(xp, g, w, x_like, strides, padding):
    kh, kw, c, co = w.shape
    n, oh, ow = g.shape[:3]
    cols = xp.reshape(g, (n * oh * ow, co)) @ xp.matrix_transpose(xp.reshape(w, (kh * kw * c, co)))
    cols = xp.reshape(cols, (n, oh, ow, kh * kw, c))
    return _unpatch(xp, cols, x_like.shape, (kh, kw), strides, padding)


def _backprop_filter_impl(xp, x, g, w_like, strides, padding):
    kh, kw, c, co = w_like.shape
    cols = _patches(xp, x, (kh, kw), strides, padding)
    n, oh, ow = cols.shape[:3]
    cols = xp.reshape(cols, (n * oh * ow, kh * kw * c))
    dw = xp.matrix_transpose(cols) @ xp.reshape(g, (n * oh * ow, co))
    return xp.reshape(dw, (kh, kw, c, co))


def _conv_shape(x_shape, w_shape, strides, padding):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ValueError(f"conv2d needs a rank-4 input (NHWC) and filter (HWIO), got "
                         f"{tuple(x_shape)} and {tuple(w_shape)}")
    kh, kw, c, co = w_shape
    if None in (kh, kw):
        raise ValueError("the filter's spatial size must be known")
    if c is not None and x_shape[3] is not None and c != x_shape[3]:
        raise ValueError(f"the input has {x_shape[3]} channels, the filter expects {c}")
    return (x_shape[0], _out_dim(x_shape[1], kh, strides[0], padding),
            _out_dim(x_shape[2], kw, strides[1], padding), co)


def _conv_infer(shapes, in_dtypes, strides, padding):
    rules.require_floating(in_dtypes[0], "input")
    return _conv_shape(shapes[0], shapes[1], strides, padding), rules.same_dtype(in_dtypes)


def _conv_grad(n, g):  # dx = conv^T(g, w), dw = patches(x)^T g
    x, w = n.inputs
    return [apply("conv2d_backprop_input", [g, w, x], **n.attrs),
            apply("conv2d_backprop_filter", [x, g, w], **n.attrs)]


def _backprop_input_grad(n, h):  # <h, Bi(g, w)> = <conv(h, w), g> = <w, Bf(h, g)>
    g, w, _ = n.inputs
    return [apply("conv2d", [h, w], **n.attrs),
            apply("conv2d_backprop_filter", [h, g, w], **n.attrs), None]


def _backprop_filter_grad(n, h):  # <h, Bf(x, g)> = <conv(x, h), g> = <x, Bi(g, h)>
    x, g, _ = n.inputs
    return [apply("conv2d_backprop_input", [g, h, x], **n.attrs),
            apply("conv2d", [x, h], **n.attrs), None]


register("conv2d", _conv_impl, _conv_infer, grad=_conv_grad)
register("conv2d_backprop_input", _backprop_input_impl,
         lambda s, d, strides, padding: (s[2], d[0]), grad=_backprop_input_grad)
register("conv2d_backprop_filter", _backprop_filter_impl,
         lambda s, d, strides, padding: (s[2], d[0]), grad=_backprop_filter_grad)


# -- pooling --------------------------------------------------------------------------


def _max_pool_impl(xp, x, ksize, strides, padding):
    return functools.reduce(xp.maximum, _cells(xp, x, ksize, strides, padding, -math.inf))


def _first_max_masks(xp, x, ksize, strides, padding):
    """Per window cell, where that cell is its window's first maximum (row-major), as 0/1."""
    cells = _cells(xp, x, ksize, strides, padding, -math.inf)
    top = functools.reduce(xp.maximum, cells)
    taken = xp.zeros(top.shape, dtype=xp.bool, device=_device(x))
    masks = []
    for cell in cells:
        hit = (cell == top) & ~taken
        taken = taken | hit
        masks.append(xp.astype(hit, x.dtype))
    return masks


def _max_pool_grad_impl(xp, g, x, ksize, strides, padding):
    masks = _first_max_masks(xp, x, ksize, strides, padding)
    return _uncells(xp, [g * m for m in masks], x.shape, ksize, strides, padding)


def _max_pool_select_impl(xp, h, x, ksize, strides, padding):
    masks = _first_max_masks(xp, x, ksize, strides, padding)
    cells = _cells(xp, h, ksize, strides, padding)
    return functools.reduce(xp.add, [c * m for c, m in zip(cells, masks)])


def _pool_infer(shapes, in_dtypes, ksize, strides, padding):
    s = shapes[-1]
    if len(s) != 4:
        raise ValueError(f"pooling needs a rank-4 input (NHWC), got {tuple(s)}")
    rules.require_floating(in_dtypes[0], "value")
    return (s[0], _out_dim(s[1], ksize[0], strides[0], padding),
            _out_dim(s[2], ksize[1], strides[1], padding), s[3]), in_dtypes[0]


def _avg_count(xp, like, ksize, strides, padding):
    """How many real (unpadded) cells each window covers, shaped (1, OH, OW, 1)."""
    ones = xp.ones((1,) + tuple(like.shape[1:3]) + (1,), dtype=like.dtype, device=_device(like))
    return functools.reduce(xp.add, _cells(xp, ones, ksize, strides, padding))


def _avg_pool_impl(xp, x, ksize, strides, padding):
    total = functools.reduce(xp.add, _cells(xp, x, ksize, strides, padding))
    return total / _avg_count(xp, x, ksize, strides, padding)


def _avg_pool_grad_impl(xp, g, x_like, ksize, strides, padding):
    g = g / _avg_count(xp, x_like, ksize, strides, padding)
    return _uncells(xp, [g] * (ksize[0] * ksize[1]), x_like.shape, ksize, strides, padding)


register("max_pool", _max_pool_impl, _pool_infer,  # dx: g at the first max of each window
         grad=lambda n, g: [apply("max_pool_grad", [g, n.inputs[0]], **n.attrs)])
register("max_pool_grad", _max_pool_grad_impl, lambda s, d, **a: (s[1], d[0]),
         grad=lambda n, h: [apply("max_pool_select", [h, n.inputs[1]], **n.attrs), None])
register("max_pool_select", _max_pool_select_impl, _pool_infer,  # h at each window's argmax
         grad=lambda n, g: [apply("max_pool_grad", [g, n.inputs[1]], **n.attrs), None])
register("avg_pool", _avg_pool_impl, _pool_infer,  # dx: g / count spread over the window
         grad=lambda n, g: [apply("avg_pool_grad", [g, n.inputs[0]], **n.attrs)])
register("avg_pool_grad", _avg_pool_grad_impl, lambda s, d, **a: (s[1], d[0]),
         grad=lambda n, h: [apply("avg_pool", [h], **n.attrs), None])


# -- public functions -------------------------------------------------------------------


def _pair(value, what):
    """TF1's strides/ksize: an int, a pair, or a list of 4 whose batch and channel are 1."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) == 4:
        if value[0] != 1 or value[3] != 1:
            raise ValueError(f"{what} {value}: the batch and channel entries must be 1")
        return value[1:3]
    if len(value) == 2:
        return value
    if len(value) == 1:
        return value * 2
    raise ValueError(f"{what} must be an int or a list of 1, 2 or 4 ints, got {value}")


def _check_format(padding, data_format, what):
    padding = str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if data_format != "NHWC":
        raise NotImplementedError(f"{what}: only data_format='NHWC' is supported")
    return padding


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=None, name=None, filters=None):
    """2-D convolution of NHWC ``input`` with an HWIO ``filter`` (TF1 ``tf.nn.conv2d``).

    >>> y = gf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    """
    filter = filters if filter is None else filter  # noqa: A001
    padding = _check_format(padding, data_format, "conv2d")
    if dilations is not None and set(_pair(dilations, "dilations")) != {1}:
        raise NotImplementedError("conv2d: dilations other than 1 are not supported")
    x = convert_to_tensor(input)
    w = convert_to_tensor(filter, like=x)
    return apply("conv2d", [x, w], name=name or "Conv2D",
                 strides=_pair(strides, "strides"), padding=padding)


def _pool(op, value, ksize, strides, padding, data_format, name):
    padding = _check_format(padding, data_format, op)
    x = convert_to_tensor(value)
    return apply(op, [x], name=name, ksize=_pair(ksize, "ksize"),
                 strides=_pair(strides, "strides"), padding=padding)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """Max over each window; SAME padding never wins (TF1 ``tf.nn.max_pool``).

    The gradient goes to the first maximum of a window (row-major) on ties.
    """
    return _pool("max_pool", value if input is None else input, ksize, strides, padding,
                 data_format, name or "MaxPool")


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """Mean over each window's real cells (padding not counted, as TF1 ``tf.nn.avg_pool``)."""
    return _pool("avg_pool", value if input is None else input, ksize, strides, padding,
                 data_format, name or "AvgPool")


# -- dropout ----------------------------------------------------------------------------


def _uniform_like(x, seed):
    """Uniform [0, 1) numbers of ``x``'s shape, drawn on the host each run."""
    from gradflow.ops.state_ops import random_uniform, random_uniform_like

    if x.shape is not None and None not in x.shape:
        return random_uniform(x.shape, dtype=x.dtype, seed=seed)
    return random_uniform_like(x, seed=seed)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zero each unit with probability ``1 - keep_prob``, scale the rest by ``1 / keep_prob``.

    Takes TF1's ``keep_prob`` or the newer ``rate`` (exactly one), as a float or a
    tensor; a fresh mask is drawn every run. With ``keep_prob`` 1 it is the identity.

    >>> h = gf.nn.dropout(h, keep_prob=gf.placeholder_with_default(1.0, ()))
    """
    from gradflow.ops.math_ops import floor, multiply

    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout: pass exactly one of keep_prob and rate")
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"dropout: '{x.name}' must be floating, got {x.dtype.name}")
    if rate is not None:
        if isinstance(rate, (int, float)) and not 0 <= rate < 1:
            raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
        keep = 1.0 - convert_to_tensor(rate, like=x) if not isinstance(rate, (int, float)) \
            else convert_to_tensor(1.0 - rate, like=x)
    else:
        if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
            raise ValueError(f"dropout: keep_prob must be in (0, 1], got {keep_prob}")
        keep = convert_to_tensor(keep_prob, like=x)
    if keep.shape is None:  # a shapeless keep_prob placeholder: a scalar, as TF1 requires
        from gradflow.ops.state_ops import ensure_shape

        keep = ensure_shape(keep, ())
    noise = x if noise_shape is None else _Static(noise_shape, x.dtype)
    mask = floor(keep + _uniform_like(noise, seed))  # 1 with probability keep, else 0
    return multiply(x / keep, mask, name=name or "dropout")


class _Static:
    """A static shape and dtype standing in for a tensor (``noise_shape``)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(d) for d in shape), dtype
