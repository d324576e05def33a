"""More of TF1's ``tf.nn`` convolutions and pooling, composites of the existing ones: the
N-d ``convolution``, ``conv_transpose`` and ``pool`` dispatchers, ``atrous_conv2d_transpose``,
and the depthwise convolution under its native name with its two gradients."""

from __future__ import annotations

from gradflow.ops.array_ops import expand_dims, squeeze
from gradflow.ops.conv3d_ops import avg_pool3d, conv3d, conv3d_transpose, max_pool3d
from gradflow.ops.conv_ops import avg_pool, conv2d, conv2d_transpose, max_pool
from gradflow.ops.conv_variants import _dilated, _known_filter, depthwise_conv2d
from gradflow.ops.index_ops import concat
from gradflow.ops.nn_extra_ops import (
    avg_pool1d,
    conv1d_transpose,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    max_pool1d,
)
from gradflow.prim.array import static_value
from gradflow.prim.registry import convert_to_tensor

__all__ = ["atrous_conv2d_transpose", "conv_transpose", "convolution",
           "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input",
           "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_filter",
           "depthwise_conv2d_native_backprop_input", "pool"]


def _per_axis(value, n, what):
    """An int or a list of ``n`` ints (TF1's ``strides``/``dilation_rate`` of ``convolution``
    and ``pool``), as a tuple of ``n``."""
    if value is None:
        return (1,) * n
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"{what} must have {n} entries (one per spatial axis), got {value}")
    return value


def _spatial_rank(x, what):
    if x.shape is None:
        raise ValueError(f"{what}: the rank of '{x.name}' must be known when the graph is built")
    n = len(x.shape) - 2
    if not 1 <= n <= 3:
        raise ValueError(f"{what}: '{x.name}' must have rank 3, 4 or 5, got {len(x.shape)}")
    return n


def _channels_last(data_format, n):
    return data_format is None or data_format == ("NWC", "NHWC", "NDHWC")[n - 1]


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,  # noqa: A002
                name=None, data_format=None, filters=None, dilations=None):
    """The 1-, 2- or 3-D convolution that ``input``'s rank calls for (TF1
    ``tf.nn.convolution``): ``filter`` is ``[*window, in, out]``, ``strides`` and
    ``dilation_rate`` one int per spatial axis; a dilation above 1 needs strides of 1, and
    (as here) a channels-last layout and no 3-D."""
    w = filters if filter is None else filter
    rate = dilation_rate if dilations is None else dilations
    x = convert_to_tensor(input)
    w = convert_to_tensor(w, like=x)
    n = _spatial_rank(x, "convolution")
    strides, rate = _per_axis(strides, n, "strides"), _per_axis(rate, n, "dilation_rate")
    if any(r > 1 for r in rate):
        if any(s > 1 for s in strides):
            raise ValueError("convolution: a dilation_rate above 1 needs strides of 1")
        if n == 3 or not _channels_last(data_format, n) or len(set(rate)) != 1:
            raise ValueError(f"convolution: dilation_rate {rate} is supported for 1-D and 2-D "
                             "channels-last convolutions with the same rate on each axis")
    if n == 1:
        x2 = expand_dims(x, 1 if _channels_last(data_format, 1) else 2)
        fmt = "NHWC" if _channels_last(data_format, 1) else "NCHW"
        y = conv2d(x2, _dilated(expand_dims(w, 0), rate[0]), strides=[1, 1, strides[0], 1]
                   if fmt == "NHWC" else [1, 1, 1, strides[0]], padding=padding,
                   data_format=fmt)
        return squeeze(y, [1 if fmt == "NHWC" else 2], name=name or "convolution")
    if n == 2:
        fmt = data_format or "NHWC"
        full = [1, *strides, 1] if fmt == "NHWC" else [1, 1, *strides]
        return conv2d(x, _dilated(w, rate[0]), strides=full, padding=padding,
                      data_format=fmt, name=name or "convolution")
    fmt = data_format or "NDHWC"
    full = [1, *strides, 1] if fmt == "NDHWC" else [1, 1, *strides]
    return conv3d(x, w, strides=full, padding=padding, data_format=fmt,
                  name=name or "convolution")


def conv_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                   data_format=None, dilations=None, name=None):
    """The transpose of the 1-, 2- or 3-D convolution that ``output_shape``'s length (3, 4
    or 5) calls for (TF1 ``tf.nn.conv_transpose``)."""
    if hasattr(output_shape, "shape") and not isinstance(output_shape, (list, tuple)):
        dims = output_shape.shape
        if dims is None or dims[0] is None:
            raise ValueError("conv_transpose: output_shape must have a known length")
        n = int(dims[0]) - 2
    else:
        n = len(output_shape) - 2
    if not 1 <= n <= 3:
        raise ValueError(f"conv_transpose: output_shape must have 3, 4 or 5 entries, got "
                         f"{n + 2}")
    if n == 1:
        return conv1d_transpose(input, filters, output_shape, strides, padding,
                                data_format=data_format or "NWC", dilations=dilations,
                                name=name)
    if n == 2:
        return conv2d_transpose(input, filters, output_shape, strides, padding,
                                data_format=data_format or "NHWC", dilations=dilations,
                                name=name)
    return conv3d_transpose(input, filters, output_shape, strides, padding,
                            data_format=data_format or "NDHWC", dilations=dilations, name=name)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """The transpose of ``atrous_conv2d`` (TF1 ``tf.nn.atrous_conv2d_transpose``):
    ``filters`` ``[kh, kw, out_channels, in_channels]`` with taps ``rate`` apart, stride 1,
    giving ``output_shape`` (NHWC)."""
    rate = int(rate)
    if rate < 1:
        raise ValueError(f"atrous_conv2d_transpose: rate must be at least 1, got {rate}")
    w = convert_to_tensor(filters)
    return conv2d_transpose(value, _dilated(w, rate), output_shape, [1, 1, 1, 1], padding,
                            name=name or "atrous_conv2d_transpose")


