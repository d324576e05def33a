"""TF1's ``tf.image`` functions of boxes and windows (``gradflow.image`` exports them):
``crop_and_resize``, ``ssim``, the ``non_max_suppression`` family,
``combined_non_max_suppression`` and ``draw_bounding_boxes``. The box searches and the
drawing are host ops (``gradflow.prim.image_boxes``); ``crop_and_resize`` and ``ssim``
are composites, differentiable as TF's are.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reduce_mean, reshape
from gradflow.ops.conv_variants import depthwise_conv2d
from gradflow.ops.image_ops import convert_image_dtype
from gradflow.ops.index_ops import concat, gather_nd, shape, stack, unstack
from gradflow.ops.math_ops import cast, ceil, floor, logical_and, maximum, minimum, where
from gradflow.ops.shape_ops import range_
from gradflow.prim import image_boxes as _boxes  # noqa: F401 - registers the box ops
from gradflow.prim.array import expand_dims
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["combined_non_max_suppression", "crop_and_resize", "draw_bounding_boxes",
           "non_max_suppression", "non_max_suppression_padded",
           "non_max_suppression_with_scores", "ssim"]


def _source(low, high, size, count):
    """Where each of ``count`` output pixels samples an axis of ``size`` pixels, for
    boxes from ``low`` to ``high`` (normalized, ``[n]``): ``[n, count]``, TF's float32
    arithmetic."""
    last = size - 1.0
    if count > 1:
        step = (high - low) * last / float(count - 1)
        return expand_dims(low * last, 1) + expand_dims(step, 1) * \
            cast(range_(count), dtypes.float32)
    return expand_dims(0.5 * (low + high) * last, 1)


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """Crops of the 4-D ``image`` at ``boxes`` ``[n, 4]`` (normalized ``[y1, x1, y2,
    x2]``) of the images ``box_ind`` ``[n]``, each resized to ``crop_size`` ``[height,
    width]`` by bilinear (or nearest) sampling: ``[n, height, width, depth]`` float32
    (TF1 ``tf.image.crop_and_resize``). Samples outside the image are
    ``extrapolation_value``. Differentiable in the image and the boxes."""
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"crop_and_resize: method must be 'bilinear' or 'nearest', got "
                         f"{method!r}")
    x = convert_to_tensor(image)
    if x.shape is None or len(x.shape) != 4:
        raise ValueError(f"crop_and_resize: '{x.name}' must be 4-D, got shape {x.shape}")
    x = x if x.dtype is dtypes.float32 else cast(x, dtypes.float32)
    b = convert_to_tensor(boxes, dtype=dtypes.float32)
    index = convert_to_tensor(box_indices if box_ind is None else box_ind, dtype=dtypes.int32)
    if b.shape is None or len(b.shape) != 2 or b.shape[1] != 4:
        raise ValueError(f"crop_and_resize: boxes '{b.name}' must be [num_boxes, 4], got "
                         f"{b.shape}")
    rows, cols = (int(v) for v in crop_size)
    sizes = cast(shape(x), dtypes.float32)
    y1, x1, y2, x2 = unstack(b, 4, axis=1)
    in_y, in_x = _source(y1, y2, sizes[1], rows), _source(x1, x2, sizes[2], cols)
    inside = logical_and(expand_dims(logical_and(in_y >= 0.0, in_y <= sizes[1] - 1.0), 2),
                         expand_dims(logical_and(in_x >= 0.0, in_x <= sizes[2] - 1.0), 1))
    clip_y = lambda v: cast(minimum(maximum(v, 0.0), sizes[1] - 1.0), dtypes.int32)  # noqa: E731
    clip_x = lambda v: cast(minimum(maximum(v, 0.0), sizes[2] - 1.0), dtypes.int32)  # noqa: E731

    def at(ys, xs):  # the pixels [n, rows, cols, depth] at rows ys [n, rows], cols xs
        ys, xs = expand_dims(ys, 2), expand_dims(xs, 1)
        grid = [expand_dims(expand_dims(index, 1), 2) + ys * 0 + xs * 0, ys + xs * 0,
                xs + ys * 0]
        return gather_nd(x, stack(grid, axis=-1))

    if method == "nearest":  # TF rounds halves away from zero; the positions are >= 0
        out = at(clip_y(floor(in_y + 0.5)), clip_x(floor(in_x + 0.5)))
    else:
        top, left = floor(in_y), floor(in_x)
        dy = expand_dims(expand_dims(in_y - top, 2), 3)
        dx = expand_dims(expand_dims(in_x - left, 1), 3)
        ty, by, lx, rx = clip_y(top), clip_y(ceil(in_y)), clip_x(left), clip_x(ceil(in_x))
        upper = at(ty, lx) + (at(ty, rx) - at(ty, lx)) * dx
        lower = at(by, lx) + (at(by, rx) - at(by, lx)) * dx
        out = upper + (lower - upper) * dy
    fill = convert_to_tensor(float(extrapolation_value), dtype=dtypes.float32)
    return where(expand_dims(inside, 3), out, fill + out * 0.0, name=name)


def _gaussian(size, sigma):
    """TF's ``_fspecial_gauss``: the normalized ``size`` x ``size`` Gaussian, float32."""
    coords = np.arange(size, dtype=np.float32) - np.float32((size - 1) / 2.0)
    g = np.square(coords) * np.float32(-0.5 / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum()).astype(np.float32).reshape(size, size)


