"""3-D convolution and pooling (NDHWC or NCDHW, TF1 ``SAME``/``VALID`` padding): TF1's
``tf.nn.conv3d``, ``conv3d_transpose``, ``conv3d_backprop_filter``, ``max_pool3d`` and
``avg_pool3d`` over the primitives of ``gradflow.prim.conv3d``.

NCDHW runs through the NDHWC primitives between two transposes.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import static_value, transpose
from gradflow.ops.index_ops import gather, stack
from gradflow.ops.shape_ops import fill
from gradflow.ops.state_ops import ensure_shape
from gradflow.prim import conv3d as _prim
from gradflow.prim.registry import apply, convert_to_tensor

TO_NDHWC, TO_NCDHW = (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)


def _check(padding, data_format, what):
    padding = str(padding).upper()
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if data_format not in ("NDHWC", "NCDHW"):
        raise ValueError(f"{what}: data_format must be 'NDHWC' or 'NCDHW', got "
                         f"{data_format!r}")
    return padding


def _triple(value, what, data_format="NDHWC"):
    """TF1's 3-D strides/ksize: an int, or 1, 3 or 5 ints (5 in ``data_format`` order,
    whose batch and channel entries are 1)."""
    if isinstance(value, int):
        return (value,) * 3
    value = tuple(int(v) for v in value)
    if len(value) == 5:
        channel = 1 if data_format == "NCDHW" else 4
        if value[0] != 1 or value[channel] != 1:
            raise ValueError(f"{what} {value}: the batch and channel entries must be 1 "
                             f"({data_format})")
        return value[2:5] if data_format == "NCDHW" else value[1:4]
    if len(value) == 3:
        return value
    if len(value) == 1:
        return value * 3
    raise ValueError(f"{what} must be an int or a list of 1, 3 or 5 ints, got {value}")


def _no_dilation(dilations, what):
    if dilations is not None and set(_triple(dilations, "dilations")) != {1}:
        raise NotImplementedError(f"{what}: dilations other than 1 are not supported")


def _rank5(t, what, op):
    if t.shape is not None and len(t.shape) != 5:
        raise ValueError(f"{op}: {what} '{t.name}' must have rank 5, got shape "
                         f"{tuple(t.shape)}")
    return t


def _to_ndhwc(x, data_format, what):
    _rank5(x, "input", what)
    return x if data_format != "NCDHW" else transpose(x, TO_NDHWC)


def _from_ndhwc(y, data_format, name):
    return y if data_format != "NCDHW" else transpose(y, TO_NCDHW, name=name)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=None, name=None, filters=None):
    """3-D convolution of NDHWC ``input`` with a DHWIO ``filter`` ``[depth, height, width,
    in_channels, out_channels]`` (TF1 ``tf.nn.conv3d``); ``strides`` are 5 ints
    ``[1, sd, sh, sw, 1]`` (NCDHW order with ``data_format="NCDHW"``, which takes and
    gives NCDHW).

    >>> y = gf.nn.conv3d(x, w, strides=[1, 1, 1, 1, 1], padding="SAME")
    """
    filter = filters if filter is None else filter  # noqa: A001
    if filter is None or strides is None or padding is None:
        raise ValueError("conv3d needs input, filter, strides and padding")
    padding = _check(padding, data_format, "conv3d")
    _no_dilation(dilations, "conv3d")
    x = convert_to_tensor(input)
    w = _rank5(convert_to_tensor(filter, like=x), "filter", "conv3d")
    nchw = data_format == "NCDHW"
    y = apply("conv3d", [_to_ndhwc(x, data_format, "conv3d"), w],
              name="Conv3D_NDHWC" if nchw else name or "Conv3D",
              strides=_triple(strides, "strides", data_format), padding=padding)
    return _from_ndhwc(y, data_format, name or "Conv3D")


def _shape_list(shape, what):
    """``shape`` (a list of ints and scalar int tensors, an array, or a 1-D int tensor) as
    ``(static tuple with None for unknown entries, 1-D int32 tensor or None)``."""
    static = static_value(shape)
    if static is not None:
        return tuple(int(d) for d in static.reshape(-1)), None
    if isinstance(shape, Tensor):
        n = shape.shape[0] if shape.shape is not None and len(shape.shape) == 1 else None
        return (None,) * (5 if n is None else int(n)), shape
    entries = list(shape)
    known = tuple(int(d) if static_value(d) is not None else None for d in entries)
    parts = [convert_to_tensor(d, dtype=dtypes.int32) if not isinstance(d, Tensor) else d
             for d in entries]
    return known, stack(parts, name=f"{what}_shape")


def _filled(known, dims, zero):
    """A tensor of ``zero`` whose shape is the one an adjoint op takes from it: ``known``
    when static, else read from ``dims`` at run time (its known entries kept static)."""
    if dims is None:
        return fill(list(known), zero)
    return ensure_shape(fill(dims, zero), known)


def conv3d_transpose(value, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NDHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of ``conv3d`` (its gradient in its input; TF1
    ``tf.nn.conv3d_transpose``).

    ``value`` is ``[batch, depth, height, width, in_channels]``, ``filter``
    ``[kd, kh, kw, out_channels, in_channels]``, ``output_shape`` the shape of the
    result (ints, scalar int tensors or a 1-D int tensor). A conv3d of
    ``output_shape`` with the same strides and padding must give the value's shape.

    >>> up = gf.nn.conv3d_transpose(h, w, [batch, 8, 8, 8, 1], [1, 2, 2, 2, 1], "SAME")
    """
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    if value is None or filter is None or output_shape is None or strides is None:
        raise ValueError("conv3d_transpose needs value, filter, output_shape and strides")
    padding = _check(padding, data_format, "conv3d_transpose")
    _no_dilation(dilations, "conv3d_transpose")
    g = _to_ndhwc(convert_to_tensor(value), data_format, "conv3d_transpose")
    w = _rank5(convert_to_tensor(filter, like=g), "filter", "conv3d_transpose")
    strides = _triple(strides, "strides", data_format)
    known, dims = _shape_list(output_shape, "conv3d_transpose")
    if len(known) != 5:
        raise ValueError(f"conv3d_transpose: output_shape must have 5 entries, got "
                         f"{len(known)}: {known}")
    if data_format == "NCDHW":
        known = tuple(known[i] for i in TO_NDHWC)
        dims = None if dims is None else gather(dims, list(TO_NDHWC))
    _check_transpose(g, w, known, strides, padding)
    zero = convert_to_tensor(0, dtype=g.dtype)
    like = _filled(known, dims, zero)
    y = apply("conv3d_backprop_input", [g, w, like],
              name="conv3d_transpose_NDHWC" if data_format == "NCDHW"
              else name or "conv3d_transpose", strides=strides, padding=padding)
    return _from_ndhwc(y, data_format, name or "conv3d_transpose")


