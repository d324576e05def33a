"""The elements of a data set: nested tuples and dicts of components (TF1's ``nest``).

A tuple (a namedtuple too) or a dict is structure; anything else is one
component, and a Python list is a value (TF1 converts it to one tensor). Dicts
flatten in sorted key order. On the host an element is a flat tuple of NumPy
arrays, packed into its structure only where user code sees it.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape


class Elements:
    """TF1's ``output_types``, ``output_shapes`` and ``output_classes`` of something
    that gives elements (a Dataset, an Iterator), from its ``_template`` (the
    structure) and flat ``_types`` and ``_shapes``."""

    @property
    def output_types(self):
        """The dtypes of an element's components, in the element's structure."""
        return pack(self._template, self._types)

    @property
    def output_shapes(self):
        """The static shapes of an element's components, in the element's structure."""
        return pack(self._template, self._shapes)

    @property
    def output_classes(self):
        """TF1: the class of each component (``gf.Tensor``), in the element's structure."""
        return pack(self._template, [Tensor] * len(self._types))


def is_nested(value) -> bool:
    """Whether ``value`` is structure (a tuple or a dict), not a component."""
    return isinstance(value, (tuple, dict))


def flatten(value) -> list:
    """The components of ``value``, in order."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in flatten(value[key])]
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def pack(template, leaves):
    """``leaves`` (a flat sequence) arranged as ``template``; inverse of ``flatten``."""
    leaves = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            built = {key: build(s[key]) for key in sorted(s)}
            return type(s)((key, built[key]) for key in s)
        if isinstance(s, tuple):
            items = [build(item) for item in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(leaves)

    return build(template)


def host_array(value, dtype=None, what="a component") -> np.ndarray:
    """``value`` (not a tensor) as a host array: NumPy arrays keep their dtype, Python
    numbers take TF1's (float32, int32 where the ints fit), text becomes ``string``."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        if dtype is dtypes.string:
            return dtypes.bytes_array(value)
        return np.asarray(value, dtype=dtype.as_numpy_dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        return dtypes.bytes_array(array) if array.dtype.kind in "OSU" else array
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        return dtypes.bytes_array(array)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{what}: cannot make a tensor of {type(value).__name__} {value!r}")
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    if array.dtype.kind in "iu":
        fits = array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)
        return array.astype(np.int32 if fits else np.int64)
    return array


def dtype_of(array: np.ndarray):
    """The gradflow dtype of a host array."""
    return dtypes.string if array.dtype.kind == "O" else dtypes.as_dtype(array.dtype)


def shape_of(x):
    """The static shape of a tensor or an array (``None`` for an unknown rank)."""
    if isinstance(x, Tensor):
        return x.shape
    return TensorShape(np.shape(x))


def most_specific_shape(a, b):
    """The shape compatible with both ``a`` and ``b``: unknown where they differ."""
    if a is None or b is None or len(a) != len(b):
        return None
    return TensorShape([x if x == y else None for x, y in zip(a, b)])


def fits(shape, static) -> bool:
    """Whether an array of ``shape`` fits the static shape ``static``."""
    if static is None:
        return True
    return len(shape) == len(static) and all(
        d is None or int(d) == n for d, n in zip(static, shape))


def format_shape(shape) -> str:
    """A static shape as TF1 prints it: ``[?,784]``, ``<unknown>``."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(int(d)) for d in shape) + "]"


def shapes_up_to(types, shapes) -> list:
    """``output_shapes`` flattened like ``output_types`` (a shape is a leaf)."""
    if isinstance(types, dict):
        return [s for key in sorted(types) for s in shapes_up_to(types[key], shapes[key])]
    if isinstance(types, tuple):
        return [s for t, sh in zip(types, shapes) for s in shapes_up_to(t, sh)]
    return [None if shapes is None else TensorShape(shapes)]
