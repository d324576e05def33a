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

import csv

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.ops.array_ops import static_value
from gradflow.ops.control_flow_ops import VARIANT, _pick
from gradflow.ops.dataset_ops import _declared
from gradflow.prim.registry import apply, convert_to_tensor, register

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


def _parse_field(text, dtype, default, where):
    if text == "":
        if default is None:
            raise InvalidArgumentError(f"{where} is empty, and the column has no default")
        return default
    if dtype is dtypes.string:
        return text.encode()
    try:
        number = int(text) if dtype.is_integer else float(text)
    except ValueError:
        raise InvalidArgumentError(f"{where}: {text!r} is not a {dtype.name}") from None
    if dtype.is_integer and not int(dtype.min) <= number <= int(dtype.max):
        raise InvalidArgumentError(f"{where}: {number} is out of the {dtype.name} range")
    return number


def _decode_impl(session, node):
    columns, delim = node.attrs["columns"], node.attrs["field_delim"]
    quoting = csv.QUOTE_MINIMAL if node.attrs["use_quote_delim"] else csv.QUOTE_NONE
    to_host, device = session.backend.host_value, session.backend.device_value

    def run(records):
        lines = np.asarray(to_host(records), dtype=object)
        values = [[] for _ in columns]
        for index, line in enumerate(lines.ravel()):
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
            where = f"decode_csv '{node.name}': record {index}"
            try:
                rows = list(csv.reader([text], delimiter=delim, quoting=quoting, strict=True))
            except csv.Error as err:
                raise InvalidArgumentError(f"{where}: {err} ({text!r})") from None
            fields = rows[0] if rows else [""]  # an empty line: one empty field
            if len(fields) != len(columns):
                raise InvalidArgumentError(f"{where} has {len(fields)} fields, the "
                                           f"record_defaults {len(columns)} ({text!r})")
            for k, (field, (dtype, default)) in enumerate(zip(fields, columns)):
                values[k].append(_parse_field(field, dtype, default, f"{where}, column {k}"))
        out = []
        for column, (dtype, _) in zip(values, columns):
            if dtype is dtypes.string:
                array = dtypes.bytes_array(column if column else []).reshape(lines.shape)
            else:
                array = np.asarray(column, dtype=dtype.as_numpy_dtype).reshape(lines.shape)
            out.append(device(array))
        return tuple(out)

    return run


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
    return [_pick(node, k, shape, dtype) for k, (dtype, _) in enumerate(columns)]


register("decode_csv", _decode_impl, _declared, grad=None, kind="call", takes_strings=True)
