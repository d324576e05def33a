"""array-api-strict: a backend that allows nothing outside the Array API standard.

It proves that every op runs on any conforming library (CuPy, for instance).
``device="device1"`` puts arrays on a second, non-default device, so an array
silently created on the default device shows up as an error.

The standard defines no half-precision type, and array_api_strict refuses ``float16``;
holding half values in float32 would give other numbers than the half-precision
backends. So a graph that computes, feeds or holds a ``float16`` or ``bfloat16``
tensor is refused when its plan is made, with one error naming the tensor.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.backends.base import Backend
from gradflow.errors import UnimplementedError
from gradflow.passes.ir import user_node


def half_refusal(what: str, dtype_name: str) -> UnimplementedError:
    """The one error of a half-precision value on this backend; ``what`` names it."""
    return UnimplementedError(
        f"{what} is {dtype_name}, and the array_api_strict backend has no half-precision "
        "types (the Array API standard defines none): run the graph on backend='numpy' or "
        "backend='torch' (or 'cupy'), or gf.cast the tensor to float32")


class StrictBackend(Backend):
    name = "array_api_strict"

    def check_plan(self, order):
        halves = [user_node(n) for n in order if getattr(n.dtype, "is_half", False)]
        if halves:  # a variable or placeholder by preference: the user named it
            named = [n.attrs["var"] if n.opdef.kind == "assign" else n for n in halves
                     if n.opdef.kind in ("variable", "placeholder", "assign")]
            tensor = (named or halves)[0]
            raise half_refusal(f"'{tensor.name}' (created at {tensor.source})",
                               tensor.dtype.name)

    def asarray(self, host):
        dtype = np.asarray(host).dtype
        if dtypes.numpy_kind(dtype) == "f" and dtype.itemsize == 2:
            raise half_refusal("a value given to the backend", dtype.name)
        return super().asarray(host)

    def is_native(self, value):
        return type(value).__module__.startswith("array_api_strict")

    def to_numpy(self, array):
        return np.array(np.from_dlpack(array), copy=True)


def unavailable_reason(device=None):
    try:
        import array_api_strict
    except ImportError:
        return "the array_api_strict package is not installed: pip install array-api-strict"
    if isinstance(device, str):
        try:
            array_api_strict.Device(device)
        except ValueError:
            devices = array_api_strict.__array_namespace_info__().devices()
            listed = ", ".join(repr(getattr(d, "_device", d)) for d in devices)
            return (f"array_api_strict has no device {device!r}; its devices are {listed} (or "
                    "leave device out)")
    return None


def create(device=None):
    import array_api_strict as xp

    dev = xp.Device(device) if isinstance(device, str) else device
    return StrictBackend(xp, dev)
