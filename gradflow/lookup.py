"""TF1's ``tf.lookup``: tables from keys to values, initialized per Session.

A table is a graph object; its contents live in each Session that runs its
initializer (``table.initializer``, or ``gf.tables_initializer()``, which runs every
table's), as TF1's ``HashTable`` resources do. ``table.lookup(keys)`` gives the value
of each key, the table's ``default_value`` for a key it does not hold;
``StaticVocabularyTable`` gives a key it does not hold one of ``num_oov_buckets``
extra ids, chosen by FarmHash's Fingerprint64 as TensorFlow's (so the ids match).

>>> table = gf.lookup.StaticHashTable(
...     gf.lookup.KeyValueTensorInitializer(["a", "b"], [0, 1], value_dtype=gf.int64), -1)
>>> ids = table.lookup(gf.constant(["a", "c"]))       # [0, -1] once initialized
>>> sess.run(gf.tables_initializer())
"""

from __future__ import annotations

import os

from gradflow import dtypes
from gradflow.graph import get_default_graph
from gradflow.ops.array_ops import static_value
from gradflow.ops.math_ops import add, cast, equal, where
from gradflow.ops.state_ops import group, no_op
from gradflow.prim import lookup as _prim
from gradflow.prim import strings as _strings
from gradflow.prim.construct import VARIANT
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor
from gradflow.variables import GraphKeys

__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable",
           "TextFileIndex", "TextFileInitializer", "initialize_all_tables",
           "tables_initializer"]


class TextFileIndex:
    """Where a key or a value of a vocabulary file comes from (TF1
    ``tf.lookup.TextFileIndex``): ``WHOLE_LINE`` (-2) or ``LINE_NUMBER`` (-1); a
    non-negative number picks that field of the line."""

    WHOLE_LINE = _prim.WHOLE_LINE
    LINE_NUMBER = _prim.LINE_NUMBER


class KeyValueTensorInitializer:
    """A table's contents from two tensors of the same length: ``keys`` and ``values``
    (TF1 ``tf.lookup.KeyValueTensorInitializer``).

    >>> init = gf.lookup.KeyValueTensorInitializer(["en", "fr"], [1, 2], gf.string, gf.int64)
    """

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = _tensor(keys, key_dtype, "KeyValueTensorInitializer: keys")
        self._values = _tensor(values, value_dtype, "KeyValueTensorInitializer: values")
        for what, t in (("keys", self._keys), ("values", self._values)):
            if t.shape is not None and len(t.shape) != 1:
                raise ValueError(f"KeyValueTensorInitializer: {what} '{t.name}' must be a "
                                 f"vector, got shape {tuple(t.shape)}")
        n, m = (None if t.shape is None else t.shape[0] for t in (self._keys, self._values))
        if n is not None and m is not None and int(n) != int(m):
            raise ValueError(f"KeyValueTensorInitializer: {int(n)} keys but {int(m)} values")
        self._name = name or "key_value_init"

    key_dtype = property(lambda self: self._keys.dtype, doc="The dtype of the keys.")
    value_dtype = property(lambda self: self._values.dtype, doc="The dtype of the values.")

    def initialize(self, table):
        """The op that fills ``table`` with the keys and values."""
        node = apply("lookup_table_init", [self._keys, self._values],
                     name=f"{table._base}/table_init/run", table=table, shape=None,
                     dtype=VARIANT)
        return group(node, name=f"{table._base}/table_init")


