"""The dtypes a graph can carry, named as in TensorFlow 1.x."""

from __future__ import annotations

import numpy as np


class DType:
    """A backend-neutral dtype: a name that each array namespace resolves itself."""

    __slots__ = ("name", "kind", "bits")

    def __init__(self, name: str, kind: str, bits: int):
        self.name = name
        self.kind = kind  # "f" floating, "i" signed integer, "b" boolean
        self.bits = bits

    @property
    def is_floating(self) -> bool:
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        return self.kind == "i"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def as_numpy_dtype(self):
        return np.dtype(self.name)

    def resolve(self, xp):
        """This dtype as an object of the array namespace ``xp``."""
        return getattr(xp, self.name)

    def __repr__(self) -> str:
        return f"gf.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", "f", 16)
float32 = DType("float32", "f", 32)
float64 = DType("float64", "f", 64)
int32 = DType("int32", "i", 32)
int64 = DType("int64", "i", 64)
bool_ = DType("bool", "b", 8)

_BY_NAME = {d.name: d for d in (float16, float32, float64, int32, int64, bool_)}
ALL = tuple(_BY_NAME.values())
# NumPy dtypes with no exact gradflow twin, mapped to the nearest one.
_NUMPY_FALLBACK = {"uint8": int32, "int8": int32, "int16": int32, "uint16": int32,
                   "uint32": int64, "uint64": int64}


def as_dtype(value) -> DType:
    """Turn a DType, a name, a NumPy dtype or a Python type into a DType."""
    if isinstance(value, DType):
        return value
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float32
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    try:
        name = np.dtype(value).name
    except TypeError:
        name = getattr(value, "name", None) or str(value).rsplit(".", 1)[-1]
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name in _NUMPY_FALLBACK:
        return _NUMPY_FALLBACK[name]
    raise TypeError(f"gradflow has no dtype for {value!r}; use one of "
                    f"{', '.join(_BY_NAME)}")


def result_type(a: DType, b: DType) -> DType:
    """Array API type promotion between two dtypes of the same kind."""
    if a is b:
        return a
    if a.kind != b.kind:
        raise TypeError(f"cannot combine {a.name} and {b.name}: the Array API does not "
                        "promote across kinds; use gf.cast first")
    return a if a.bits >= b.bits else b
