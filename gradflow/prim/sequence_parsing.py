"""The ``parse_sequence_example`` primitive: serialized ``tf.train.SequenceExample``
records to the arrays of the context and sequence features asked for, on the host
(TF1's ``tf.parse_single_sequence_example`` and ``tf.io.parse_sequence_example``, built
by ``gradflow.ops.sequence_parsing_ops``).

Its value is a tuple: the context features as ``parse_example`` gives them, then each
sequence feature (a dense ``[steps, *shape]`` array, with the batch first and the
shorter records padded with zeros; or the three parts of a ``SparseTensor`` of
``[steps, values]``), then, for a batch, the number of steps of each record for each
dense sequence feature.
"""

from __future__ import annotations

import math
import types

import numpy as np

from gradflow import dtypes, protowire
from gradflow.errors import DataLossError, InvalidArgumentError
from gradflow.example import Feature, Features
from gradflow.prim.construct import declared
from gradflow.prim.parsing import _host_array, _listed, _sparse_parts, _values
from gradflow.prim.registry import register


def _feature_lists(data):
    """``{name: [Feature per step]}`` of ``FeatureLists`` bytes (``map<string,
    FeatureList> feature_list = 1``; ``FeatureList {repeated Feature feature = 1}``)."""
    lists = {}
    for number, kind, entry in protowire.fields(data, DataLossError):
        if number != 1 or kind != 2:
            continue
        name, steps = "", []
        for m, kind_, value in protowire.fields(entry, DataLossError):
            if m == 1 and kind_ == 2:
                name = bytes(value).decode("utf-8", "replace")
            elif m == 2 and kind_ == 2:
                steps = [Feature.FromString(v) for n, k, v in
                         protowire.fields(value, DataLossError) if n == 1 and k == 2]
        lists[name] = steps
    return lists


def _sequence_example(data):
    """``(context, lists)`` of ``SequenceExample`` bytes (``Features context = 1;
    FeatureLists feature_lists = 2``): the context as a namespace with ``features``
    (what ``parse_example``'s readers take), the lists as ``_feature_lists`` gives."""
    context, lists = Features(), {}
    for number, kind, value in protowire.fields(data, DataLossError):
        if number == 1 and kind == 2:
            context = Features.FromString(value)
        elif number == 2 and kind == 2:
            lists = _feature_lists(value)
    return types.SimpleNamespace(features=context), lists


def _steps(record, key, dtype, shape, allow_missing, where):
    """The ``[steps, *shape]`` array of one dense sequence feature of one record."""
    lists = record[1]
    if key not in lists:
        if not allow_missing:
            raise InvalidArgumentError(f"{where}: sequence feature '{key}' is required but "
                                       "the record does not have it")
        return _host_array([], dtype).reshape((0,) + shape)
    steps = []
    for t, feature in enumerate(lists[key]):
        values = _listed(feature, key, dtype, where)
        if len(values) != math.prod(shape):
            raise InvalidArgumentError(f"{where}: step {t} of sequence feature '{key}' has "
                                       f"{len(values)} values, its shape {list(shape)} needs "
                                       f"{math.prod(shape)}")
        steps.append(list(values))
    flat = [v for step in steps for v in step]
    return _host_array(flat, dtype).reshape((len(steps),) + shape)


def _ragged(record, key, dtype, where):
    """The value lists of each step of one variable-length sequence feature."""
    lists = record[1]
    return [list(_listed(f, key, dtype, where)) for f in lists.get(key, ())]


def _sequence_sparse(rows, dtype, single):
    """The ``SparseTensor`` parts of a variable-length sequence feature: ``rows`` holds,
    per record, the value lists of its steps."""
    if single:
        return _sparse_parts(rows[0], dtype, False)
    steps = max([len(r) for r in rows] + [0])
    width = max([len(v) for r in rows for v in r] + [0])
    indices = [[b, t, i] for b, r in enumerate(rows) for t, v in enumerate(r)
               for i in range(len(v))]
    values = _host_array([x for r in rows for v in r for x in v], dtype)
    return (np.asarray(indices, np.int64).reshape(-1, 3), values,
            np.asarray([len(rows), steps, width], np.int64))


def _padded(arrays, dtype, shape):
    """The dense sequence arrays of a batch, padded with zeros (empty strings) to the
    longest, and their lengths."""
    lengths = np.asarray([len(a) for a in arrays], np.int64)
    longest = int(lengths.max()) if len(arrays) else 0
    kind = object if dtype is dtypes.string else dtype.as_numpy_dtype
    out = np.zeros((len(arrays), longest) + shape, kind)
    if dtype is dtypes.string:
        out.ravel()[:] = [b""] * out.size
    for b, a in enumerate(arrays):
        out[b, :len(a)] = a
    return out, lengths


def _record(value, where):
    try:
        return _sequence_example(bytes(value))
    except DataLossError as err:
        raise InvalidArgumentError(f"{where}: not a tf.train.SequenceExample ({err})") from None


def _context_out(records, specs, single, wheres):
    columns = [[] for _ in specs]
    for (shim, _), where in zip(records, wheres):
        for column, (key, dtype, shape, default) in zip(columns, specs):
            if shape is None:
                listed = shim.features.feature
                column.append(list(_listed(listed[key], key, dtype, where))
                              if key in listed else [])
            else:
                column.append(_values(shim, key, dtype, shape, default, where))
    out = []
    for column, (_, dtype, shape, _) in zip(columns, specs):
        if shape is None:
            out += list(_sparse_parts(column, dtype, single))
        elif single:
            out.append(column[0])
        else:
            kind = object if dtype is dtypes.string else dtype.as_numpy_dtype
            out.append(np.stack(column) if column else np.empty((0,) + shape, kind))
    return out


def _sequence_out(records, specs, single, wheres):
    out, lengths = [], []
    for key, dtype, shape, allow_missing in specs:
        if shape is None:
            rows = [_ragged(r, key, dtype, w) for r, w in zip(records, wheres)]
            out += list(_sequence_sparse(rows, dtype, single))
            continue
        arrays = [_steps(r, key, dtype, shape, allow_missing, w)
                  for r, w in zip(records, wheres)]
        if single:
            out.append(arrays[0])
        else:
            padded, length = _padded(arrays, dtype, shape)
            out.append(padded)
            lengths.append(length)
    return out + lengths


def _parse_impl(run_state, node):
    context, sequence = node.attrs["context"], node.attrs["sequence"]
    single = node.attrs["single"]
    to_host, device = run_state.backend.host_value, run_state.backend.device_value

    def run(serialized):
        values = np.asarray(to_host(serialized), dtype=object).ravel()
        prefix = f"{node.opdef.name} '{node.name}'"
        wheres = [prefix if single else f"{prefix}, record {k}" for k in range(len(values))]
        records = [_record(v, w) for v, w in zip(values, wheres)]
        out = _context_out(records, context, single, wheres) + \
            _sequence_out(records, sequence, single, wheres)
        return tuple(device(a) for a in out)

    return run


register("parse_sequence_example", _parse_impl, declared, grad=None, kind="call",
         takes_strings=True)
