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
from gradflow.ops.image_box_ops import (  # noqa: F401 - TF1's tf.image names
    combined_non_max_suppression,
    crop_and_resize,
    draw_bounding_boxes,
    non_max_suppression,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
    ssim,
)
from gradflow.ops.image_extra_ops import (  # noqa: F401 - TF1's tf.image names
    area_matrix,
    bicubic_matrix,
    extract_image_patches,
    extract_patches,
    resize_separable,
    rgb_to_yiq,
    rgb_to_yuv,
    rot90,
    sobel_edges,
    transpose_image,
    yiq_to_rgb,
    yuv_to_rgb,
)
from gradflow.ops.image_ops import (  # noqa: F401 - TF1's tf.image names
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    convert_image_dtype,
    crop_to_bounding_box,
    grayscale_to_rgb,
    hsv_to_rgb,
    image_gradients,
    pad_to_bounding_box,
    psnr,
    rgb_to_grayscale,
    rgb_to_hsv,
    total_variation,
)
from gradflow.prim import image_io as _image_io  # noqa: F401 - registers decode_image
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
           "adjust_saturation", "central_crop", "convert_image_dtype", "crop_to_bounding_box",
           "decode_bmp", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg",
           "encode_png", "flip_left_right", "flip_up_down", "grayscale_to_rgb", "hsv_to_rgb",
           "image_gradients", "pad_to_bounding_box", "per_image_standardization",
           "per_image_whitening", "psnr", "random_brightness", "random_contrast", "random_crop",
           "random_flip_left_right", "random_flip_up_down", "random_hue", "random_saturation",
           "resize_bilinear", "resize_images", "resize_image_with_crop_or_pad",
           "resize_nearest_neighbor", "rgb_to_grayscale", "rgb_to_hsv", "total_variation",
           "combined_non_max_suppression", "crop_and_resize", "draw_bounding_boxes",
           "extract_image_patches", "extract_patches", "non_max_suppression",
           "non_max_suppression_padded", "non_max_suppression_with_scores", "resize",
           "resize_area", "resize_bicubic", "resize_image_with_pad", "resize_with_crop_or_pad",
           "rgb_to_yiq", "rgb_to_yuv", "rot90", "sobel_edges", "ssim", "transpose",
           "transpose_image", "yiq_to_rgb", "yuv_to_rgb"]


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
    ``tf.image.resize_images``, ``tf.image.resize``): bilinear (float32 result, as TF1),
    nearest neighbour (the input's dtype), bicubic or area (float32; TF1's legacy
    kernels, the height and width known when the graph is built). The result is
    differentiable in the input. For bilinear and nearest, the input's height and width
    may be known only at run time (a decoded image): the sampling positions are then
    computed at run time, with the same bits."""
    from gradflow.ops.array_ops import squeeze
    from gradflow.ops.math_ops import cast

    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR,
                      ResizeMethod.BICUBIC, ResizeMethod.AREA):
        raise ValueError(f"resize_images: unknown method {method!r}")
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio is not supported")
    x, added = _batched(images, "resize_images")
    height, width = (int(d) for d in size)
    if method in (ResizeMethod.BICUBIC, ResizeMethod.AREA):
        build = bicubic_matrix if method == ResizeMethod.BICUBIC else area_matrix
        out = resize_separable(x if x.dtype is dtypes.float32 else cast(x, dtypes.float32),
                               height, width, build, align_corners)
        return squeeze(out, [0], name=name) if added else out
    if method == ResizeMethod.BILINEAR and x.dtype is not dtypes.float32 \
            and x.dtype is not dtypes.float64:
        x = cast(x, dtypes.float32)
    in_height, in_width = (None if d is None else int(d) for d in x.shape[1:3])
    # across first, then down: the order, and so the bits, of TF1's kernel
    out = _resize_axis(x, 2, in_width, width, method, align_corners)
    out = _resize_axis(out, 1, in_height, height, method, align_corners)
    return squeeze(out, [0], name=name) if added else out


def _random_flip(image, seed, axis_of_3d, what):
    from gradflow.ops.array_ops import reshape
    from gradflow.ops.index_ops import shape
    from gradflow.ops.math_ops import less, where
    from gradflow.ops.shape_ops import reverse
    from gradflow.ops.state_ops import random_uniform

    x = convert_to_tensor(image)
    if x.shape is None or len(x.shape) not in (3, 4):
        raise ValueError(f"{what}: '{x.name}' must be 3-D or 4-D, got shape {x.shape}")
    batched = len(x.shape) == 4
    draw = random_uniform(shape(x)[:1] if batched else [], seed=seed)
    flip = less(draw, 0.5)
    if batched:
        flip = reshape(flip, (-1, 1, 1, 1))
    return where(flip, reverse(x, [axis_of_3d + 1 if batched else axis_of_3d]), x)


def random_flip_left_right(image, seed=None):
    """``image`` mirrored left to right with probability 1/2, a new draw each run (each
    image of a batch on its own draw).

    >>> augmented = gf.image.random_flip_left_right(images)
    """
    return _random_flip(image, seed, 1, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """``image`` mirrored top to bottom with probability 1/2, a new draw each run (each
    image of a batch on its own draw)."""
    return _random_flip(image, seed, 0, "random_flip_up_down")


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


def per_image_whitening(image):
    """``per_image_standardization`` under its name before TF 1.0."""
    return per_image_standardization(image)


def random_saturation(image, lower, upper, seed=None):
    """``adjust_saturation`` by one factor drawn in ``[lower, upper)`` per run (TF1)."""
    from gradflow.ops.state_ops import random_uniform

    if not 0 <= lower < upper:
        raise ValueError(f"random_saturation: need 0 <= lower < upper, got {lower}, {upper}")
    return adjust_saturation(image, random_uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None):
    """``adjust_hue`` by one delta drawn in ``[-max_delta, max_delta)`` per run (TF1;
    ``max_delta`` in [0, 0.5])."""
    from gradflow.ops.state_ops import random_uniform

    if not 0 <= max_delta <= 0.5:
        raise ValueError(f"random_hue: max_delta must be in [0, 0.5], got {max_delta}")
    return adjust_hue(image, random_uniform([], -max_delta, max_delta, seed=seed))


def _legacy_resize(images, size, method, align_corners, half_pixel_centers, name, what):
    from gradflow.ops.math_ops import cast

    if half_pixel_centers:
        raise NotImplementedError(f"{what}: half_pixel_centers=True is not supported (TF1's "
                                  "default pixel alignment is)")
    out = resize_images(images, size, method=method, align_corners=align_corners)
    if method == ResizeMethod.BILINEAR and out.dtype is not dtypes.float32:
        out = cast(out, dtypes.float32)  # TF1's ResizeBilinear op gives float32
    return out if name is None else _named(out, name)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``images`` resized to ``size`` by bilinear sampling, a float32 result (TF1's
    ``tf.image.resize_bilinear``; ``resize_images``' pixel alignment). Differentiable."""
    return _legacy_resize(images, size, ResizeMethod.BILINEAR, align_corners,
                          half_pixel_centers, name, "resize_bilinear")


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """``images`` resized to ``size`` by nearest-neighbour sampling, in their dtype (TF1's
    ``tf.image.resize_nearest_neighbor``)."""
    return _legacy_resize(images, size, ResizeMethod.NEAREST_NEIGHBOR, align_corners,
                          half_pixel_centers, name, "resize_nearest_neighbor")


