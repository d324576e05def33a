"""The primitives of TF1's lookup tables (``gradflow.lookup``) and of the feature
columns' sparse inputs: host ops of kind ``"call"``.

A table's contents live in each Session that initializes it (``run_state.resources``,
keyed by the table object): the initializer op fills them from two tensors or from a
text file, the find op maps keys to values (the table's default where a key is
absent), as TF1's ``HashTable`` ops do. Running a find before the initializer is
TF1's ``FailedPreconditionError``. None of these ops has a gradient (TF1's have none).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.errors import FailedPreconditionError, InvalidArgumentError, NotFoundError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register
from gradflow.prim.strings import fingerprint64

WHOLE_LINE = -2
LINE_NUMBER = -1


def _key(value):
    """A host key as a dict key: bytes for strings, a Python number otherwise."""
    if isinstance(value, np.generic):
        return value.item()
    return value


class TableContents:
    """One table's keys and values in one Session."""

    def __init__(self, table, keys, values):
        self.index = {}
        for k, (key, value) in enumerate(zip(keys, values)):
            key = _key(key)
            seen = self.index.get(key)
            if seen is not None and values[seen] != value:
                raise InvalidArgumentError(
                    f"HashTable '{table.name}' has different value for same key. Key "
                    f"{key!r} has {values[seen]!r} and trying to add value {value!r}")
            self.index.setdefault(key, k)
        self.values = values


def _contents(run_state, table, node):
    found = run_state.resources.get(table)
    if found is None:
        raise FailedPreconditionError(f"Table not initialized: '{table.name}' (run its "
                                      f"initializer, or gf.tables_initializer(), before "
                                      f"'{node.name}')")
    return found


def _init_impl(run_state, node):
    table = node.attrs["table"]
    to_host = run_state.backend.host_value

    def run(keys, values):
        keys = np.asarray(to_host(keys)).reshape(-1)
        values = np.asarray(to_host(values)).reshape(-1)
        if len(keys) != len(values):
            raise InvalidArgumentError(f"'{node.name}': {len(keys)} keys but {len(values)} "
                                       f"values for table '{table.name}'")
        run_state.resources[table] = TableContents(table, keys, values)
        return ()

    return run


def _parse(text, dtype, where):
    if dtype is dtypes.string:
        return text
    try:
        return int(text) if dtype.is_integer else float(text)
    except ValueError:
        raise InvalidArgumentError(f"{where}: field {text!r} is not a {dtype.name}") from None


def _column(lines, index, dtype, delimiter, offset, path):
    """The keys or the values of a vocabulary file's lines (``index``: a field number,
    ``WHOLE_LINE`` or ``LINE_NUMBER``)."""
    if index == LINE_NUMBER:
        return np.arange(offset, offset + len(lines), dtype=dtype.as_numpy_dtype)
    out = []
    for number, line in enumerate(lines):
        if index == WHOLE_LINE:
            field = line
        else:
            fields = line.split(delimiter) if delimiter else line.split()
            if index >= len(fields):
                raise InvalidArgumentError(
                    f"Invalid number of columns in {path} line {number} ({line!r}) for "
                    f"lookup table: need at least {index + 1}, got {len(fields)}")
            field = fields[index]
        out.append(_parse(field, dtype, f"{path} line {number}"))
    if dtype is dtypes.string:
        return dtypes.bytes_array(out).reshape(len(out))
    return np.asarray(out, dtype=dtype.as_numpy_dtype).reshape(len(out))


def _read_lines(path, vocab_size):
    try:
        with open(path, "rb") as f:
            lines = [line.rstrip(b"\n").rstrip(b"\r") for line in f]
    except OSError as err:
        raise NotFoundError(f"lookup table file {path!r} cannot be read: {err}") from None
    if vocab_size is not None:
        if len(lines) < vocab_size:
            raise InvalidArgumentError(f"Invalid vocab_size in {path}: expected {vocab_size} "
                                       f"lines, the file has {len(lines)}")
        lines = lines[:vocab_size]
    return lines


def _text_init_impl(run_state, node):
    table, a = node.attrs["table"], node.attrs
    to_host = run_state.backend.host_value

    def run(filename):
        name = np.asarray(to_host(filename), dtype=object).item()
        path = name.decode() if isinstance(name, bytes) else str(name)
        lines = _read_lines(path, a["vocab_size"])
        delimiter = a["delimiter"]
        keys = _column(lines, a["key_index"], a["key_dtype"], delimiter, 0, path)
        values = _column(lines, a["value_index"], a["value_dtype"], delimiter,
                         a["value_offset"], path)
        run_state.resources[table] = TableContents(table, keys, values)
        return ()

    return run


