"""Which nodes may join a fused elementwise kernel.

An op is elementwise when its record declares a scalar expression (``OpDef.scalar``,
written with ``gradflow.prim.scalar``): ``scalar(args, node)`` is the expression of one
output element from the expressions ``args`` of its input elements, or ``None`` where
the node's dtypes are not supported. Every kernel printer reads it from the record:
the numba kernels as it is, the CUDA kernels and the ONNX export as a tree
(``gradflow.prim.scalar_tree``).
"""

from __future__ import annotations


def is_elementwise(node) -> bool:
    """Whether ``node`` may join a fused elementwise kernel: an elementwise op over
    inputs of known rank whose output has the broadcast shape of its inputs."""
    if node.opdef.scalar is None or node.opdef.kind != "compute":
        return False
    if node.shape is None or node.dtype is None or any(i.shape is None for i in node.inputs):
        return False
    if node.opdef.name == "cast" and node.inputs[0].dtype == node.dtype:
        return False  # may return its input itself: not a value of its own
    return all(len(i.shape) <= len(node.shape) for i in node.inputs)
