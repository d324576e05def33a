"""TF1's ``tf.bitwise`` namespace: elementwise bit operations on integer tensors, with
broadcasting (a Python int takes the other operand's dtype), no gradients (the
primitives are in ``gradflow.prim.bitwise``).

>>> tf.bitwise.bitwise_and(tf.constant([12, 10], tf.int32), 6)   # [4, 2]
>>> tf.bitwise.left_shift(tf.constant([1, 3], tf.int32), 40)     # counts clamp to 31, as TF's
"""

from gradflow.ops.math_ops import _binary_args
from gradflow.prim import bitwise as _bitwise  # noqa: F401 - registers the primitives
from gradflow.prim.registry import apply, convert_to_tensor


def _binary(op_name, tf_name, doc):
    def fn(x, y, name=None):
        return apply(op_name, list(_binary_args(x, y)), name=name or tf_name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = doc
    return fn


bitwise_and = _binary("bitwise_and", "BitwiseAnd",
                      "Elementwise ``x & y`` of integer tensors (TF1 ``tf.bitwise.bitwise_and``).")
bitwise_or = _binary("bitwise_or", "BitwiseOr",
                     "Elementwise ``x | y`` of integer tensors (TF1 ``tf.bitwise.bitwise_or``).")
bitwise_xor = _binary("bitwise_xor", "BitwiseXor",
                      "Elementwise ``x ^ y`` of integer tensors (TF1 ``tf.bitwise.bitwise_xor``).")
left_shift = _binary(
    "left_shift", "LeftShift",
    "Elementwise ``x << y`` of integer tensors (TF1 ``tf.bitwise.left_shift``); a count "
    "below 0 or at least the dtype's width in bits is clamped to ``[0, bits - 1]``, as TF's "
    "kernel does.")
right_shift = _binary(
    "right_shift", "RightShift",
    "Elementwise ``x >> y`` of integer tensors, arithmetic for signed ones (TF1 "
    "``tf.bitwise.right_shift``); counts are clamped as ``left_shift``'s.")


def invert(x, name=None):
    """Elementwise ``~x``: every bit flipped (TF1 ``tf.bitwise.invert``); of unsigned
    ``x``, ``max - x``.

    >>> tf.bitwise.invert(tf.constant([0, 5], tf.uint8))   # [255, 250]
    """
    return apply("invert", [convert_to_tensor(x)], name=name or "Invert")


__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
