"""TF1's ``tf.train.export_meta_graph`` and ``tf.train.import_meta_graph``: a graph, its
collections and its saver in one file, so that a program that did not build a model
restores it from a checkpoint.

``Saver.save`` writes ``<prefix>.meta`` by default; an inference script then does,
in a fresh process::

    saver = gf.train.import_meta_graph("model.ckpt.meta")
    with gf.Session() as sess:
        saver.restore(sess, "model.ckpt")
        y = sess.run(gf.get_default_graph().get_tensor_by_name("y:0"), {"x:0": batch})

The file is gradflow's meta graph format (``gradflow.graph_io.meta_graph``): gradflow
reads what gradflow wrote, and refuses TensorFlow's protobuf ``.meta`` with an error
that says so. Devices are not recorded in gradflow graphs, so ``clear_devices`` has
nothing to clear.
"""

from __future__ import annotations

import os

from gradflow.graph import get_default_graph
from gradflow.graph_io.graph_def import GraphDef
from gradflow.graph_io.meta_graph import (
    MetaGraphDef,
    create_meta_graph_def,
    import_meta_graph_def,
    saver_def_of,
    write_meta_graph,
)
from gradflow.train.saver import Saver
from gradflow.variables import GLOBAL_VARIABLES, Variable

__all__ = ["MetaGraphDef", "export_meta_graph", "import_meta_graph"]


def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """The MetaGraphDef of ``graph`` (default: the default graph), written to ``filename``
    when given (``.npz`` bytes, or JSON with ``as_text=True``). ``saver_def`` is a
    ``Saver`` or what ``saver.as_saver_def()`` returns; ``collection_list`` the
    collection keys to keep (default all); ``graph_def`` a GraphDef of the graph to
    write instead of all its nodes. ``clear_devices``, ``clear_extraneous_savers``,
    ``strip_default_attrs`` and ``save_debug_info`` change nothing in gradflow's file.

    >>> gf.train.export_meta_graph("model.meta", saver_def=saver.as_saver_def())
    """
    if export_scope:
        raise NotImplementedError("export_meta_graph(export_scope=...) is not supported: "
                                  "export the whole graph and import it with import_scope=")
    unknown = set(kwargs) - {"meta_graph_suffix"}
    if unknown:
        raise TypeError(f"export_meta_graph: unexpected arguments {sorted(unknown)}")
    graph = graph if graph is not None else get_default_graph()
    if isinstance(saver_def, Saver):
        saver_def = saver_def_of(saver_def)
    elif saver_def is not None and not isinstance(saver_def, dict):
        raise TypeError("export_meta_graph: saver_def must be a gf.train.Saver or what "
                        f"saver.as_saver_def() returns, got {type(saver_def).__name__}")
    meta = create_meta_graph_def(graph, saver_def, collection_list, meta_info_def)
    if graph_def is not None:
        if not isinstance(graph_def, GraphDef):
            raise TypeError(f"export_meta_graph: graph_def must be a gf.GraphDef, got "
                            f"{type(graph_def).__name__}")
        meta = _with_nodes(meta, graph_def)
    if filename is not None:
        write_meta_graph(meta, filename, as_text=as_text)
    return meta


def _with_nodes(meta, graph_def):
    """``meta`` with the nodes of ``graph_def``; collection items it lacks are dropped."""
    names = {r["name"] for r in graph_def.node} | \
        {r["initializer"] for r in graph_def.node if r.get("initializer")}
    collections = {}
    for key, items in meta.collection_def.items():
        kept = [i for i in items if "node" not in i or i["node"] in names]
        if kept:
            collections[key] = kept
    saver = meta.saver_def
    if saver is not None and any(node not in names for _, node in saver["variables"]):
        saver = None
    return MetaGraphDef(GraphDef(graph_def.node, graph_def.arrays), collections, saver,
                        meta.meta_info_def)


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Rebuild the graph of a meta graph file (or ``MetaGraphDef``) in the default graph,
    under the name scope ``import_scope``, with its collections (``gf.get_collection``
    finds what the program that saved it put there); returns a ``Saver`` of its
    variables, under the names they were saved with, or None when it has none.
    ``input_map`` (name -> tensor) replaces nodes of the file by tensors.

    >>> saver = gf.train.import_meta_graph("model.ckpt-1000.meta")
    >>> saver.restore(sess, "model.ckpt-1000")
    """
    input_map = kwargs.pop("input_map", None)
    kwargs.pop("return_elements", None)
    unknown = set(kwargs)
    if unknown:
        raise TypeError(f"import_meta_graph: unexpected arguments {sorted(unknown)}")
    if isinstance(meta_graph_or_file, MetaGraphDef):
        meta = meta_graph_or_file
    elif isinstance(meta_graph_or_file, (str, os.PathLike)):
        meta = MetaGraphDef.read(meta_graph_or_file)
    else:
        raise TypeError("import_meta_graph: expected a file name or a gf.MetaGraphDef, got "
                        f"{type(meta_graph_or_file).__name__}")
    built = import_meta_graph_def(meta, import_scope, input_map)
    spec = meta.saver_def
    if spec is not None:
        var_list = {name: built[node] for name, node in spec["variables"]}
        settings = {k: spec[k] for k in ("max_to_keep", "keep_checkpoint_every_n_hours",
                                         "pad_step_number", "reshape") if k in spec}
    else:
        saved = {id(v) for v in get_default_graph().get_collection(GLOBAL_VARIABLES)}
        var_list = {name: node for name, node in built.items()
                    if isinstance(node, Variable) and id(node) in saved}
        settings = {}
    if not var_list:
        return None
    return Saver(var_list=var_list, **settings)


def _as_saver_def(self):
    """TF1: the saver's description (its variables by saved name, its rotation
    settings), what ``export_meta_graph(saver_def=...)`` takes.

    >>> gf.train.export_meta_graph("m.meta", saver_def=saver.as_saver_def())
    """
    return saver_def_of(self)


def _saver_export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                             export_scope=None, clear_devices=False,
                             clear_extraneous_savers=False, strip_default_attrs=False,
                             save_debug_info=False):
    """TF1: ``gf.train.export_meta_graph`` of the default graph with this saver.

    >>> saver.export_meta_graph("model.meta")
    """
    return export_meta_graph(filename, collection_list=collection_list, as_text=as_text,
                             export_scope=export_scope, saver_def=self)


def _install():
    Saver.as_saver_def = _as_saver_def
    Saver.saver_def = property(_as_saver_def, doc="TF1: ``as_saver_def()``.")
    Saver.export_meta_graph = _saver_export_meta_graph


_install()