def pool(input, window_shape, pooling_type, padding, dilation_rate=None, strides=None,  # noqa: A002
         name=None, data_format=None, dilations=None):
    """Max or average pooling (``pooling_type`` "MAX" or "AVG") over a 1-, 2- or 3-D window
    ``window_shape`` (TF1 ``tf.nn.pool``); a dilation rate above 1 is not supported here."""
    rate = dilation_rate if dilations is None else dilations
    x = convert_to_tensor(input)
    n = len(window_shape)
    if not 1 <= n <= 3 or _spatial_rank(x, "pool") != n:
        raise ValueError(f"pool: window_shape {tuple(window_shape)} does not fit '{x.name}' "
                         f"of shape {x.shape}")
    strides = _per_axis(strides, n, "strides")
    if any(r > 1 for r in _per_axis(rate, n, "dilation_rate")):
        raise NotImplementedError("pool: dilation_rate above 1 is not supported by gradflow")
    if any(s > w for s, w in zip(strides, window_shape)):
        raise ValueError(f"pool: strides {strides} larger than window_shape "
                         f"{tuple(window_shape)} are not supported (as TF1)")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    fmt = data_format or ("NWC", "NHWC", "NDHWC")[n - 1]
    last = fmt.endswith("C")
    ksize = [1, *window_shape, 1] if last else [1, 1, *window_shape]
    full = [1, *strides, 1] if last else [1, 1, *strides]
    ops = {1: (max_pool1d, avg_pool1d), 2: (max_pool, avg_pool), 3: (max_pool3d, avg_pool3d)}
    op = ops[n][0 if pooling_type == "MAX" else 1]
    return op(x, ksize, full, padding, data_format=fmt, name=name)


def _depthwise_rate(strides, dilations, what):
    strides = tuple(int(s) for s in strides)
    rate = tuple(int(d) for d in (dilations or (1, 1, 1, 1)))
    if len(strides) != 4 or len(rate) != 4:
        raise ValueError(f"{what}: strides and dilations must have 4 entries (NHWC)")
    if rate[1] != rate[2] or rate[0] != 1 or rate[3] != 1:
        raise ValueError(f"{what}: dilations must be [1, r, r, 1], got {list(rate)}")
    return strides, rate[1]


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    """``depthwise_conv2d`` with TF's kernel-level arguments: ``strides`` and
    ``dilations`` of 4 entries (NHWC)."""
    strides, rate = _depthwise_rate(strides, dilations, "depthwise_conv2d_native")
    return depthwise_conv2d(input, filter, strides, padding, rate=rate, name=name,
                            data_format=data_format)


def _sizes(sizes, what):
    value = static_value(sizes)
    if value is None:
        raise ValueError(f"{what}: the sizes must be known when the graph is built")
    return [int(v) for v in value.reshape(-1)]


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC",
                                           dilations=(1, 1, 1, 1), name=None):
    """The gradient of ``depthwise_conv2d_native`` in its input (of shape
    ``input_sizes``, NHWC) given ``out_backprop``: per input channel, the transpose of
    its convolution."""
    what = "depthwise_conv2d_native_backprop_input"
    strides, rate = _depthwise_rate(strides, dilations, what)
    if data_format != "NHWC":
        raise ValueError(f"{what}: only data_format NHWC is supported, got {data_format!r}")
    sizes = _sizes(input_sizes, what)
    w = convert_to_tensor(filter)
    g = convert_to_tensor(out_backprop, like=w)
    kh, kw, cin, mult = _known_filter(w, 4, what)
    parts = [conv2d_backprop_input(sizes[:3] + [1], _dilated(w[:, :, k:k + 1, :], rate),
                                   g[..., k * mult:(k + 1) * mult], list(strides), padding)
             for k in range(cin)]
    return concat(parts, axis=-1, name=name or "DepthwiseConv2dNativeBackpropInput")


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop, strides,  # noqa: A002
                                            padding, data_format="NHWC",
                                            dilations=(1, 1, 1, 1), name=None):
    """The gradient of ``depthwise_conv2d_native`` in its filter (of shape
    ``filter_sizes`` ``[kh, kw, in, multiplier]``) given ``out_backprop``."""
    what = "depthwise_conv2d_native_backprop_filter"
    strides, rate = _depthwise_rate(strides, dilations, what)
    if data_format != "NHWC" or rate != 1:
        raise ValueError(f"{what}: only data_format NHWC without dilation is supported")
    kh, kw, cin, mult = _sizes(filter_sizes, what)
    x = convert_to_tensor(input)
    g = convert_to_tensor(out_backprop, like=x)
    parts = [conv2d_backprop_filter(x[..., k:k + 1], [kh, kw, 1, mult],
                                    g[..., k * mult:(k + 1) * mult], list(strides), padding)
             for k in range(cin)]
    return concat(parts, axis=2, name=name or "DepthwiseConv2dNativeBackpropFilter")


depthwise_conv2d_backprop_input = depthwise_conv2d_native_backprop_input
depthwise_conv2d_backprop_filter = depthwise_conv2d_native_backprop_filter
