"""gradflow's meta graph file (TF1's ``MetaGraphDef``, the ``.meta`` beside a checkpoint).

A meta graph is a graph's nodes (a :class:`GraphDef`), its collections and the
variables its ``Saver`` saves, under which names. ``Saver.save`` writes one beside
each checkpoint, so that a program that did not build the model rebuilds it with
``gf.train.import_meta_graph`` and restores the checkpoint into it.

The file is gradflow's own format (the GraphDef's JSON inside an ``.npz`` archive,
or JSON text): a meta graph written by gradflow is read by gradflow; TensorFlow's
protobuf ``.meta`` files are refused with an error that says so. Reading checks
every field as ``GraphDef`` reading does, never unpickles and never evaluates: a
collection holds node names and plain numbers or strings only; a collection of
anything else (queue runners, control-flow contexts, Python objects) is left out
when writing, with a warning naming it.
"""

from __future__ import annotations

import io
import json
import os
import weakref

import numpy as np

from gradflow import tf_logging
from gradflow.atomic_files import write_atomically
from gradflow.graph import Tensor, get_default_graph
from gradflow.graph_io._base import (
    _JSON_KEY,
    FORMAT,
    FORMAT_VERSION,
    GraphDefError,
    GraphDefNotFoundError,
)
from gradflow.graph_io.graph_def import GraphDef
from gradflow.graph_io.importing import _Importer
from gradflow.graph_io.reading import check_document, check_header, parse
from gradflow.graph_io.writing import graph_records

META_FORMAT = "gradflow.MetaGraphDef"
META_VERSION = 1
_DOC_KEYS = {"format", "version", "graph", "collections", "saver", "meta_info", "arrays"}
_SAVER_KEYS = {"variables", "max_to_keep", "keep_checkpoint_every_n_hours",
               "pad_step_number", "reshape"}
_SCALARS = (bool, int, float, str, type(None))
_WARNED = weakref.WeakKeyDictionary()  # Graph -> collections it was warned about


