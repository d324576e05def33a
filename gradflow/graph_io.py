"""gradflow's own graph file: TF1's ``GraphDef``, ``tf.train.write_graph`` and
``tf.import_graph_def``.

A :class:`GraphDef` is the nodes of a graph as plain data: for each node its
name, op name, input and control-input names, static shape, dtype and
attributes (numbers, strings, dtypes, tuples of them, other nodes by name, and
arrays, kept apart). It is written as JSON (``as_text=True``, arrays as nested
lists) or as an ``.npz`` archive holding the JSON and the arrays. Reading
never unpickles or evaluates anything: the JSON is checked field by field, each
op is looked up in the op registry by name and rebuilt through it (so its
shape rule checks the attributes), and the rebuilt shape and dtype must match
the recorded ones. A file of another format version, a damaged one or one
that fails these checks is a :class:`GraphDefError` naming the file and the fault.

>>> gf.train.write_graph(sess.graph, "export", "model.json")
>>> with gf.Graph().as_default() as g:
...     gf.import_graph_def(gf.GraphDef.read("export/model.json"), name="")
"""

from __future__ import annotations

import io
import json
import os

import numpy as np

from gradflow.dtypes import DType, as_dtype
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Graph, Operation, Tensor, get_default_graph
from gradflow.ops.registry import REGISTRY, HostValue, apply

FORMAT = "gradflow.GraphDef"
FORMAT_VERSION = 1
_JSON_KEY = "__graph__"
# ops whose attributes hold sub-graphs or Python callables: never rebuilt from a file
_NOT_LOADABLE = ("cond", "while", "while_grad", "tuple_get", "while_loop_var", "py_func")
_NODE_KEYS = {"name", "op", "inputs", "control_inputs", "attrs", "shape", "dtype",
              "trainable", "initial_value", "initializer"}


class GraphDefError(InvalidArgumentError):
    """A graph cannot be written to, or rebuilt from, a GraphDef (the file and fault named)."""


