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

from gradflow.errors import InvalidArgumentError
from gradflow.prim import rules
from gradflow.prim.registry import REGISTRY, apply, convert_to_tensor, register

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


# -- public functions -------------------------------------------------------------------


def _pair(value, what, data_format="NHWC"):
    """TF1's strides/ksize: an int, a pair, or a list of 4 in ``data_format`` order whose
    batch and channel entries are 1."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) == 4:
        spatial = value[2:4] if data_format == "NCHW" else value[1:3]
        if value[0] != 1 or value[1 if data_format == "NCHW" else 3] != 1:
            raise ValueError(f"{what} {value}: the batch and channel entries must be 1 "
                             f"({data_format})")
        return spatial
    if len(value) == 2:
        return value
    if len(value) == 1:
        return value * 2
    raise ValueError(f"{what} must be an int or a list of 1, 2 or 4 ints, got {value}")


def _check_format(padding, data_format, what):
    padding = str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{what}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return padding


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


def _to_nhwc(x, data_format, what):
    """``x`` in NHWC: transposed from NCHW when ``data_format`` says so."""
    if data_format != "NCHW":
        return x
    if x.shape is not None and len(x.shape) != 4:
        raise ValueError(f"{what}: '{x.name}' must have rank 4 (NCHW), got shape "
                         f"{tuple(x.shape)}")
    return apply("image_layout", [x], perm=TO_NHWC)


def _from_nhwc(y, data_format, name):
    """The NHWC result ``y`` in ``data_format``, named ``name``."""
    return y if data_format != "NCHW" else apply("image_layout", [y], name=name,
                                                   perm=TO_NCHW)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=None, name=None, filters=None):
    """2-D convolution of ``input`` with an HWIO ``filter`` (TF1 ``tf.nn.conv2d``).

    ``input`` is NHWC, or NCHW with ``data_format="NCHW"`` (then ``strides`` of 4
    entries are in NCHW order too, and the result is NCHW); the filter is HWIO in both.

    >>> y = gf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    >>> y = gf.nn.conv2d(x_nchw, w, strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    """
    filter = filters if filter is None else filter  # noqa: A001
    padding = _check_format(padding, data_format, "conv2d")
    if dilations is not None and set(_pair(dilations, "dilations", data_format)) != {1}:
        raise NotImplementedError("conv2d: dilations other than 1 are not supported")
    x = convert_to_tensor(input)
    w = convert_to_tensor(filter, like=x)
    nchw = data_format == "NCHW"
    y = apply("conv2d", [_to_nhwc(x, data_format, "conv2d"), w],
              name="Conv2D_NHWC" if nchw else name or "Conv2D",
              strides=_pair(strides, "strides", data_format), padding=padding)
    return _from_nhwc(y, data_format, name or "Conv2D")


def _no_dilation(dilations, what):
    if dilations is not None and set(_pair(dilations, "dilations")) != {1}:
        raise NotImplementedError(f"{what}: dilations other than 1 are not supported")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of ``conv2d`` (its gradient in its input; TF1
    ``tf.nn.conv2d_transpose``), sometimes called deconvolution.

    With ``data_format="NCHW"`` the value, ``output_shape``, ``strides`` (of 4
    entries) and the result are all in NCHW order.

    ``value`` is NHWC ``[batch, height, width, in_channels]``; ``filter`` is
    ``[kh, kw, out_channels, in_channels]`` (the filter of the conv2d this one
    transposes); ``output_shape`` is the NHWC shape of the result, a list of ints
    (entries may be scalar int tensors, such as ``gf.shape(x)[0]``) or a 1-D int
    tensor. A conv2d of ``output_shape`` with the same ``strides`` and ``padding``
    must give the value's shape; if not, the error names the tensors.
    ``input``/``filters`` are TF1's newer names of ``value``/``filter``.

    >>> up = gf.nn.conv2d_transpose(h, w, [batch, 28, 28, 1], [1, 2, 2, 1], "SAME")
    """
    from gradflow.ops.array_ops import static_value
    from gradflow.ops.shape_ops import _int_vector

    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv2d_transpose needs value, filter, output_shape and strides")
    padding = _check_format(padding, data_format, "conv2d_transpose")
    _no_dilation(dilations, "conv2d_transpose")
    g = _to_nhwc(convert_to_tensor(value), data_format, "conv2d_transpose")
    w = convert_to_tensor(filter, like=g)
    strides = _pair(strides, "strides", data_format)
    if data_format == "NCHW":
        output_shape = _shape_to_nhwc(output_shape)
    static = static_value(output_shape)
    if static is not None:
        shape, dims = tuple(int(d) for d in static.reshape(-1)), None
    else:
        dims, shape = _int_vector(output_shape, "conv2d_transpose: output_shape")
        if shape is None:
            shape = (None,) * 4
    if len(shape) != 4:
        raise ValueError(f"conv2d_transpose: output_shape must have 4 entries (NHWC), got "
                         f"{len(shape)}: {shape}")
    inner = "conv2d_transpose_NHWC" if data_format == "NCHW" else name
    y = _conv2d_transpose(g, w, tuple(None if d is None else int(d) for d in shape), dims,
                          strides, padding, inner)
    return _from_nhwc(y, data_format, name or "conv2d_transpose")


def _shape_to_nhwc(shape):
    """An NCHW ``output_shape`` (a list of ints and scalar tensors, or a 1-D int tensor)
    in NHWC order."""
    from gradflow.ops.index_ops import gather
    from gradflow.prim.registry import Tensor

    if isinstance(shape, Tensor):
        if shape.shape is not None and shape.shape != (4,) and len(shape.shape) == 1 \
                and shape.shape[0] is not None:
            raise ValueError(f"conv2d_transpose: output_shape must have 4 entries (NCHW), "
                             f"got {shape.shape[0]}")
        return gather(shape, list(TO_NHWC))
    shape = list(shape.reshape(-1)) if hasattr(shape, "reshape") else list(shape)
    if len(shape) != 4:
        raise ValueError(f"conv2d_transpose: output_shape must have 4 entries (NCHW), got "
                         f"{len(shape)}: {shape}")
    return [shape[i] for i in TO_NHWC]


def _conv2d_transpose(g, w, shape, dims, strides, padding, name):
    """``conv2d_transpose`` to the static ``shape`` (None: unknown; the batch, if unknown,
    is the value's), the unknown entries read from the 1-D int tensor ``dims``."""
    for t, what in ((g, "value"), (w, "filter")):
        if t.shape is not None and len(t.shape) != 4:
            raise ValueError(f"conv2d_transpose: {what} '{t.name}' must have rank 4, got "
                             f"shape {tuple(t.shape)}")
    names = (g.name, w.name)
    if g.shape is not None and w.shape is not None:
        problem = _transpose_mismatch(tuple(g.shape), tuple(w.shape), shape, strides,
                                      padding, names)
        if problem is not None:
            raise ValueError(f"conv2d_transpose: {problem}")
    inputs = [g, w] if dims is None else [g, w, dims]
    return apply("conv2d_transpose", inputs, name=name or "conv2d_transpose",
                 strides=strides, padding=padding, output_shape=shape, names=names)


def _stride_1d(stride):
    """TF1 conv1d's stride: an int, or a list of 1 or 3 (``[1, s, 1]``)."""
    if isinstance(stride, int):
        return stride
    stride = tuple(int(s) for s in stride)
    if len(stride) == 1:
        return stride[0]
    if len(stride) == 3 and stride[0] == 1 and stride[2] == 1:
        return stride[1]
    raise ValueError(f"conv1d: stride must be an int or a list [1, s, 1], got {stride}")


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of NWC ``value`` ``[batch, width, in_channels]`` with ``filters``
    ``[width, in_channels, out_channels]`` (TF1 ``tf.nn.conv1d``).

    As TF, a conv2d over an inserted axis of height 1. ``stride`` is an int or
    ``[1, s, 1]``; ``input`` is TF1's newer name of ``value``.

    >>> y = gf.nn.conv1d(x, w, stride=1, padding="SAME")
    """
    from gradflow.ops.array_ops import expand_dims, squeeze

    value = input if value is None else value
    if value is None or filters is None or stride is None or padding is None:
        raise ValueError("conv1d needs value, filters, stride and padding")
    if data_format not in (None, "NWC"):
        raise NotImplementedError("conv1d: only data_format='NWC' is supported")
    padding = _check_format(padding, "NHWC", "conv1d")
    if dilations is not None and set(_pair(dilations, "dilations")) != {1}:
        raise NotImplementedError("conv1d: dilations other than 1 are not supported")
    x = convert_to_tensor(value)
    w = convert_to_tensor(filters, like=x)
    for t, what in ((x, "value"), (w, "filters")):
        if t.shape is not None and len(t.shape) != 3:
            raise ValueError(f"conv1d: {what} '{t.name}' must have rank 3, got shape "
                             f"{tuple(t.shape)}")
    if x.shape is not None and w.shape is not None and None not in (x.shape[2], w.shape[1]) \
            and x.shape[2] != w.shape[1]:
        raise ValueError(f"conv1d: value '{x.name}' {tuple(x.shape)} has {x.shape[2]} channels, "
                         f"filters '{w.name}' {tuple(w.shape)} expect {w.shape[1]}")
    y = apply("conv2d", [expand_dims(x, 1), expand_dims(w, 0)],
              strides=(1, _stride_1d(stride)), padding=padding)
    return squeeze(y, [1], name=name or "conv1d")


def _pool(op, value, ksize, strides, padding, data_format, name):
    padding = _check_format(padding, data_format, op)
    x = _to_nhwc(convert_to_tensor(value), data_format, op)
    y = apply(op, [x], name=f"{name}_NHWC" if data_format == "NCHW" else name,
              ksize=_pair(ksize, "ksize", data_format),
              strides=_pair(strides, "strides", data_format), padding=padding)
    return _from_nhwc(y, data_format, name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """Max over each window; SAME padding never wins (TF1 ``tf.nn.max_pool``).

    The gradient goes to the first maximum of a window (row-major) on ties. With
    ``data_format="NCHW"``, ``value``, ``ksize``/``strides`` (of 4 entries) and the
    result are NCHW.

    >>> p = gf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    """
    return _pool("max_pool", value if input is None else input, ksize, strides, padding,
                 data_format, name or "MaxPool")


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
    """Mean over each window's real cells (padding not counted, as TF1 ``tf.nn.avg_pool``);
    ``data_format`` as in ``max_pool``.

    >>> p = gf.nn.avg_pool(h, [1, 1, 3, 3], [1, 1, 2, 2], "VALID", data_format="NCHW")
    """
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
