"""TF1's small framework names: ``NotDifferentiable`` (``NoGradient``, ``no_gradient``),
the enums ``AggregationMethod``, ``VariableAggregation`` and ``VariableSynchronization``,
``convert_to_tensor_or_indexed_slices``, ``convert_to_tensor_or_sparse_tensor``,
``get_static_value``, ``no_regularizer``, ``recompute_grad``,
``register_tensor_conversion_function``, ``make_tensor_proto`` and ``make_ndarray``.

>>> gf.NotDifferentiable("MyStep")          # then gradient_override_map({"round": "MyStep"})
>>> gf.get_static_value(gf.shape(x))       # array([2, 3]) when x's shape is known
"""

from __future__ import annotations

import enum

import numpy as np

from gradflow import autodiff, dtypes, nest
from gradflow.autodiff import gradients
from gradflow.graph import Tensor
from gradflow.ops.functional_ops import custom_gradient
from gradflow.ops.indexed_slices import IndexedSlices
from gradflow.prim import registry, serialize
from gradflow.prim.registry import convert_to_tensor
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.summary import _tbx
from gradflow.variables import get_variable_scope, variable_scope

__all__ = ["AggregationMethod", "NoGradient", "NotDifferentiable", "VariableAggregation",
           "VariableSynchronization", "convert_to_tensor_or_indexed_slices",
           "convert_to_tensor_or_sparse_tensor", "get_static_value", "no_gradient",
           "no_regularizer", "recompute_grad", "register_tensor_conversion_function",
           "make_ndarray", "make_tensor_proto"]


def NotDifferentiable(op_type):  # noqa: N802 - TF1's name
    """Register ``op_type`` as a gradient that lets nothing through: ops built under
    ``graph.gradient_override_map({op: op_type})`` get no gradient (``tf.gradients``
    gives None for what only they connect). A name registered already is a KeyError,
    as with ``RegisterGradient``."""
    if not isinstance(op_type, str):
        raise TypeError(f"NotDifferentiable: op_type must be a string, got {op_type!r}")
    autodiff.RegisterGradient(op_type)(None)


NoGradient = NotDifferentiable
no_gradient = NotDifferentiable


class AggregationMethod:
    """How ``gradients`` adds the contributions to one gradient (TF1's constants; every
    method gives the same sums here, which the graph compiler arranges)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates from several replicas combine (TF1's enum,
    taken by ``get_variable(aggregation=...)``)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronized (TF1's enum, taken by
    ``get_variable(synchronization=...)``)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """``value`` itself if it is an ``IndexedSlices`` (of ``dtype`` if given), else
    ``convert_to_tensor(value, dtype)``."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and value.dtype is not dtype:
            raise ValueError(f"convert_to_tensor_or_indexed_slices: IndexedSlices of "
                             f"{value.dtype.name}, {dtype!r} was asked for")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """A ``SparseTensor`` for a ``SparseTensor`` or ``SparseTensorValue`` (of ``dtype``
    if given), else ``convert_to_tensor(value, dtype)``."""
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype is not None and value.dtype is not dtype:
            raise ValueError(f"convert_to_tensor_or_sparse_tensor: SparseTensor of "
                             f"{value.dtype.name}, {dtype!r} was asked for")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def _known_shape(x):
    return x.shape is not None and all(d is not None for d in x.shape)


