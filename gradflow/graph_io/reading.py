"""Reading a GraphDef's bytes and checking every field: no pickle, no code, known ops."""

from __future__ import annotations

import io
import json

import numpy as np

from gradflow.dtypes import as_dtype
from gradflow.errors import ResourceExhaustedError
from gradflow.graph_io._base import (
    _JSON_KEY,
    _NODE_KEYS,
    _NOT_LOADABLE,
    FORMAT,
    FORMAT_VERSION,
    DamagedGraphDefError,
    GraphDefError,
)
from gradflow.graph_io.attr_rules import attr_problem
from gradflow.prim.registry import REGISTRY, HostValue
from gradflow.safe_npz import read_npz


def parse(data, source):
    """(document, arrays) from ``.npz`` bytes or JSON text."""
    where = f"graph file {source}"
    try:
        if data.startswith(b"PK"):
            arrays = read_npz(io.BytesIO(data), where, DamagedGraphDefError)
            if _JSON_KEY not in arrays:
                raise GraphDefError(f"{where}: an .npz archive without a {_JSON_KEY} entry, "
                                    "not a gradflow GraphDef")
            doc = json.loads(arrays.pop(_JSON_KEY).tobytes().decode("utf-8"))
            return doc, arrays
        doc = json.loads(data.decode("utf-8"))
    except GraphDefError:
        raise
    except MemoryError:
        raise ResourceExhaustedError(f"{where}: too large to read into memory") from None
    except Exception as err:  # unicode and JSON errors (RecursionError for deep nesting)
        raise DamagedGraphDefError(f"{where}: damaged or not a gradflow GraphDef "
                                   f"({type(err).__name__}: {err})") from None
    return doc, _text_arrays(doc.get("arrays") if isinstance(doc, dict) else None, source)


def _text_arrays(spec, source):
    arrays = {}
    if spec is not None and not isinstance(spec, dict):
        raise GraphDefError(f"graph file {source}: 'arrays' is not an object")
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
    # plan ops are never in a graph
    if not isinstance(op, str) or op not in REGISTRY or REGISTRY[op].plan_only:
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
        attrs = {k: decode(v, arrays, None) for k, v in record["attrs"].items()}
        if record.get("dtype") not in (None, "variant"):  # variant: what print computes
            as_dtype(record["dtype"])
    except (KeyError, TypeError, ValueError) as err:
        return f"has a bad attribute or dtype ({err})"
    for key, value in attrs.items():
        problem = attr_problem(op, key, value)
        if problem:
            return problem
    return None


_DEEPEST = 16  # tuples in tuples: gradflow's attributes nest three deep at most


def decode(value, arrays, nodes, depth=0):
    """An attribute value from its JSON form; ``nodes``: name -> rebuilt node."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > _DEEPEST:
        raise TypeError(f"tuples nested deeper than {_DEEPEST}")
    if isinstance(value, list):
        raise TypeError("a bare list (lists and tuples are tagged objects)")
    if not isinstance(value, dict) or len(value) != 1:
        raise TypeError(f"{value!r} is not an attribute value")
    (tag, inner), = value.items()
    if tag in ("tuple", "list") and isinstance(inner, list):
        items = [decode(v, arrays, nodes, depth + 1) for v in inner]
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
