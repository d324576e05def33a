"""The bitwise primitives of TF1's ``tf.bitwise``: ``bitwise_and``, ``bitwise_or``,
``bitwise_xor``, ``invert``, ``left_shift`` and ``right_shift``, on integer tensors,
without gradients (TF1 has none).

A shift count below 0 or at least the width of the dtype is clamped to ``[0, bits - 1]``
first, as TensorFlow's kernels do: ``left_shift(1, 40)`` of int32 is ``1 << 31``, and
every backend gives the same numbers (the Array API leaves those counts undefined).
TF1's functions over them are in ``gradflow.bitwise``.
"""

from __future__ import annotations

from gradflow.prim import rules
from gradflow.prim.registry import register


def _require_integer(in_dtypes):
    for dtype in in_dtypes:
        if not dtype.is_integer:
            raise TypeError(f"bitwise ops take integer tensors, got {dtype.name}")


def _binary_infer(shapes, in_dtypes):
    _require_integer(in_dtypes)
    dtype = rules.same_dtype(in_dtypes)
    return rules.broadcast_shapes(shapes[0], shapes[1]), dtype


def _invert_infer(shapes, in_dtypes):
    _require_integer(in_dtypes)
    return shapes[0], in_dtypes[0]


def _shift_impl(xp_name):
    def impl(xp, x, y):
        bits = xp.iinfo(x.dtype).bits
        return getattr(xp, xp_name)(x, xp.clip(y, 0, bits - 1))

    return impl


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    register(_name, lambda xp, a, b, f=_name: getattr(xp, f)(a, b), _binary_infer, grad=None,
             lower=lambda xp, f=_name: getattr(xp, f))
register("invert", lambda xp, x: xp.bitwise_invert(x), _invert_infer, grad=None,
         lower=lambda xp: xp.bitwise_invert)
register("left_shift", _shift_impl("bitwise_left_shift"), _binary_infer, grad=None)
register("right_shift", _shift_impl("bitwise_right_shift"), _binary_infer, grad=None)
