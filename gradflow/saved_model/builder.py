"""TF1's ``tf.saved_model.builder.SavedModelBuilder``: a servable model in a folder.

>>> builder = gf.saved_model.builder.SavedModelBuilder("export/1")
>>> builder.add_meta_graph_and_variables(
...     sess, [gf.saved_model.tag_constants.SERVING],
...     signature_def_map={"serving_default": signature})
>>> builder.save()
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from gradflow.graph_io import as_graph_def
from gradflow.saved_model import _files
from gradflow.saved_model.signature_def_utils import SignatureDef


class SavedModelBuilder:
    """Collects meta graphs (tags, signatures, the graph part they need) and the
    variables' values, and writes them to ``export_dir`` on ``save()``.

    Each meta graph keeps the nodes its signatures need: a ``cond`` on a switch
    that is not a signature input (``training``) keeps the branch the session
    takes, so batch norm and dropout are saved in inference mode. The folder is
    written whole to a temporary folder beside it, then renamed into place.
    """

    def __init__(self, export_dir):
        self._export_dir = os.fspath(export_dir)
        if os.path.exists(self._export_dir) and (not os.path.isdir(self._export_dir)
                                                 or os.listdir(self._export_dir)):
            raise AssertionError(f"Export directory already exists, and isn't empty: "
                                 f"{self._export_dir}; choose another export directory or "
                                 "delete its contents")
        self._sess = None
        self._variables: dict = {}
        self._meta_graphs: list = []

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None, init_op=None,
                                     train_op=None):
        """Record the first meta graph and the values of the graph's global variables in
        ``sess`` (taken now). Assets, init ops and devices are not saved (accepted and
        ignored: a gradflow SavedModel needs no init op)."""
        if self._sess is not None:
            raise AssertionError("add_meta_graph_and_variables: called twice; use "
                                 "add_meta_graph for further meta graphs")
        self._sess = sess
        from gradflow.variables import GLOBAL_VARIABLES

        variables = sess.graph.get_collection(GLOBAL_VARIABLES)
        values = sess.run(variables) if variables else []
        self._variables = {v.name: np.asarray(a) for v, a in zip(variables, values)}
        self.add_meta_graph(tags, signature_def_map)

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None, init_op=None, train_op=None):
        """Record another meta graph of the same graph, under other ``tags``."""
        if self._sess is None:
            raise AssertionError("add_meta_graph: call add_meta_graph_and_variables first")
        tags = [tags] if isinstance(tags, str) else list(tags or [])
        if not tags or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"SavedModelBuilder: tags must be a non-empty list of strings, "
                             f"got {tags!r}")
        if any(set(tags) == set(t) for t, _, _ in self._meta_graphs):
            raise AssertionError(f"SavedModelBuilder: a meta graph with tags {sorted(tags)} "
                                 "was added already")
        signatures = dict(signature_def_map or {})
        for key, sig in signatures.items():
            if not isinstance(sig, SignatureDef):
                raise TypeError(f"signature_def_map[{key!r}] must be a SignatureDef (from "
                                "predict_signature_def or build_signature_def), got "
                                f"{type(sig).__name__}")
        names = [info.name for sig in signatures.values()
                 for info in list(sig.inputs.values()) + list(sig.outputs.values())]
        feedable = [self._sess.graph.get_tensor_by_name(info.name)
                    for sig in signatures.values() for info in sig.inputs.values()]
        graph_def = as_graph_def(self._sess.graph, [n[:-2] if n.endswith(":0") else n
                                                    for n in names], self._sess, feedable)
        self._meta_graphs.append((tags, signatures, graph_def))

    def save(self, as_text=False):
        """Write the folder; returns its path (``as_text`` is accepted: the graph is JSON)."""
        if not self._meta_graphs:
            raise AssertionError("SavedModelBuilder.save: nothing to save; call "
                                 "add_meta_graph_and_variables first")
        needed = {r["name"] for _, _, g in self._meta_graphs for r in g.node
                  if r["op"] == "variable"}
        values = {n: a for n, a in self._variables.items() if n in needed}
        parent = os.path.dirname(os.path.abspath(self._export_dir))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".saved_model.")
        try:
            _files.write(tmp, self._meta_graphs, values)
            if os.path.isdir(self._export_dir):
                os.rmdir(self._export_dir)  # empty: checked when the builder was made
            os.rename(tmp, self._export_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self._export_dir


__all__ = ["SavedModelBuilder"]
