"""The ``parse_example`` primitive: serialized ``tf.train.Example`` records to the arrays
of the features asked for, on the host (TF1's ``tf.parse_example``, built by
``gradflow.ops.parsing_ops``)."""

from __future__ import annotations

import math

import numpy as np

from gradflow import dtypes
from gradflow.errors import DataLossError, InvalidArgumentError
from gradflow.example import Example
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

LISTS = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}


def _host_array(values, dtype):
    if dtype is dtypes.string:
        return dtypes.bytes_array(list(values))
    return np.asarray(values, dtype=dtype.as_numpy_dtype)


def _sparse_parts(rows, dtype, single):
    """The indices, values and dense shape of the ``SparseTensor`` of a variable-length
    feature whose records hold the value lists ``rows``."""
    width = max([len(r) for r in rows] + [0])
    if single:
        indices = np.arange(width, dtype=np.int64).reshape(-1, 1)
        shape = [width]
    else:
        indices = np.array([[b, i] for b, r in enumerate(rows) for i in range(len(r))],
                           np.int64).reshape(-1, 2)
        shape = [len(rows), width]
    values = _host_array([v for r in rows for v in r], dtype)
    return indices, values, np.asarray(shape, np.int64)


def _values(example, key, dtype, shape, default, where):
    """One feature of one parsed ``Example`` as an array of ``shape``."""
    if key not in example.features.feature:
        if default is None:
            raise InvalidArgumentError(f"{where}: feature '{key}' ({dtype.name}) is required "
                                       "but the record does not have it")
        values = list(default)
    else:
        values = _listed(example.features.feature[key], key, dtype, where)
    if len(values) != math.prod(shape):
        raise InvalidArgumentError(f"{where}: feature '{key}' has {len(values)} values, its "
                                   f"shape {list(shape)} needs {math.prod(shape)}")
    return _host_array(values, dtype).reshape(shape)


def _listed(feature, key, dtype, where):
    kind = feature.WhichOneof("kind")
    if kind != LISTS[dtype]:
        raise InvalidArgumentError(f"{where}: feature '{key}' holds a {kind}, not the "
                                   f"{LISTS[dtype]} of a {dtype.name} feature")
    return getattr(feature, kind).value


def _parse_impl(run_state, node):
    specs, single = node.attrs["specs"], node.attrs["single"]
    to_host, device = run_state.backend.host_value, run_state.backend.device_value

    def run(serialized):
        records = np.asarray(to_host(serialized), dtype=object)
        columns = [[] for _ in specs]
        for index, record in enumerate(records.ravel()):
            where = f"{node.opdef.name} '{node.name}'" + ("" if single else f", record {index}")
            try:
                example = Example.FromString(record)
            except DataLossError as err:
                raise InvalidArgumentError(f"{where}: not a tf.train.Example ({err})") from None
            for column, (key, dtype, shape, default) in zip(columns, specs):
                if shape is None:  # a VarLenFeature: whatever values the record has
                    listed = example.features.feature
                    column.append(list(_listed(listed[key], key, dtype, where))
                                  if key in listed else [])
                else:
                    column.append(_values(example, key, dtype, shape, default, where))
        out = []
        for column, (_, dtype, shape, _) in zip(columns, specs):
            if shape is None:
                out += [device(a) for a in _sparse_parts(column, dtype, single)]
                continue
            kind = object if dtype is dtypes.string else dtype.as_numpy_dtype
            stacked = np.stack(column) if column else np.empty((0,) + shape, kind)
            # a reshape, never an index: an element of an object array is bare bytes, which
            # NumPy would make an "S" array (and strip its trailing zero bytes)
            out.append(device(stacked.reshape(records.shape + shape)))
        return tuple(out)

    return run


register("parse_example", _parse_impl, declared, grad=None, kind="call", takes_strings=True)
