"""Grayscale morphological dilation (TF1 ``tf.nn.dilation2d``; ``erosion2d`` is its dual,
composed in ``gradflow.ops.morphology_ops``) and its adjoints.

``dilation2d(x, f)[b, y, x, c] = max over (i, j) of xpad[b, y*sh + i*rh, x*sw + j*rw, c]
+ f[i, j, c]``, with ``x`` NHWC, ``f`` ``[fh, fw, c]``, strides ``(sh, sw)``, rates
``(rh, rw)`` and TF1's SAME/VALID padding for the dilated filter, the padding never
chosen (as if ``-inf``). The cells of the windows are strided basic slices of the padded
input, as in ``gradflow.prim.conv3d``; the maximum's place is the first maximal cell in
row-major order (TF's kernel keeps the first). The gradient sends ``g`` to that cell of
the input and of the filter (``dilation2d_backprop_input``/``_filter``); the gradients
of those in ``g`` gather at the same places (``dilation2d_select_input``/``_filter``),
and the two pairs are each other's gradients, so second order works.
"""

from __future__ import annotations

import functools
import math

from array_api_compat import device as _device

from gradflow.prim import rules
from gradflow.prim.conv import _window
from gradflow.prim.registry import apply, register


def _geometry(shape, fsize, strides, rates, padding):
    """Per spatial axis: (out, pad_before, pad_after) for the dilated filter."""
    return [_window(shape[a], (k - 1) * r + 1, s, padding)
            for a, k, s, r in zip((1, 2), fsize, strides, rates)]


def _padded(xp, x, geometry, value):
    for axis, (_, before, after) in zip((1, 2), geometry):
        if not (before or after):
            continue
        parts = []
        for p in (before, after):
            shape = list(x.shape)
            shape[axis] = p
            parts.append(xp.full(tuple(shape), value, dtype=x.dtype, device=_device(x)))
        x = xp.concat([parts[0], x, parts[1]], axis=axis)
    return x


def _keys(fsize, geometry, strides, rates):
    """The strided slice of every filter cell ``(i, j)``, row-major."""
    (oh, _, _), (ow, _, _) = geometry
    return [(slice(None), slice(i * rates[0], i * rates[0] + (oh - 1) * strides[0] + 1,
                                strides[0]),
             slice(j * rates[1], j * rates[1] + (ow - 1) * strides[1] + 1, strides[1]),
             slice(None))
            for i in range(fsize[0]) for j in range(fsize[1])]


def _cells(xp, x, fsize, strides, rates, padding, value):
    geometry = _geometry(x.shape, fsize, strides, rates, padding)
    padded = _padded(xp, x, geometry, value)
    return [padded[key] for key in _keys(fsize, geometry, strides, rates)]


def _filter_cells(xp, f):
    fh, fw, c = f.shape
    flat = xp.reshape(f, (fh * fw, 1, 1, 1, c))
    return [flat[k, ...] for k in range(fh * fw)]


def _dilation_impl(xp, x, f, strides, rates, padding):
    cells = _cells(xp, x, f.shape[:2], strides, rates, padding, -math.inf)
    return functools.reduce(xp.maximum, [c + w for c, w in zip(cells, _filter_cells(xp, f))])


def _first_max_masks(xp, x, f, strides, rates, padding):
    """Per filter cell, 0/1 where it is its window's first maximum."""
    cells = _cells(xp, x, f.shape[:2], strides, rates, padding, -math.inf)
    sums = [c + w for c, w in zip(cells, _filter_cells(xp, f))]
    top = functools.reduce(xp.maximum, sums)
    taken = xp.zeros(top.shape, dtype=xp.bool, device=_device(x))
    masks = []
    for s in sums:
        hit = (s == top) & ~taken
        taken = taken | hit
        masks.append(xp.astype(hit, x.dtype))
    return masks


def _backprop_input_impl(xp, x, f, g, strides, rates, padding):
    """``g`` added onto the input cell of each window's maximum."""
    masks = _first_max_masks(xp, x, f, strides, rates, padding)
    geometry = _geometry(x.shape, f.shape[:2], strides, rates, padding)
    shape = (x.shape[0],) + tuple(x.shape[a] + geometry[i][1] + geometry[i][2]
                                  for i, a in enumerate((1, 2))) + (x.shape[3],)
    out = xp.zeros(shape, dtype=g.dtype, device=_device(g))
    for key, m in zip(_keys(f.shape[:2], geometry, strides, rates), masks):
        out[key] = out[key] + g * m
    keep = (slice(None), slice(geometry[0][1], geometry[0][1] + x.shape[1]),
            slice(geometry[1][1], geometry[1][1] + x.shape[2]), slice(None))
    return out[keep]


