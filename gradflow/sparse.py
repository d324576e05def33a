"""TF1's ``tf.sparse`` namespace: ``SparseTensor``, ``placeholder`` and ``to_dense``."""

from gradflow.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.sparse_tensor import sparse_placeholder as placeholder

__all__ = ["SparseTensor", "SparseTensorValue", "placeholder", "to_dense"]