class GraphDef:
    """A graph as data (TF1's ``GraphDef``): ``node`` lists dicts, ``arrays`` holds the
    values of constants; ``SerializeToString``/``ParseFromString`` as in TF1.

    >>> graph_def = gf.GraphDef()
    >>> graph_def.ParseFromString(open("model.npz", "rb").read())
    """

    def __init__(self, node=None, arrays=None, source="<GraphDef>"):
        self._node = list(node or [])
        self._arrays = dict(arrays or {})
        self.source = source
        self.graph = None  # the graph it stands for, until it is first read

    @classmethod
    def of_graph(cls, graph):
        """The GraphDef of every node of ``graph``, made when first read; until then,
        ``convert_variables_to_constants`` takes only the part it needs from ``graph``."""
        graph_def = cls(source=f"<GraphDef of {graph!r}>")
        graph_def.graph = graph
        return graph_def

    def _made(self):
        if self.graph is not None:
            made = as_graph_def(self.graph)
            self._node, self._arrays, self.graph = made._node, made._arrays, None
        return self

    node = property(lambda self: self._made()._node,
                    lambda self, value: setattr(self._made(), "_node", list(value)),
                    doc="The nodes, as dicts (name, op, inputs, attrs, shape, dtype).")
    arrays = property(lambda self: self._made()._arrays,
                      lambda self, value: setattr(self._made(), "_arrays", dict(value)),
                      doc="The arrays the nodes' attributes refer to, by key.")

    def SerializeToString(self) -> bytes:  # noqa: N802 - TF1 name
        """The ``.npz`` bytes: the JSON of the nodes and the arrays."""
        buffer = io.BytesIO()
        header = json.dumps(self._document()).encode("utf-8")
        np.savez(buffer, **{_JSON_KEY: np.frombuffer(header, np.uint8)}, **self.arrays)
        return buffer.getvalue()

    def to_text(self) -> str:
        """The JSON text, arrays written in it as nested lists with their dtype."""
        doc = self._document()
        doc["arrays"] = {k: {"dtype": a.dtype.name, "shape": list(a.shape),
                             "values": a.tolist()} for k, a in self.arrays.items()}
        return json.dumps(doc, indent=1)

    def ParseFromString(self, data: bytes):  # noqa: N802 - TF1 name
        """Read ``data`` (what ``SerializeToString`` or ``to_text`` made) into this object."""
        doc, arrays = _parse(bytes(data), self.source)
        self.node, self.arrays = _check_document(doc, arrays, self.source)
        return len(data)

    @classmethod
    def read(cls, path):
        """The GraphDef in the file at ``path`` (JSON text or ``.npz``)."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            raise GraphDefError(f"graph file {path}: cannot be read ({err})") from None
        graph_def = cls(source=path)
        graph_def.ParseFromString(data)
        return graph_def

    def _document(self):
        return {"format": FORMAT, "version": FORMAT_VERSION, "node": self.node}

    def __repr__(self) -> str:
        return f"<gf.GraphDef with {len(self.node)} nodes>"


# -- graph -> GraphDef ------------------------------------------------------------------


def as_graph_def(graph=None, output_node_names=None, sess=None, feedable=()) -> GraphDef:
    """The GraphDef of ``graph`` (default: the default graph): every node, or with
    ``output_node_names`` only the nodes those need. With ``sess``, a ``cond`` whose
    predicate needs no feed (a ``training`` switch left at its default) is replaced by
    the branch it takes in ``sess``, as a servable graph wants, unless the predicate
    depends on one of the tensors ``feedable`` (then it is an error)."""
    graph = graph if graph is not None else get_default_graph()
    alias = _CondFolder(sess, feedable)
    nodes = _needed(graph, output_node_names, alias) if output_node_names is not None \
        else [n for n in graph.nodes if not _is_variable_initializer(n)]
    writer = _Writer(alias)
    for node in nodes:
        writer.add(node)
    return GraphDef(writer.records, writer.arrays)


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


# -- reading and checking ----------------------------------------------------------------


def _parse(data, source):
    """(document, arrays) from ``.npz`` bytes or JSON text."""
    try:
        if data.startswith(b"PK"):
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                if _JSON_KEY not in npz.files:
                    raise GraphDefError(f"graph file {source}: an .npz archive without a "
                                        f"{_JSON_KEY} entry, not a gradflow GraphDef")
                doc = json.loads(npz[_JSON_KEY].tobytes().decode("utf-8"))
                arrays = {k: npz[k] for k in npz.files if k != _JSON_KEY}
            return doc, arrays
        doc = json.loads(data.decode("utf-8"))
    except GraphDefError:
        raise
    except Exception as err:  # zip, npy, unicode and JSON errors come in many types
        raise GraphDefError(f"graph file {source}: damaged or not a gradflow GraphDef "
                            f"({type(err).__name__}: {err})") from None
    return doc, _text_arrays(doc.get("arrays") if isinstance(doc, dict) else None, source)


def _text_arrays(spec, source):
    arrays = {}
    for key, a in (spec or {}).items():
        try:
            dtype = np.dtype(as_dtype(a["dtype"]).as_numpy_dtype)
            arrays[key] = np.array(a["values"], dtype=dtype).reshape(a["shape"])
        except Exception as err:  # noqa: BLE001 - any fault in the entry is the file's
            raise GraphDefError(f"graph file {source}: array {key!r} is damaged "
                                f"({type(err).__name__}: {err})") from None
    return arrays


def check_header(doc, source, what=FORMAT, version=FORMAT_VERSION):
    """Raise unless ``doc`` is a dict of format ``what`` at ``version``."""
    if not isinstance(doc, dict) or doc.get("format") != what:
        raise GraphDefError(f"{source}: not a {what} file (its 'format' field is "
                            f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    if doc.get("version") != version:
        found = doc.get("version")
        newer = isinstance(found, int) and found > version
        raise GraphDefError(f"{source}: written in {what} format version {found!r}; this "
                            f"gradflow reads version {version}"
                            + ("; upgrade gradflow to read it" if newer else ""))


def _check_document(doc, arrays, source):
    check_header(doc, source)
    nodes = doc.get("node")
    if not isinstance(nodes, list):
        raise GraphDefError(f"{source}: the 'node' field is not a list")
    for k, record in enumerate(nodes):
        problem = _record_problem(record, arrays)
        if problem:
            raise GraphDefError(f"{source}: node {k} ({_name_of(record)}) {problem}")
    return nodes, arrays


def _name_of(record):
    return repr(record.get("name")) if isinstance(record, dict) else "?"


def _record_problem(record, arrays):
    if not isinstance(record, dict):
        return "is not an object"
    extra = set(record) - _NODE_KEYS
    if extra:
        return f"has unknown fields {sorted(extra)}"
    if not isinstance(record.get("name"), str) or not record["name"]:
        return "has no name"
    op = record.get("op")
    if op not in REGISTRY:
        return f"has the unknown op {op!r}"
    if op in _NOT_LOADABLE:
        return f"has the op {op!r}, which is never loaded from a file"
    for key in ("inputs", "control_inputs"):
        if not isinstance(record.get(key), list) or \
                not all(isinstance(i, str) for i in record[key]):
            return f"has a bad {key!r} field (not a list of names)"
    if any(not isinstance(record.get(k), (str, type(None)))
           for k in ("initial_value", "initializer")):
        return "has a bad 'initial_value' or 'initializer' field"
    if not isinstance(record.get("attrs"), dict):
        return "has no 'attrs' object"
    shape = record.get("shape")
    if shape is not None and (not isinstance(shape, list) or not all(
            d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
            for d in shape)):
        return f"has a bad shape {shape!r}"
    try:
        for value in record["attrs"].values():
            _decode(value, arrays, None)
        if record.get("dtype") is not None:
            as_dtype(record["dtype"])
    except (KeyError, TypeError, ValueError) as err:
        return f"has a bad attribute or dtype ({err})"
    return None


def _decode(value, arrays, nodes):
    """An attribute value from its JSON form; ``nodes``: name -> rebuilt node."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        raise TypeError("a bare list (lists and tuples are tagged objects)")
    if not isinstance(value, dict) or len(value) != 1:
        raise TypeError(f"{value!r} is not an attribute value")
    (tag, inner), = value.items()
    if tag in ("tuple", "list") and isinstance(inner, list):
        items = [_decode(v, arrays, nodes) for v in inner]
        return tuple(items) if tag == "tuple" else items
    if tag == "dtype" and isinstance(inner, str):
        return as_dtype(inner)
    if tag == "array" and isinstance(inner, str):
        if inner not in arrays:
            raise KeyError(f"the array {inner!r} is missing")
        if arrays[inner].dtype.kind not in "biuf":
            raise TypeError(f"the array {inner!r} has dtype {arrays[inner].dtype}")
        return HostValue(arrays[inner])
    if tag == "node" and isinstance(inner, str):
        if nodes is None:
            return inner
        if inner not in nodes:
            raise KeyError(f"the node {inner!r} is not built before it")
        return nodes[inner]
    raise TypeError(f"{value!r} is not an attribute value")


