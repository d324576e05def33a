"""TF1's ``tf.sparse`` namespace: ``SparseTensor``, ``placeholder``, ``retain``,
``sparse_dense_matmul`` and ``to_dense``."""

from gradflow.ops.sparse_ops import sparse_retain as retain
from gradflow.ops.sparse_ops import sparse_tensor_dense_matmul
from gradflow.ops.sparse_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from gradflow.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.sparse_tensor import sparse_placeholder as placeholder

__all__ = ["SparseTensor", "SparseTensorValue", "placeholder", "retain",
           "sparse_dense_matmul", "sparse_tensor_dense_matmul", "to_dense"]
