"""The one registry of ops, and the function that turns an op into a graph node.

An op is one record: a forward ``impl(xp, *arrays, **attrs)`` written against
the Array API, a shape/dtype rule ``infer(shapes, dtypes, **attrs)`` run when
the node is built, and a gradient rule ``grad(node, g)`` that builds graph
nodes and returns one gradient (or ``None``) per input.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from gradflow import dtypes
from gradflow.graph import Operation, Tensor, get_default_graph, user_source_line

REGISTRY: dict[str, "OpDef"] = {}


@dataclass(frozen=True)
class OpDef:
    """One op: its name, forward, shape/dtype rule and gradient rule.

    ``kind`` tells the executor how a node is evaluated: ``"compute"`` (call
    the impl), ``"call"`` (``impl(session, node)`` is called once per plan and
    returns the callable of the input arrays: for ops that need the session,
    such as control flow over sub-graphs or host callbacks), or one of the
    stateful kinds it handles itself: ``"placeholder"``, ``"variable"``,
    ``"constant"``, ``"assign"``, ``"random"``, ``"group"``.
    ``lower(xp, **attrs)`` may return a faster callable of the arrays alone.
    """

    name: str
    impl: Optional[Callable]
    infer: Callable
    grad: Optional[Callable]
    kind: str = "compute"
    lower: Optional[Callable] = None
    doc: str = field(default="", compare=False)

    def bind(self, xp, attrs: dict) -> Callable:
        """A callable of the input arrays alone, for the executor's plan."""
        if self.lower is not None:
            return self.lower(xp, **attrs)
        return functools.partial(self.impl, xp, **attrs)


def register(name, impl, infer, *, grad, kind="compute", lower=None) -> OpDef:
    """Add an op to the registry; ``grad=None`` states that it has no gradient."""
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    if kind in ("compute", "call") and impl is None:
        raise ValueError(f"op {name!r} needs a forward impl")
    op = OpDef(name, impl, infer, grad, kind, lower)
    REGISTRY[name] = op
    return op


class OpError(ValueError):
    """A node could not be built: wrong shapes, dtypes or arguments."""


def _describe_inputs(inputs) -> str:
    parts = []
    for t in inputs:
        shape = tuple(t.shape) if t.shape is not None else "none"
        dt = t.dtype.name if t.dtype is not None else "none"
        parts.append(f"'{t.name}' {shape} {dt}")
    return ", ".join(parts) if parts else "no inputs"


def apply(op_name: str, inputs, name=None, *, graph=None, **attrs) -> Tensor:
    """Build a node of ``op_name`` over ``inputs`` (tensors) in their graph."""
    opdef = REGISTRY[op_name]
    graph = graph if graph is not None else _graph_of(inputs, op_name)
    source = user_source_line()
    shapes = [t.shape for t in inputs]
    in_dtypes = [t.dtype for t in inputs]
    try:
        if opdef.kind == "compute" and any(s is None for s in shapes):
            shape, dtype = None, _unknown_rank_dtype(opdef, shapes, in_dtypes, attrs)
        else:
            shape, dtype = opdef.infer(shapes, in_dtypes, **attrs)
    except (ValueError, TypeError, IndexError) as err:
        kind = TypeError if isinstance(err, TypeError) else OpError
        raise kind(f"{op_name}: {err}; inputs: {_describe_inputs(inputs)}; "
                   f"at {source}") from None
    node_cls = Operation if opdef.kind == "group" else Tensor
    control = tuple(c for c in graph.current_control_inputs() if c not in inputs)
    node = node_cls(graph, opdef, inputs, attrs, shape, dtype,
                    graph.unique_name(name or op_name), source, control)
    return graph.add_node(node)


def _unknown_rank_dtype(opdef, shapes, in_dtypes, attrs):
    """The dtype of a node whose input has unknown rank (its shape stays unknown)."""
    known = next((s for s in shapes if s is not None), ())
    try:
        return opdef.infer([known if s is None else s for s in shapes], in_dtypes, **attrs)[1]
    except (ValueError, IndexError):
        out = in_dtypes[0]
        for dt in in_dtypes[1:]:
            out = dtypes.result_type(out, dt)
        return out


def _graph_of(inputs, op_name):
    graph = None
    for t in inputs:
        if graph is None:
            graph = t.graph
        elif t.graph is not graph:
            raise ValueError(f"{op_name}: inputs come from different graphs "
                             f"('{t.name}' is not in the graph of the others)")
    return graph if graph is not None else get_default_graph()


# -- turning Python values into tensors ---------------------------------------

class HostValue:
    """A constant's value as a read-only NumPy array, hashed by identity."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        array = np.array(array, copy=True)
        array.flags.writeable = False
        self.array = array

    def __repr__(self) -> str:
        return f"HostValue(shape={self.array.shape}, dtype={self.array.dtype})"


def _python_default_dtype(value):
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return dtypes.float32
    if array.dtype.kind in "iu":
        return dtypes.int32
    return dtypes.as_dtype(array.dtype)


def constant(value, dtype=None, shape=None, name=None, *, _graph=None) -> Tensor:
    """A constant tensor (TF1 ``tf.constant``); Python floats default to float32."""
    if isinstance(value, Tensor):
        raise TypeError(f"constant() takes a value, not the tensor '{value.name}'")
    if dtype is None:
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            dtype = dtypes.as_dtype(value.dtype)
        else:
            dtype = _python_default_dtype(value)
    dtype = dtypes.as_dtype(dtype)
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"constant: cannot make a tensor from {type(value).__name__} "
                        f"with NumPy dtype {array.dtype}")
    array = array.astype(dtype.as_numpy_dtype)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        array = np.broadcast_to(array, shape) if array.size == 1 else array.reshape(shape)
    return apply("constant", [], name=name or "Const", value=HostValue(array),
                 dtype=dtype, graph=_graph or get_default_graph())


def convert_to_tensor(value, dtype=None, like: Tensor | None = None, name=None) -> Tensor:
    """A tensor for ``value``; a Python scalar takes the dtype of ``like``.

    Python scalars are weakly typed, as in the Array API: ``x * 2`` keeps the
    dtype of ``x``; a float scalar with an integer tensor is an error.
    """
    if isinstance(value, Tensor):
        if isinstance(value, Operation):
            raise TypeError(f"'{value.name}' is an operation ({value.type}) and has no "
                            "value to use as a tensor")
        if dtype is not None and value.dtype is not dtypes.as_dtype(dtype):
            raise TypeError(f"expected a {dtypes.as_dtype(dtype).name} tensor, got "
                            f"'{value.name}' of dtype {value.dtype.name}")
        return value
    if hasattr(value, "_as_graph_tensor"):
        return value._as_graph_tensor()
    if dtype is None and like is not None and isinstance(value, (bool, int, float)):
        dtype = _weak_dtype(value, like.dtype)
    return constant(value, dtype=dtype, name=name, _graph=like.graph if like is not None else None)


def _weak_dtype(value, like_dtype):
    if isinstance(value, bool):
        return like_dtype if like_dtype.is_bool else dtypes.bool_
    if isinstance(value, int):
        return like_dtype if not like_dtype.is_bool else dtypes.int32
    if like_dtype.is_floating:
        return like_dtype
    raise TypeError(f"cannot combine the Python float {value!r} with a {like_dtype.name} "
                    "tensor; use gf.cast first")
