"""Host ops on bounding boxes (TF1's ``tf.image.non_max_suppression`` family,
``combined_non_max_suppression`` and ``draw_bounding_boxes``; ``gradflow.image`` builds
them). Each is a greedy, data-dependent walk over a few boxes, host work by nature as in
TF (whose kernels run on the CPU): a node of kind ``"call"`` whose results are then moved
to the session's backend. None has a gradient (TF's have none either).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


def _host_op(name, compute):
    def impl(run, node):
        to_host, device = run.backend.host_value, run.backend.device_value

        def run_(*values):
            out = compute(node, *(np.asarray(to_host(v)) for v in values))
            return tuple(device(o) for o in out) if isinstance(out, tuple) else device(out)

        return run_

    register(name, impl, declared, grad=None, kind="call")


def iou(boxes, i, j):
    """The intersection over union of boxes ``i`` and ``j`` (corners in either order), 0
    when either is empty, as TF's kernels compute it (in float32)."""
    a, b = boxes[i], boxes[j]
    ay0, ay1 = min(a[0], a[2]), max(a[0], a[2])
    ax0, ax1 = min(a[1], a[3]), max(a[1], a[3])
    by0, by1 = min(b[0], b[2]), max(b[0], b[2])
    bx0, bx1 = min(b[1], b[3]), max(b[1], b[3])
    area_a = (ay1 - ay0) * (ax1 - ax0)
    area_b = (by1 - by0) * (bx1 - bx0)
    if area_a <= 0 or area_b <= 0:
        return np.float32(0)
    inter = max(min(ay1, by1) - max(ay0, by0), np.float32(0)) * \
        max(min(ax1, bx1) - max(ax0, bx0), np.float32(0))
    return inter / (area_a + area_b - inter)


def greedy_nms(boxes, scores, max_size, threshold, score_threshold, sigma=0.0):
    """``(indices, scores)`` of the boxes kept, best first: TF's greedy (soft-)NMS. A box
    is dropped when its IOU with a kept one is above ``threshold``; with ``sigma`` > 0
    its score decays by ``exp(-iou^2 / (2 sigma))`` (Soft-NMS) instead. Equal scores keep
    the lower index first."""
    boxes = np.asarray(boxes, np.float32)
    scores = np.asarray(scores, np.float32)
    scale = np.float32(-0.5 / sigma) if sigma > 0 else np.float32(0)
    queue = [(-s, i, 0) for i, s in enumerate(scores) if s > score_threshold]
    heapq.heapify(queue)
    kept, kept_scores = [], []
    while len(kept) < max_size and queue:
        neg, index, begin = heapq.heappop(queue)
        score = original = np.float32(-neg)
        suppressed = False
        for j in range(len(kept) - 1, begin - 1, -1):
            overlap = iou(boxes, index, kept[j])
            if sigma <= 0 and overlap > threshold:
                suppressed = True
                break
            if sigma > 0:
                score = np.float32(score * np.exp(np.float32(scale * overlap * overlap)))
                if score <= score_threshold:
                    break
        if suppressed:
            continue
        if score == original:
            kept.append(index)
            kept_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, index, len(kept)))
    return np.asarray(kept, np.int32), np.asarray(kept_scores, np.float32)


def _check_nms(node, boxes, scores, max_size, threshold):
    where = f"{node.opdef.name} '{node.name}'"
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise InvalidArgumentError(f"{where}: boxes must be [num_boxes, 4], got shape "
                                   f"{boxes.shape}")
    if scores.shape != (boxes.shape[0],):
        raise InvalidArgumentError(f"{where}: scores must be [num_boxes] = [{boxes.shape[0]}]"
                                   f", got shape {scores.shape}")
    if int(max_size) < 0:
        raise InvalidArgumentError(f"{where}: max_output_size must be non-negative, got "
                                   f"{int(max_size)}")
    if not 0 <= float(threshold) <= 1:
        raise InvalidArgumentError(f"{where}: iou_threshold must be in [0, 1], got "
                                   f"{float(threshold)}")