class TextFileInitializer:
    """A table's contents from a text file, one entry a line (TF1
    ``tf.lookup.TextFileInitializer``): the key and the value are the field
    ``key_index``/``value_index`` of the line split at ``delimiter`` (tab by default),
    the whole line (``TextFileIndex.WHOLE_LINE``) or the line's number
    (``TextFileIndex.LINE_NUMBER``). ``vocab_size``: read only that many lines (the
    file must have as many).

    >>> init = gf.lookup.TextFileInitializer("vocab.txt", gf.string, -2, gf.int64, -1)
    """

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index,
                 vocab_size=None, delimiter="\t", name=None, value_index_offset=0):
        self._filename = _filename(filename)
        self._key_dtype, self._value_dtype = dtypes.as_dtype(key_dtype), \
            dtypes.as_dtype(value_dtype)
        for what, index, dtype in (("key", key_index, self._key_dtype),
                                   ("value", value_index, self._value_dtype)):
            if int(index) < _prim.WHOLE_LINE:
                raise ValueError(f"TextFileInitializer: invalid {what}_index {index}")
            if int(index) == _prim.LINE_NUMBER and not dtype.is_integer:
                raise ValueError(f"TextFileInitializer: the {what}s are line numbers, so "
                                 f"{what}_dtype must be an integer type, got {dtype.name}")
            if int(index) == _prim.WHOLE_LINE and not (dtype is dtypes.string or
                                                       dtype.is_integer):
                raise ValueError(f"TextFileInitializer: a whole line as {what} needs a "
                                 f"string or integer {what}_dtype, got {dtype.name}")
        if vocab_size is not None and int(vocab_size) <= 0:
            raise ValueError(f"TextFileInitializer: invalid vocab_size {vocab_size}")
        self._attrs = dict(key_index=int(key_index), value_index=int(value_index),
                           key_dtype=self._key_dtype, value_dtype=self._value_dtype,
                           vocab_size=None if vocab_size is None else int(vocab_size),
                           delimiter=None if delimiter is None else
                           (delimiter.encode() if isinstance(delimiter, str) else delimiter),
                           value_offset=int(value_index_offset))
        self._name = name or "text_file_init"

    key_dtype = property(lambda self: self._key_dtype, doc="The dtype of the keys.")
    value_dtype = property(lambda self: self._value_dtype, doc="The dtype of the values.")

    def initialize(self, table):
        """The op that fills ``table`` from the file."""
        node = apply("lookup_table_text_init", [self._filename],
                     name=f"{table._base}/table_init/run", table=table, shape=None,
                     dtype=VARIANT, **self._attrs)
        return group(node, name=f"{table._base}/table_init")


class StaticHashTable:
    """A table of fixed contents, given by ``initializer`` when its ``initializer`` op
    runs (TF1 ``tf.lookup.StaticHashTable``, ``tf.contrib.lookup.HashTable``); a key it
    does not hold looks up ``default_value``. Its initializer joins the graph's
    ``TABLE_INITIALIZERS``, which ``gf.tables_initializer()`` runs.

    >>> table = gf.lookup.StaticHashTable(init, default_value=-1)
    >>> ids = table.lookup(words)
    """

    def __init__(self, initializer, default_value, name=None):
        graph = get_default_graph()
        self.graph = graph
        self._name = graph.unique_name(name or "hash_table")
        self._base = self._name.rsplit("/", 1)[-1]  # op names: the scope is added again
        self._init = initializer
        self._default = convert_to_tensor(default_value, dtype=initializer.value_dtype)
        if self._default.shape is not None and len(self._default.shape) != 0:
            raise ValueError(f"{type(self).__name__}: default_value must be a scalar, got "
                             f"shape {tuple(self._default.shape)}")
        self._initializer = initializer.initialize(self)
        graph.add_to_collection(GraphKeys.TABLE_INITIALIZERS, self._initializer)

    name = property(lambda self: self._name, doc="The table's name.")
    key_dtype = property(lambda self: self._init.key_dtype, doc="The dtype of the keys.")
    value_dtype = property(lambda self: self._init.value_dtype,
                           doc="The dtype of the values.")
    default_value = property(lambda self: self._default,
                             doc="The value of a key the table does not hold.")
    initializer = property(lambda self: self._initializer,
                           doc="The op that fills the table in a Session.")
    init = initializer

    def size(self, name=None):
        """The number of keys in the table (an int64 scalar)."""
        return apply("lookup_table_size", [], name=name or f"{self._base}_Size",
                     graph=self.graph, table=self, shape=(), dtype=dtypes.int64)

    def lookup(self, keys, name=None):
        """The value of each key (a tensor, or a ``SparseTensor`` whose values are looked
        up), of the keys' shape."""
        if isinstance(keys, SparseTensor):
            return SparseTensor(keys.indices, self.lookup(keys.values, name),
                                keys.dense_shape)
        keys = _keys(keys, self.key_dtype, self._name)
        return apply("lookup_table_find", [keys, self._default],
                     name=name or f"{self._base}_Lookup", table=self,
                     shape=None if keys.shape is None else tuple(keys.shape),
                     dtype=self.value_dtype)


