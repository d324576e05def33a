"""Rebuilding a GraphDef's nodes in a graph, through the op registry."""

from __future__ import annotations

import numpy as np

from gradflow.errors import ResourceExhaustedError
from gradflow.graph import Graph, Operation, get_default_graph
from gradflow.graph_io._base import GraphDefError
from gradflow.graph_io.graph_def import GraphDef
from gradflow.graph_io.reading import decode
from gradflow.ops.state_ops import placeholder
from gradflow.prim.registry import apply, constant
from gradflow.variables import Variable


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None,
                     op_dict=None, producer_op_list=None, variable_values=None):
    """Rebuild ``graph_def``'s nodes in the default graph, under the name scope ``name``
    (default ``"import"``, as TF1; ``""`` for none); returns the nodes named in
    ``return_elements``. ``input_map`` maps names of the file to tensors that take
    their place. A variable takes its recorded initial value when the file holds it,
    its value in ``variable_values`` (name -> array) when given, and otherwise has
    none until a ``Saver`` restores it.

    >>> gf.import_graph_def(graph_def, name="")
    >>> logits = gf.get_default_graph().get_tensor_by_name("logits:0")
    """
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"import_graph_def: expected a gf.GraphDef, got "
                        f"{type(graph_def).__name__}")
    graph = get_default_graph()
    scope = "import" if name is None else name
    built = _Importer(graph, graph_def, input_map or {}, variable_values or {}).run(scope)
    if return_elements is None:
        return None
    return [_lookup(built, e, graph_def.source) for e in return_elements]


def _lookup(built, name, source):
    key = name[:-2] if name.endswith(":0") else name
    if key not in built:
        raise GraphDefError(f"{source}: return_elements names {name!r}, which the graph "
                            "does not have")
    return built[key]


class _Importer:
    def __init__(self, graph: Graph, graph_def, input_map, values):
        self.graph, self.graph_def = graph, graph_def
        self.input_map = {k[:-2] if k.endswith(":0") else k: v for k, v in input_map.items()}
        self.values = values
        self.built: dict = {}

    def run(self, scope):
        with self.graph.name_scope(scope) if scope else _no_scope() as prefix:
            for record in self.graph_def.node:
                node = self.built[record["name"]] = self._build(record, prefix or "")
                if record.get("initializer") and hasattr(node, "initializer"):
                    self.built[record["initializer"]] = node.initializer
        return self.built

    def _fail(self, record, why):
        return GraphDefError(f"{self.graph_def.source}: node {record['name']!r} "
                             f"({record['op']}) {why}")

    def _build(self, record, prefix):
        name = record["name"]
        if name in self.input_map:
            return self.input_map[name]
        try:
            inputs = [self.built[i] for i in record["inputs"]]
            controls = [self.built[i] for i in record["control_inputs"]]
        except KeyError as err:
            raise self._fail(record, f"reads {err}, which comes later or not at all") from None
        try:
            attrs = {k: decode(v, self.graph_def.arrays, self.built)
                     for k, v in record["attrs"].items()}
            with self.graph.control_dependencies(controls):
                node = self._make(record, inputs, attrs)
        except GraphDefError:
            raise
        except MemoryError:
            raise ResourceExhaustedError(
                f"{self.graph_def.source}: node {record['name']!r} ({record['op']}) asks for "
                "more memory than there is: the file was changed") from None
        except Exception as err:  # any fault of a rule on what the file gave it is the file's
            raise self._fail(record, f"cannot be rebuilt: {_reason(err)}") from None
        self._check(record, node, prefix)
        return node

    def _make(self, record, inputs, attrs):
        name = record["name"]
        if record["op"] != "variable":
            return apply(record["op"], inputs, name=name, graph=self.graph, **attrs)
        shape, dtype = tuple(attrs["shape"]), attrs["dtype"]
        init = self.built.get(record.get("initial_value") or "")
        if name in self.values:
            init = constant(np.asarray(self.values[name]), dtype=dtype, shape=shape,
                            name=name + "/initial_value")
        elif init is None:  # a clear "must feed" error if run before a restore
            init = placeholder(dtype, shape, name=name + "/initial_value")
        with self.graph.control_dependencies(None):
            return Variable(init, trainable=bool(record.get("trainable", True)), name=name,
                            dtype=dtype, shape=shape)

    def _check(self, record, node, prefix):
        want = prefix + record["name"]
        if node.name != want:
            raise self._fail(record, f"was imported as '{node.name}': the graph already has "
                                     f"a node named '{want}'; import into a new graph or "
                                     "under a name= scope")
        shape = None if node.shape is None else [None if d is None else int(d)
                                                 for d in node.shape]
        dtype = None if node.dtype is None else node.dtype.name
        if isinstance(node, Operation):
            return
        if shape != record.get("shape") or dtype != record.get("dtype"):
            raise self._fail(record, f"rebuilds with shape {shape} and dtype {dtype}, but the "
                                     f"file records {record.get('shape')} and "
                                     f"{record.get('dtype')}: the file was changed")


def _reason(err):
    text = str(err)
    if isinstance(err, (ValueError, TypeError, IndexError, KeyError)):
        return text
    return f"{type(err).__name__}: {text[:300]}"  # a fault the op's rule did not foresee


class _no_scope:
    def __enter__(self):
        return ""

    def __exit__(self, *exc):
        return False
