"""More of TF1's checks: ``assert_integer``, ``assert_scalar``, ``assert_rank_at_least``,
``assert_rank_in``, ``assert_near``, ``assert_proper_iterable``,
``assert_same_float_dtype``, and the tests ``is_tensor`` and ``is_numeric_tensor``.

As in TF1, what the graph already knows is checked when the node is built (a
``TypeError`` or ``ValueError`` at the line that asked, and the result is a no-op);
what only a run knows becomes an assertion op, run directly or through
``control_dependencies``, that raises ``InvalidArgumentError``.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reduce_all
from gradflow.ops.debug_ops import Assert, _pair, verify_tensor_all_finite
from gradflow.ops.math_ops import abs as _abs
from gradflow.ops.math_ops import (
    add,
    equal,
    greater_equal,
    less_equal,
    logical_or,
    multiply,
    subtract,
)
from gradflow.ops.shape_ops import rank as _rank
from gradflow.ops.state_ops import no_op
from gradflow.prim.registry import convert_to_tensor
from gradflow.sparse_tensor import SparseTensor
from gradflow.variables import Variable


def _prefix(message) -> str:
    return f"{message}.  " if message else ""


def assert_integer(x, message=None, name=None):
    """``TypeError`` unless ``x`` has an integer dtype (TF1 ``tf.assert_integer``, a
    check made when the graph is built); returns a no-op."""
    x = convert_to_tensor(x)
    if not x.dtype.is_integer:
        raise TypeError(f'{_prefix(message)}Expected "x" to be integer type.  Found: '
                        f"{x.name}:0 of dtype {x.dtype!r}")
    return no_op(name=name or "statically_determined_was_integer")


def assert_scalar(tensor, name=None, message=None):
    """``tensor`` (as a tensor) if its static shape is ``()``, else ``ValueError`` (TF1
    ``tf.assert_scalar``; an unknown rank is refused too, as in TF1)."""
    t = convert_to_tensor(tensor)
    if t.shape is None or len(t.shape) != 0:
        shape = "<unknown>" if t.shape is None else tuple(t.shape)
        raise ValueError(f"{_prefix(message)}Expected scalar shape for {t.name}:0, saw "
                         f"shape: {shape}.")
    return t


def _rank_check(x, ok, wanted, static_text, message, data, summarize, name):
    """A rank check of ``x``: at once when its rank is known, else an assertion on the
    run-time rank. ``ok(rank)`` judges a static rank; ``wanted(rank_tensor)`` builds the
    bool condition."""
    prefix = _prefix(message)
    if x.shape is not None:
        if not ok(len(x.shape)):
            raise ValueError(f"{prefix}Tensor {x.name}:0 must have {static_text}.  Received "
                             f"rank {len(x.shape)}, shape {tuple(x.shape)}")
        return no_op(name=name)
    if data is None:
        data = [f"{prefix}Tensor {x.name}:0 must have {static_text}."]
    return Assert(wanted(_rank(x)), list(data), summarize=summarize, name=name)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Check that ``x`` has at least ``rank`` axes (TF1 ``tf.assert_rank_at_least``): at
    once when its rank is known (``ValueError``; the result is a no-op), else at run
    time (``InvalidArgumentError``)."""
    x = convert_to_tensor(x)
    rank = int(rank)
    return _rank_check(x, lambda r: r >= rank,
                       lambda t: greater_equal(t, convert_to_tensor(rank, like=t)),
                       f"rank at least {rank}", message, data, summarize,
                       name or "assert_rank_at_least")


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """Check that the rank of ``x`` is one of ``ranks`` (TF1 ``tf.assert_rank_in``): at
    once when its rank is known, else at run time."""
    x = convert_to_tensor(x)
    ranks = tuple(int(r) for r in ranks)
    if not ranks:
        raise ValueError("assert_rank_in: ranks must not be empty")

    def wanted(t):
        hits = [equal(t, convert_to_tensor(r, like=t)) for r in ranks]
        out = hits[0]
        for h in hits[1:]:
            out = logical_or(out, h)
        return out

    return _rank_check(x, lambda r: r in ranks, wanted, f"rank in {ranks}", message, data,
                       summarize, name or "assert_rank_in")


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None,
                name=None):
    """An assertion that ``|x - y| <= atol + rtol * |y|`` holds for every element (TF1
    ``tf.assert_near``), raising ``InvalidArgumentError`` at run time otherwise. The
    tolerances default to ten times the machine epsilon of the dtype (floats only)."""
    x, y = _pair(x, y, "assert_near")
    if not x.dtype.is_floating:
        raise TypeError(f"assert_near: '{x.name}' must be floating, got {x.dtype.name}")
    eps = float(np.finfo(x.dtype.as_numpy_dtype).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    rtol_t = convert_to_tensor(rtol, like=x)
    atol_t = convert_to_tensor(atol, like=x)
    tol = add(atol_t, multiply(rtol_t, _abs(y)))
    condition = reduce_all(less_equal(_abs(subtract(x, y)), tol))
    if data is None:
        data = ["x and y not equal to tolerance rtol = ", rtol_t, ", atol = ", atol_t,
                f"x ({x.name}:0) = ", x, f"y ({y.name}:0) = ", y]
    data = list(data)
    if message is not None:
        data = [message] + data
    return Assert(condition, data, summarize=summarize, name=name or "assert_near")


def assert_proper_iterable(values):
    """``TypeError`` unless ``values`` is an iterable other than a tensor, an array or a
    string (TF1 ``tf.debugging.assert_proper_iterable``), for arguments that must be a
    list of things."""
    unwanted = (Tensor, SparseTensor, np.ndarray, str, bytes)
    if isinstance(values, unwanted):
        raise TypeError('Expected argument "values" to be a "proper" iterable.  Found: '
                        f"{type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f'Expected argument "values" to be iterable.  Found: {type(values)}')


def assert_same_float_dtype(tensors=None, dtype=None):
    """The one floating dtype of ``tensors`` and ``dtype`` (TF1
    ``tf.assert_same_float_dtype``): ``ValueError`` when they differ or one is not
    floating; ``float32`` when neither says."""
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    first = None
    for t in tensors or []:
        if t is None:
            continue
        if dtype is None:
            dtype, first = t.dtype, t
        elif t.dtype != dtype:
            what = f"{first.name}:0" if first is not None else "expected_dtype"
            raise ValueError(f"{t.name}:0, type={t.dtype!r}, must be of the same type "
                             f"({dtype!r}) as {what}.")
    if dtype is None:
        return dtypes.float32
    if not dtype.is_floating:
        raise ValueError(f"Expected floating point type, got {dtype!r}.")
    return dtype


def is_tensor(x) -> bool:
    """Whether ``x`` is a graph tensor of any kind: a ``Tensor``, a ``Variable``, a
    ``SparseTensor`` (TF1 ``tf.is_tensor``); NumPy arrays and Python values are not."""
    return isinstance(x, (Tensor, SparseTensor)) or hasattr(x, "_as_graph_tensor")


def is_numeric_tensor(tensor) -> bool:
    """Whether ``tensor`` is a ``Tensor`` of a number dtype (TF1
    ``tf.is_numeric_tensor``): not bool or string, and, as in TF1, not a ``Variable``
    or a ``SparseTensor``."""
    return isinstance(tensor, Tensor) and not isinstance(tensor, Variable) and \
        (tensor.dtype.is_floating or tensor.dtype.is_integer)


def assert_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """``t``, checked at each run for NaN and infinity (TF1
    ``tf.debugging.assert_all_finite``, the same as ``verify_tensor_all_finite``)."""
    t = x if t is None else t
    msg = message if msg is None else msg
    return verify_tensor_all_finite(t, msg, name=name)


__all__ = ["assert_all_finite", "assert_integer", "assert_near", "assert_proper_iterable",
           "assert_rank_at_least", "assert_rank_in", "assert_same_float_dtype",
           "assert_scalar", "is_numeric_tensor", "is_tensor"]
