"""TF1's ``tf.image``, for what tutorials' input code uses: ``resize_images``
(bilinear and nearest neighbour, TF1's legacy pixel alignment) and
``random_flip_left_right``. Images are ``[height, width, channels]`` or a batch
``[batch, height, width, channels]``.

>>> small = gf.image.resize_images(images, [14, 14])
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.registry import convert_to_tensor

__all__ = ["ResizeMethod", "random_flip_left_right", "resize_images"]


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
    """Where each output pixel samples the input, as TF1's legacy kernels place it."""
    if align_corners and out_size > 1:
        scale = (in_size - 1) / (out_size - 1)
    else:
        scale = in_size / out_size
    return np.arange(out_size) * scale


def _resize_axis(x, axis, in_size, out_size, method, align_corners):
    from gradflow.ops.index_ops import gather

    pos = _source_positions(in_size, out_size, align_corners)
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        index = np.round(pos) if align_corners else np.floor(pos)
        return gather(x, np.minimum(index, in_size - 1).astype(np.int32), axis=axis)
    low = np.floor(pos).astype(np.int32)
    high = np.minimum(low + 1, in_size - 1).astype(np.int32)
    shape = [1, 1, 1, 1]
    shape[axis] = out_size
    frac = convert_to_tensor((pos - low).reshape(shape), dtype=x.dtype)
    top = gather(x, low, axis=axis)
    return top + (gather(x, high, axis=axis) - top) * frac


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """``images`` resized to ``size`` ``[new_height, new_width]`` (TF1
    ``tf.image.resize_images``): bilinear (float32 result, as TF1) or nearest neighbour
    (the input's dtype). The input's height and width must be known; the result is
    differentiable in the input."""
    from gradflow.ops.array_ops import squeeze
    from gradflow.ops.math_ops import cast

    if method not in (ResizeMethod.BILINEAR, ResizeMethod.NEAREST_NEIGHBOR):
        raise NotImplementedError("resize_images: only BILINEAR and NEAREST_NEIGHBOR are "
                                  "supported")
    if preserve_aspect_ratio:
        raise NotImplementedError("resize_images: preserve_aspect_ratio is not supported")
    x, added = _batched(images, "resize_images")
    height, width = (int(d) for d in size)
    if x.shape[1] is None or x.shape[2] is None:
        raise ValueError(f"resize_images: the height and width of '{x.name}' must be known, "
                         f"got shape {tuple(x.shape)}")
    if method == ResizeMethod.BILINEAR and x.dtype is not dtypes.float32 \
            and x.dtype is not dtypes.float64:
        x = cast(x, dtypes.float32)
    out = _resize_axis(x, 1, int(x.shape[1]), height, method, align_corners)
    out = _resize_axis(out, 2, int(x.shape[2]), width, method, align_corners)
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