def _nms(node, boxes, scores, max_size, threshold, score_threshold, sigma):
    _check_nms(node, boxes, scores, max_size, threshold)
    kept, kept_scores = greedy_nms(boxes, scores, int(max_size), np.float32(threshold),
                                   np.float32(score_threshold), float(sigma))
    size = int(max_size)
    padded = np.zeros(size, np.int32)
    padded[:len(kept)] = kept
    score_pad = np.zeros(size, np.float32)
    score_pad[:len(kept)] = kept_scores
    return kept, kept_scores, padded, score_pad, np.asarray(len(kept), np.int32)


_host_op("non_max_suppression", _nms)


def _combined(node, boxes, scores, per_class, total, threshold, score_threshold):
    """TF's combined NMS: NMS per image and class, then the best ``total`` of all the
    kept boxes of the image (boxes clipped to [0, 1] when ``clip_boxes``)."""
    batch, count, box_classes = boxes.shape[:3]
    classes = scores.shape[2]
    total, per_class = int(total), int(per_class)
    if node.attrs["pad_per_class"]:
        total = min(total, per_class * classes)
    out_boxes = np.zeros((batch, total, 4), np.float32)
    out_scores = np.zeros((batch, total), np.float32)
    out_classes = np.zeros((batch, total), np.float32)
    valid = np.zeros(batch, np.int32)
    for b in range(batch):
        found = []
        for c in range(classes):
            class_boxes = boxes[b, :, c if box_classes > 1 else 0]
            kept, kept_scores = greedy_nms(class_boxes, scores[b, :, c], per_class,
                                           np.float32(threshold), np.float32(score_threshold))
            found += [(-s, c, i, class_boxes[i]) for i, s in zip(kept, kept_scores)]
        found.sort(key=lambda item: (item[0], item[1]))
        found = found[:total]
        valid[b] = len(found)
        for k, (neg, c, _, box) in enumerate(found):
            if node.attrs["clip_boxes"]:
                box = np.clip(box, 0.0, 1.0)
            out_boxes[b, k], out_scores[b, k], out_classes[b, k] = box, -neg, c
    return out_boxes, out_scores, out_classes, valid


_host_op("combined_non_max_suppression", _combined)

# TF's default colours of draw_bounding_boxes (RGBA), one per box index, round robin
DEFAULT_COLORS = np.asarray(
    [[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
     [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]],
    np.float32)


def _edge(value, size):
    """A box coordinate as a pixel index: truncated toward zero, as TF's kernel casts."""
    return int(math.trunc(float(np.float32(value) * np.float32(size - 1))))


def _draw_one(canvas, box, color):
    height, width, depth = canvas.shape
    top, left = _edge(box[0], height), _edge(box[1], width)
    bottom, right = _edge(box[2], height), _edge(box[3], width)
    if top > bottom or left > right or top >= height or bottom < 0 or left >= width \
            or right < 0:
        return
    rows = slice(max(top, 0), min(bottom, height - 1) + 1)
    cols = slice(max(left, 0), min(right, width - 1) + 1)
    paint = color[:depth]
    if top >= 0:
        canvas[top, cols] = paint
    if bottom < height:
        canvas[bottom, cols] = paint
    if left >= 0:
        canvas[rows, left] = paint
    if right < width:
        canvas[rows, right] = paint


def _draw(node, images, boxes, colors):
    where = f"draw_bounding_boxes '{node.name}'"
    if boxes.ndim != 3 or boxes.shape[0] != images.shape[0] or boxes.shape[2] != 4:
        raise InvalidArgumentError(f"{where}: boxes must be [batch, num_boxes, 4] with the "
                                   f"images' batch {images.shape[0]}, got {boxes.shape}")
    table = DEFAULT_COLORS if colors.size == 0 else np.asarray(colors, np.float32)
    if table.ndim != 2 or table.shape[1] < images.shape[3] and table.shape[1] != 4:
        raise InvalidArgumentError(f"{where}: colors must be [num_colors, 4] (or one value "
                                   f"per channel), got shape {table.shape}")
    canvas = np.array(images, copy=True)
    for b in range(canvas.shape[0]):
        for k in range(boxes.shape[1]):
            color = table[k % len(table)].astype(canvas.dtype)
            _draw_one(canvas[b], boxes[b, k], color)
    return canvas


_host_op("draw_bounding_boxes", _draw)