def _encoded(image, fmt, name, **options):
    x = convert_to_tensor(image)
    what = f"encode_{fmt}"
    if x.shape is None or len(x.shape) != 3:
        raise ValueError(f"{what}: '{x.name}' must be one image [height, width, channels], "
                         f"got shape {x.shape}")
    allowed = (1, 3) if fmt == "jpeg" else (1, 2, 3, 4)
    if x.shape[2] is not None and int(x.shape[2]) not in allowed:
        raise ValueError(f"{what}: '{x.name}' must have {' or '.join(map(str, allowed))} "
                         f"channels, got {x.shape[2]}")
    if x.dtype is not dtypes.uint8:
        raise TypeError(f"{what}: '{x.name}' must be uint8, got {x.dtype.name}")
    return apply("encode_image", [x], name=name or f"Encode{fmt.capitalize()}", format=fmt,
                 shape=(), dtype=dtypes.string, **options)


def encode_png(image, compression=-1, name=None):
    """The PNG file's bytes of the ``uint8`` image ``[height, width, channels]`` (1 to 4
    channels), a string scalar (TF1 ``tf.image.encode_png``), made by Pillow on the host:
    the pixels are exact; the bytes may differ from TensorFlow's (another zlib setting)."""
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"encode_png: compression must be in [-1, 9], got {compression}")
    return _encoded(image, "png", name, quality=int(compression))


