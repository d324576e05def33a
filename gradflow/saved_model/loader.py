"""TF1's ``tf.saved_model.loader``: load a SavedModel into a session.

>>> meta = gf.saved_model.loader.load(sess, [gf.saved_model.tag_constants.SERVING], "export/1")
>>> sig = meta.signature_def["serving_default"]
>>> x = sess.graph.get_tensor_by_name(sig.inputs["x"].name)
"""

from __future__ import annotations

import os

import numpy as np

from gradflow.dtypes import as_dtype
from gradflow.graph_io import GraphDefError, import_graph_def
from gradflow.saved_model import _files
from gradflow.saved_model._files import SavedModelError


class MetaGraphDef:
    """What ``load`` returns: the meta graph's tags (``meta_info_def.tags``) and its
    signatures by key (``signature_def``), with tensor names of the loaded graph."""

    class _Info:
        def __init__(self, tags):
            self.tags = sorted(tags)

    def __init__(self, tags, signature_def):
        self.meta_info_def = MetaGraphDef._Info(tags)
        self.signature_def = signature_def

    def __repr__(self) -> str:
        return (f"MetaGraphDef(tags={self.meta_info_def.tags}, "
                f"signature_def={sorted(self.signature_def)})")


def maybe_saved_model_directory(export_dir) -> bool:
    """Whether ``export_dir`` holds a gradflow SavedModel file."""
    return os.path.isfile(os.path.join(os.fspath(export_dir), _files.MODEL_FILE))


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Load the meta graph of ``export_dir`` whose tags are ``tags`` into ``sess.graph``,
    set its variables in ``sess``, and return its :class:`MetaGraphDef`.

    Works on any backend; a missing, damaged or tampered folder, or one written by
    another format version, is a ``SavedModelError`` naming the file and the fault.
    """
    try:
        return _load(sess, {tags} if isinstance(tags, str) else set(tags),
                     os.fspath(export_dir), import_scope)
    except SavedModelError:
        raise
    except GraphDefError as err:  # a fault of the files, in the SavedModel's terms
        raise _files.as_saved_model_error(err) from None


def _load(sess, tags, folder, import_scope):
    doc, arrays = _files.read_model(folder)
    path = os.path.join(folder, _files.MODEL_FILE)
    found = []
    for index in range(len(doc["meta_graphs"])):
        meta_tags, signatures, graph_def = _files.meta_graph_parts(doc, index, arrays, path)
        if meta_tags == tags:
            break
        found.append(sorted(meta_tags))
    else:
        raise SavedModelError(f"SavedModel {folder} has no meta graph with tags {sorted(tags)}; "
                              f"it has {found}")
    if import_scope and any(n.name == import_scope or n.name.startswith(import_scope + "/")
                            for n in sess.graph.nodes):
        raise SavedModelError(f"SavedModel {folder}: the session's graph already has nodes "
                              f"under '{import_scope}/'; load under another import_scope")
    values = _files.read_variables(folder)
    _check_values(graph_def, values, folder)  # the whole file, before anything is assigned
    with sess.graph.as_default():
        import_graph_def(graph_def, name=import_scope or "", variable_values=values)
    prefix = f"{import_scope}/" if import_scope else ""
    for key, sig in signatures.items():
        for info in list(sig.inputs.values()) + list(sig.outputs.values()):
            info.name = prefix + info.name
            try:
                sess.graph.get_tensor_by_name(info.name)
            except KeyError:
                raise SavedModelError(f"{path}: signature {key!r} names {info.name!r}, which "
                                      "the saved graph does not have") from None
    for name, value in values.items():
        sess.load_variable(sess.graph.get_tensor_by_name(prefix + name), value)
    return MetaGraphDef(tags, signatures)


def _check_values(graph_def, values, folder):
    """The variables file holds a value of the right shape and dtype for every variable
    of the saved graph, and nothing else: a value for any other name (a variable the
    session's graph has, but the saved graph does not define) is refused, never
    assigned."""
    where = os.path.join(folder, _files.VARIABLES_DIR, _files.VARIABLES_FILE)
    variables = {r["name"]: r for r in graph_def.node if r["op"] == "variable"}
    extra = sorted(set(values) - set(variables))
    if extra:
        raise SavedModelError(f"SavedModel variables {where} holds values for "
                              f"{', '.join(repr(n) for n in extra[:10])}, which the saved "
                              "graph does not define as variables; nothing was loaded")
    for name, record in variables.items():
        if name not in values:
            raise SavedModelError(f"SavedModel variables {where} has no value for the "
                                  f"variable '{name}'")
        value, shape, dtype = values[name], record.get("shape"), record.get("dtype")
        try:
            want = np.dtype(as_dtype(dtype).as_numpy_dtype)
        except (TypeError, ValueError):
            want = None
        if want is None or shape is None or None in shape:
            raise SavedModelError(f"SavedModel file {os.path.join(folder, _files.MODEL_FILE)}: "
                                  f"the variable '{name}' has the shape {shape!r} and dtype "
                                  f"{dtype!r}, not a known shape and dtype")
        if list(value.shape) != shape or value.dtype != want:
            raise SavedModelError(f"SavedModel variables {where}: '{name}' is {value.dtype} "
                                  f"{list(value.shape)} in the file, the graph expects "
                                  f"{dtype} {shape}")


__all__ = ["MetaGraphDef", "load", "maybe_saved_model_directory"]
