"""The model inputs the feature columns make: ``input_layer`` (the dense columns side
by side) and ``linear_model`` (a weighted sum of every column), with TF1's variable
names (``input_layer/<column>/embedding_weights``, ``linear_model/<column>/weights``,
``linear_model/bias_weights``), so checkpoints match."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.feature_column import sparse_inputs as sp
from gradflow.graph import get_default_graph
from gradflow.ops.array_ops import expand_dims, matmul, reshape
from gradflow.ops.index_ops import concat
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.init_ops import zeros_initializer
from gradflow.ops.math_ops import add
from gradflow.ops.nn_ops import bias_add
from gradflow.sparse_tensor import SparseTensor
from gradflow.variables import GraphKeys, get_variable, variable_scope

_SHARED = "_feature_column_shared_embeddings"  # graph collection: (name, variable)


class _LazyBuilder:
    """The features dict, and each column's transformation made once (TF1's
    ``_LazyBuilder``): a rank-1 dense feature counts as one value per example."""

    def __init__(self, features):
        if not isinstance(features, dict):
            raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                             f"{type(features).__name__}")
        self._features = features
        self._done = {}

    def raw(self, key, column_name, sparse_ok):
        if key not in self._features:
            raise ValueError(f"The feature '{key}' (read by column '{column_name}') is not "
                             f"in features dictionary (keys: {sorted(self._features)}).")
        value = sp.tensor(self._features[key])
        if isinstance(value, SparseTensor):
            if not sparse_ok:
                raise ValueError(f"The corresponding Tensor of numerical column must be a "
                                 f"Tensor. SparseTensor is not supported. key: {key}")
            return value
        if value.shape is not None and len(value.shape) == 1:
            value = expand_dims(value, -1)
        return value

    def get(self, column):
        if column not in self._done:
            self._done[column] = column._transform_feature(self)
        return self._done[column]

    def shared_table(self, column, weight_collections, trainable):
        """The embedding table a group of shared embedding columns use: made by the
        first column that needs it, in the scope of the collection's name."""
        graph = get_default_graph()
        name = column.shared_embedding_collection_name
        for found_name, variable in graph.get_collection(_SHARED):
            if found_name == name:
                return variable
        variable = _embedding_table(column.categorical_column._num_buckets, column.dimension,
                                    column.initializer, weight_collections, trainable)
        graph.add_to_collection(_SHARED, (name, variable))
        return variable


def _collections(weight_collections):
    """``weight_collections`` with the global variables (None: get_variable's default)."""
    if not weight_collections:
        return None
    found = [GraphKeys.GLOBAL_VARIABLES]
    found.extend(c for c in weight_collections if c not in found)
    return found


def _embedding_table(num_buckets, dimension, initializer, weight_collections, trainable):
    """The ``embedding_weights`` variable of an embedding column, in the current scope."""
    return get_variable("embedding_weights", shape=(num_buckets, dimension),
                        dtype=dtypes.float32, initializer=initializer,
                        trainable=bool(trainable),
                        collections=_collections(weight_collections))


def embedding_creator(categorical_column, dimension, initializer):
    """The ``layer_creator`` of an ``embedding_column``: makes its table when called with
    ``(weight_collections, trainable)``."""

    def creator(weight_collections, trainable):
        return _embedding_table(categorical_column._num_buckets, dimension, initializer,
                                weight_collections, trainable)

    return creator


def _columns(feature_columns, what):
    if feature_columns is None:
        raise ValueError("feature_columns must not be empty.")
    columns = list(feature_columns) if isinstance(feature_columns, (list, tuple, set)) \
        else [feature_columns]
    if not columns:
        raise ValueError("feature_columns must not be empty.")
    names = {}
    for c in columns:
        if not hasattr(c, "_transform_feature"):
            raise ValueError(f"{what}: items of feature_columns must be a feature column. "
                             f"Given: {c!r}")
        if c.name in names:
            raise ValueError(f"Duplicate feature column name found for columns: {c} and "
                             f"{names[c.name]}. This usually means that these columns refer "
                             "to same base feature. Either one must be discarded or a "
                             "duplicated but renamed item must be inserted in features "
                             "dict.")
        names[c.name] = c
    return sorted(columns, key=lambda c: c.name)


