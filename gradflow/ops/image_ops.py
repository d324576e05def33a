"""The colour, adjustment, box and quality functions of TF1's ``tf.image``
(``gradflow.image`` exports them): ``rgb_to_grayscale``, ``grayscale_to_rgb``,
``rgb_to_hsv``, ``hsv_to_rgb``, ``adjust_saturation``, ``adjust_hue``, ``adjust_gamma``,
``crop_to_bounding_box``, ``pad_to_bounding_box``, ``image_gradients``,
``total_variation``, ``psnr`` and ``convert_image_dtype``.

Each is written with gradflow's ops, so each is differentiable where its pieces are
(TF1 has no gradient for the colour-space kernels; here the float results have one).
Images are ``[..., height, width, channels]``.
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reduce_max, reduce_mean, reduce_min, reduce_sum
from gradflow.ops.index_ops import concat, stack, unstack
from gradflow.ops.math_ops import (
    abs,  # noqa: A004
    cast,
    clip_by_value,
    equal,
    floor,
    floormod,
    log,
    pow,  # noqa: A004
    where,
    zeros_like,
)
from gradflow.ops.shape_ops import pad, tile
from gradflow.prim.registry import convert_to_tensor

__all__ = ["adjust_gamma", "adjust_hue", "adjust_saturation", "convert_image_dtype",
           "crop_to_bounding_box", "grayscale_to_rgb", "hsv_to_rgb", "image_gradients",
           "pad_to_bounding_box", "psnr", "rgb_to_grayscale", "rgb_to_hsv", "total_variation"]


def _image(image, what, ranks=None):
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    low = 3 if ranks is None else min(ranks)
    if x.shape is None or len(x.shape) < low or (ranks is not None
                                                 and len(x.shape) not in ranks):
        want = " or ".join(f"{r}-D" for r in (ranks or (3, 4)))
        raise ValueError(f"{what}: '{x.name}' must be {want} [..., height, width, channels], "
                         f"got shape {x.shape}")
    return x


def _channels(x, count, what):
    last = x.shape[-1]
    if last is not None and int(last) != count:
        raise ValueError(f"{what}: '{x.name}' must have {count} channels (its last axis), got "
                         f"{last}")


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``image`` as ``dtype``, its values scaled between the types' ranges (TF1): an
    integer image's maximum becomes 1.0 in a float type, and back."""
    x = convert_to_tensor(image)
    dtype = dtypes.as_dtype(dtype)
    if dtype is x.dtype:
        return x
    if x.dtype.is_integer and dtype.is_floating:
        return cast(x, dtype) * (1.0 / float(x.dtype.max))
    if x.dtype.is_floating and dtype.is_integer:
        scaled = x * (float(dtype.max) + 0.5)
        if saturate:
            scaled = clip_by_value(scaled, float(dtype.min), float(dtype.max))
        return cast(scaled, dtype)
    if x.dtype.is_floating and dtype.is_floating:
        return cast(x, dtype)
    raise NotImplementedError(f"convert_image_dtype: {x.dtype.name} to {dtype.name} is not "
                              "supported")


def _float(x):
    """``(float image, its dtype before)``: float16/32/64 kept, integers to float32 in
    [0, 1] as TF's colour functions take them."""
    return (x if x.dtype.is_floating else convert_image_dtype(x, dtypes.float32)), x.dtype


def rgb_to_grayscale(images, name=None):
    """The luma ``0.2989 R + 0.5870 G + 0.1140 B`` of RGB ``images``, one channel, in the
    images' dtype (TF1)."""
    x = _image(images, "rgb_to_grayscale", ranks=range(1, 9))
    _channels(x, 3, "rgb_to_grayscale")
    flt, orig = _float(x)
    r, g, b = unstack(flt, 3, axis=-1)
    gray = stack([r * 0.2989 + g * 0.587 + b * 0.114], axis=-1)
    return convert_image_dtype(gray, orig, name=name)


def grayscale_to_rgb(images, name=None):
    """The one-channel ``images`` repeated into three channels (TF1)."""
    x = _image(images, "grayscale_to_rgb", ranks=range(2, 9))
    _channels(x, 1, "grayscale_to_rgb")
    return tile(x, [1] * (len(x.shape) - 1) + [3], name=name)


