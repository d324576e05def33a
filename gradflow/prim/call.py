"""Every registered primitive as a function: ``call.mul(a, b)``, ``call.reshape(x, shape=s)``.

Gradient rules and composites build nodes through these binders, so a primitive's
rule never imports the module of another family (they all stand on the registry,
and the registry looks a primitive up by name when the node is built). Positional
arguments are the node's inputs, converted to tensors beside the first tensor
among them (``call.mul(g, 0.5)`` gives ``0.5`` the dtype of ``g``); keywords are
its attributes; ``name=`` names the node.

>>> from gradflow.prim import call
>>> y = call.tanh(x)                         # apply("tanh", [x])
>>> s = call.reduce_sum(y, axis=(1,), keepdims=False)
"""

from __future__ import annotations

import functools

from gradflow.graph import Tensor
from gradflow.prim.registry import REGISTRY, apply, convert_to_tensor


def bind(op_name: str, *inputs, name=None, **attrs) -> Tensor:
    """A node of the primitive ``op_name`` over ``inputs`` with ``attrs``."""
    like = next((t for t in inputs if isinstance(t, Tensor)), None)
    tensors = [t if isinstance(t, Tensor) else convert_to_tensor(t, like=like) for t in inputs]
    return apply(op_name, tensors, name=name, **attrs)


@functools.lru_cache(maxsize=None)
def _binder(op_name: str):
    def binder(*inputs, name=None, **attrs):
        return bind(op_name, *inputs, name=name, **attrs)

    binder.__name__ = binder.__qualname__ = op_name
    binder.__doc__ = f"A node of the primitive ``{op_name}`` (see its ``OpDef``)."
    return binder


def __getattr__(op_name: str):
    if op_name.startswith("__"):
        raise AttributeError(op_name)
    if op_name not in REGISTRY:
        # looked up when the rule runs: every family is registered by then
        raise AttributeError(f"no primitive named {op_name!r} is registered")
    return _binder(op_name)
