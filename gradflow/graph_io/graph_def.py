"""The GraphDef object (TF1's ``GraphDef``): a graph's nodes as data, written and read
through ``gradflow.graph_io.writing`` and ``gradflow.graph_io.reading``."""

from __future__ import annotations

import io
import json
import os

import numpy as np

from gradflow.graph_io._base import (
    _JSON_KEY,
    FORMAT,
    FORMAT_VERSION,
    GraphDefError,
    GraphDefNotFoundError,
)
from gradflow.graph_io.reading import check_document, parse
from gradflow.graph_io.writing import graph_records


def as_graph_def(graph=None, output_node_names=None, sess=None, feedable=()) -> GraphDef:
    """The GraphDef of ``graph`` (default: the default graph): every node, or with
    ``output_node_names`` only the nodes those need. With ``sess``, a ``cond`` whose
    predicate needs no feed (a ``training`` switch left at its default) is replaced by
    the branch it takes in ``sess``, as a servable graph wants, unless the predicate
    depends on one of the tensors ``feedable`` (then it is an error)."""
    return GraphDef(*graph_records(graph, output_node_names, sess, feedable))


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
            self._node, self._arrays = graph_records(self.graph)
            self.graph = None
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
        doc, arrays = parse(bytes(data), self.source)
        self.node, self.arrays = check_document(doc, arrays, self.source)
        return len(data)

    @classmethod
    def read(cls, path):
        """The GraphDef in the file at ``path`` (JSON text or ``.npz``)."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise GraphDefNotFoundError(f"graph file {path}: no such file") from None
        except OSError as err:
            raise GraphDefError(f"graph file {path}: cannot be read ({err})") from None
        graph_def = cls(source=path)
        graph_def.ParseFromString(data)
        return graph_def

    def _document(self):
        return {"format": FORMAT, "version": FORMAT_VERSION, "node": self.node}

    def __repr__(self) -> str:
        return f"<gf.GraphDef with {len(self.node)} nodes>"