def _find_impl(run_state, node):
    table = node.attrs["table"]
    to_host, device = run_state.backend.host_value, run_state.backend.device_value
    out_type = table.value_dtype

    def run(keys, default):
        contents = _contents(run_state, table, node)
        keys = np.asarray(to_host(keys))
        default = np.asarray(to_host(default)).reshape(())
        index = contents.index
        positions = [index.get(_key(k), -1) for k in keys.reshape(-1)]
        if out_type is dtypes.string:
            out = np.empty(keys.shape, dtype=object)
        else:
            out = np.empty(keys.shape, dtype=out_type.as_numpy_dtype)
        flat = out.reshape(-1)
        for k, p in enumerate(positions):
            flat[k] = contents.values[p] if p >= 0 else default.item()
        return out if out_type is dtypes.string else device(out)

    return run


def _size_impl(run_state, node):
    table, device = node.attrs["table"], run_state.backend.device_value

    def run():
        return device(np.asarray(len(_contents(run_state, table, node).index), np.int64))

    return run


def _drop_ignored_impl(run_state, node):
    """``x``'s entries that are not ``ignore`` (all, with ``keep_all``), as a
    SparseTensor's three parts."""
    to_host, device = run_state.backend.host_value, run_state.backend.device_value
    keep_all = node.attrs.get("keep_all", False)

    def run(x, ignore):
        x = np.asarray(to_host(x))
        ignore = np.asarray(to_host(ignore)).reshape(()).item()
        if keep_all:
            keep = np.ones(x.shape, bool)
        elif x.dtype.kind == "O":
            keep = np.vectorize(lambda v: v != ignore, otypes=[bool])(x) if x.size else \
                np.zeros(x.shape, bool)
        else:
            keep = x != ignore
        indices = np.argwhere(keep).astype(np.int64).reshape(-1, x.ndim)
        values = x[keep]
        shape = np.asarray(x.shape, dtype=np.int64)
        if x.dtype.kind != "O":
            values = device(values)
        return device(indices), values, device(shape)

    return run


register("lookup_table_init", _init_impl, declared, grad=None, kind="call",
         takes_strings=True)
register("lookup_table_text_init", _text_init_impl, declared, grad=None, kind="call",
         takes_strings=True)
register("lookup_table_find", _find_impl, declared, grad=None, kind="call",
         takes_strings=True)
register("lookup_table_size", _size_impl, declared, grad=None, kind="call")
register("drop_ignored_values", _drop_ignored_impl, declared, grad=None, kind="call",
         takes_strings=True)


# -- crossing sparse features (TF's sparse_cross_hashed) --------------------------------

_MASK = (1 << 64) - 1
_KMUL = 0xc6a4a7935bd1e995


def fingerprint_cat64(fp1, fp2):
    """TF's ``FingerprintCat64``: two 64-bit fingerprints combined into one."""
    result = fp1 ^ _KMUL
    mixed = (fp2 * _KMUL) & _MASK
    result ^= ((mixed ^ (mixed >> 47)) * _KMUL) & _MASK
    result = (result * _KMUL) & _MASK
    result = ((result ^ (result >> 47)) * _KMUL) & _MASK
    return result ^ (result >> 47)


def _feature_hash(value):
    if isinstance(value, bytes):
        return fingerprint64(value)
    return int(value) & _MASK


def _rows(indices, values, batch):
    """The values of each row of a rank-2 sparse input, in the order of its entries."""
    rows = [[] for _ in range(batch)]
    for index, value in zip(indices, values):
        rows[int(index[0])].append(value)
    return rows


def _cross_impl(run_state, node):
    buckets, key = node.attrs["num_buckets"], node.attrs["hash_key"]
    to_host, device = run_state.backend.host_value, run_state.backend.device_value

    def run(*parts):
        hosts = [np.asarray(to_host(p)) for p in parts]
        batch = int(hosts[2][0])
        columns = [_rows(hosts[k], hosts[k + 1].reshape(-1), batch)
                   for k in range(0, len(hosts), 3)]
        indices, values, longest = [], [], 0
        for b in range(batch):
            crosses = [key]
            for column in columns:
                crosses = [fingerprint_cat64(h, _feature_hash(v)) for h in crosses
                           for v in column[b]]
            for k, h in enumerate(crosses):
                indices.append((b, k))
                values.append(h % buckets if buckets > 0 else h % ((1 << 63) - 1))
            longest = max(longest, len(crosses))
        index_array = np.asarray(indices, dtype=np.int64).reshape(len(indices), 2)
        return (device(index_array), device(np.asarray(values, dtype=np.int64)),
                device(np.asarray([batch, longest], dtype=np.int64)))

    return run


register("sparse_cross_hashed", _cross_impl, declared, grad=None, kind="call",
         takes_strings=True)
