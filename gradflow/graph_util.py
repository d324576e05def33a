"""TF1's ``tf.graph_util``: freeze a graph (variables to constants) and cut out the part
some outputs need, on gradflow's :class:`~gradflow.graph_io.GraphDef`.

>>> frozen = gf.graph_util.convert_variables_to_constants(sess, sess.graph_def, ["logits"])
>>> gf.train.write_graph(frozen, "export", "frozen.npz", as_text=False)
"""

from __future__ import annotations

import numpy as np

from gradflow.graph import Graph
from gradflow.graph_io import GraphDef, GraphDefError, as_graph_def, import_graph_def


def _plain_name(name: str) -> str:
    name = name[1:] if name.startswith("^") else name
    return name[:-2] if name.endswith(":0") else name


def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes ``dest_nodes`` (names) need, inputs, control inputs
    and assigned variables included (TF1 ``tf.graph_util.extract_sub_graph``)."""
    graph_def = _graph_def(graph_def)
    dest_nodes = [dest_nodes] if isinstance(dest_nodes, str) else list(dest_nodes)
    by_name = {r["name"]: r for r in graph_def.node}
    owner = {r["initializer"]: r["name"] for r in graph_def.node if r.get("initializer")}
    keep, stack = set(), [_plain_name(n) for n in dest_nodes]
    while stack:
        name = stack.pop()
        name = owner.get(name, name)
        if name in keep:
            continue
        if name not in by_name:
            raise GraphDefError(f"extract_sub_graph: the graph has no node named {name!r}")
        keep.add(name)
        record = by_name[name]
        stack.extend(record["inputs"] + record["control_inputs"])
        stack.extend(v["node"] for v in record["attrs"].values()
                     if isinstance(v, dict) and "node" in v)
        if record.get("initial_value"):
            stack.append(record["initial_value"])
    nodes = [r for r in graph_def.node if r["name"] in keep]
    used = {v["array"] for r in nodes for v in _attr_values(r) if "array" in v}
    return GraphDef(nodes, {k: a for k, a in graph_def.arrays.items() if k in used},
                    graph_def.source)


def _attr_values(record):
    """The tagged (dict) attribute values of ``record``, nested ones included."""
    stack = list(record["attrs"].values())
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            yield value
            for inner in value.values():
                if isinstance(inner, list):
                    stack.extend(inner)


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """The GraphDef of what ``output_node_names`` need, with each variable replaced by a
    constant holding its value in ``sess`` (TF1's freezing): the result needs no
    checkpoint. ``input_graph_def`` is a GraphDef or a Graph (then a ``cond`` on a
    switch such as ``training`` keeps the branch its value in ``sess`` takes); the
    white/black lists name the variables to convert (default: all)."""
    names = [output_node_names] if isinstance(output_node_names, str) else output_node_names
    graph = input_graph_def if isinstance(input_graph_def, Graph) else \
        getattr(input_graph_def, "graph", None)
    if graph is not None:  # only the needed part, conds folded (sess.graph_def, a Graph)
        graph_def = as_graph_def(graph, [_plain_name(n) for n in names], sess)
    else:
        graph_def = extract_sub_graph(input_graph_def, names)
    converted, records, arrays = [], [], dict(graph_def.arrays)
    for record in graph_def.node:
        name = record["name"]
        wanted = record["op"] == "variable" and \
            (variable_names_whitelist is None or name in variable_names_whitelist) and \
            (variable_names_blacklist is None or name not in variable_names_blacklist)
        if not wanted:
            records.append(record)
            continue
        value = np.asarray(sess.run(sess.graph.get_tensor_by_name(name)))
        key = f"v{len(arrays)}"
        while key in arrays:
            key += "_"
        arrays[key] = value
        records.append({"name": name, "op": "constant", "inputs": [],
                        "control_inputs": record["control_inputs"],
                        "attrs": {"value": {"array": key}, "dtype": {"dtype": record["dtype"]}},
                        "shape": record["shape"], "dtype": record["dtype"]})
        converted.append(name)
    # the initializers of converted variables are gone: nothing may read them
    gone = {r["initializer"] for r in graph_def.node
            if r["name"] in converted and r.get("initializer")}
    for record in records:
        if gone & set(record["inputs"] + record["control_inputs"]):
            raise GraphDefError(f"convert_variables_to_constants: '{record['name']}' reads the "
                                "initializer of a converted variable; leave it out of "
                                "output_node_names")
    return GraphDef(records, arrays, graph_def.source)


def _graph_def(graph_or_graph_def):
    if isinstance(graph_or_graph_def, GraphDef):
        return graph_or_graph_def
    if isinstance(graph_or_graph_def, Graph):
        return as_graph_def(graph_or_graph_def)
    raise TypeError(f"expected a gf.GraphDef or gf.Graph, got "
                    f"{type(graph_or_graph_def).__name__}")


def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of the tensor ``input_name`` of ``graph`` (an op name, or a
    tensor name with ``:0``) (TF1 ``tf.graph_util.tensor_shape_from_node_def_name``)."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


__all__ = ["convert_variables_to_constants", "extract_sub_graph", "import_graph_def",
           "tensor_shape_from_node_def_name"]