def _ssim_maps(x, y, max_val, size, sigma, k1, k2):
    """``(luminance * contrast-structure, contrast-structure)`` maps of ``x`` and ``y``
    ``[..., height, width, channels]`` (TF's ``_ssim_per_channel``)."""
    depth = int(x.shape[-1])
    kernel = np.tile(_gaussian(size, sigma)[:, :, None, None], (1, 1, depth, 1))
    kernel = convert_to_tensor(kernel)
    lead = shape(x)[:-3]

    def blur(t):
        flat = reshape(t, concat([[-1], shape(t)[-3:]], 0))
        out = depthwise_conv2d(flat, kernel, [1, 1, 1, 1], "VALID")
        return reshape(out, concat([lead, shape(out)[1:]], 0))

    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mean_x, mean_y = blur(x), blur(y)
    num0 = mean_x * mean_y * 2.0
    den0 = mean_x * mean_x + mean_y * mean_y
    luminance = (num0 + c1) / (den0 + c1)
    num1 = blur(x * y) * 2.0
    den1 = blur(x * x + y * y)
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return luminance * cs, cs


def ssim(img1, img2, max_val, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03,
         return_index_map=False):
    """The structural similarity of ``img1`` and ``img2`` ``[..., height, width,
    channels]`` per image (TF1 ``tf.image.ssim``): local statistics under an 11 x 11
    Gaussian window (``filter_sigma`` 1.5), averaged over the pixels and the channels
    (with ``return_index_map``, the per-pixel map). Computed in float32 (integer images
    are scaled as ``convert_image_dtype`` scales them); ``max_val`` is the images'
    dynamic range. The images must be at least ``filter_size`` high and wide."""
    x, y = convert_to_tensor(img1), convert_to_tensor(img2)
    for t in (x, y):
        if t.shape is None or len(t.shape) < 3 or t.shape[-1] is None:
            raise ValueError(f"ssim: '{t.name}' must be [..., height, width, channels] "
                             f"with known channels, got shape {t.shape}")
        for d in t.shape[-3:-1]:
            if d is not None and int(d) < filter_size:
                raise ValueError(f"ssim: '{t.name}' of shape {tuple(t.shape)} is smaller "
                                 f"than the filter ({filter_size})")
    if x.dtype is not y.dtype:
        raise TypeError(f"ssim: '{x.name}' and '{y.name}' must have one dtype")
    top = cast(max_val, x.dtype) if isinstance(max_val, Tensor) else \
        convert_to_tensor(max_val, dtype=x.dtype)
    top = convert_image_dtype(top, dtypes.float32)
    x, y = convert_image_dtype(x, dtypes.float32), convert_image_dtype(y, dtypes.float32)
    full, _ = _ssim_maps(x, y, top, int(filter_size), filter_sigma, k1, k2)
    if return_index_map:
        return reduce_mean(full, [-1])
    return reduce_mean(reduce_mean(full, [-3, -2]), [-1])


def _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, sigma, name):
    b = convert_to_tensor(boxes, dtype=dtypes.float32)
    s = convert_to_tensor(scores, dtype=dtypes.float32)
    if b.shape is not None and (len(b.shape) != 2 or b.shape[1] not in (None, 4)):
        raise ValueError(f"non_max_suppression: boxes '{b.name}' must be [num_boxes, 4], "
                         f"got {b.shape}")
    if s.shape is not None and len(s.shape) != 1:
        raise ValueError(f"non_max_suppression: scores '{s.name}' must be [num_boxes], got "
                         f"{s.shape}")
    inputs = [b, s, convert_to_tensor(max_output_size, dtype=dtypes.int32)]
    inputs += [convert_to_tensor(v, dtype=dtypes.float32)
               for v in (iou_threshold, score_threshold, sigma)]
    return apply("non_max_suppression", inputs, name=name or "NonMaxSuppression",
                 shape=None, dtype=VARIANT)


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """The indices (int32) of at most ``max_output_size`` of ``boxes`` ``[n, 4]`` (two
    opposite corners ``[y1, x1, y2, x2]``) kept by greedy non-maximum suppression, best
    score first (TF1 ``tf.image.non_max_suppression``): a box is dropped when its IOU with
    a better kept box is above ``iou_threshold``, or when its score is not above
    ``score_threshold``. Equal scores keep the lower index first."""
    node = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, 0.0, name)
    return pick(node, 0, (None,), dtypes.int32)


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """``(indices, scores)`` of ``non_max_suppression``; with ``soft_nms_sigma`` > 0,
    Soft-NMS: an overlapping box's score decays by ``exp(-iou^2 / (2 sigma))`` and the
    scores returned are the decayed ones (TF1)."""
    node = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold,
                soft_nms_sigma, name)
    return pick(node, 0, (None,), dtypes.int32), pick(node, 1, (None,), dtypes.float32)


