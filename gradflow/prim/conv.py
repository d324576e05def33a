"""The convolution and pooling primitives (NHWC, TF1 ``SAME``/``VALID`` padding), their
adjoints, and the image layout ops.

Written with Array API calls only: padding is a concat of zeros, and the cells
of the windows are ``kh * kw`` strided basic slices. A convolution stacks them
on a new axis (im2col) for one matmul; pooling combines them elementwise. The
adjoints add back through the same strided slices. Every gradient is itself a
primitive with gradient rules, so second order works. TF1's functions over them
are in ``gradflow.ops.conv_ops``.
"""

from __future__ import annotations

import functools
import math

from array_api_compat import device as _device

from gradflow.errors import InvalidArgumentError
from gradflow.prim import rules
from gradflow.prim.registry import REGISTRY, apply, register

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


def _backprop_input_to(xp, g, w, x_shape, strides, padding):
    """The adjoint of conv2d in its input, for an input of shape ``x_shape``."""
    kh, kw, c, co = w.shape
    n, oh, ow = g.shape[:3]
    cols = xp.reshape(g, (n * oh * ow, co)) @ xp.matrix_transpose(xp.reshape(w, (kh * kw * c, co)))
    cols = xp.reshape(cols, (n, oh, ow, kh * kw, c))
    return _unpatch(xp, cols, tuple(x_shape), (kh, kw), strides, padding)


def _backprop_input_impl(xp, g, w, x_like, strides, padding):
    return _backprop_input_to(xp, g, w, x_like.shape, strides, padding)


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


# -- conv2d_transpose: conv2d_backprop_input of an output shape given as an attribute -----


def _transpose_mismatch(value_shape, filter_shape, out_shape, strides, padding, names):
    """Why ``out_shape`` does not fit conv2d_transpose's value and filter, or None.

    Unknown dims (None) are not checked. The value must be what conv2d of an
    input of ``out_shape`` with the filter would give.
    """
    value, filt = names
    kh, kw, c, co = filter_shape
    where = (f"value '{value}' {tuple(value_shape)}, filter '{filt}' {tuple(filter_shape)} "
             f"(height, width, output channels, input channels), output_shape "
             f"{tuple(out_shape)}")
    if None not in (value_shape[3], co) and value_shape[3] != co:
        return (f"the value has {value_shape[3]} channels, the filter's last axis expects "
                f"{co}; {where}")
    if None not in (out_shape[3], c) and out_shape[3] != c:
        return (f"output_shape has {out_shape[3]} channels, the filter's third axis "
                f"makes {c}; {where}")
    if None not in (out_shape[0], value_shape[0]) and out_shape[0] != value_shape[0]:
        return (f"output_shape has batch {out_shape[0]}, the value {value_shape[0]}; "
                f"{where}")
    for axis, k, s in ((1, kh, strides[0]), (2, kw, strides[1])):
        size, got = out_shape[axis], value_shape[axis]
        if None in (size, got, k):
            continue
        want = _window(size, k, s, padding)[0]
        if want != got:
            return (f"a conv2d of output_shape with strides {tuple(strides)} and {padding} "
                    f"padding gives {want} along axis {axis}, but the value has {got}; "
                    f"{where}")
    return None


def _conv_transpose_impl(xp, g, w, dims=None, *, strides, padding, output_shape, names):
    shape = list(output_shape)
    if dims is not None:
        shape = [int(dims[i]) for i in range(dims.shape[0])]
    if len(shape) != 4:
        raise InvalidArgumentError(f"conv2d_transpose: output_shape must have 4 entries, got "
                                   f"{tuple(shape)}")
    if shape[0] is None:
        shape[0] = g.shape[0]
    problem = _transpose_mismatch(tuple(g.shape), tuple(w.shape), tuple(shape), strides,
                                  padding, names)
    if problem is not None:
        raise InvalidArgumentError(f"conv2d_transpose: {problem}")
    return _backprop_input_to(xp, g, w, shape, strides, padding)


def _conv_transpose_infer(shapes, in_dtypes, strides, padding, output_shape, names):
    rules.require_floating(in_dtypes[0], "value")
    dtype = rules.same_dtype(in_dtypes[:2])
    g, w = shapes[0], shapes[1]
    if len(g) != 4 or len(w) != 4:
        raise ValueError(f"conv2d_transpose needs a rank-4 value (NHWC) and filter, got "
                         f"{tuple(g)} and {tuple(w)}")
    if len(shapes) > 2 and (len(shapes[2]) != 1 or not in_dtypes[2].is_integer):
        raise ValueError("output_shape must be a 1-D integer tensor")
    out = list(output_shape)
    if out[0] is None:
        out[0] = g[0]
    return tuple(out), dtype


