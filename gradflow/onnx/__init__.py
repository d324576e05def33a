"""Export a trained model to ONNX, for ONNX Runtime and other serving stacks.

``export(sess, inputs, outputs, path)`` writes the inference graph that
computes ``outputs`` from ``inputs``: variables become initializers holding
their values in ``sess``, training-only parts (dropout, batch statistics,
anything behind a ``training`` switch left at its default) are removed, and
every unknown dimension (the batch) stays dynamic. An elementwise op without a
converter of its own is written from its scalar expression (``OpDef.scalar``). An op
with no ONNX mapping is an :class:`ExportError` naming it and the line that built it. Needs the
``onnx`` package (``pip install onnx onnxruntime``, or in the gradflow checkout
``pip install -e '.[onnx]'``).

From the command line, a SavedModel or a graph file: ``python -m gradflow.onnx
--help``.
"""

from __future__ import annotations

from gradflow.errors import GradflowError
from gradflow.onnx._builder import CONVERTERS, ExportError, OnnxModel, fail
from gradflow.onnx._convert_scalar import scalar_converter
from gradflow.onnx._prune import InferenceGraph

DEFAULT_OPSET = 17
MIN_OPSET = 13  # the axes of Squeeze, Unsqueeze and ReduceSum are inputs from here on


def export(sess, inputs, outputs, path, opset=DEFAULT_OPSET, model_name="gradflow"):
    """Write the ONNX model computing ``outputs`` from ``inputs`` to ``path``; return it.

    ``inputs`` and ``outputs`` are tensors (or lists or name -> tensor dicts of them);
    the ONNX inputs and outputs take the dict keys, else the tensors' names. A
    ``placeholder_with_default`` left out of ``inputs`` is fixed at its default.

    >>> gf.onnx.export(sess, {"x": x}, {"probs": gf.nn.softmax(logits)}, "model.onnx")
    >>> ort.InferenceSession("model.onnx").run(None, {"x": images})[0]
    """
    import onnx

    model = to_onnx(sess, inputs, outputs, opset, model_name)
    onnx.save(model, path)
    return model


def to_onnx(sess, inputs, outputs, opset=DEFAULT_OPSET, model_name="gradflow"):
    """The ``onnx.ModelProto`` that ``export`` writes (checked with ``onnx.checker``)."""
    import onnx
    import onnx.shape_inference

    opset = _check_opset(opset)
    inputs, outputs = _named(inputs, "inputs"), _named(outputs, "outputs")
    for name, t in inputs:
        if t.opdef.kind != "placeholder" and t.type != "placeholder_with_default":
            raise ExportError(f"ONNX export: input {name!r} is {t.describe()}, not a "
                              "placeholder")
    for role, items in (("input", inputs), ("output", outputs)):
        for name, t in items:
            if t.shape is None:  # (onnx.checker wants a shape on the model's values)
                raise ExportError(f"ONNX export: {role} {name!r} ('{t.name}') has an unknown "
                                  "rank, and an ONNX model's inputs and outputs need one: "
                                  "give the placeholder a shape, or reshape the output")
    graph = InferenceGraph(sess, [t for _, t in inputs], [t for _, t in outputs])
    m = OnnxModel(opset)
    clash = {n for n, _ in inputs} & {n for n, _ in outputs}
    if clash:
        raise ValueError(f"ONNX export: {sorted(clash)} name both an input and an output")
    for name, _ in outputs:  # reserved: no inner value may take an output's name
        m.name(name)
    names = _write_nodes(m, graph, inputs)
    proto_outputs = []
    for name, t in outputs:
        m.nodes.append(m.helper.make_node("Identity", [names[graph.source(t)]], [name],
                                          name=m.name(f"{name}/output")))
        proto_outputs.append(m.value_info(name, t.dtype, t.shape, _dim_namer(name)))
    proto_inputs = [m.value_info(name, t.dtype, t.shape, _dim_namer(name))
                    for name, t in inputs]
    onnx_graph = m.helper.make_graph(m.nodes, model_name, proto_inputs, proto_outputs,
                                     m.initializers)
    model = m.helper.make_model(onnx_graph, producer_name="gradflow",
                                opset_imports=[m.helper.make_opsetid("", opset)])
    # the oldest IR version that has this opset, so older runtimes read the file too
    model.ir_version = m.helper.find_min_ir_version_for(list(model.opset_import))
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        raise ExportError(f"ONNX export: the model written fails onnx.checker: {err}") from err
    return model


def _write_nodes(m, graph, inputs) -> dict:
    """ONNX nodes for every node of ``graph.order``; returns node -> ONNX value name."""
    names = {}
    for name, t in inputs:
        m.name(name)
        names[t] = name
    statics = [i for n in graph.order if n not in names for i in n.inputs
               if graph.is_static(i)]
    graph.prefetch(statics)
    for node in graph.order:
        if node in names:
            continue
        convert = CONVERTERS.get(node.type) or scalar_converter(node)
        if convert is None:
            raise fail(node, "has no ONNX mapping (gradflow.onnx converts "
                             f"{', '.join(sorted(CONVERTERS))})")
        ins = []
        for i in node.inputs:
            src = graph.source(i)
            if src not in names:  # a folded value: an initializer under its node's name
                names[src] = m.initializer(graph.value(src), src.name)
            ins.append(names[src])
        try:
            names[node] = convert(m, node, ins)
        except GradflowError:
            raise
        except Exception as err:  # noqa: BLE001 - named, with the op that could not be written
            raise fail(node, f"could not be written: {type(err).__name__}: {err}") from err
    return names


def _named(tensors, what):
    """``[(name, tensor)]`` from a tensor, a list of them or a name -> tensor dict."""
    if isinstance(tensors, dict):
        items = list(tensors.items())
    elif isinstance(tensors, (list, tuple)):
        items = [(t.name, t) for t in tensors]
    else:
        items = [(tensors.name, tensors)]
    from gradflow.graph import Operation, Tensor

    for name, t in items:
        if not isinstance(t, Tensor) or isinstance(t, Operation):
            raise TypeError(f"ONNX export: {what} must be tensors, got {t!r} for {name!r}")
    keys = [n for n, _ in items]
    if len(set(keys)) != len(keys):
        raise ValueError(f"ONNX export: {what} have repeated names {keys}; pass a dict")
    return items


def _dim_namer(name):
    return lambda axis: "batch" if axis == 0 else f"{name}_dim{axis}"


def _check_opset(opset):
    import onnx

    newest = onnx.defs.onnx_opset_version()
    if not isinstance(opset, int) or not MIN_OPSET <= opset <= newest:
        raise ValueError(f"ONNX export: opset must be an int from {MIN_OPSET} to {newest} "
                         f"(this onnx package's newest), got {opset!r}")
    return opset


# the converters register themselves in CONVERTERS when imported
from gradflow.onnx import _convert_array, _convert_math, _convert_nn  # noqa: E402, F401

__all__ = ["DEFAULT_OPSET", "ExportError", "export", "to_onnx"]