def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None, sorted_input=False, canonicalized_coordinates=False,
                               tile_size=512):
    """``(indices, valid_outputs)`` of ``non_max_suppression`` for one set of boxes;
    with ``pad_to_max_output_size`` the indices are padded with zeros to
    ``max_output_size`` (TF1). Batches of boxes are not supported."""
    size = max_output_size if not isinstance(max_output_size, Tensor) else None
    node = _nms(boxes, scores, max_output_size, iou_threshold, score_threshold, 0.0, name)
    valid = pick(node, 4, (), dtypes.int32)
    if pad_to_max_output_size:
        return pick(node, 2, (None if size is None else int(size),), dtypes.int32), valid
    return pick(node, 0, (None,), dtypes.int32), valid


def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """Greedy NMS per image and per class of ``boxes`` ``[batch, n, q, 4]`` (``q`` 1, the
    boxes shared by the classes, or one box per class) scored by ``scores`` ``[batch, n,
    classes]``, then the best ``max_total_size`` of each image (TF1):
    ``(nmsed_boxes, nmsed_scores, nmsed_classes, valid_detections)``, zero-padded.
    ``max_output_size_per_class`` and ``max_total_size`` are ints."""
    b = convert_to_tensor(boxes, dtype=dtypes.float32)
    s = convert_to_tensor(scores, dtype=dtypes.float32)
    if b.shape is None or len(b.shape) != 4 or s.shape is None or len(s.shape) != 3:
        raise ValueError(f"combined_non_max_suppression: boxes '{b.name}' must be [batch, "
                         f"n, q, 4] and scores '{s.name}' [batch, n, classes], got "
                         f"{b.shape} and {s.shape}")
    per_class, total = int(max_output_size_per_class), int(max_total_size)
    if pad_per_class and s.shape[2] is not None:
        total = min(total, per_class * int(s.shape[2]))
    inputs = [b, s, convert_to_tensor(per_class, dtype=dtypes.int32),
              convert_to_tensor(total, dtype=dtypes.int32)]
    inputs += [convert_to_tensor(v, dtype=dtypes.float32)
               for v in (iou_threshold, score_threshold)]
    node = apply("combined_non_max_suppression", inputs,
                 name=name or "CombinedNonMaxSuppression", pad_per_class=bool(pad_per_class),
                 clip_boxes=bool(clip_boxes), shape=None, dtype=VARIANT)
    batch = b.shape[0]
    return (pick(node, 0, (batch, total, 4), dtypes.float32),
            pick(node, 1, (batch, total), dtypes.float32),
            pick(node, 2, (batch, total), dtypes.float32),
            pick(node, 3, (batch,), dtypes.int32))


def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """``images`` ``[batch, height, width, depth]`` (floats) with the outlines of
    ``boxes`` ``[batch, n, 4]`` (normalized ``[y_min, x_min, y_max, x_max]``) drawn in,
    one pixel wide, box ``k`` in ``colors[k % len(colors)]`` (RGBA rows; TF's ten
    default colours) (TF1 ``tf.image.draw_bounding_boxes``)."""
    x = convert_to_tensor(images)
    if x.shape is None or len(x.shape) != 4 or not x.dtype.is_floating:
        raise ValueError(f"draw_bounding_boxes: '{x.name}' must be a 4-D float tensor, got "
                         f"{x.dtype.name} of shape {x.shape}")
    b = convert_to_tensor(boxes, dtype=dtypes.float32)
    table = np.zeros((0, 4), np.float32) if colors is None else colors
    c = convert_to_tensor(table, dtype=dtypes.float32)
    return apply("draw_bounding_boxes", [x, b, c], name=name or "DrawBoundingBoxes",
                 shape=tuple(x.shape), dtype=x.dtype)