def encode_jpeg(image, format="", quality=95, progressive=False,  # noqa: A002
                optimize_size=False, chroma_downsampling=True, density_unit="in",
                x_density=300, y_density=300, xmp_metadata="", name=None):
    """The JPEG file's bytes of the ``uint8`` image ``[height, width, channels]`` (1 or 3
    channels), a string scalar (TF1 ``tf.image.encode_jpeg``), made by Pillow
    (libjpeg) on the host at ``quality``, with 4:2:0 chroma unless
    ``chroma_downsampling`` is false."""
    if format not in ("", "grayscale", "rgb") or xmp_metadata:
        raise NotImplementedError("encode_jpeg: only format '', 'grayscale' or 'rgb' without "
                                  "xmp_metadata is supported")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"encode_jpeg: quality must be in [0, 100], got {quality}")
    return _encoded(image, "jpeg", name, quality=int(quality), progressive=bool(progressive),
                    optimize=bool(optimize_size), subsampling=2 if chroma_downsampling else 0,
                    dpi=(int(x_density), int(y_density)), channels=format)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``images`` resized to ``size`` by TF1's legacy bicubic kernel (Keys' cubic, its
    weight table, edge pixels repeated), a float32 result (TF1
    ``tf.image.resize_bicubic``). Differentiable."""
    return _legacy_resize(images, size, ResizeMethod.BICUBIC, align_corners,
                          half_pixel_centers, name, "resize_bicubic")


def resize_area(images, size, align_corners=False, name=None):
    """``images`` resized to ``size``, each output pixel the mean of the input area it
    covers, a float32 result (TF1 ``tf.image.resize_area``). Differentiable."""
    return _legacy_resize(images, size, ResizeMethod.AREA, align_corners, False, name,
                          "resize_area")


resize = resize_images
resize_with_crop_or_pad = resize_image_with_crop_or_pad
transpose = transpose_image


def resize_image_with_pad(image, target_height, target_width,
                          method=ResizeMethod.BILINEAR, align_corners=False):
    """``image`` resized, keeping its aspect ratio, to fit ``target_height`` x
    ``target_width``, then padded with zeros about its centre to that size (TF1); its
    height and width must be known."""
    from gradflow.ops.image_ops import pad_to_bounding_box

    x = _image(image, "resize_image_with_pad")
    height, width = x.shape[-3], x.shape[-2]
    if height is None or width is None:
        raise ValueError(f"resize_image_with_pad: the height and width of '{x.name}' must "
                         "be known")
    f32 = np.float32
    ratio = max(f32(width) / f32(target_width), f32(height) / f32(target_height))
    new_h, new_w = f32(height) / ratio, f32(width) / ratio
    resized = resize_images(x, [int(np.floor(new_h)), int(np.floor(new_w))], method,
                            align_corners)
    top = max(0, int(np.floor((f32(target_height) - new_h) / f32(2))))
    left = max(0, int(np.floor((f32(target_width) - new_w) / f32(2))))
    return pad_to_bounding_box(resized, top, left, target_height, target_width)