# -- GraphDef -> graph -----------------------------------------------------------------------


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
            attrs = {k: _decode(v, self.graph_def.arrays, self.built)
                     for k, v in record["attrs"].items()}
            with self.graph.control_dependencies(controls):
                node = self._make(record, inputs, attrs)
        except GraphDefError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as err:
            raise self._fail(record, f"cannot be rebuilt: {err}") from None
        self._check(record, node, prefix)
        return node

    def _make(self, record, inputs, attrs):
        name = record["name"]
        if record["op"] != "variable":
            return apply(record["op"], inputs, name=name, graph=self.graph, **attrs)
        from gradflow.ops.registry import constant
        from gradflow.ops.state_ops import placeholder
        from gradflow.variables import Variable

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


class _no_scope:
    def __enter__(self):
        return ""

    def __exit__(self, *exc):
        return False


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Write a graph (or GraphDef) to ``logdir/name``: JSON text, or ``.npz`` with
    ``as_text=False`` (TF1 ``tf.train.write_graph``); returns the path.

    >>> gf.train.write_graph(frozen_graph_def, "export", "frozen.npz", as_text=False)
    """
    graph_def = graph_or_graph_def if isinstance(graph_or_graph_def, GraphDef) \
        else as_graph_def(graph_or_graph_def)
    data = graph_def.to_text().encode("utf-8") if as_text else graph_def.SerializeToString()
    path = os.path.join(os.fspath(logdir), name)
    from gradflow.train.saver import _write_atomically

    _write_atomically(path, data)
    return path


def _install():
    """TF1's ``Graph.as_graph_def()`` and ``Session.graph_def`` (installed on import,
    as ``gradflow.ops.overloads`` installs the operators)."""
    from gradflow.session import Session

    Graph.as_graph_def = lambda self, from_version=None, add_shapes=False: \
        GraphDef.of_graph(self)
    Session.graph_def = property(lambda self: GraphDef.of_graph(self.graph),
                                 doc="TF1: the GraphDef of the session's graph.")


_install()
