"""TF1's ``tf.sparse`` namespace: ``SparseTensor``, ``placeholder``, ``to_dense``, the
ops that move a ``SparseTensor``'s entries (``reorder``, ``reshape``, ``transpose``,
``slice``, ``split``, ``concat``, ...) and the ones that compute on its values
(``add``, ``reduce_sum``, ``softmax``, ``segment_sum``, ...)."""

from gradflow.ops.sparse_math_ops import sparse_add as add
from gradflow.ops.sparse_math_ops import sparse_maximum as maximum
from gradflow.ops.sparse_math_ops import sparse_minimum as minimum
from gradflow.ops.sparse_math_ops import sparse_reduce_max as reduce_max
from gradflow.ops.sparse_math_ops import sparse_reduce_max_sparse as reduce_max_sparse
from gradflow.ops.sparse_math_ops import sparse_reduce_sum as reduce_sum
from gradflow.ops.sparse_math_ops import sparse_reduce_sum_sparse as reduce_sum_sparse
from gradflow.ops.sparse_math_ops import sparse_segment_mean as segment_mean
from gradflow.ops.sparse_math_ops import sparse_segment_sqrt_n as segment_sqrt_n
from gradflow.ops.sparse_math_ops import sparse_segment_sum as segment_sum
from gradflow.ops.sparse_math_ops import sparse_softmax as softmax
from gradflow.ops.sparse_ops import sparse_retain as retain
from gradflow.ops.sparse_ops import sparse_tensor_dense_matmul
from gradflow.ops.sparse_ops import sparse_tensor_dense_matmul as matmul
from gradflow.ops.sparse_ops import sparse_tensor_dense_matmul as sparse_dense_matmul
from gradflow.ops.sparse_ops import sparse_tensor_to_dense as to_dense
from gradflow.ops.sparse_shape_ops import sparse_concat as concat
from gradflow.ops.sparse_shape_ops import sparse_expand_dims as expand_dims
from gradflow.ops.sparse_shape_ops import sparse_eye as eye
from gradflow.ops.sparse_shape_ops import sparse_fill_empty_rows as fill_empty_rows
from gradflow.ops.sparse_shape_ops import sparse_from_dense as from_dense
from gradflow.ops.sparse_shape_ops import sparse_mask as mask
from gradflow.ops.sparse_shape_ops import sparse_merge as merge
from gradflow.ops.sparse_shape_ops import sparse_reorder as reorder
from gradflow.ops.sparse_shape_ops import sparse_reset_shape as reset_shape
from gradflow.ops.sparse_shape_ops import sparse_reshape as reshape
from gradflow.ops.sparse_shape_ops import sparse_slice as slice  # noqa: A004 - TF1's name
from gradflow.ops.sparse_shape_ops import sparse_split as split
from gradflow.ops.sparse_shape_ops import sparse_to_indicator as to_indicator
from gradflow.ops.sparse_shape_ops import sparse_transpose as transpose
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue
from gradflow.sparse_tensor import sparse_placeholder as placeholder

__all__ = ["SparseTensor", "SparseTensorValue", "add", "concat", "expand_dims", "eye",
           "fill_empty_rows", "from_dense", "mask", "matmul", "maximum", "merge", "minimum",
           "placeholder", "reduce_max", "reduce_max_sparse", "reduce_sum", "reduce_sum_sparse",
           "reorder", "reset_shape", "reshape", "retain", "segment_mean", "segment_sqrt_n",
           "segment_sum", "slice", "softmax", "sparse_dense_matmul",
           "sparse_tensor_dense_matmul", "split", "to_dense", "to_indicator", "transpose"]