def _conv_transpose_grad(n, h):  # the adjoints of conv2d_backprop_input, as above
    g, w = n.inputs[:2]
    conv = dict(strides=n.attrs["strides"], padding=n.attrs["padding"])
    return [apply("conv2d", [h, w], **conv),
            apply("conv2d_backprop_filter", [h, g, w], **conv)] + [None] * (len(n.inputs) - 2)


register("conv2d_transpose", _conv_transpose_impl, _conv_transpose_infer,
         grad=_conv_transpose_grad)


# -- pooling --------------------------------------------------------------------------


def _max_pool_impl(xp, x, ksize, strides, padding):
    return functools.reduce(xp.maximum, _cells(xp, x, ksize, strides, padding, -math.inf))


def _first_max_masks(xp, x, ksize, strides, padding):
    """Per window cell, where that cell is its window's first maximum (row-major), as 0/1."""
    return first_max_masks(xp, x, _cells(xp, x, ksize, strides, padding, -math.inf))


def first_max_masks(xp, x, cells):
    """Per window cell of ``x`` (``cells``: the windows' values, cell by cell, in
    row-major order; 2-D or 3-D), where that cell is its window's first maximum, as 0/1."""
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


def _max_pool_relu_grad_impl(xp, g, x, ksize, strides, padding):
    return xp.where(x > 0, _max_pool_grad_impl(xp, g, x, ksize, strides, padding), 0)


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
# ``relu_grad(max_pool_grad(g, h), h)``, ``h`` a ReLU's output (the pool's input), as one
# op: made only by the graph compiler (``passes/rewrites.py``), in plans, which are never
# differentiated: no gradient.
register("max_pool_relu_grad", _max_pool_relu_grad_impl, lambda s, d, **a: (s[1], d[0]),
         grad=None)
register("avg_pool", _avg_pool_impl, _pool_infer,  # dx: g / count spread over the window
         grad=lambda n, g: [apply("avg_pool_grad", [g, n.inputs[0]], **n.attrs)])
register("avg_pool_grad", _avg_pool_grad_impl, lambda s, d, **a: (s[1], d[0]),
         grad=lambda n, h: [apply("avg_pool", [h], **n.attrs), None])


# NCHW runs through the NHWC ops between two "image_layout" transposes (each the
# other's gradient). They are ops of their own, not "transpose", so that a backend can
# write them as contiguous copies into the plan's buffers (the NumPy backend does: its
# convolution and pooling kernels then read and write contiguous NHWC arrays).
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)


def _layout_infer(shapes, in_dtypes, perm):
    if len(shapes[0]) != 4:
        raise ValueError(f"image_layout needs a rank-4 image batch, got {tuple(shapes[0])}")
    return tuple(shapes[0][p] for p in perm), in_dtypes[0]


register("image_layout", lambda xp, x, perm: xp.permute_dims(x, perm), _layout_infer,
         grad=lambda n, g: [apply("image_layout", [g], perm=TO_NCHW
                                  if n.attrs["perm"] == TO_NHWC else TO_NHWC)])


# A convolution pass whose NCHW images reach it and leave it through layout copies
# alone, as one op: ``NCHW_FORMS[op] = (NCHW op, positions of the image inputs, whether
# the result is an image)``. Made only by the NumPy backend's kernel pass
# (``gradflow.passes.conv_layouts``), so that oneDNN reads and writes NCHW itself; the
# forward here is the NHWC op between the copies, on any backend.
NCHW_FORMS = {"conv2d": ("nchw_conv2d", (0,), True),
              "conv2d_backprop_input": ("nchw_conv2d_backprop_input", (0, 2), True),
              "conv2d_backprop_filter": ("nchw_conv2d_backprop_filter", (0, 1), False)}


def _nchw_form(name, images, image_out):
    nhwc = REGISTRY[name]

    def impl(xp, *arrays, **attrs):
        arrays = [xp.permute_dims(a, TO_NHWC) if k in images else a
                  for k, a in enumerate(arrays)]
        out = nhwc.impl(xp, *arrays, **attrs)
        return xp.permute_dims(out, TO_NCHW) if image_out else out

    def infer(shapes, in_dtypes, **attrs):
        shapes = [tuple(s[p] for p in TO_NHWC) if k in images else s
                  for k, s in enumerate(shapes)]
        shape, dtype = nhwc.infer(shapes, in_dtypes, **attrs)
        return (tuple(shape[p] for p in TO_NCHW) if image_out else shape), dtype

    return impl, infer


for _name, (_form, _images, _image_out) in NCHW_FORMS.items():
    register(_form, *_nchw_form(_name, _images, _image_out), grad=None, plan_only=True)