def _backprop_filter_impl(xp, x, f, g, strides, rates, padding):
    """``g`` summed, per channel, over the windows whose maximum is each filter cell."""
    masks = _first_max_masks(xp, x, f, strides, rates, padding)
    rows = [xp.sum(g * m, axis=(0, 1, 2)) for m in masks]
    return xp.reshape(xp.stack(rows, axis=0), tuple(f.shape))


def _select_input_impl(xp, x, f, h, strides, rates, padding):
    """``h`` (shaped as the input) at each window's maximal input cell."""
    masks = _first_max_masks(xp, x, f, strides, rates, padding)
    cells = _cells(xp, h, f.shape[:2], strides, rates, padding, 0.0)
    return functools.reduce(xp.add, [c * m for c, m in zip(cells, masks)])


def _select_filter_impl(xp, x, f, h, strides, rates, padding):
    """``h`` (shaped as the filter) at each window's maximal filter cell."""
    masks = _first_max_masks(xp, x, f, strides, rates, padding)
    return functools.reduce(xp.add, [m * w for m, w in zip(masks, _filter_cells(xp, h))])


def _dilation_infer(shapes, in_dtypes, strides, rates, padding):
    x, f = shapes[0], shapes[1]
    dtype = rules.same_dtype(in_dtypes[:2])
    rules.require_floating(dtype, "input and filter")
    if x is None or f is None:  # a rank unknown when built: checked when run
        return None, dtype
    if len(x) != 4 or len(f) != 3:
        raise ValueError(f"dilation2d: input must be [batch, height, width, depth] and filter "
                         f"[height, width, depth], got {tuple(x)} and {tuple(f)}")
    if x[3] is not None and f[2] is not None and x[3] != f[2]:
        raise ValueError(f"dilation2d: the input has {x[3]} channels, the filter {f[2]}")
    out = []
    for size, k, s, r in zip(x[1:3], f[:2], strides, rates):
        if size is None or k is None:
            out.append(None)
            continue
        n = _window(size, (k - 1) * r + 1, s, padding)[0]
        if n < 1:
            raise ValueError(f"dilation2d: the dilated filter ({(k - 1) * r + 1}) is larger "
                             f"than the input ({size}) with VALID padding")
        out.append(n)
    return (x[0], out[0], out[1], x[3] if x[3] is not None else f[2]), dtype


def _as_input(shapes, in_dtypes, **attrs):
    return shapes[0], rules.same_dtype(in_dtypes)


def _as_filter(shapes, in_dtypes, **attrs):
    return shapes[1], rules.same_dtype(in_dtypes)


def _as_output(shapes, in_dtypes, **attrs):
    return _dilation_infer(shapes[:2], in_dtypes[:2], **attrs)[0], rules.same_dtype(in_dtypes)


def _op(name):
    return lambda n, h: [None, None, apply(name, [n.inputs[0], n.inputs[1], h], **n.attrs)]


def _dilation_grad(n, g):
    x, f = n.inputs
    return [apply("dilation2d_backprop_input", [x, f, g], **n.attrs),
            apply("dilation2d_backprop_filter", [x, f, g], **n.attrs)]


register("dilation2d", _dilation_impl, _dilation_infer, grad=_dilation_grad)
# (x, f, g) -> the gradient in x / in f; their gradients in g are the select ops
register("dilation2d_backprop_input", _backprop_input_impl, _as_input,
         grad=_op("dilation2d_select_input"))
register("dilation2d_backprop_filter", _backprop_filter_impl, _as_filter,
         grad=_op("dilation2d_select_filter"))
# (x, f, h) -> h at each window's maximal input / filter cell, shaped as the output
register("dilation2d_select_input", _select_input_impl, _as_output,
         grad=_op("dilation2d_backprop_input"))
register("dilation2d_select_filter", _select_filter_impl, _as_output,
         grad=_op("dilation2d_backprop_filter"))