def get_static_value(tensor, partial=False):
    """The value of ``tensor`` when it is known while the graph is built, as a NumPy
    array, else None: a constant, the shape, rank or size of a tensor whose shape is
    known, and an identity, ``stop_gradient`` or cast of such a value. A value that is
    not a tensor is returned as it is, as in TF1."""
    if not isinstance(tensor, Tensor):
        return tensor
    kind = tensor.opdef.name
    if tensor.opdef.kind == "constant":
        return np.array(tensor.attrs["value"].array)
    if kind in ("shape", "size", "rank"):
        source = tensor.inputs[0]
        if kind == "rank" and source.shape is not None:
            return np.asarray(len(source.shape), tensor.dtype.as_numpy_dtype)
        if not _known_shape(source):
            return None
        dims = [int(d) for d in source.shape]
        value = dims if kind == "shape" else int(np.prod(dims))
        return np.asarray(value, tensor.dtype.as_numpy_dtype)
    if kind in ("identity", "stop_gradient", "cast"):
        inner = get_static_value(tensor.inputs[0])
        return None if inner is None else np.asarray(inner).astype(
            tensor.dtype.as_numpy_dtype)
    return None


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Have ``convert_to_tensor`` (and so every op) turn values of ``base_type`` (a class
    or a tuple of them) into tensors with ``conversion_func(value, dtype=None, name=None,
    as_ref=False)``, which returns a tensor or ``NotImplemented`` to let the next
    function try. Lower ``priority`` values are tried first. Python numbers and NumPy
    values cannot be taken over, as in TF1."""
    kinds = base_type if isinstance(base_type, tuple) else (base_type,)
    for kind in kinds:
        if not isinstance(kind, type):
            raise TypeError(f"register_tensor_conversion_function: {kind!r} is not a type")
        if issubclass(kind, (int, float, complex, str, bytes, np.ndarray, np.generic)):
            raise TypeError("register_tensor_conversion_function: conversions of Python "
                            "numbers and strings and of NumPy scalars and arrays cannot be "
                            f"registered, got {kind.__name__}")
    if not callable(conversion_func):
        raise TypeError("register_tensor_conversion_function: conversion_func must be "
                        "callable")
    registry.CONVERSIONS.append((priority, len(registry.CONVERSIONS), kinds, conversion_func))
    registry.CONVERSIONS.sort(key=lambda entry: entry[:2])


# the dtypes TensorFlow writes as tensor_content when a proto holds more than one value
_CONTENT = {dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8,
            dtypes.int16, dtypes.int8, dtypes.int64, dtypes.uint32, dtypes.uint64}


def _proto_values(values, dtype):
    """``(host array, gradflow dtype)`` of ``values`` as ``make_tensor_proto`` takes them:
    Python floats as float32, ints as int32 (int64 when they need it), text as strings."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(values, (np.ndarray, np.generic)) and dtype is None:
        array = np.asarray(values)
        dtype = dtypes.string if array.dtype.kind in "USO" else dtypes.as_dtype(array.dtype)
    else:
        array = np.asarray(values)
        if dtype is None:
            kind = array.dtype.kind
            dtype = dtypes.string if kind in "USO" else dtypes.float32 if kind == "f" \
                else dtypes.bool_ if kind == "b" else dtypes.int32 if kind in "iu" and (
                    array.size == 0 or -2**31 <= array.min() and array.max() < 2**31) \
                else dtypes.as_dtype(array.dtype)
    if dtype is dtypes.string:
        flat = [v.encode() if isinstance(v, str) else bytes(v)
                for v in array.astype(object).ravel()]
        return dtypes.bytes_array(flat).reshape(array.shape), dtype
    if dtype not in serialize.DATATYPES:
        raise TypeError(f"make_tensor_proto: {dtype.name} has no TensorProto form here")
    return array.astype(dtype.as_numpy_dtype), dtype


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False,
                      allow_broadcast=False):
    """A ``TensorProto`` (tensorboardX's class, TensorFlow's message) holding ``values``
    (of ``dtype``, inferred as TF1 does when None) in ``shape``: one value fills a larger
    shape, fewer values are filled by the last, more are a ValueError, as in TF1. Its
    bytes are TensorFlow's (``tensor_content`` for several numbers, the typed value
    fields otherwise). ``make_ndarray`` reads it back."""
    array, dtype = _proto_values(values, dtype)
    if shape is None:
        shape = array.shape
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape))
    if verify_shape and array.shape != shape:
        raise TypeError(f"make_tensor_proto: expected a value of shape {shape}, got "
                        f"{array.shape}")
    if allow_broadcast and array.size not in (0, 1):
        array = np.broadcast_to(array, shape)
    if array.size > count:
        raise ValueError(f"make_tensor_proto: too many elements provided: shape {shape} "
                         f"takes at most {count}, got {array.size}")
    if array.size == count and count > 1 and dtype in _CONTENT:
        data = serialize.tensor_proto(array.reshape(shape), dtype)
    else:
        data = serialize.typed_proto(array, dtype, shape)
    return _tbx.require().TensorProto.FromString(data)


def make_ndarray(tensor):
    """The NumPy array a ``TensorProto`` (``make_tensor_proto``'s, or one parsed from
    TensorFlow's bytes) holds."""
    return serialize.parse_proto(tensor.SerializeToString(), ValueError)[1]


def no_regularizer(_):
    """The regularizer that adds nothing (``get_variable(regularizer=no_regularizer)``):
    None."""
    return None


def recompute_grad(f):
    """``f`` whose gradient recomputes its forward pass (under the variable scope it was
    called in, reusing its variables) instead of keeping it: the same values and
    gradients as ``f`` (TF1 ``tf.recompute_grad``, graph mode)."""

    @custom_gradient
    def inner(*args):
        scope = get_variable_scope()
        result = f(*args)

        def grad_fn(*dys, variables=None):
            with variable_scope(scope, reuse=True):
                again = [convert_to_tensor(y) for y in nest.flatten(f(*args))]
            targets = list(args) + list(variables or ())
            grads = gradients(again, targets, grad_ys=list(dys))
            if variables is None:
                return grads[:len(args)]
            return grads[:len(args)], grads[len(args):]

        return result, grad_fn

    return inner
