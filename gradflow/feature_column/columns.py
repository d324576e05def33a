"""The feature columns: what each one reads from a features dict and how it turns the
raw feature into a dense tensor (numeric, bucketized, embedding, indicator) or into
sparse ids (the categorical columns), as TF1's ``tf.feature_column``.

Each column is an immutable, hashable record (a namedtuple, as TF1's), named as TF1
names it; ``gradflow.feature_column.layers`` builds the model inputs from them.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from gradflow import dtypes
from gradflow.feature_column import sparse_inputs as sp
from gradflow.graph import TensorShape
from gradflow.ops.init_ops import truncated_normal_initializer
from gradflow.ops.parsing_ops import FixedLenFeature, VarLenFeature

_DEFAULT_HASH_KEY = 0xDECAFCAFFE


def _check_key(key, what):
    if not isinstance(key, str):
        raise ValueError(f"{what}: key must be a string, got {key!r}")
    return key


def _shape(shape, key):
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"numeric_column '{key}': shape dimensions must be positive "
                             f"integers, got {shape!r}")
    return tuple(int(d) for d in dims)


class _NumericColumn(collections.namedtuple(
        "_NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """A real-valued feature of a fixed shape (``numeric_column``)."""

    name = property(lambda self: self.key)
    _var_scope_name = property(lambda self: self.key)
    is_dense = True
    is_categorical = False

    @property
    def _parse_example_spec(self):
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    @property
    def _variable_shape(self):
        return TensorShape(self.shape)

    def _transform_feature(self, builder):
        x = builder.raw(self.key, self.name, sparse_ok=False)
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        return sp.to_float(x)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


class _BucketizedColumn(collections.namedtuple("_BucketizedColumn",
                                               ["source_column", "boundaries"])):
    """A numeric column's values as the numbers of their buckets (``bucketized_column``);
    dense: one-hot, categorical: one id per value."""

    name = property(lambda self: f"{self.source_column.name}_bucketized")
    _var_scope_name = name
    is_dense = True
    is_categorical = True

    @property
    def _parse_example_spec(self):
        return self.source_column._parse_example_spec

    @property
    def _variable_shape(self):
        return TensorShape((*self.source_column.shape, len(self.boundaries) + 1))

    @property
    def _num_buckets(self):
        return int(np.prod(self.source_column.shape)) * (len(self.boundaries) + 1)

    def _transform_feature(self, builder):
        return sp.bucketize(builder.get(self.source_column), self.boundaries)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        return sp.one_hot_float(builder.get(self), len(self.boundaries) + 1)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return sp.bucket_ids(builder.get(self), len(self.boundaries) + 1,
                             int(np.prod(self.source_column.shape))), None


class _Categorical:
    """What the categorical columns share: sparse ids read from one key."""

    is_dense = False
    is_categorical = True
    name = property(lambda self: self.key)
    _var_scope_name = property(lambda self: self.key)

    @property
    def _parse_example_spec(self):
        return {self.key: VarLenFeature(self.dtype)}

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return builder.get(self), None

    def _input(self, builder):
        ids = sp.to_sparse(builder.raw(self.key, self.name, sparse_ok=True))
        want_string = self.dtype is dtypes.string
        if want_string != (ids.values.dtype is dtypes.string) or not (
                want_string or ids.values.dtype.is_integer):
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                             f"{self.key}, column dtype: {self.dtype.name}, tensor dtype: "
                             f"{ids.values.dtype.name}")
        return ids


class _IdentityCategoricalColumn(_Categorical, collections.namedtuple(
        "_IdentityCategoricalColumn", ["key", "num_buckets", "default_value"])):
    """Integer ids given as they are (``categorical_column_with_identity``)."""

    dtype = dtypes.int64
    _num_buckets = property(lambda self: self.num_buckets)

    def _transform_feature(self, builder):
        return sp.identity_ids(self._input(builder), self.num_buckets, self.default_value,
                               self.key)


class _HashedCategoricalColumn(_Categorical, collections.namedtuple(
        "_HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """Ids by FarmHash's Fingerprint64 (``categorical_column_with_hash_bucket``)."""

    _num_buckets = property(lambda self: self.hash_bucket_size)

    def _transform_feature(self, builder):
        return sp.hashed_ids(self._input(builder), self.hash_bucket_size)


class _VocabularyListCategoricalColumn(_Categorical, collections.namedtuple(
        "_VocabularyListCategoricalColumn",
        ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    """Ids of an in-memory vocabulary (``categorical_column_with_vocabulary_list``)."""

    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)

    def _transform_feature(self, builder):
        return sp.vocabulary_ids(self._input(builder), self.dtype, self.num_oov_buckets,
                                 self.default_value, self.key, keys=self.vocabulary_list)


class _VocabularyFileCategoricalColumn(_Categorical, collections.namedtuple(
        "_VocabularyFileCategoricalColumn",
        ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype",
         "default_value"])):
    """Ids of a vocabulary file, one entry a line
    (``categorical_column_with_vocabulary_file``)."""

    _num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)

    def _transform_feature(self, builder):
        return sp.vocabulary_ids(self._input(builder), self.dtype, self.num_oov_buckets,
                                 self.default_value, self.key, path=self.vocabulary_file,
                                 size=self.vocabulary_size)