class MetaGraphDef:
    """A graph with its collections and its saver's variables (TF1's ``MetaGraphDef``),
    in gradflow's format: ``graph_def`` (a :class:`GraphDef`), ``collection_def``
    (key -> list of ``{"node": name}`` or ``{"value": number or string}``),
    ``saver_def`` (a dict, or None) and ``meta_info_def`` (a dict).

    >>> meta = gf.train.export_meta_graph("model.meta")
    >>> sorted(meta.collection_def)
    ['trainable_variables', 'variables']
    """

    def __init__(self, graph_def=None, collection_def=None, saver_def=None,
                 meta_info_def=None, source="<MetaGraphDef>"):
        self.graph_def = graph_def if graph_def is not None else GraphDef(source=source)
        self.collection_def = dict(collection_def or {})
        self.saver_def = saver_def
        self.meta_info_def = dict(meta_info_def or {})
        self.source = source

    def _document(self):
        return {"format": META_FORMAT, "version": META_VERSION,
                "graph": {"format": FORMAT, "version": FORMAT_VERSION,
                          "node": self.graph_def.node},
                "collections": self.collection_def, "saver": self.saver_def,
                "meta_info": self.meta_info_def}

    def SerializeToString(self) -> bytes:  # noqa: N802 - TF1 name
        """The ``.npz`` bytes (what ``Saver.save`` writes to ``<prefix>.meta``), deflated:
        the constants of a graph (an optimizer's zero slots) shrink to little."""
        buffer = io.BytesIO()
        header = json.dumps(self._document()).encode("utf-8")
        np.savez_compressed(buffer, **{_JSON_KEY: np.frombuffer(header, np.uint8)},
                 **self.graph_def.arrays)
        return buffer.getvalue()

    def to_text(self) -> str:
        """The JSON text, arrays written in it as nested lists (``as_text=True``)."""
        doc = self._document()
        doc["arrays"] = {k: {"dtype": a.dtype.name, "shape": list(a.shape),
                             "values": a.tolist()} for k, a in self.graph_def.arrays.items()}
        return json.dumps(doc, indent=1)

    def ParseFromString(self, data: bytes):  # noqa: N802 - TF1 name
        """Read ``data`` (what ``SerializeToString`` or ``to_text`` made) into this object."""
        data = bytes(data)
        _refuse_foreign(data, self.source)
        doc, arrays = parse(data, self.source)
        check_header(doc, self.source, META_FORMAT, META_VERSION)
        extra = set(doc) - _DOC_KEYS
        if extra:
            raise GraphDefError(f"{self.source}: unknown fields {sorted(extra)}")
        nodes, arrays = check_document(doc.get("graph"), arrays, self.source)
        names = _node_names(nodes)
        self.graph_def = GraphDef(nodes, arrays, source=self.source)
        self.collection_def = _checked_collections(doc.get("collections"), names, self.source)
        self.saver_def = _checked_saver(doc.get("saver"), names, self.source)
        info = doc.get("meta_info")
        if not isinstance(info, dict):
            raise GraphDefError(f"{self.source}: the 'meta_info' field is not an object")
        self.meta_info_def = info
        return len(data)

    @classmethod
    def read(cls, path):
        """The MetaGraphDef in the file at ``path``."""
        path = os.fspath(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise GraphDefNotFoundError(_missing_message(path)) from None
        except OSError as err:
            raise GraphDefError(f"meta graph file {path}: cannot be read ({err})") from None
        meta = cls(source=path)
        meta.ParseFromString(data)
        return meta

    def __repr__(self) -> str:
        return (f"<gf.MetaGraphDef with {len(self.graph_def.node)} nodes, "
                f"{len(self.collection_def)} collections>")


def _missing_message(path):
    message = f"meta graph file {path}: no such file"
    prefix = path[:-5] if path.endswith(".meta") else None
    if prefix and (os.path.exists(prefix) or os.path.exists(prefix + ".index")):
        message += (f" (the checkpoint {prefix} is there: Saver.save writes the .meta only "
                    "when write_meta_graph=True and every node of the graph can be written; "
                    "a warning says which could not)")
    return message


def _refuse_foreign(data, source):
    """A file that is neither an archive nor JSON: most likely TensorFlow's protobuf."""
    head = data[:64].lstrip()
    if data and not data.startswith(b"PK") and not head.startswith(b"{"):
        raise GraphDefError(
            f"meta graph file {source} is not a gradflow meta graph (it is neither an .npz "
            "archive nor JSON: a TensorFlow MetaGraphDef protobuf?). gradflow reads the meta "
            "graphs gradflow writes; for a TensorFlow checkpoint, build the model in code "
            "and restore the checkpoint with gf.train.Saver().restore(sess, prefix)")


def _node_names(nodes):
    names = set()
    for record in nodes:
        names.add(record["name"])
        if record.get("initializer"):
            names.add(record["initializer"])
    return names


def _checked_collections(spec, names, source):
    if not isinstance(spec, dict):
        raise GraphDefError(f"{source}: the 'collections' field is not an object")
    for key, items in spec.items():
        if not isinstance(items, list):
            raise GraphDefError(f"{source}: collection {key!r} is not a list")
        for item in items:
            if not isinstance(item, dict) or len(item) != 1:
                raise GraphDefError(f"{source}: collection {key!r} holds {item!r}, which is "
                                    "neither {'node': name} nor {'value': scalar}")
            (tag, value), = item.items()
            if tag == "node" and isinstance(value, str):
                if value not in names:
                    raise GraphDefError(f"{source}: collection {key!r} names the node "
                                        f"{value!r}, which the graph does not have")
            elif tag != "value" or not isinstance(value, _SCALARS):
                raise GraphDefError(f"{source}: collection {key!r} holds {item!r}, which is "
                                    "neither {'node': name} nor {'value': scalar}")
    return spec


def _checked_saver(spec, names, source):
    if spec is None:
        return None
    if not isinstance(spec, dict) or set(spec) - _SAVER_KEYS or \
            not isinstance(spec.get("variables"), list):
        raise GraphDefError(f"{source}: the 'saver' field is not a saver description")
    for pair in spec["variables"]:
        if not (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(p, str) for p in pair)):
            raise GraphDefError(f"{source}: the saver's variable entry {pair!r} is not "
                                "[saved name, node name]")
        if pair[1] not in names:
            raise GraphDefError(f"{source}: the saver saves the node {pair[1]!r}, which the "
                                "graph does not have")
    keep, hours = spec.get("max_to_keep"), spec.get("keep_checkpoint_every_n_hours")
    if not (keep is None or (isinstance(keep, int) and not isinstance(keep, bool)
                             and keep >= 0)) or not (
            hours is None or (isinstance(hours, (int, float)) and not isinstance(hours, bool)
                              and hours > 0)) or not all(
            isinstance(spec.get(k, False), bool) for k in ("pad_step_number", "reshape")):
        raise GraphDefError(f"{source}: the saver's settings are damaged")
    return spec


