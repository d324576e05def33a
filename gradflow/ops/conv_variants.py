"""TF1's convolutions built from ``conv2d``: ``nn.depthwise_conv2d``,
``nn.separable_conv2d``, ``nn.atrous_conv2d``, and ``nn.local_response_normalization``.

Each is a composite over existing ops, so its gradient comes from theirs:
a depthwise filter becomes a block-diagonal ``conv2d`` filter (each input
channel feeds only its own ``channel_multiplier`` outputs), and a dilation
(``rate``) becomes a filter with ``rate - 1`` zeros between its taps, which is
the same sum. Both cost more arithmetic than a dedicated kernel would.
"""

from __future__ import annotations

from gradflow.ops.array_ops import reshape
from gradflow.ops.conv_ops import _check_format, _pair, conv2d
from gradflow.ops.index_ops import concat
from gradflow.ops.math_ops import pow, square  # noqa: A004 - TF1 names
from gradflow.ops.shape_ops import pad
from gradflow.prim.registry import convert_to_tensor

__all__ = ["atrous_conv2d", "depthwise_conv2d", "local_response_normalization",
           "separable_conv2d"]


def _known_filter(w, rank, what):
    if w.shape is None or len(w.shape) != rank or None in w.shape:
        raise ValueError(f"{what}: the filter '{w.name}' must have a known shape of rank "
                         f"{rank}, got {w.shape}")
    return tuple(int(d) for d in w.shape)


def _dilated(w, rate):
    """``w`` ``[kh, kw, in, out]`` with ``rate - 1`` zeros between taps on both axes."""
    if rate == 1:
        return w
    kh, kw, cin, cout = _known_filter(w, 4, "dilation")
    spread = pad(reshape(w, (kh, 1, kw, 1, cin, cout)),
                 [[0, 0], [0, rate - 1], [0, 0], [0, rate - 1], [0, 0], [0, 0]])
    full = reshape(spread, (kh * rate, kw * rate, cin, cout))
    return full[:(kh - 1) * rate + 1, :(kw - 1) * rate + 1]


def _rate(rate, what):
    rates = _pair(1 if rate is None else rate, f"{what}: rate")
    if rates[0] != rates[1] or rates[0] < 1:
        raise ValueError(f"{what}: rate must be one positive int for both axes, got {rate}")
    return rates[0]


def atrous_conv2d(value, filters, rate, padding, name=None):
    """2-D convolution with holes: the taps of ``filters`` ``[kh, kw, in, out]`` are
    ``rate`` pixels apart (TF1 ``tf.nn.atrous_conv2d``), stride 1.

    >>> y = gf.nn.atrous_conv2d(x, w, rate=2, padding="SAME")
    """
    x = convert_to_tensor(value)
    w = convert_to_tensor(filters, like=x)
    rate = int(rate)
    if rate < 1:
        raise ValueError(f"atrous_conv2d: rate must be at least 1, got {rate}")
    return conv2d(x, _dilated(w, rate), strides=1, padding=padding, name=name or "atrous")


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None):
    """Each input channel convolved with its own ``channel_multiplier`` filters (TF1
    ``tf.nn.depthwise_conv2d``): ``filter`` is ``[kh, kw, in, multiplier]`` and output
    channel ``k * multiplier + q`` is channel ``k`` convolved with ``filter[..., k, q]``.

    >>> y = gf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME")
    """
    padding = _check_format(padding, data_format or "NHWC", "depthwise_conv2d")
    x = convert_to_tensor(input)
    w = convert_to_tensor(filter, like=x)
    kh, kw, cin, mult = _known_filter(w, 4, "depthwise_conv2d")
    rate = _rate(rate, "depthwise_conv2d")
    if rate > 1 and _pair(strides, "depthwise_conv2d: strides") != (1, 1):
        raise ValueError("depthwise_conv2d: rate > 1 needs strides of 1 (as TF1)")
    # one convolution per input channel: a block-diagonal filter over all channels would
    # multiply an infinite input or weight by the zeros between the blocks (NaN)
    parts = [conv2d(x[..., k:k + 1], _dilated(w[:, :, k:k + 1, :], rate), strides=strides,
                    padding=padding) for k in range(cin)]
    return concat(parts, axis=-1, name=name or "depthwise")


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None):
    """A depthwise convolution, then a 1x1 convolution mixing its channels (TF1
    ``tf.nn.separable_conv2d``): ``pointwise_filter`` is ``[1, 1, in * multiplier, out]``.
    """
    p = convert_to_tensor(pointwise_filter)
    if p.shape is not None and any(d not in (None, 1) for d in p.shape[:2]):
        raise ValueError(f"separable_conv2d: the pointwise filter '{p.name}' must be "
                         f"[1, 1, in, out], got {tuple(p.shape)}")
    depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate,
                                 data_format=data_format)
    return conv2d(depthwise, p, strides=1, padding="VALID", name=name or "separable_conv2d")


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,  # noqa: A002
                                 name=None):
    """``input / (bias + alpha * sqr_sum) ** beta``, where ``sqr_sum`` adds the squares
    of the ``2 * depth_radius + 1`` channels around each one (TF1
    ``tf.nn.local_response_normalization``, as AlexNet used it); ``input`` is 4-D with
    known channels.

    >>> norm1 = gf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    """
    x = convert_to_tensor(input)
    if x.shape is None or len(x.shape) != 4 or x.shape[-1] is None:
        raise ValueError(f"local_response_normalization: '{x.name}' must be 4-D with known "
                         f"channels, got shape {x.shape}")
    r, channels = int(depth_radius), int(x.shape[-1])
    padded = pad(square(x), [[0, 0], [0, 0], [0, 0], [r, r]])
    sqr_sum = padded[..., :channels]
    for k in range(1, 2 * r + 1):
        sqr_sum = sqr_sum + padded[..., k:k + channels]
    return x / pow(bias + alpha * sqr_sum, beta)


lrn = local_response_normalization
