"""Reading a GraphDef's bytes and checking every field: no pickle, no code, known ops."""

from __future__ import annotations

import io
import json

import numpy as np

from gradflow.dtypes import as_dtype
from gradflow.graph_io._base import (
    _JSON_KEY,
    _NODE_KEYS,
    _NOT_LOADABLE,
    FORMAT,
    FORMAT_VERSION,
    GraphDefError,
)
from gradflow.ops.registry import REGISTRY, HostValue


def parse(data, source):
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


def check_document(doc, arrays, source):
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
    if op not in REGISTRY or REGISTRY[op].plan_only:  # plan ops are never in a graph
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
            decode(value, arrays, None)
        if record.get("dtype") is not None:
            as_dtype(record["dtype"])
    except (KeyError, TypeError, ValueError) as err:
        return f"has a bad attribute or dtype ({err})"
    return None


def decode(value, arrays, nodes):
    """An attribute value from its JSON form; ``nodes``: name -> rebuilt node."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        raise TypeError("a bare list (lists and tuples are tagged objects)")
    if not isinstance(value, dict) or len(value) != 1:
        raise TypeError(f"{value!r} is not an attribute value")
    (tag, inner), = value.items()
    if tag in ("tuple", "list") and isinstance(inner, list):
        items = [decode(v, arrays, nodes) for v in inner]
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
