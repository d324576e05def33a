"""The ``decode_csv`` primitive: lines of text to one array per column, on the host
(``gradflow.ops.csv_ops`` builds it). Each column has a dtype (int32, int64, float32,
float64 or string) and the value of an empty field (None: the column is required).
"""

from __future__ import annotations

import csv

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


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


def _decode_impl(run_state, node):
    columns, delim = node.attrs["columns"], node.attrs["field_delim"]
    quoting = csv.QUOTE_MINIMAL if node.attrs["use_quote_delim"] else csv.QUOTE_NONE
    to_host, device = run_state.backend.host_value, run_state.backend.device_value

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


register("decode_csv", _decode_impl, declared, grad=None, kind="call", takes_strings=True)
