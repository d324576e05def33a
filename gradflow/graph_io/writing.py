"""A graph as a GraphDef's records: every node, or the part some outputs need, conds
folded."""

from __future__ import annotations

import numpy as np

from gradflow.dtypes import DType
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Tensor, get_default_graph
from gradflow.graph_io._base import _NOT_LOADABLE, GraphDefError
from gradflow.prim.registry import HostValue


def graph_records(graph=None, output_node_names=None, sess=None, feedable=()):
    """``(node records, arrays)`` of ``graph`` (default: the default graph), what a
    ``GraphDef`` holds (``gradflow.graph_io.graph_def.as_graph_def`` says which nodes)."""
    graph = graph if graph is not None else get_default_graph()
    alias = _CondFolder(sess, feedable)
    nodes = _needed(graph, output_node_names, alias) if output_node_names is not None \
        else [n for n in graph.nodes if not _is_variable_initializer(n)]
    writer = _Writer(alias)
    for node in nodes:
        writer.add(node)
    return writer.records, writer.arrays


class _CondFolder(dict):
    """cond result (``tuple_get``) -> the output of the branch ``sess`` takes."""

    def __init__(self, sess, feedable):
        super().__init__()
        self.sess = sess
        self.feedable = set(feedable)

    def __call__(self, node):
        while self.sess is not None and node.type == "tuple_get" and \
                node.inputs[0].type == "cond":
            if node not in self:
                self[node] = self._taken(node)
            node = self[node]
        return node

    def _taken(self, node):
        cond = node.inputs[0]
        info = cond.attrs["info"]
        if node.attrs["index"] >= info.n_slots:
            raise GraphDefError(f"{node.describe()} reads a variable a cond branch assigns; "
                                "it cannot be written to a GraphDef")
        fed = self._fed_ancestor(cond.inputs[0])
        if fed is not None:
            raise GraphDefError(f"{cond.describe()} cannot be written to a GraphDef: its "
                                f"predicate depends on the input '{fed.name}', and only a "
                                "cond whose branch is known when saving can be kept")
        try:
            pred = self.sess.run(cond.inputs[0])
        except InvalidArgumentError as err:
            raise GraphDefError(f"{cond.describe()} cannot be written to a GraphDef: its "
                                f"predicate must be known without feeds to keep one branch "
                                f"({err})") from None
        return info.branches[0 if bool(pred) else 1].outputs[node.attrs["index"]]


    def _fed_ancestor(self, node):
        seen, stack = set(), [node]
        while stack:
            node = stack.pop()
            if node in self.feedable:
                return node
            if node not in seen:
                seen.add(node)
                stack.extend(node.inputs)
        return None


def _needed(graph, output_node_names, follow):
    """The nodes ``output_node_names`` need, in graph order (variables' own initializers
    are left out: importing a variable makes them again)."""
    if isinstance(output_node_names, str):
        output_node_names = [output_node_names]
    seen, stack = set(), [follow(graph.get_tensor_by_name(n)) for n in output_node_names]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(map(follow, node.inputs))
        stack.extend(map(follow, node.control_inputs))
        if node.opdef.kind == "assign":
            stack.append(node.attrs["var"])
    return [n for n in graph.nodes if n in seen and not _is_variable_initializer(n)]


def _is_variable_initializer(node) -> bool:
    var = node.attrs.get("var") if node.opdef.kind == "assign" else None
    return var is not None and getattr(var, "initializer", None) is node


class _Writer:
    def __init__(self, follow):
        self.records, self.arrays, self._names = [], {}, set()
        self.follow = follow

    def add(self, node):
        if node.type in _NOT_LOADABLE:
            raise GraphDefError(f"{node.describe()} cannot be written to a GraphDef: it holds "
                                "sub-graphs or Python code; write only the nodes your outputs "
                                "need (output_node_names), with any cond folded by feeding "
                                "its switch")
        record = {"name": node.name, "op": node.type,
                  "inputs": [self._ref(node, i) for i in node.inputs],
                  "control_inputs": [self._ref(node, i) for i in node.control_inputs
                                     if not _is_variable_initializer(i)],
                  "attrs": {k: self._attr(node, k, v) for k, v in node.attrs.items()},
                  "shape": None if node.shape is None else
                  [None if d is None else int(d) for d in node.shape],
                  "dtype": None if node.dtype is None else node.dtype.name}
        if node.opdef.kind == "variable":
            record["trainable"] = bool(getattr(node, "trainable", True))
            init = getattr(node, "initial_value", None)
            record["initial_value"] = init.name if init is not None and \
                init.name in self._names else None
            # a variable's initializer is made again on import; others may read it
            record["initializer"] = node.initializer.name
            self._names.add(node.initializer.name)
        self._names.add(node.name)
        self.records.append(record)

    def _ref(self, node, tensor):
        tensor = self.follow(tensor)
        if tensor.name not in self._names:
            raise GraphDefError(f"{node.describe()} reads '{tensor.name}', which is not "
                                "written before it")
        return tensor.name

    def _attr(self, node, key, value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (tuple, list)):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {kind: [self._attr(node, key, v) for v in value]}
        if isinstance(value, DType):
            return {"dtype": value.name}
        if isinstance(value, HostValue):
            ref = f"a{len(self.arrays)}"
            self.arrays[ref] = value.array
            return {"array": ref}
        if isinstance(value, Tensor):
            return {"node": self._ref(node, value)}
        if isinstance(value, np.generic):
            return value.item()
        raise GraphDefError(f"{node.describe()} cannot be written to a GraphDef: its "
                            f"attribute {key!r} is a {type(value).__name__}")