def rgb_to_hsv(images, name=None):
    """RGB ``images`` (floats in [0, 1]) as hue, saturation and value, each in [0, 1]
    (TF1's kernel: hue 0 where the pixel is grey, saturation 0 where it is black)."""
    x = _image(images, "rgb_to_hsv", ranks=range(1, 9))
    _channels(x, 3, "rgb_to_hsv")
    if not x.dtype.is_floating:
        raise TypeError(f"rgb_to_hsv: '{x.name}' must be float, got {x.dtype.name}")
    r, g, b = unstack(x, 3, axis=-1)
    value = reduce_max(x, axis=-1)
    spread = value - reduce_min(x, axis=-1)
    grey, black = equal(spread, 0.0), equal(value, 0.0)
    saturation = where(black, zeros_like(value), spread / where(black, value + 1.0, value))
    safe = where(grey, spread + 1.0, spread)
    hue = where(equal(value, r), (g - b) / safe,
                where(equal(value, g), (b - r) / safe + 2.0, (r - g) / safe + 4.0)) / 6.0
    hue = where(hue < 0.0, hue + 1.0, hue)
    hue = where(grey, zeros_like(hue), hue)
    return stack([hue, saturation, value], axis=-1, name=name)


def hsv_to_rgb(images, name=None):
    """HSV ``images`` (hue, saturation and value in [0, 1]) as RGB (TF1's kernel)."""
    x = _image(images, "hsv_to_rgb", ranks=range(1, 9))
    _channels(x, 3, "hsv_to_rgb")
    hue, saturation, value = unstack(x, 3, axis=-1)
    chroma = saturation * value
    low = value - chroma
    sector = hue * 6.0
    middle = chroma * (1.0 - abs(floormod(sector, 2.0) - 1.0))
    zero = zeros_like(chroma)
    part = floormod(cast(floor(sector), dtypes.int32), 6)  # a hue of 1 is a hue of 0
    # (red, green, blue) above the low level in each sixth of the hue circle
    sextants = [(chroma, middle, zero), (middle, chroma, zero), (zero, chroma, middle),
                (zero, middle, chroma), (middle, zero, chroma), (chroma, zero, middle)]
    channels = []
    for k in range(3):
        level = zero
        for index, rgb in enumerate(sextants):
            level = where(equal(part, index), rgb[k], level)
        channels.append(level + low)
    return stack(channels, axis=-1, name=name)


def _through_hsv(image, what, change):
    x = _image(image, what, ranks=range(1, 9))
    _channels(x, 3, what)
    flt, orig = _float(x)
    hue, saturation, value = unstack(rgb_to_hsv(flt), 3, axis=-1)
    hue, saturation = change(hue, saturation)
    rgb = hsv_to_rgb(stack([hue, saturation, value], axis=-1))
    return convert_image_dtype(rgb, orig)


def adjust_saturation(image, saturation_factor, name=None):
    """RGB ``image`` with its saturation times ``saturation_factor``, kept in [0, 1]
    (TF1: through HSV; an integer image comes back in its dtype)."""
    return _through_hsv(image, "adjust_saturation",
                        lambda h, s: (h, clip_by_value(s * saturation_factor, 0.0, 1.0)))


