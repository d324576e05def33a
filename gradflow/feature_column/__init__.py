"""TF1's ``tf.feature_column``: how an estimator program describes its features.

A column says which key of the features dict it reads and what it makes of it:
numbers (``numeric_column``), their buckets (``bucketized_column``), ids of
categories (``categorical_column_with_*``, ``crossed_column``, optionally weighted),
and dense vectors of ids (``embedding_column``, ``indicator_column``).
``input_layer`` and ``linear_model`` turn the columns into a model's input, with
TF1's variable names; ``make_parse_example_spec`` gives the spec of
``parse_example`` that reads them from ``tf.train.Example`` records. Hashing is
FarmHash's Fingerprint64 and ``FingerprintCat64``, as TensorFlow's, so the ids (and
trained checkpoints) agree with TensorFlow's.

>>> age = gf.feature_column.numeric_column("age")
>>> city = gf.feature_column.categorical_column_with_vocabulary_list("city", ["a", "b"])
>>> net = gf.feature_column.input_layer(features, [age, gf.feature_column.indicator_column(city)])
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.feature_column import columns as _c
from gradflow.feature_column.layers import embedding_creator, input_layer, linear_model

__all__ = ["bucketized_column", "categorical_column_with_hash_bucket",
           "categorical_column_with_identity", "categorical_column_with_vocabulary_file",
           "categorical_column_with_vocabulary_list", "crossed_column", "embedding_column",
           "indicator_column", "input_layer", "linear_model", "make_parse_example_spec",
           "numeric_column", "shared_embedding_columns", "weighted_categorical_column"]


def numeric_column(key, shape=(1,), default_value=None, dtype=dtypes.float32,
                   normalizer_fn=None):
    """A real-valued feature of ``shape`` per example (TF1); ``normalizer_fn`` is applied
    to it first; ``default_value`` fills a missing one when parsing examples.

    >>> age = gf.feature_column.numeric_column("age")
    """
    key = _c._check_key(key, "numeric_column")
    shape = _c._shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype.name}, key: {key}")
    if default_value is not None:
        values = np.asarray(default_value, dtype=dtype.as_numpy_dtype)
        if values.ndim == 0:
            values = np.full(shape, values)
        if values.shape != shape:
            raise ValueError(f"The shape of default_value must be equal to given shape. "
                             f"default_value: {default_value}, shape: {shape}, key: {key}")
        default_value = tuple(values.reshape(-1).tolist()) if len(shape) == 1 else \
            _nested(values.tolist())
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return _c._NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def _nested(value):
    return tuple(_nested(v) for v in value) if isinstance(value, list) else value


def bucketized_column(source_column, boundaries):
    """The bucket of each value of a ``numeric_column`` (TF1): bucket ``i`` holds
    ``boundaries[i-1] <= x < boundaries[i]``; dense, it is one-hot.

    >>> ages = gf.feature_column.bucketized_column(age, [18, 25, 30, 40, 50, 65])
    """
    if not isinstance(source_column, _c._NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: "
                         f"{source_column}")
    if not isinstance(boundaries, (list, tuple)) or not boundaries:
        raise ValueError("boundaries must be a sorted list.")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return _c._BucketizedColumn(source_column, tuple(float(b) for b in boundaries))


def _categorical_dtype(dtype, key, what):
    dtype = dtypes.as_dtype(dtype)
    if dtype is not dtypes.string and not dtype.is_integer:
        raise ValueError(f"{what}: dtype must be string or integer. dtype: {dtype.name}, "
                         f"column_name: {key}")
    return dtype


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer ids used as they are, in ``[0, num_buckets)`` (TF1); an id outside is
    ``default_value``, or an error when there is none."""
    key = _c._check_key(key, "categorical_column_with_identity")
    if int(num_buckets) < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and not 0 <= int(default_value) < int(num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    return _c._IdentityCategoricalColumn(key, int(num_buckets),
                                         None if default_value is None else int(default_value))


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=dtypes.string):
    """Ids by hashing strings (or integers' decimal text) into ``hash_bucket_size``
    buckets with FarmHash's Fingerprint64, as TensorFlow's (TF1)."""
    key = _c._check_key(key, "categorical_column_with_hash_bucket")
    if hash_bucket_size is None or int(hash_bucket_size) < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    dtype = _categorical_dtype(dtype, key, "categorical_column_with_hash_bucket")
    return _c._HashedCategoricalColumn(key, int(hash_bucket_size), dtype)


