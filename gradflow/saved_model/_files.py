"""The files of a SavedModel folder, and reading them back with every field checked.

    export_dir/saved_model.json         format, version, meta graphs (tags, signatures,
                                        the nodes of each graph as gf.GraphDef JSON)
    export_dir/saved_model.npz          the arrays of the graphs' constants
    export_dir/variables/variables.npz  the variables' values, and a JSON header

Only these fixed names are opened, relative to the folder: nothing read from a
file names a path. Arrays are read through ``gradflow.safe_npz`` (never unpickled, each
size checked before anything is allocated), and the variables file may hold values
for the saved graph's variables only (``loader``). Damaged bytes are a
``DamagedSavedModelError`` (a ``DataLossError``), a missing file a
``SavedModelNotFoundError`` (a ``NotFoundError``), any other fault a
``SavedModelError`` (an ``InvalidArgumentError``).
"""

from __future__ import annotations

import json
import os

import numpy as np

from gradflow.errors import ResourceExhaustedError
from gradflow.graph_io import GraphDef, GraphDefError, check_document, check_header
from gradflow.graph_io._base import DamagedGraphDefError, GraphDefNotFoundError
from gradflow.safe_npz import read_npz

FORMAT = "gradflow.SavedModel"
FORMAT_VERSION = 1
MODEL_FILE = "saved_model.json"
ARRAYS_FILE = "saved_model.npz"
VARIABLES_DIR = "variables"
VARIABLES_FILE = "variables.npz"
_HEADER = "__header__"


class SavedModelError(GraphDefError):
    """A SavedModel folder is missing, damaged, of another version, or does not fit."""


class DamagedSavedModelError(SavedModelError, DamagedGraphDefError):
    """A file of a SavedModel folder is damaged (cut short, not JSON, a broken archive)."""

    error_code = DamagedGraphDefError.error_code


class SavedModelNotFoundError(SavedModelError, GraphDefNotFoundError):
    """A SavedModel folder, or one of its files, is not there."""

    error_code = GraphDefNotFoundError.error_code


def as_saved_model_error(err):
    """A ``GraphDefError`` met reading a SavedModel, as the SavedModel error of its kind."""
    if isinstance(err, SavedModelError):
        return err
    kind = DamagedSavedModelError if isinstance(err, DamagedGraphDefError) else \
        SavedModelNotFoundError if isinstance(err, GraphDefNotFoundError) else SavedModelError
    return kind(str(err))


def write(folder, meta_graphs, variables):
    """Write the files of a SavedModel into the (new, empty) ``folder``.

    ``meta_graphs``: [(tags, {key: SignatureDef}, GraphDef)]; ``variables``: name -> array.
    """
    docs, arrays = [], {}
    for m, (tags, signatures, graph_def) in enumerate(meta_graphs):
        renamed = {k: f"m{m}_{k}" for k in graph_def.arrays}
        arrays.update({renamed[k]: a for k, a in graph_def.arrays.items()})
        nodes = json.loads(json.dumps(graph_def.node))  # a copy to rename array keys in
        for record in nodes:
            _rename_arrays(record["attrs"], renamed)
        docs.append({"tags": sorted(tags),
                     "signature_def": {k: s.to_json() for k, s in signatures.items()},
                     "graph": {"format": "gradflow.GraphDef", "version": 1, "node": nodes}})
    model = {"format": FORMAT, "version": FORMAT_VERSION, "meta_graphs": docs}
    with open(os.path.join(folder, MODEL_FILE), "w", encoding="utf-8") as f:
        json.dump(model, f, indent=1)
    np.savez(os.path.join(folder, ARRAYS_FILE), **arrays)
    os.makedirs(os.path.join(folder, VARIABLES_DIR))
    names = sorted(variables)
    header = json.dumps({"format": "gradflow.SavedModel.variables", "version": FORMAT_VERSION,
                         "names": names}).encode("utf-8")
    np.savez(os.path.join(folder, VARIABLES_DIR, VARIABLES_FILE),
             **{_HEADER: np.frombuffer(header, np.uint8)},
             **{f"v{i}": np.asarray(variables[n]) for i, n in enumerate(names)})


