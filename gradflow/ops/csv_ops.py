"""``tf.decode_csv``: lines of text (``TextLineReader``'s records, a
``TextLineDataset``'s lines) to one tensor per column, on the host.

``record_defaults`` gives each column its dtype (int32, int64, float32, float64 or
string) and the value of an empty field; an empty default (``[]``) makes the column
required. Fields may be quoted (``"a, b"``, ``""`` for a quote inside). A record with
another number of fields, a required field left empty, or text that is not a number of
its column's type fails naming the record and the column.

>>> line = gf.TextLineReader(skip_header_lines=1).read(queue)[1]
>>> width, height, label = gf.decode_csv(line, record_defaults=[[0.0], [0.0], [0]])
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import static_value
from gradflow.prim import csv as _csv  # noqa: F401 - registers "decode_csv"
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["decode_csv"]

_TYPES = (dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64, dtypes.string)


def _column(default, k):
    """``(dtype, default value or None)`` of column ``k`` from its ``record_defaults`` entry."""
    tensor = convert_to_tensor(default)  # [] is an empty float32 tensor, as in TF1
    if tensor.dtype not in _TYPES:
        raise TypeError(f"decode_csv: column {k} must be int32, int64, float32, float64 or "
                        f"string, got {tensor.dtype.name}")
    value = static_value(tensor)
    if value is None:
        raise ValueError(f"decode_csv: record_defaults[{k}] must be known when the graph is "
                         "built")
    flat = np.asarray(value, dtype=object).ravel().tolist()
    if len(flat) > 1:
        raise ValueError(f"decode_csv: record_defaults[{k}] holds {len(flat)} values; give "
                         "one, or none for a required column")
    return tensor.dtype, (flat[0] if flat else None)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """One tensor per column of the CSV ``records`` (a string tensor of any shape), each
    of ``records``' shape (see the module)."""
    if na_value or select_cols is not None:
        raise NotImplementedError("decode_csv: na_value and select_cols are not supported")
    if len(field_delim) != 1:
        raise ValueError(f"decode_csv: field_delim must be one character, got {field_delim!r}")
    x = convert_to_tensor(records, dtype=dtypes.string)
    if x.dtype is not dtypes.string:
        raise TypeError(f"decode_csv: '{x.name}' must be a string tensor")
    columns = tuple(_column(d, k) for k, d in enumerate(record_defaults))
    if not columns:
        raise ValueError("decode_csv: record_defaults is empty")
    node = apply("decode_csv", [x], name=name or "DecodeCSV", columns=columns,
                 field_delim=field_delim, use_quote_delim=bool(use_quote_delim),
                 shape=None, dtype=VARIANT)
    shape = x.shape
    return [pick(node, k, shape, dtype) for k, (dtype, _) in enumerate(columns)]