def adjust_hue(image, delta, name=None):
    """RGB ``image`` with its hue turned by ``delta`` (in [-1, 1], a fraction of the
    circle; TF1: through HSV)."""
    if not isinstance(delta, Tensor) and not -1 <= delta <= 1:
        raise ValueError(f"adjust_hue: delta must be in [-1, 1], got {delta}")
    return _through_hsv(image, "adjust_hue", lambda h, s: (floormod(h + delta, 1.0), s))


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * image ** gamma`` (TF1; an integer image is scaled to [0, 1] first and
    back after, saturating). ``gamma`` must be non-negative."""
    x = convert_to_tensor(image)
    if not isinstance(gamma, Tensor) and gamma < 0:
        raise ValueError(f"adjust_gamma: gamma must be non-negative, got {gamma}")
    flt, orig = _float(x)
    return convert_image_dtype(pow(flt, gamma) * gain, orig, saturate=True)


def _box(x, what):
    rank = len(x.shape)
    return rank, x.shape[rank - 3], x.shape[rank - 2]


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``target_height`` x ``target_width`` window of ``image`` whose top left corner
    is at (``offset_height``, ``offset_width``) (TF1); a window outside a known image
    is an error when the graph is built."""
    x = _image(image, "crop_to_bounding_box")
    rank, height, width = _box(x, "crop_to_bounding_box")
    for what, offset, size, have in (("height", offset_height, target_height, height),
                                     ("width", offset_width, target_width, width)):
        if int(offset) < 0 or int(size) <= 0:
            raise ValueError(f"crop_to_bounding_box: offset_{what} must be >= 0 and "
                             f"target_{what} > 0, got {offset} and {size}")
        if have is not None and int(offset) + int(size) > int(have):
            raise ValueError(f"crop_to_bounding_box: the box's {what} ({offset} + {size}) "
                             f"is past '{x.name}''s {what} {have}")
    key = [slice(None)] * rank
    key[rank - 3] = slice(int(offset_height), int(offset_height) + int(target_height))
    key[rank - 2] = slice(int(offset_width), int(offset_width) + int(target_width))
    return x[tuple(key)]


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``image`` placed at (``offset_height``, ``offset_width``) in a zero image of
    ``target_height`` x ``target_width`` (TF1)."""
    x = _image(image, "pad_to_bounding_box")
    rank, height, width = _box(x, "pad_to_bounding_box")
    if height is None or width is None:
        raise ValueError(f"pad_to_bounding_box: the height and width of '{x.name}' must be "
                         "known")
    after_h = int(target_height) - int(offset_height) - int(height)
    after_w = int(target_width) - int(offset_width) - int(width)
    if min(int(offset_height), int(offset_width), after_h, after_w) < 0:
        raise ValueError(f"pad_to_bounding_box: '{x.name}' of shape {tuple(x.shape)} at "
                         f"({offset_height}, {offset_width}) does not fit in "
                         f"{target_height} x {target_width}")
    paddings = [[0, 0]] * rank
    paddings[rank - 3] = [int(offset_height), after_h]
    paddings[rank - 2] = [int(offset_width), after_w]
    return pad(x, paddings)


def image_gradients(image):
    """``(dy, dx)``: each pixel's difference to the one below and to its right, 0 on the
    last row and column (TF1; ``image`` is 4-D)."""
    x = _image(image, "image_gradients", ranks=(4,))
    dy = x[:, 1:] - x[:, :-1]
    dx = x[:, :, 1:] - x[:, :, :-1]
    dy = concat([dy, zeros_like(x[:, :1])], 1)
    dx = concat([dx, zeros_like(x[:, :, :1])], 2)
    return dy, dx


def total_variation(images, name=None):
    """The sum of the absolute differences of neighbouring pixels, down and across, over
    each image: a scalar for a 3-D image, a vector for a batch (TF1)."""
    x = _image(images, "total_variation")
    if len(x.shape) == 3:
        down = x[1:] - x[:-1]
        across = x[:, 1:] - x[:, :-1]
        axes = None
    else:
        down = x[:, 1:] - x[:, :-1]
        across = x[:, :, 1:] - x[:, :, :-1]
        axes = [1, 2, 3]
    return reduce_sum(abs(down), axis=axes) + reduce_sum(abs(across), axis=axes)


def psnr(a, b, max_val, name=None):
    """The peak signal-to-noise ratio of ``a`` against ``b`` per image (over the last
    three axes), in dB, for pixel values up to ``max_val`` (TF1): float32 for integer
    images (scaled as ``convert_image_dtype`` scales them)."""
    x = _image(a, "psnr")
    y = _image(b, "psnr")
    if x.dtype is not y.dtype:
        raise TypeError(f"psnr: '{x.name}' and '{y.name}' must have one dtype, got "
                        f"{x.dtype.name} and {y.dtype.name}")
    top = cast(max_val, x.dtype) if isinstance(max_val, Tensor) else \
        convert_to_tensor(max_val, dtype=x.dtype)
    top = convert_image_dtype(top, dtypes.float32)
    x, y = convert_image_dtype(x, dtypes.float32), convert_image_dtype(y, dtypes.float32)
    mse = reduce_mean((x - y) * (x - y), axis=[-3, -2, -1])
    return log(top) * (20.0 / math.log(10.0)) - log(mse) * (10.0 / math.log(10.0))