def _rename_arrays(value, renamed):
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "array":
                value[key] = renamed[inner]
            elif isinstance(inner, (dict, list)):
                _rename_arrays(inner, renamed)
    elif isinstance(value, list):
        for inner in value:
            _rename_arrays(inner, renamed)


def read_model(folder):
    """The checked document of ``saved_model.json`` and the graphs' arrays."""
    path = os.path.join(folder, MODEL_FILE)
    if not os.path.isfile(path):
        hint = " (a TensorFlow SavedModel: gradflow reads only its own)" \
            if os.path.isfile(os.path.join(folder, "saved_model.pb")) else ""
        raise SavedModelNotFoundError(f"SavedModel {folder}: no {MODEL_FILE} in it{hint}")
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise DamagedSavedModelError(f"SavedModel file {path} is damaged or unreadable "
                                     f"({type(err).__name__}: {err})") from None
    check_header(doc, path, FORMAT, FORMAT_VERSION)
    if not isinstance(doc.get("meta_graphs"), list) or not doc["meta_graphs"]:
        raise SavedModelError(f"SavedModel file {path}: 'meta_graphs' is not a non-empty list")
    return doc, _read_npz(os.path.join(folder, ARRAYS_FILE))


def meta_graph_parts(doc, index, arrays, path):
    """(tags, {key: SignatureDef}, GraphDef) of meta graph ``index``, checked."""
    from gradflow.saved_model.signature_def_utils import SignatureDef

    where = f"SavedModel file {path}: meta graph {index}"
    meta = doc["meta_graphs"][index]
    if not isinstance(meta, dict) or set(meta) != {"tags", "signature_def", "graph"}:
        raise SavedModelError(f"{where} is not an object of tags, signature_def and graph")
    tags = meta["tags"]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise SavedModelError(f"{where}: 'tags' is not a list of strings")
    if not isinstance(meta["signature_def"], dict):
        raise SavedModelError(f"{where}: 'signature_def' is not an object")
    try:
        signatures = {k: SignatureDef.from_json(v, f"signature {k!r}")
                      for k, v in meta["signature_def"].items()}
    except ValueError as err:
        raise SavedModelError(f"{where}: {err}") from None
    prefix = f"m{index}_"
    mine = {k: a for k, a in arrays.items() if k.startswith(prefix)}
    nodes, mine = check_document(meta["graph"], mine, f"{where} (graph)")
    return set(tags), signatures, GraphDef(nodes, mine, path)


def read_variables(folder):
    """name -> array of ``variables/variables.npz``, checked against its header."""
    path = os.path.join(folder, VARIABLES_DIR, VARIABLES_FILE)
    arrays = _read_npz(path)
    try:
        header = json.loads(arrays.pop(_HEADER).tobytes().decode("utf-8"))
    except (KeyError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise DamagedSavedModelError(f"SavedModel variables {path}: no readable header "
                                     f"({type(err).__name__}: {err})") from None
    check_header(header, path, "gradflow.SavedModel.variables", FORMAT_VERSION)
    names = header.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or \
            len(set(names)) != len(names) or \
            sorted(arrays) != sorted(f"v{i}" for i in range(len(names))):
        raise DamagedSavedModelError(f"SavedModel variables {path}: the header's names do "
                                     "not match the arrays in the file")
    return {n: arrays[f"v{i}"] for i, n in enumerate(names)}


def _read_npz(path):
    if not os.path.isfile(path):
        raise SavedModelNotFoundError(f"SavedModel file {path} is missing")
    try:
        return read_npz(path, f"SavedModel file {path}", DamagedSavedModelError)
    except MemoryError:
        raise ResourceExhaustedError(f"SavedModel file {path}: its arrays take more memory "
                                     "than there is") from None
