"""The ONNX graph being written: unique value names, nodes, initializers, and the table
that maps a gradflow op name to the function that writes its ONNX nodes."""

from __future__ import annotations

import numpy as np

from gradflow.errors import UnimplementedError

# gradflow op name -> convert(model, node, inputs) -> the ONNX value name of the output;
# filled by the _convert_* modules through ``converts``
CONVERTERS: dict = {}


class ExportError(UnimplementedError):
    """A graph cannot be written as an ONNX model: the message names the op and the
    line of user code that built it."""


def converts(*op_names):
    """Register the decorated function as the converter of ``op_names``."""

    def register(fn):
        for name in op_names:
            if name in CONVERTERS:
                raise ValueError(f"ONNX converter for {name!r} registered twice")
            CONVERTERS[name] = fn
        return fn

    return register


def axis_for(axis, shape) -> int:
    """``axis`` of a value of ``shape`` for ONNX: non-negative where the rank is known,
    as given where it is not (ONNX counts a negative axis from the end, as the run does)."""
    return int(axis) if shape is None else int(axis) % max(len(shape), 1)


def fail(node, why) -> ExportError:
    """An ``ExportError`` about ``node`` (its op, name and the user line that built it)."""
    return ExportError(f"ONNX export: {node.describe()} {why}")


class OnnxModel:
    """Collects the ONNX nodes and initializers of one export (``opset``: the ONNX opset)."""

    def __init__(self, opset: int):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self._used: set = set()
        self._consts: dict = {}  # (dtype, shape, bytes) -> name, so a constant is stored once
        self.memo: dict = {}  # converters' shared results (an NCHW copy, an LSTM gate slice)

    def name(self, hint: str) -> str:
        """A value name not used yet, close to ``hint``."""
        base = hint.replace(":", "_") or "v"
        name, k = base, 1
        while name in self._used:
            name, k = f"{base}_{k}", k + 1
        self._used.add(name)
        return name

    def add(self, op_type: str, inputs, hint: str, outputs: int = 1, **attrs):
        """Append an ONNX node; returns its output name (a list of them if ``outputs > 1``)."""
        names = [self.name(hint if outputs == 1 else f"{hint}_{i}") for i in range(outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), names,
                                                name=self.name(f"{hint}/{op_type}"), **attrs))
        return names[0] if outputs == 1 else names

    def initializer(self, array, hint: str) -> str:
        """An initializer holding ``array`` under a name close to ``hint``."""
        array = np.ascontiguousarray(array)
        name = self.name(hint)
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def const(self, value, dtype=np.int64) -> str:
        """A small constant (axes, shapes, scalars), stored once per distinct value."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            self._consts[key] = self.initializer(array, "const")
        return self._consts[key]

    def value_info(self, name, dtype, shape, dim_names):
        """A graph input/output declaration; unknown dimensions get ``dim_names``'s names."""
        from onnx import helper

        dims = [d if d is not None else dim_names(i) for i, d in enumerate(shape)] \
            if shape is not None else None
        return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)


def onnx_dtype(dtype) -> int:
    """The ONNX ``TensorProto`` element type of a gradflow dtype."""
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype.as_numpy_dtype))
