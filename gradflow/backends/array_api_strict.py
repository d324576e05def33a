"""array-api-strict: a backend that allows nothing outside the Array API standard.

It proves that every op runs on any conforming library (CuPy, for instance).
``device="device1"`` puts arrays on a second, non-default device, so an array
silently created on the default device shows up as an error.
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.base import Backend


class StrictBackend(Backend):
    name = "array_api_strict"

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