class StaticVocabularyTable:
    """Ids of a vocabulary (TF1 ``tf.lookup.StaticVocabularyTable``): a key the
    initializer holds gets its value (int64); any other gets ``size + b``, where ``b``
    is FarmHash's Fingerprint64 of the key (of its decimal text, for integer keys)
    modulo ``num_oov_buckets``, as TensorFlow's.

    >>> table = gf.lookup.StaticVocabularyTable(init, num_oov_buckets=5)
    """

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        if int(num_oov_buckets) <= 0:
            raise ValueError(f"StaticVocabularyTable: num_oov_buckets must be > 0, got "
                             f"{num_oov_buckets}")
        if initializer.value_dtype is not dtypes.int64:
            raise TypeError(f"StaticVocabularyTable: the initializer's values must be int64, "
                            f"got {initializer.value_dtype.name}")
        self._buckets = int(num_oov_buckets)
        self._table = StaticHashTable(initializer, -1, name=name or "hash_table")
        self._key_dtype = dtypes.as_dtype(lookup_key_dtype or initializer.key_dtype)

    name = property(lambda self: self._table.name, doc="The table's name.")
    key_dtype = property(lambda self: self._key_dtype, doc="The dtype of the keys.")
    value_dtype = property(lambda self: dtypes.int64, doc="int64: the ids.")
    initializer = property(lambda self: self._table.initializer,
                           doc="The op that fills the table in a Session.")

    def size(self, name=None):
        """The vocabulary's size plus ``num_oov_buckets``."""
        return add(self._table.size(), self._buckets, name=name)

    def lookup(self, keys, name=None):
        """The id of each key (a tensor or a ``SparseTensor``)."""
        if isinstance(keys, SparseTensor):
            return SparseTensor(keys.indices, self.lookup(keys.values, name),
                                keys.dense_shape)
        keys = _keys(keys, self._key_dtype, self.name)
        if keys.dtype is not self._table.key_dtype:
            keys = cast(keys, self._table.key_dtype)
        ids = self._table.lookup(keys)
        buckets = add(hash_bucket(keys, self._buckets), self._table.size())
        return where(equal(ids, -1), buckets, ids, name=name or f"{self._table._base}_Lookup")


def tables_initializer(name="init_all_tables"):
    """The op that initializes every table of the graph (TF1 ``tf.tables_initializer``);
    a no-op when there is none."""
    ops = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*ops, name=name) if ops else no_op(name=name)


def initialize_all_tables(name="init_all_tables"):
    """TF1's older name of ``tables_initializer``."""
    return tables_initializer(name)


def hash_bucket(keys, num_buckets):
    """FarmHash's Fingerprint64 of each key (of its decimal text, for integers) modulo
    ``num_buckets``, as TF's fast hashing of vocabulary and hashed columns (int64)."""
    shape = None if keys.shape is None else tuple(keys.shape)
    if keys.dtype is not dtypes.string:
        form = _strings.number_format(keys.dtype, -1, False, False, -1, "")
        keys = apply("as_string", [keys], name="AsString", format=form, shape=shape,
                     dtype=dtypes.string)
    return apply("string_to_hash_bucket_fast", [keys], name="StringToHashBucketFast",
                 num_buckets=int(num_buckets), shape=shape, dtype=dtypes.int64)


def _tensor(value, dtype, what):
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    t = convert_to_tensor(value, dtype=None if dtype is None else dtypes.as_dtype(dtype))
    if dtype is not None and t.dtype is not dtypes.as_dtype(dtype):
        t = cast(t, dtypes.as_dtype(dtype))
    return t


def _keys(keys, key_dtype, table_name):
    keys = convert_to_tensor(keys, dtype=key_dtype if key_dtype is dtypes.string else None)
    if keys.dtype is not key_dtype and not (keys.dtype.is_integer and key_dtype.is_integer):
        raise TypeError(f"lookup in table '{table_name}': keys '{keys.name}' are "
                        f"{keys.dtype.name}, the table's are {key_dtype.name}")
    if keys.dtype is not key_dtype:
        keys = cast(keys, key_dtype)
    return keys


def _filename(filename):
    if isinstance(filename, os.PathLike):
        filename = os.fspath(filename)
    t = convert_to_tensor(filename, dtype=dtypes.string)
    if t.dtype is not dtypes.string:
        raise TypeError(f"TextFileInitializer: filename '{t.name}' must be a string")
    found = static_value(t)
    if found is not None and found.ndim:
        raise ValueError("TextFileInitializer: filename must be one string")
    return t
