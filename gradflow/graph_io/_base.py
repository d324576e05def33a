"""The GraphDef object and its error; the other modules of gradflow.graph_io fill it in."""

from __future__ import annotations

import io
import json
import os

import numpy as np

from gradflow.errors import DataLossError, InvalidArgumentError, NotFoundError

FORMAT = "gradflow.GraphDef"
FORMAT_VERSION = 1
_JSON_KEY = "__graph__"
# ops whose attributes hold sub-graphs or Python callables: never rebuilt from a file
_NOT_LOADABLE = ("cond", "while", "while_grad", "tuple_get", "while_loop_var", "py_func")
_NODE_KEYS = {"name", "op", "inputs", "control_inputs", "attrs", "shape", "dtype",
              "trainable", "initial_value", "initializer"}


class GraphDefError(InvalidArgumentError):
    """A graph cannot be written to, or rebuilt from, a GraphDef (the file and fault named)."""


class DamagedGraphDefError(GraphDefError, DataLossError):
    """A graph file's bytes are damaged: cut short, not JSON, a broken archive."""

    error_code = DataLossError.error_code


class GraphDefNotFoundError(GraphDefError, NotFoundError):
    """A graph file that is not there."""

    error_code = NotFoundError.error_code


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
            from gradflow.graph_io.writing import as_graph_def

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
        from gradflow.graph_io.reading import check_document, parse

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


