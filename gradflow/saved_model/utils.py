"""TF1's ``tf.saved_model.utils``: ``TensorInfo`` (a tensor of a signature), and
between tensors and their ``TensorInfo``.

>>> info = gf.saved_model.utils.build_tensor_info(x)
>>> gf.saved_model.utils.get_tensor_from_tensor_info(info, graph) is x
True
"""

from __future__ import annotations

from gradflow.graph import Operation, Tensor, get_default_graph


class TensorInfo:
    """A tensor of a signature: its name (``"x:0"``), dtype name and static shape."""

    def __init__(self, name, dtype, tensor_shape):
        self.name = name
        self.dtype = dtype
        self.tensor_shape = None if tensor_shape is None else list(tensor_shape)

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "shape": self.tensor_shape}

    @classmethod
    def from_json(cls, doc, where):
        if not isinstance(doc, dict) or set(doc) != {"name", "dtype", "shape"} or \
                not isinstance(doc["name"], str) or not isinstance(doc["dtype"], (str, type(None))):
            raise ValueError(f"{where} is not a tensor description (name, dtype, shape)")
        shape = doc["shape"]
        if shape is not None and (not isinstance(shape, list) or not all(
                d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in shape)):
            raise ValueError(f"{where} has a bad shape {shape!r}")
        return cls(doc["name"], doc["dtype"], shape)

    def __repr__(self) -> str:
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.tensor_shape})"


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
