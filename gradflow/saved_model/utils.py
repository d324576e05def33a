"""TF1's ``tf.saved_model.utils``: between tensors and their ``TensorInfo``.

>>> info = gf.saved_model.utils.build_tensor_info(x)
>>> gf.saved_model.utils.get_tensor_from_tensor_info(info, graph) is x
True
"""

from __future__ import annotations

from gradflow.graph import Operation, Tensor, get_default_graph
from gradflow.saved_model.signature_def_utils import TensorInfo


def build_tensor_info(tensor):
    """The ``TensorInfo`` of ``tensor``: its name with ``:0``, dtype and static shape."""
    if not isinstance(tensor, Tensor) or isinstance(tensor, Operation):
        raise TypeError(f"build_tensor_info: expected a tensor, got {tensor!r}")
    shape = None if tensor.shape is None else \
        [None if d is None else int(d) for d in tensor.shape]
    return TensorInfo(tensor.name + ":0", tensor.dtype.name if tensor.dtype else None, shape)


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The tensor of ``graph`` (default: the default graph) that ``tensor_info`` names."""
    graph = graph if graph is not None else get_default_graph()
    name = tensor_info.name
    if import_scope:
        name = f"{import_scope}/{name}"
    return graph.get_tensor_by_name(name)


__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]