def _flat(tensor, column):
    size = 1
    for d in column._variable_shape:
        size *= int(d)
    return reshape(tensor, concat([shape_of(tensor)[:1], [size]], 0))


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """The dense columns' values side by side, a ``[batch, total width]`` float32 tensor
    (TF1 ``tf.feature_column.input_layer``); the columns in order of their names.

    >>> net = gf.feature_column.input_layer(features, [age, city_one_hot])
    """
    columns = _columns(feature_columns, "input_layer")
    for c in columns:
        if not c.is_dense:
            raise ValueError(f"Items of feature_columns must be a _DenseColumn. You can wrap "
                             f"a categorical column with an embedding_column or "
                             f"indicator_column. Given: {c}")
    builder = _LazyBuilder(features)
    outputs = []
    graph = get_default_graph()
    with variable_scope(None, default_name="input_layer"):
        for c in columns:
            with variable_scope(None, default_name=c._var_scope_name):
                before = len(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))
                dense = _flat(c._get_dense_tensor(builder, weight_collections, trainable), c)
                if cols_to_vars is not None:
                    cols_to_vars[c] = graph.get_collection(GraphKeys.GLOBAL_VARIABLES)[before:]
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[c] = dense
                outputs.append(dense)
        return concat(outputs, 1)


def _weighted_sum(column, builder, units, combiner, weight_collections, trainable):
    if column.is_categorical:
        ids, weights_sp = column._get_sparse_tensors(builder, weight_collections, trainable)
        weight = get_variable("weights", shape=(column._num_buckets, units),
                              dtype=dtypes.float32, initializer=zeros_initializer(),
                              trainable=bool(trainable),
                              collections=_collections(weight_collections))
        return sp.safe_lookup(weight, ids, weights_sp, combiner), weight
    dense = _flat(column._get_dense_tensor(builder, weight_collections, trainable), column)
    size = 1
    for d in column._variable_shape:
        size *= int(d)
    weight = get_variable("weights", shape=(size, units), dtype=dtypes.float32,
                          initializer=zeros_initializer(), trainable=bool(trainable),
                          collections=_collections(weight_collections))
    return matmul(dense, weight, name="weighted_sum"), weight


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear model of the columns, ``[batch, units]`` (TF1
    ``tf.feature_column.linear_model``): each column's weights (zeros at first; a
    categorical column's ids pick rows, combined by ``sparse_combiner``) summed, plus
    ``bias_weights``.

    >>> logits = gf.feature_column.linear_model(features, [age_buckets, city])
    """
    if sparse_combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"linear_model: sparse_combiner must be one of 'mean', 'sqrtn' or "
                         f"'sum', got {sparse_combiner!r}")
    columns = _columns(feature_columns, "linear_model")
    builder = _LazyBuilder(features)
    sums = []
    with variable_scope(None, default_name="linear_model"):
        for c in columns:
            with variable_scope(None, default_name=c._var_scope_name):
                total, weight = _weighted_sum(c, builder, units, sparse_combiner,
                                              weight_collections, trainable)
                sums.append(total)
                if cols_to_vars is not None:
                    cols_to_vars[c] = [weight]
        no_bias = sums[0]
        for s in sums[1:]:
            no_bias = add(no_bias, s)
        bias = get_variable("bias_weights", shape=(units,), dtype=dtypes.float32,
                            initializer=zeros_initializer(), trainable=bool(trainable),
                            collections=_collections(weight_collections))
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        return bias_add(no_bias, bias, name="weighted_sum")
