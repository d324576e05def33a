"""gradflow's own graph file: TF1's ``GraphDef``, ``tf.train.write_graph`` and
``tf.import_graph_def``.

A :class:`GraphDef` is the nodes of a graph as plain data: for each node its
name, op name, input and control-input names, static shape, dtype and
attributes (numbers, strings, dtypes, tuples of them, other nodes by name, and
arrays, kept apart). It is written as JSON (``as_text=True``, arrays as nested
lists) or as an ``.npz`` archive holding the JSON and the arrays. Reading
never unpickles or evaluates anything: the JSON is checked field by field, each
attribute against the kind of value its op takes (``attr_rules``), each op is
looked up in the op registry by name and rebuilt through it (so its shape rule
checks the attributes; anything it raises names the node), and the rebuilt
shape and dtype must match the recorded ones. A ``print`` read from a file
writes only to stdout, stderr or the log, never to a file the file names. A
file of another format version, or one that fails these checks, is a
:class:`GraphDefError` (an ``InvalidArgumentError``) naming the file and the
fault; damaged bytes are a ``DamagedGraphDefError`` (a ``DataLossError`` too), a
missing file a ``GraphDefNotFoundError`` (a ``NotFoundError``).

>>> gf.train.write_graph(sess.graph, "export", "model.json")
>>> with gf.Graph().as_default() as g:
...     gf.import_graph_def(gf.GraphDef.read("export/model.json"), name="")
"""

from __future__ import annotations

import os

from gradflow.atomic_files import write_atomically
from gradflow.graph import Graph
from gradflow.graph_io._base import FORMAT, FORMAT_VERSION, GraphDefError
from gradflow.graph_io.graph_def import GraphDef, as_graph_def
from gradflow.graph_io.importing import import_graph_def
from gradflow.graph_io.reading import check_document, check_header
from gradflow.session import Session


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Write a graph (or GraphDef) to ``logdir/name``: JSON text, or ``.npz`` with
    ``as_text=False`` (TF1 ``tf.train.write_graph``); returns the path.

    >>> gf.train.write_graph(frozen_graph_def, "export", "frozen.npz", as_text=False)
    """
    graph_def = graph_or_graph_def if isinstance(graph_or_graph_def, GraphDef) \
        else as_graph_def(graph_or_graph_def)
    data = graph_def.to_text().encode("utf-8") if as_text else graph_def.SerializeToString()
    path = os.path.join(os.fspath(logdir), name)
    write_atomically(path, data)
    return path


def _install():
    """TF1's ``Graph.as_graph_def()`` and ``Session.graph_def`` (installed on import,
    as ``gradflow.ops.overloads`` installs the operators)."""
    Graph.as_graph_def = lambda self, from_version=None, add_shapes=False: \
        GraphDef.of_graph(self)
    Graph.as_graph_def.__doc__ = ("TF1: the graph as a GraphDef (``gf.train.write_graph`` "
                                  "writes it).\n\n>>> graph_def = g.as_graph_def()")
    Session.graph_def = property(lambda self: GraphDef.of_graph(self.graph),
                                 doc="TF1: the GraphDef of the session's graph.")


_install()


__all__ = ["FORMAT", "FORMAT_VERSION", "GraphDef", "GraphDefError", "as_graph_def",
           "check_document", "check_header", "import_graph_def", "write_graph"]
