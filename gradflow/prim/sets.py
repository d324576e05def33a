"""Host ops of TF1's ``tf.sets`` (``gradflow.sets`` builds them): the sets along the
last axis of dense tensors or ``SparseTensor`` s, their sizes, intersections, unions and
differences. The result sets are value-sized (each row has as many elements as it has),
so they are made on the host, as ``edit_distance``'s values are, and returned as a
``SparseTensor`` ``[..., largest set]`` whose rows hold their elements in increasing
order, as TF's. No gradient (the elements are integers or strings).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


def _rows_of_dense(values):
    values = np.asarray(values)
    rows = values.reshape(-1, values.shape[-1]) if values.ndim else values.reshape(1, 1)
    sets = [set(row.tolist()) for row in rows]
    return values.shape[:-1], sets


def _rows_of_sparse(indices, values, shape, validate, what):
    indices, shape = np.asarray(indices, dtype=np.int64), np.asarray(shape, dtype=np.int64)
    values = np.asarray(values)
    if len(shape) < 2:
        raise InvalidArgumentError(f"{what}: a set's SparseTensor needs rank 2 or more, got "
                                   f"dense_shape {shape.tolist()}")
    row_shape = tuple(int(d) for d in shape[:-1])
    if validate:
        if ((indices < 0) | (indices >= shape)).any():
            raise InvalidArgumentError(f"{what}: an index is outside dense_shape "
                                       f"{shape.tolist()}")
        if len(indices) > 1:
            steps = np.diff(np.ravel_multi_index(indices.T, shape))
            if (steps <= 0).any():
                raise InvalidArgumentError(f"{what}: the indices are not in row-major order "
                                           "(or one is named twice); reorder them first")
    sets = [set() for _ in range(int(np.prod(row_shape, dtype=np.int64)))]
    rows = np.ravel_multi_index(indices[:, :-1].T, row_shape) if len(indices) else []
    for row, value in zip(rows, values.tolist()):
        sets[int(row)].add(value)
    return row_shape, sets


def _sets(node, side, parts, what):
    if node.attrs[f"{side}_sparse"]:
        return _rows_of_sparse(*parts, node.attrs["validate_indices"], what)
    return _rows_of_dense(parts[0])


def _sparse_result(row_shape, sets, dtype):
    indices, values = [], []
    for row, members in enumerate(sets):
        position = np.unravel_index(row, row_shape) if row_shape else ()
        for k, value in enumerate(sorted(members)):
            indices.append((*(int(p) for p in position), k))
            values.append(value)
    largest = max((len(s) for s in sets), default=0)
    rank = len(row_shape) + 1
    index_array = np.asarray(indices, dtype=np.int64).reshape(len(indices), rank)
    if dtype is dtypes.string:
        value_array = dtypes.bytes_array(values).reshape(len(values))
    else:
        value_array = np.asarray(values, dtype=dtype.as_numpy_dtype).reshape(len(values))
    return index_array, value_array, np.asarray((*row_shape, largest), dtype=np.int64)


_COMBINE = {"intersection": set.intersection, "union": set.union,
            "a-b": set.difference, "b-a": lambda a, b: b - a}


def _set_operation_impl(run, node):
    to_host, device = run.backend.host_value, run.backend.device_value
    count_a = 3 if node.attrs["a_sparse"] else 1
    what = f"set_{node.attrs['operation'].replace('a-b', 'difference')} '{node.name}'"

    def run_(*values):
        values = [to_host(v) for v in values]
        shape_a, sets_a = _sets(node, "a", values[:count_a], what)
        shape_b, sets_b = _sets(node, "b", values[count_a:], what)
        if shape_a != shape_b:
            raise InvalidArgumentError(f"{what}: the sets' leading shapes differ: "
                                       f"{list(shape_a)} and {list(shape_b)}")
        combine = _COMBINE[node.attrs["operation"]]
        out = [combine(a, b) for a, b in zip(sets_a, sets_b)]
        parts = _sparse_result(shape_a, out, node.attrs["value_dtype"])
        return tuple(device(p) for p in parts)

    return run_


def _set_size_impl(run, node):
    to_host, device = run.backend.host_value, run.backend.device_value

    def run_(indices, values, shape):
        row_shape, sets = _rows_of_sparse(to_host(indices), to_host(values), to_host(shape),
                                          node.attrs["validate_indices"],
                                          f"set_size '{node.name}'")
        sizes = np.asarray([len(s) for s in sets], dtype=np.int32).reshape(row_shape)
        return device(sizes)

    return run_


register("set_operation", _set_operation_impl, declared, grad=None, kind="call",
         takes_strings=True)
register("set_size", _set_size_impl, declared, grad=None, kind="call", takes_strings=True)
