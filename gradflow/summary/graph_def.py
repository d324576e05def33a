"""A gradflow graph as a TensorFlow ``GraphDef`` protobuf, for TensorBoard's graph tab.

Each node becomes a ``NodeDef`` with its name (TensorBoard groups nodes by the
``/`` of name scopes), gradflow's op type, its inputs (control inputs as
``^name``), and as attributes its dtype (``dtype``), its static shape
(``_output_shapes``, which TensorBoard shows on the edges) and the attributes
of the op that are plain numbers, strings or lists of them.
"""

from __future__ import annotations

from gradflow.dtypes import DType
from gradflow.graph import Operation
from gradflow.summary import _tbx

# TensorFlow's DataType numbers (types.proto); unsigned 32/64 and variant are newer
# than tensorboardX's copy of the proto, so the numbers are set directly.
_DATA_TYPES = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "float16": 19, "variant": 21,
    "uint32": 22,
    "uint64": 23,
}
_PRODUCER = 27  # a GraphDef version TensorBoard reads without complaint


def _shape_proto(tbx, shape):
    if shape is None:
        return tbx.TensorShapeProto(unknown_rank=True)
    return tbx.TensorShapeProto(dim=[tbx.TensorShapeProto.Dim(size=-1 if d is None else int(d))
                                     for d in shape])


def _plain_attr(tbx, value):
    """``value`` as an ``AttrValue`` when it is a plain number, string, dtype or list of
    numbers; else None (tensors, arrays, functions are left out)."""
    if isinstance(value, bool):
        return tbx.AttrValue(b=value)
    if isinstance(value, int):
        return tbx.AttrValue(i=value)
    if isinstance(value, float):
        return tbx.AttrValue(f=value)
    if isinstance(value, str):
        return tbx.AttrValue(s=value.encode("utf-8"))
    if isinstance(value, DType) and value.name in _DATA_TYPES:
        return tbx.AttrValue(type=_DATA_TYPES[value.name])
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tbx.AttrValue(list=tbx.AttrValue.ListValue(i=list(value)))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return tbx.AttrValue(list=tbx.AttrValue.ListValue(f=[float(v) for v in value]))
    return None


def node_def(tbx, node):
    """The ``NodeDef`` of one gradflow node."""
    inputs = [i.name for i in node.inputs] + [f"^{c.name}" for c in node.control_inputs]
    if node.opdef.kind == "assign":  # the variable written, first as in TF's Assign
        inputs.insert(0, node.attrs["var"].name)
    nd = tbx.NodeDef(name=node.name, op=node.type, input=inputs)
    for key, value in node.attrs.items():
        attr = _plain_attr(tbx, value)
        if attr is not None and key not in ("dtype", "_output_shapes"):
            nd.attr[key].CopyFrom(attr)
    if isinstance(node, Operation):
        return nd
    if node.dtype is not None and node.dtype.name in _DATA_TYPES:
        nd.attr["dtype"].type = _DATA_TYPES[node.dtype.name]
    nd.attr["_output_shapes"].list.shape.append(_shape_proto(tbx, node.shape))
    if node.opdef.kind in ("placeholder", "variable"):
        nd.attr["shape"].shape.CopyFrom(_shape_proto(tbx, node.shape))
    return nd


def graph_def(graph):
    """The ``GraphDef`` protobuf (tensorboardX's class) of the gradflow ``graph``."""
    tbx = _tbx.require()
    return tbx.GraphDef(node=[node_def(tbx, n) for n in list(graph.nodes)],
                        versions=tbx.VersionDef(producer=_PRODUCER))
