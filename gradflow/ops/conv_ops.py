"""2-D convolution and pooling (NHWC or NCHW, TF1 ``SAME``/``VALID`` padding), and dropout:
TF1's ``tf.nn`` functions over the primitives of ``gradflow.prim.conv``.

NCHW runs through the NHWC primitives between two ``image_layout`` transposes.
"""

from __future__ import annotations

from gradflow.graph import Tensor
from gradflow.ops.array_ops import expand_dims, squeeze, static_value
from gradflow.ops.index_ops import gather
from gradflow.ops.math_ops import floor, multiply
from gradflow.ops.shape_ops import _int_vector
from gradflow.ops.state_ops import ensure_shape, random_uniform, random_uniform_like
from gradflow.prim.conv import TO_NCHW, TO_NHWC, _transpose_mismatch
from gradflow.prim.registry import apply, convert_to_tensor

# -- TF1's arguments ----------------------------------------------------------------------


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
    if x.shape is not None and None not in x.shape:
        return random_uniform(x.shape, dtype=x.dtype, seed=seed)
    return random_uniform_like(x, seed=seed)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Zero each unit with probability ``1 - keep_prob``, scale the rest by ``1 / keep_prob``.

    Takes TF1's ``keep_prob`` or the newer ``rate`` (exactly one), as a float or a
    tensor; a fresh mask is drawn every run. With ``keep_prob`` 1 it is the identity.

    >>> h = gf.nn.dropout(h, keep_prob=gf.placeholder_with_default(1.0, ()))
    """
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
        keep = ensure_shape(keep, ())
    noise = x if noise_shape is None else _Static(noise_shape, x.dtype)
    mask = floor(keep + _uniform_like(noise, seed))  # 1 with probability keep, else 0
    return multiply(x / keep, mask, name=name or "dropout")


class _Static:
    """A static shape and dtype standing in for a tensor (``noise_shape``)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(int(d) for d in shape), dtype
