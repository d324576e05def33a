"""TF1's grayscale morphology, ``tf.nn.dilation2d`` and ``tf.nn.erosion2d``, over the
``dilation2d`` primitive (gradflow/prim/morphology.py); erosion is dilation's dual,
``-dilation2d(-value, kernel reversed in both spatial axes)``, as TF1 computes it.
"""

from __future__ import annotations

from gradflow.ops.math_ops import negative
from gradflow.ops.shape_ops import reverse
from gradflow.prim import morphology as _morphology  # noqa: F401 - registers the ops
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["dilation2d", "erosion2d"]


def _four(what, name, value):
    """``(h, w)`` of a TF1 length-4 ``[1, h, w, 1]`` list."""
    if value is None:
        raise ValueError(f"{what}: {name} is required")
    items = [int(v) for v in value]
    if len(items) != 4 or items[0] != 1 or items[3] != 1 or min(items) < 1:
        raise ValueError(f"{what}: {name} must be [1, height, width, 1] of positive ints, "
                         f"got {list(value)}")
    return items[1], items[2]


def _apply(what, x, f, strides, rates, padding, name):
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return apply("dilation2d", [x, f], name=name, strides=_four(what, "strides", strides),
                 rates=_four(what, "rates", rates), padding=padding)


def dilation2d(input, filter=None, strides=None, rates=None, padding=None, name=None,
               filters=None, dilations=None):
    """Grayscale dilation of ``input`` ``[batch, height, width, depth]`` by ``filter``
    ``[filter_height, filter_width, depth]`` (TF1 ``tf.nn.dilation2d``): each output is
    the maximum over the window of input plus filter, per channel. ``strides`` and
    ``rates`` (or ``dilations``) are ``[1, h, w, 1]``; ``padding`` ``"SAME"`` or
    ``"VALID"``. Differentiable in both (the gradient goes to each window's maximum).

    >>> y = gf.nn.dilation2d(x, se, [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    """
    if (filter is None) == (filters is None):
        raise ValueError("dilation2d: give filter (or filters), exactly one")
    if rates is not None and dilations is not None:
        raise ValueError("dilation2d: give rates or dilations, not both")
    x = convert_to_tensor(input)
    f = convert_to_tensor(filter if filter is not None else filters, dtype=x.dtype)
    return _apply("dilation2d", x, f, strides, rates if rates is not None else dilations,
                  padding, name or "Dilation2D")


def erosion2d(value, kernel, strides, rates, padding, name=None):
    """Grayscale erosion of ``value`` ``[batch, height, width, depth]`` by ``kernel``
    ``[kernel_height, kernel_width, depth]`` (TF1 ``tf.nn.erosion2d``): each output is the
    minimum over the window of value minus the kernel reflected, per channel, computed
    as ``-dilation2d(-value, reverse(kernel, [0, 1]))``."""
    x = convert_to_tensor(value)
    k = convert_to_tensor(kernel, dtype=x.dtype)
    dilated = _apply("erosion2d", negative(x), reverse(k, [0, 1]), strides, rates, padding,
                     "Dilation2D")
    return negative(dilated, name=name or "erosion2d")