def _oov(num_oov_buckets, default_value, key):
    if int(num_oov_buckets) < 0:
        raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    if default_value is not None and default_value != -1 and int(num_oov_buckets):
        raise ValueError(f"Can't specify both default_value {default_value} and "
                         f"num_oov_buckets {num_oov_buckets} in {key}.")
    return int(num_oov_buckets)


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None,
                                            default_value=-1, num_oov_buckets=0):
    """Ids of the entries of ``vocabulary_list`` (their positions); another value is
    ``default_value`` or, with ``num_oov_buckets``, one of that many hashed ids after
    the vocabulary (TF1).

    >>> city = gf.feature_column.categorical_column_with_vocabulary_list("city", ["a", "b"])
    """
    key = _c._check_key(key, "categorical_column_with_vocabulary_list")
    vocabulary = tuple(v.encode() if isinstance(v, str) else v for v in vocabulary_list)
    if not vocabulary:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: "
                         f"{key}")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: "
                         f"{key}")
    strings = isinstance(vocabulary[0], bytes)
    if dtype is None:
        dtype = dtypes.string if strings else dtypes.int64
    dtype = _categorical_dtype(dtype, key, "categorical_column_with_vocabulary_list")
    if strings != (dtype is dtypes.string):
        raise ValueError(f"dtype {dtype.name} and vocabulary dtype do not match, "
                         f"column_name: {key}")
    if not strings:
        vocabulary = tuple(int(v) for v in vocabulary)
    oov = _oov(num_oov_buckets, default_value, key)
    return _c._VocabularyListCategoricalColumn(
        key, vocabulary, dtype, -1 if default_value is None else int(default_value), oov)


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=dtypes.string):
    """Ids of a vocabulary file's lines (their line numbers); another value is
    ``default_value`` (-1) or, with ``num_oov_buckets``, a hashed id after the
    vocabulary (TF1). ``vocabulary_size``: read that many lines (default: all, counted
    now)."""
    key = _c._check_key(key, "categorical_column_with_vocabulary_file")
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        try:
            with open(vocabulary_file, "rb") as f:
                vocabulary_size = sum(1 for _ in f)
        except OSError as err:
            raise ValueError(f"vocabulary_file {vocabulary_file} cannot be read in {key}: "
                             f"{err}") from None
    if int(vocabulary_size) < 1:
        raise ValueError(f"Invalid vocabulary_size {vocabulary_size} in {key}.")
    oov = _oov(num_oov_buckets, default_value, key)
    dtype = _categorical_dtype(dtype, key, "categorical_column_with_vocabulary_file")
    return _c._VocabularyFileCategoricalColumn(
        key, str(vocabulary_file), int(vocabulary_size), oov, dtype,
        None if default_value is None else int(default_value))


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=dtypes.float32):
    """A categorical column's ids, each with the weight at the same position of the
    feature ``weight_feature_key`` (TF1)."""
    _c._check_categorical(categorical_column, "weighted_categorical_column")
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype {dtype.name} is not convertible to float.")
    return _c._WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Hashed combinations of categorical features (TF1): each combination of one
    value per key (a feature name, or a categorical column's ids) is fingerprinted
    and bucketed as TensorFlow's ``sparse_cross_hashed`` does.

    >>> both = gf.feature_column.crossed_column(["city", ages], 1000)
    """
    if not hash_bucket_size or int(hash_bucket_size) < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for k in keys:
        if not isinstance(k, str) and not getattr(k, "is_categorical", False):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except _HashedCategoricalColumn. Given: {k}")
        if isinstance(k, _c._HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for "
                             "crossing. Hashing before crossing will increase probability of "
                             "collision. Instead, use the feature name as a string. Given: "
                             f"{k}")
    return _c._CrossedColumn(tuple(keys), int(hash_bucket_size),
                             _c._DEFAULT_HASH_KEY if hash_key is None else int(hash_key))


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """Dense ``dimension``-vectors of a categorical column's ids, combined per example
    (``mean``, ``sqrtn``, ``sum``); the table ``embedding_weights`` starts from
    ``initializer`` (truncated normal, stddev ``1/sqrt(dimension)``) (TF1)."""
    if dimension is None or int(dimension) < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if ckpt_to_load_from is not None:
        raise NotImplementedError("embedding_column: ckpt_to_load_from is not supported; "
                                  "restore the table with a Saver")
    _c._check_categorical(categorical_column, "embedding_column")
    _c._check_combiner(combiner, "embedding_column")
    initializer = _c._embedding_initializer(initializer, int(dimension), "embedding_column")
    return _c._EmbeddingColumn(
        categorical_column, int(dimension), combiner,
        embedding_creator(categorical_column, int(dimension), initializer), None, None,
        max_norm, bool(trainable))


def shared_embedding_columns(categorical_columns, dimension, combiner="mean",
                             initializer=None, shared_embedding_collection_name=None,
                             ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                             trainable=True):
    """Embedding columns of several categorical columns (of one number of buckets) that
    share one table, named after the columns (TF1)."""
    if dimension is None or int(dimension) < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if ckpt_to_load_from is not None or tensor_name_in_ckpt is not None:
        raise NotImplementedError("shared_embedding_columns: ckpt_to_load_from is not "
                                  "supported; restore the table with a Saver")
    columns = list(categorical_columns)
    for c in columns:
        _c._check_categorical(c, "shared_embedding_columns")
    if len({c._num_buckets for c in columns}) > 1:
        raise ValueError(f"To use shared_embedding_column, all categorical_columns must have "
                         f"the same number of buckets. Given column: {columns[0]} with "
                         f"buckets: {columns[0]._num_buckets}")
    _c._check_combiner(combiner, "shared_embedding_columns")
    initializer = _c._embedding_initializer(initializer, int(dimension),
                                            "shared_embedding_columns")
    name = shared_embedding_collection_name or \
        "_".join(sorted(c.name for c in columns)) + "_shared_embedding"
    return [_c._SharedEmbeddingColumn(c, int(dimension), combiner, initializer, name, None,
                                      None, max_norm, bool(trainable)) for c in columns]


def indicator_column(categorical_column):
    """A categorical column's ids as a multi-hot vector of its ``num_buckets`` (the count
    of each id, or its summed weight) (TF1)."""
    _c._check_categorical(categorical_column, "indicator_column")
    return _c._IndicatorColumn(categorical_column)


def make_parse_example_spec(feature_columns):
    """The ``parse_example`` spec (feature name -> ``FixedLenFeature``/``VarLenFeature``)
    of the features the columns read (TF1).

    >>> spec = gf.feature_column.make_parse_example_spec([age, city])
    """
    spec = {}
    for column in feature_columns:
        if not hasattr(column, "_parse_example_spec"):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: "
                             f"{column}")
        for key, value in column._parse_example_spec.items():
            if key in spec and spec[key] != value:
                raise ValueError(f"feature_columns contain different parse_spec for key "
                                 f"{key}. Given {value} and {spec[key]}")
            spec[key] = value
    return spec