class _WeightedCategoricalColumn(collections.namedtuple(
        "_WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    """A categorical column's ids with a weight each (``weighted_categorical_column``)."""

    is_dense = False
    is_categorical = True
    name = property(lambda self: f"{self.categorical_column.name}_weighted_by_"
                                 f"{self.weight_feature_key}")
    _var_scope_name = name
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    @property
    def _parse_example_spec(self):
        spec = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in spec:
            raise ValueError(f"Parse config {spec[self.weight_feature_key]} already exists "
                             f"for {self.weight_feature_key}.")
        spec[self.weight_feature_key] = VarLenFeature(self.dtype)
        return spec

    def _transform_feature(self, builder):
        ids, _ = self.categorical_column._get_sparse_tensors(builder)
        weights = builder.raw(self.weight_feature_key, self.name, sparse_ok=True)
        return ids, sp.weights(weights, self.dtype, self.weight_feature_key)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


class _CrossedColumn(collections.namedtuple("_CrossedColumn",
                                            ["keys", "hash_bucket_size", "hash_key"])):
    """Hashed crosses of categorical features (``crossed_column``): TF's
    ``sparse_cross_hashed``, with FarmHash's Fingerprint64 and ``FingerprintCat64``."""

    is_dense = False
    is_categorical = True
    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def name(self):
        return "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self.keys))

    _var_scope_name = name

    @property
    def _parse_example_spec(self):
        spec = {}
        for k in self.keys:
            spec.update({k: VarLenFeature(dtypes.string)} if isinstance(k, str)
                        else k._parse_example_spec)
        return spec

    def _transform_feature(self, builder):
        parts = []
        for k in self.keys:
            if isinstance(k, str):
                parts.append(builder.raw(k, self.name, sparse_ok=True))
            else:
                parts.append(k._get_sparse_tensors(builder)[0])
        return sp.cross_hashed(parts, self.hash_bucket_size, self.hash_key)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return builder.get(self), None


class _EmbeddingColumn(collections.namedtuple("_EmbeddingColumn", [
        "categorical_column", "dimension", "combiner", "layer_creator", "ckpt_to_load_from",
        "tensor_name_in_ckpt", "max_norm", "trainable"])):
    """Dense vectors of a categorical column's ids (``embedding_column``)."""

    is_dense = True
    is_categorical = False
    name = property(lambda self: f"{self.categorical_column.name}_embedding")
    _var_scope_name = name

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self):
        return TensorShape((self.dimension,))

    def _transform_feature(self, builder):
        return self.categorical_column._get_sparse_tensors(builder)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        ids, weights = builder.get(self)
        table = self.layer_creator(weight_collections,
                                   self.trainable and trainable is not False)
        return sp.safe_lookup(table, ids, weights, self.combiner, self.max_norm)


class _SharedEmbeddingColumn(collections.namedtuple("_SharedEmbeddingColumn", [
        "categorical_column", "dimension", "combiner", "initializer",
        "shared_embedding_collection_name",
        "ckpt_to_load_from", "tensor_name_in_ckpt", "max_norm", "trainable"])):
    """An embedding whose table is shared with other columns
    (``shared_embedding_columns``)."""

    is_dense = True
    is_categorical = False
    name = property(lambda self: f"{self.categorical_column.name}_shared_embedding")
    _var_scope_name = property(lambda self: self.shared_embedding_collection_name)
    _parse_example_spec = _EmbeddingColumn._parse_example_spec
    _variable_shape = _EmbeddingColumn._variable_shape
    _transform_feature = _EmbeddingColumn._transform_feature

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        ids, weights = builder.get(self)
        table = builder.shared_table(self, weight_collections,
                                     self.trainable and trainable is not False)
        return sp.safe_lookup(table, ids, weights, self.combiner, self.max_norm)


class _IndicatorColumn(collections.namedtuple("_IndicatorColumn", ["categorical_column"])):
    """A categorical column's ids as a multi-hot vector (``indicator_column``)."""

    is_dense = True
    is_categorical = False
    name = property(lambda self: f"{self.categorical_column.name}_indicator")
    _var_scope_name = name

    @property
    def _parse_example_spec(self):
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self):
        return TensorShape((self.categorical_column._num_buckets,))

    def _transform_feature(self, builder):
        ids, weights = self.categorical_column._get_sparse_tensors(builder)
        return sp.multi_hot(ids, weights, self.categorical_column._num_buckets)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


def _embedding_initializer(initializer, dimension, what):
    if initializer is not None and not callable(initializer):
        raise ValueError(f"{what}: initializer must be callable if specified.")
    return initializer or truncated_normal_initializer(mean=0.0,
                                                       stddev=1 / math.sqrt(dimension))


def _check_categorical(column, what):
    if not getattr(column, "is_categorical", False):
        raise ValueError(f"{what}: categorical_column must be of type _CategoricalColumn. "
                         f"Given (type {type(column).__name__}): {column}")
    return column


def _check_combiner(combiner, what):
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"{what}: combiner must be one of 'mean', 'sqrtn' or 'sum', got "
                         f"{combiner!r}")
    return combiner