# -- writing -------------------------------------------------------------------------


def saver_def_of(saver):
    """The saver description of a ``gf.train.Saver``: its variables by saved name and
    its rotation settings (what ``import_meta_graph`` makes its Saver from)."""
    hours = saver._keep_every / 3600 if saver._keep_every else None
    return {"variables": [[name, var.name] for name, var in saver._vars.items()],
            "max_to_keep": saver._max_to_keep, "keep_checkpoint_every_n_hours": hours,
            "pad_step_number": saver._pad_step_number, "reshape": saver._reshape}


def create_meta_graph_def(graph=None, saver_def=None, collection_list=None,
                          meta_info_def=None, strict=True):
    """The MetaGraphDef of ``graph`` (default: the default graph). Collections of
    anything but nodes and plain values are left out with a warning; with
    ``strict=False`` a graph that cannot be written returns None (and a warning)."""
    graph = graph if graph is not None else get_default_graph()
    try:
        nodes, arrays = graph_records(graph)
    except GraphDefError as err:
        if strict:
            raise
        tf_logging.warning("no meta graph is written: %s", err)
        return None
    names = _node_names(nodes)
    collections, skipped = {}, []
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in keys:
        if key == "savers":  # Saver objects: the file's saver description stands for them
            continue
        items = [_entry(item, names) for item in graph.get_collection(key)]
        if any(item is None for item in items):
            skipped.append(key)
        elif items:
            collections[key] = items
    news = set(map(str, skipped)) - _WARNED.setdefault(graph, set())
    if news:  # once per graph and collection: Saver.save writes a meta graph each time
        _WARNED[graph] |= news
        tf_logging.warning("the meta graph leaves out the collections %s: they hold items "
                           "other than graph nodes and plain values", sorted(news))
    info = {"gradflow_meta_graph": META_VERSION, **(meta_info_def or {})}
    return MetaGraphDef(GraphDef(nodes, arrays), collections, saver_def, info)


def _entry(item, names):
    if isinstance(item, Tensor):
        return {"node": item.name} if item.name in names else None
    if isinstance(item, _SCALARS):
        return {"value": item}
    return None


def write_meta_graph(meta, filename, as_text=False):
    """Write ``meta`` to ``filename`` atomically; returns the path."""
    data = meta.to_text().encode("utf-8") if as_text else meta.SerializeToString()
    write_atomically(os.fspath(filename), data)
    return os.fspath(filename)


def write_saver_meta_graph(saver, sess, checkpoint, suffix):
    """What ``Saver.save`` does by default: write ``<checkpoint>.<suffix>`` (the session's
    graph, its collections and ``saver``). The Saver's rotation deletes it with its
    checkpoint (``gradflow.train.checkpoint_files``), in that checkpoint's folder only. A
    graph that cannot be written (sub-graphs, Python code) gets no meta graph and a
    warning; the checkpoint is saved all the same."""
    meta = create_meta_graph_def(sess.graph, saver_def_of(saver), strict=False)
    if meta is not None:
        write_meta_graph(meta, f"{checkpoint}.{suffix}")


# -- importing -----------------------------------------------------------------------


def import_meta_graph_def(meta, import_scope=None, input_map=None, graph=None):
    """Rebuild ``meta``'s nodes in ``graph`` (default: the default graph) under the name
    scope ``import_scope`` and restore its collections; returns file name -> node."""
    graph = graph if graph is not None else get_default_graph()
    if not isinstance(meta, MetaGraphDef):
        raise TypeError(f"expected a gf.MetaGraphDef, got {type(meta).__name__}")
    before = {k: graph.get_collection(k) for k in graph.get_all_collection_keys()}
    built = _Importer(graph, meta.graph_def, input_map or {}, {}).run(import_scope or "")
    # the file's collections are the truth: drop what building the variables added
    for key in set(graph.get_all_collection_keys()) | set(meta.collection_def):
        ref = graph.get_collection_ref(key)
        ref[:] = before.get(key, [])
        for item in meta.collection_def.get(key, []):
            (tag, value), = item.items()
            ref.append(built[value] if tag == "node" else value)
    return built


__all__ = ["META_FORMAT", "META_VERSION", "MetaGraphDef", "create_meta_graph_def",
           "import_meta_graph_def", "saver_def_of", "write_meta_graph",
           "write_saver_meta_graph"]