def _check_transpose(g, w, out_shape, strides, padding):
    """A ValueError naming the tensors when conv3d of ``out_shape`` cannot give ``g``."""
    if g.shape is None or w.shape is None:
        return
    if None not in (g.shape[4], w.shape[4]) and g.shape[4] != w.shape[4]:
        raise ValueError(f"conv3d_transpose: value '{g.name}' has {g.shape[4]} channels, "
                         f"filter '{w.name}' {tuple(w.shape)} expects {w.shape[4]} (its "
                         "last axis)")
    if None not in (out_shape[4], w.shape[3]) and out_shape[4] != w.shape[3]:
        raise ValueError(f"conv3d_transpose: output_shape {out_shape} has {out_shape[4]} "
                         f"channels, filter '{w.name}' {tuple(w.shape)} makes {w.shape[3]}")
    probe = tuple(out_shape[:4]) + (w.shape[3],)
    want = _prim.conv3d_shape(probe, tuple(w.shape[:3]) + (w.shape[3], w.shape[4]),
                              strides, padding)
    for axis in range(4):
        a, b = want[axis], g.shape[axis]
        if None not in (a, b) and a != b:
            raise ValueError(f"conv3d_transpose: a conv3d of output_shape {out_shape} with "
                             f"strides {strides} and {padding} padding gives {want}, but "
                             f"value '{g.name}' has shape {tuple(g.shape)}")


def conv3d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           data_format="NDHWC", dilations=None, name=None):
    """The gradient of ``conv3d`` in its filter, a filter of shape ``filter_sizes``
    (TF1 ``tf.nn.conv3d_backprop_filter``, also ``conv3d_backprop_filter_v2``).

    >>> dw = gf.nn.conv3d_backprop_filter(x, [3, 3, 3, 1, 8], dy, [1, 1, 1, 1, 1], "SAME")
    """
    padding = _check(padding, data_format, "conv3d_backprop_filter")
    _no_dilation(dilations, "conv3d_backprop_filter")
    x = _to_ndhwc(convert_to_tensor(input), data_format, "conv3d_backprop_filter")
    g = _to_ndhwc(convert_to_tensor(out_backprop, like=x), data_format,
                  "conv3d_backprop_filter")
    known, dims = _shape_list(filter_sizes, "conv3d_backprop_filter")
    like = _filled(known, dims, convert_to_tensor(0, dtype=x.dtype))
    return apply("conv3d_backprop_filter", [x, g, like], name=name or "Conv3DBackpropFilterV2",
                 strides=_triple(strides, "strides", data_format), padding=padding)


conv3d_backprop_filter_v2 = conv3d_backprop_filter


def _pool3d(op, input, ksize, strides, padding, data_format, name):  # noqa: A002
    padding = _check(padding, data_format, op)
    x = _to_ndhwc(convert_to_tensor(input), data_format, op)
    y = apply(op, [x], name=f"{name}_NDHWC" if data_format == "NCDHW" else name,
              ksize=_triple(ksize, "ksize", data_format),
              strides=_triple(strides, "strides", data_format), padding=padding)
    return _from_ndhwc(y, data_format, name)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Max over each 3-D window; SAME padding never wins (TF1 ``tf.nn.max_pool3d``). The
    gradient goes to the first maximum of a window (row-major) on ties.

    >>> p = gf.nn.max_pool3d(h, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "SAME")
    """
    return _pool3d("max_pool3d", input, ksize, strides, padding, data_format,
                   name or "MaxPool3D")


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """Mean over each 3-D window's real cells, padding not counted (TF1
    ``tf.nn.avg_pool3d``).

    >>> p = gf.nn.avg_pool3d(h, 2, 2, "VALID")
    """
    return _pool3d("avg_pool3d", input, ksize, strides, padding, data_format,
                   name or "AvgPool3D")
