"""Gradient clipping (TF1 ``clip_by_global_norm``, ``clip_by_norm``, ``global_norm``)."""

from __future__ import annotations

from gradflow.ops.array_ops import reduce_sum
from gradflow.ops.math_ops import maximum, sqrt
from gradflow.prim.registry import convert_to_tensor


def global_norm(t_list, name=None):
    """``sqrt(sum of squares of every tensor in t_list)`` (``None`` entries skipped)."""
    tensors = [convert_to_tensor(t) for t in t_list if t is not None]
    if not tensors:
        raise ValueError("global_norm needs at least one tensor")
    total = reduce_sum(tensors[0] * tensors[0])
    for t in tensors[1:]:
        total = total + reduce_sum(t * t)
    return sqrt(total, name=name)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scale every tensor by ``clip_norm / max(global_norm, clip_norm)``.

    Returns ``(clipped_list, global_norm)``; ``None`` entries stay ``None``. An infinite
    (or NaN) global norm makes every entry NaN, as in TF1, rather than zeroing the finite
    ones.
    """
    norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    scale = clip_norm / maximum(norm, clip_norm) + (norm - norm)  # NaN where norm is inf
    clipped = [None if t is None else convert_to_tensor(t) * scale for t in t_list]
    return clipped, norm


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Scale ``t`` so its L2 norm over ``axes`` is at most ``clip_norm``."""
    t = convert_to_tensor(t)
    norm = sqrt(reduce_sum(t * t, axes, keepdims=True))
    return t * (clip_norm / maximum(norm, clip_norm))
