"""TF1's ``tf.image``, for what tutorials' input code uses: the decoders
``decode_jpeg``, ``decode_png``, ``decode_bmp`` and ``decode_image`` (on the host, by
Pillow), ``resize_images`` (bilinear and nearest neighbour, TF1's legacy pixel
alignment) and ``random_flip_left_right``. Images are ``[height, width, channels]``
or a batch ``[batch, height, width, channels]``.

>>> image = gf.image.decode_jpeg(gf.read_file(path), channels=3)
>>> small = gf.image.resize_images(image, [64, 64])
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.prim import image_io as _image_io  # noqa: F401 - registers decode_image
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
           "convert_image_dtype", "decode_bmp", "decode_image", "decode_jpeg", "decode_png",
           "flip_left_right", "flip_up_down", "per_image_standardization", "per_image_whitening",
           "random_brightness", "random_contrast", "random_crop", "random_flip_left_right",
           "resize_images", "resize_image_with_crop_or_pad"]


def _decoded(fmt, contents, channels, dtype, name, allowed):
    what = f"decode_{fmt}"
    x = convert_to_tensor(contents, dtype=dtypes.string)
    if x.dtype is not dtypes.string or (x.shape is not None and len(x.shape)):
        raise ValueError(f"{what}: '{x.name}' must be one string (the file's bytes), got "
                         f"{x.dtype.name} of shape {x.shape}")
    channels = int(channels or 0)
    if channels not in allowed:
        raise ValueError(f"{what}: channels must be one of {allowed}, got {channels}")
    if dtypes.as_dtype(dtype) is not dtypes.uint8:
        raise NotImplementedError(f"{what}: only dtype=uint8 is supported, got "
                                  f"{dtypes.as_dtype(dtype).name}")
    return apply("decode_image", [x], name=name or f"Decode{fmt.capitalize()}",
                 shape=(None, None, channels or None), dtype=dtypes.uint8, format=fmt,
                 channels=channels)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                name=None):
    """The ``uint8`` image ``[height, width, channels]`` of the JPEG bytes ``contents``
    (TF1 ``tf.image.decode_jpeg``), decoded by Pillow (libjpeg-turbo) at each run:
    ``channels`` 0 keeps the file's (1 or 3), 1 is grey, 3 is RGB. Anything but a whole
    JPEG image is an ``InvalidArgumentError``. Only ``ratio=1`` with the default
    options is supported. The pixels are TensorFlow's with
    ``dct_method="INTEGER_ACCURATE"``; its default, a faster DCT, differs from them by
    a few levels."""
    if ratio != 1 or not fancy_upscaling or try_recover_truncated \
            or acceptable_fraction != 1 or dct_method not in ("", "INTEGER_ACCURATE"):
        raise NotImplementedError("decode_jpeg: only ratio=1 with the default decoding "
                                  "options is supported")
    return _decoded("jpeg", contents, channels, dtypes.uint8, name, (0, 1, 3))


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """The ``uint8`` image of the PNG bytes ``contents`` (TF1 ``tf.image.decode_png``):
    ``channels`` 0 keeps the file's (1 to 4), 1 grey, 3 RGB, 4 RGBA; 16-bit samples
    give their high byte."""
    return _decoded("png", contents, channels, dtype, name, (0, 1, 3, 4))


def decode_bmp(contents, channels=0, name=None):
    """The ``uint8`` image of the BMP bytes ``contents`` (TF1 ``tf.image.decode_bmp``)."""
    return _decoded("bmp", contents, channels, dtypes.uint8, name, (0, 1, 3, 4))


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None,
                 expand_animations=True):
    """The ``uint8`` image of JPEG, PNG or BMP bytes, whichever they are (TF1
    ``tf.image.decode_image``; GIF is not supported)."""
    return _decoded("image", contents, channels, dtype, name, (0, 1, 3, 4))


class ResizeMethod:
    """The methods of ``resize_images`` (TF1's numbering)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _batched(images, what):
    """``(4-D images, whether a batch axis was added)``."""
    from gradflow.ops.array_ops import expand_dims

    x = convert_to_tensor(images)
    if x.shape is None or len(x.shape) not in (3, 4):
        raise ValueError(f"{what}: '{x.name}' must be [height, width, channels] or "
                         f"[batch, height, width, channels], got shape {x.shape}")
    return (x, False) if len(x.shape) == 4 else (expand_dims(x, 0), True)


def _source_positions(in_size, out_size, align_corners):
    """Where each output pixel samples the input, as TF1's legacy kernels place it (in
    float32, as they compute it)."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    return np.arange(out_size, dtype=f32) * scale


def _positions_in_graph(x, axis, out_size, align_corners):
    """``_source_positions`` (the same float32 bits) and the last index, computed at run
    time from ``x``'s size along ``axis``."""
    from gradflow.ops.index_ops import shape as shape_of
    from gradflow.ops.math_ops import cast
    from gradflow.ops.shape_ops import range_

    size = shape_of(x)[axis]
    scale = cast(size - 1, dtypes.float32) / float(out_size - 1) \
        if align_corners and out_size > 1 else cast(size, dtypes.float32) / float(out_size)
    return cast(range_(out_size), dtypes.float32) * scale, size - 1


def _resize_axis(x, axis, in_size, out_size, method, align_corners):
    """``x`` resized along ``axis`` from ``in_size`` (None: known at run time only)."""
    from gradflow.ops import math_ops
    from gradflow.ops.array_ops import reshape
    from gradflow.ops.index_ops import gather

    if in_size is None:
        pos, last = _positions_in_graph(x, axis, out_size, align_corners)
        xp_, as_index = math_ops, lambda v: math_ops.cast(v, dtypes.int32)
    else:
        pos, last = _source_positions(in_size, out_size, align_corners), in_size - 1
        xp_, as_index = np, lambda v: np.asarray(v).astype(np.int32)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        # TF rounds halves up (the positions are >= 0), not to the even neighbour
        index = xp_.floor(pos + 0.5) if align_corners else xp_.floor(pos)
        return gather(x, xp_.minimum(as_index(index), last), axis=axis)
    low = as_index(xp_.floor(pos))
    high = xp_.minimum(low + 1, last)
    shape = [1, 1, 1, 1]
    shape[axis] = out_size
    if in_size is None:
        frac = reshape(math_ops.cast(pos - math_ops.cast(low, dtypes.float32), x.dtype),
                       shape)
    else:
        frac = convert_to_tensor((pos - low).reshape(shape), dtype=x.dtype)
    top = gather(x, low, axis=axis)
    return top + (gather(x, high, axis=axis) - top) * frac


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """``images`` resized to ``size`` ``[new_height, new_width]`` (TF1
    ``tf.image.resize_images``): bilinear (float32 result, as TF1) or nearest neighbour
    (the input's dtype). The result is differentiable in the input. The input's height
    and width may be known only at run time (a decoded image): the sampling positions
    are then computed at run time, with the same bits."""
    from gradflow.ops.array_ops import squeeze
    from gradflow.ops.math_ops import cast

    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise NotImplementedError("resize_images: only BILINEAR and NEAREST_NEIGHBOR are "
                                  "supported")
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio is not supported")
    x, added = _batched(images, "resize_images")
    height, width = (int(d) for d in size)
    if method == ResizeMethod.BILINEAR and x.dtype is not dtypes.float32 \
            and x.dtype is not dtypes.float64:
        x = cast(x, dtypes.float32)
    in_height, in_width = (None if d is None else int(d) for d in x.shape[1:3])
    # across first, then down: the order, and so the bits, of TF1's kernel
    out = _resize_axis(x, 2, in_width, width, method, align_corners)
    out = _resize_axis(out, 1, in_height, height, method, align_corners)
    return squeeze(out, [0], name=name) if added else out


def random_flip_left_right(image, seed=None):
    """``image`` mirrored left to right with probability 1/2, a new draw each run (each
    image of a batch on its own draw).

    >>> augmented = gf.image.random_flip_left_right(images)
    """
    from gradflow.ops.array_ops import reshape
    from gradflow.ops.index_ops import shape
    from gradflow.ops.math_ops import less, where
    from gradflow.ops.shape_ops import reverse
    from gradflow.ops.state_ops import random_uniform

    x = convert_to_tensor(image)
    if x.shape is None or len(x.shape) not in (3, 4):
        raise ValueError(f"random_flip_left_right: '{x.name}' must be 3-D or 4-D, got shape "
                         f"{x.shape}")
    batched = len(x.shape) == 4
    draw = random_uniform(shape(x)[:1] if batched else [], seed=seed)
    flip = less(draw, 0.5)
    if batched:
        flip = reshape(flip, (-1, 1, 1, 1))
    return where(flip, reverse(x, [2 if batched else 1]), x)


def _image(image, what):
    x = convert_to_tensor(image)
    if x.shape is None or len(x.shape) not in (3, 4):
        raise ValueError(f"{what}: '{x.name}' must be [height, width, channels] or "
                         f"[batch, height, width, channels], got shape {x.shape}")
    return x


def _as_float(x):
    from gradflow.ops.math_ops import cast

    return x if x.dtype.is_floating else cast(x, dtypes.float32)


def flip_left_right(image):
    """``image`` mirrored left to right (each image of a batch)."""
    from gradflow.ops.shape_ops import reverse

    x = _image(image, "flip_left_right")
    return reverse(x, [len(x.shape) - 2])


def flip_up_down(image):
    """``image`` mirrored top to bottom (each image of a batch)."""
    from gradflow.ops.shape_ops import reverse

    x = _image(image, "flip_up_down")
    return reverse(x, [len(x.shape) - 3])


def adjust_brightness(image, delta):
    """``image + delta`` (a float image; an integer one is made float32 first)."""
    return _as_float(_image(image, "adjust_brightness")) + delta


def random_brightness(image, max_delta, seed=None):
    """``adjust_brightness`` by one draw in ``[-max_delta, max_delta)`` per run (TF1)."""
    from gradflow.ops.state_ops import random_uniform

    if max_delta < 0:
        raise ValueError(f"random_brightness: max_delta must be non-negative, got {max_delta}")
    return adjust_brightness(image, random_uniform([], -max_delta, max_delta, seed=seed))


def adjust_contrast(images, contrast_factor):
    """Each channel of each image moved from its mean by ``contrast_factor``:
    ``(x - mean) * factor + mean``, the mean over the image's pixels."""
    from gradflow.ops.array_ops import reduce_mean

    x = _as_float(_image(images, "adjust_contrast"))
    rank = len(x.shape)
    mean = reduce_mean(x, axis=[rank - 3, rank - 2], keepdims=True)
    return (x - mean) * contrast_factor + mean


def random_contrast(image, lower, upper, seed=None):
    """``adjust_contrast`` by one factor drawn in ``[lower, upper)`` per run (TF1)."""
    from gradflow.ops.state_ops import random_uniform

    if not 0 <= lower < upper:
        raise ValueError(f"random_contrast: need 0 <= lower < upper, got {lower}, {upper}")
    return adjust_contrast(image, random_uniform([], lower, upper, seed=seed))


def per_image_standardization(image):
    """Each image scaled to mean 0 and variance 1 over all its values (TF1): ``(x -
    mean) / max(stddev, 1 / sqrt(number of values))``, in float32 for integer images."""
    from gradflow.ops.array_ops import reduce_mean
    from gradflow.ops.index_ops import shape as shape_of
    from gradflow.ops.math_ops import cast, maximum, relu, rsqrt, sqrt

    x = _as_float(_image(image, "per_image_standardization"))
    axes = [len(x.shape) - 3, len(x.shape) - 2, len(x.shape) - 1]
    mean = reduce_mean(x, axis=axes, keepdims=True)
    variance = relu(reduce_mean(x * x, axis=axes, keepdims=True) - mean * mean)
    sizes = shape_of(x)
    count = cast(sizes[-1] * sizes[-2] * sizes[-3], x.dtype)
    return (x - mean) / maximum(sqrt(variance), rsqrt(count))


def random_crop(value, size, seed=None, name=None):
    """A window of ``size`` (one size per dimension of ``value``) at a random place,
    drawn anew each run (TF1 ``tf.random_crop``)."""
    from gradflow.ops.index_ops import shape as shape_of
    from gradflow.ops.math_ops import cast, floor, minimum
    from gradflow.ops.state_ops import random_uniform

    x = convert_to_tensor(value)
    size = [int(s) for s in size]
    if x.shape is None or len(x.shape) != len(size):
        raise ValueError(f"random_crop: '{x.name}' has shape {x.shape}, size {size} needs "
                         f"rank {len(size)}")
    for d, s in zip(x.shape, size):
        if d is not None and not 0 < s <= d:
            raise ValueError(f"random_crop: size {size} does not fit in '{x.name}' of shape "
                             f"{tuple(x.shape)}")
    draws = random_uniform([len(size)], seed=seed)
    key = []
    for axis, (d, s) in enumerate(zip(x.shape, size)):
        if d is not None and d == s:
            key.append(slice(None))
            continue
        room = shape_of(x)[axis] - s + 1  # the places the window may start
        start = minimum(cast(floor(draws[axis] * cast(room, dtypes.float32)), dtypes.int32),
                        room - 1)
        key.append(slice(start, start + s))
    out = x[tuple(key)]
    out.set_shape(size)
    return out if name is None else _named(out, name)


def _named(x, name):
    from gradflow.ops.array_ops import identity

    return identity(x, name=name)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """``image`` cut, or padded with zeros, about its centre to ``target_height`` x
    ``target_width`` (TF1); its height and width must be known."""
    from gradflow.ops.shape_ops import pad

    x = _image(image, "resize_image_with_crop_or_pad")
    rank = len(x.shape)
    height, width = x.shape[rank - 3], x.shape[rank - 2]
    if height is None or width is None:
        raise ValueError(f"resize_image_with_crop_or_pad: the height and width of "
                         f"'{x.name}' must be known, got shape {tuple(x.shape)}")
    key, paddings = [slice(None)] * rank, [[0, 0]] * rank
    for axis, have, want in ((rank - 3, int(height), int(target_height)),
                             (rank - 2, int(width), int(target_width))):
        cut = max((have - want) // 2, 0)
        key[axis] = slice(cut, cut + min(have, want))
        before = max((want - have) // 2, 0)
        paddings[axis] = [before, want - min(have, want) - before]
    out = x[tuple(key)]
    return pad(out, paddings) if any(p != [0, 0] for p in paddings) else out


def central_crop(image, central_fraction):
    """The central ``central_fraction`` (in (0, 1]) of ``image``'s height and width."""
    x = _image(image, "central_crop")
    if not 0 < central_fraction <= 1:
        raise ValueError(f"central_crop: central_fraction must be in (0, 1], got "
                         f"{central_fraction}")
    rank = len(x.shape)
    height, width = x.shape[rank - 3], x.shape[rank - 2]
    if height is None or width is None:
        raise ValueError(f"central_crop: the height and width of '{x.name}' must be known")
    key = [slice(None)] * rank
    for axis, size in ((rank - 3, int(height)), (rank - 2, int(width))):
        start = int((size - size * central_fraction) / 2)
        key[axis] = slice(start, size - start)
    return x[tuple(key)]


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``image`` as ``dtype``, its values scaled between the types' ranges (TF1): an
    integer image's maximum becomes 1.0 in a float type, and back."""
    from gradflow.ops.math_ops import cast, clip_by_value

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


def per_image_whitening(image):
    """``per_image_standardization`` under its name before TF 1.0."""
    return per_image_standardization(image)
