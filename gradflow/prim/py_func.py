"""The ``py_func`` primitive: a Python function run on the host over NumPy copies of its
inputs' values (TF1 ``tf.py_func``, ``tf.numpy_function``).

A node of kind ``"call"``; with a single result its value is that array, else a tuple
that ``tuple_get`` nodes pick from (its ``info`` is a plain ``Construct``: no gradient,
unless one is registered with ``RegisterGradient`` and mapped with
``gradient_override_map``). Results are converted to their declared dtypes by the rule
feeds follow (``gradflow.prim.casting``).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError

# the conversion rule of every value that enters a graph from Python: a leaf module
# (NumPy, errors, memory) whose home is ops/ today and belongs below prim (issue 46's
# report: its owner moves it)
from gradflow.prim.casting import loses_kind, out_of_range
from gradflow.prim.construct import VARIANT
from gradflow.prim.registry import register


def _py_func_infer(shapes, in_dtypes, func, Tout, single, stateful, info):  # noqa: N803
    return None, (Tout[0] if single else VARIANT)


def _py_func_impl(run_state, node):
    attrs = node.attrs
    func, Tout, single = attrs["func"], attrs["Tout"], attrs["single"]
    to_host, to_device = run_state.backend.host_value, run_state.backend.device_value
    label = getattr(func, "__name__", repr(func))

    def run(*values):
        arrays = [np.array(to_host(v), copy=True) for v in values]
        # a scalar string reaches func as bytes, as in TF1
        arrays = [a.item() if a.dtype.kind == "O" and a.ndim == 0 else a for a in arrays]
        result = func(*arrays)
        if single:
            results = [result]
        elif not Tout:
            return ()
        elif isinstance(result, (list, tuple)):
            results = list(result)
        else:
            results = [result]
        if len(results) != len(Tout):
            raise InvalidArgumentError(f"py_func '{node.name}': {label} returned "
                                       f"{len(results)} values, Tout names {len(Tout)}")
        out = []
        for k, (value, dtype) in enumerate(zip(results, Tout)):
            out.append(to_device(_py_result(value, dtype, f"py_func '{node.name}': result "
                                                          f"{k} of {label}")))
        return out[0] if single else out

    return run


def _py_result(value, dtype, what):
    """``value`` (a py_func's result) as a host array of ``dtype``, by the rule feeds
    follow (``gradflow.prim.casting``): floats may round; a conversion across kinds that can change
    values (a fraction cut off) or an integer that would wrap is an error, never a
    silent cast."""
    try:
        if dtype is dtypes.string:
            return dtypes.bytes_array(value)
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise InvalidArgumentError(f"{what} cannot be converted to {dtype.name}: {err}") \
            from None
    np_dtype = dtype.as_numpy_dtype
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{what} is {array.dtype}, not a numeric array")
    if array.dtype != np_dtype:
        found = out_of_range(array, np_dtype)
        if loses_kind(value, array, np_dtype) or found is not None:
            detail = f": {found[0]} is outside its range" if found is not None else ""
            raise InvalidArgumentError(f"{what} ({array.dtype}) cannot be converted to "
                                       f"{dtype.name} without changing its values{detail}")
    return array.astype(np_dtype, copy=False)


register("py_func", _py_func_impl, _py_func_infer, grad=None, kind="call", takes_strings=True)
