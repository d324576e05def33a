"""gradflow: a static-graph deep-learning framework on any Array API backend.

TF1's graph-mode API (``import gradflow as tf`` works for supported features);
the graph runs forward and backward on NumPy, CuPy, PyTorch or any Array API
library, chosen per Session.
"""

from gradflow import backends, data, errors, layers, nn, train  # noqa: E402 - they use the names above
from gradflow import app, contrib, estimator, image, keras  # TF1's tf.app, tf.contrib, ...
from gradflow import initializers, losses, metrics  # TF1's tf.initializers, tf.losses, tf.metrics
from gradflow.initializers import (
    identity_initializer, orthogonal_initializer, variance_scaling_initializer,
)
from gradflow import tf_logging as logging  # TF1's tf.logging
from gradflow import summary  # TF1's tf.summary (tensorboardX is imported on first use)
from gradflow.summary.legacy import (  # the names before TF 1.0
    histogram_summary, image_summary, merge_all_summaries, merge_summary, scalar_summary,
)
from gradflow import timeline  # TF1's tensorflow.python.client.timeline
from gradflow import gfile, io  # TF1's tf.gfile and tf.io.gfile
from gradflow.io import read_file  # TF1's tf.read_file
from gradflow import sparse  # TF1's tf.sparse
from gradflow import mixed_precision  # TF1's tf.mixed_precision (loss scaling, the rewrite)
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue, sparse_placeholder
from gradflow.ops.sparse_ops import (
    sparse_retain, sparse_tensor_dense_matmul, sparse_tensor_to_dense, sparse_to_dense,
)
from gradflow.ops.sparse_shape_ops import (  # TF1's tf.sparse_* that move entries
    sparse_concat, sparse_fill_empty_rows, sparse_mask, sparse_merge, sparse_reorder,
    sparse_reset_shape, sparse_reshape, sparse_slice, sparse_split, sparse_to_indicator,
    sparse_transpose,
)
from gradflow.ops.sparse_math_ops import (  # TF1's tf.sparse_* that compute on values
    sparse_add, sparse_matmul, sparse_maximum, sparse_minimum, sparse_reduce_max,
    sparse_reduce_max_sparse, sparse_reduce_sum, sparse_reduce_sum_sparse, sparse_segment_mean,
    sparse_segment_sqrt_n, sparse_segment_sum, sparse_softmax,
)
from gradflow.ops.scatter_more_ops import (  # the other scatters, batch_gather
    batch_gather, batch_scatter_update, scatter_div, scatter_max, scatter_min, scatter_mul,
    scatter_nd_add, scatter_nd_sub, scatter_nd_update, tensor_scatter_nd_max, tensor_scatter_nd_min,
)
from gradflow.ops.ctc_ops import edit_distance
from gradflow.app import flags  # TF1's tf.flags (= tf.app.flags)
from gradflow import compat  # TF1's tf.compat, tf.compat.v1
from gradflow.compat.v1 import (  # TF 1.15's mode switches: no-ops, or errors away from TF1
    disable_eager_execution, disable_resource_variables, disable_v2_behavior,
    disable_v2_tensorshape, enable_eager_execution, enable_resource_variables, enable_v2_behavior,
    enable_v2_tensorshape, executing_eagerly, resource_variables_enabled,
)
from gradflow.autodiff import RegisterGradient, UnconnectedGradients, gradients
from gradflow.config import (
    ConfigProto, DeviceSpec, GPUOptions, GraphOptions, OptimizerOptions, RunMetadata, RunOptions,
    device,
)
from gradflow.config import DeviceStepStats, NodeExecStats, StepStats
from gradflow.clip_ops import clip_by_global_norm, clip_by_norm, global_norm
from gradflow.dtypes import DType, as_dtype, bfloat16, float16, float32, float64, int32, int64
from gradflow.dtypes import bool_ as bool  # noqa: A001 - TF1 name
from gradflow.dtypes import double, half, int8, int16, string, uint8, uint16, uint32, uint64
from gradflow.ops.state_ops import ensure_shape
from gradflow.graph import (
    Dimension, Graph, Operation, Tensor, TensorShape, get_default_graph, name_scope,
    reset_default_graph, set_random_seed,
)
from gradflow.ops import overloads as _overloads  # noqa: F401 - installs the operators
from gradflow.ops.array_ops import (
    arg_max, arg_min, argmax, argmin, expand_dims, matmul, reduce_all, reduce_any, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_sum, reshape, squeeze, transpose,
)
from gradflow.ops.index_ops import (
    boolean_mask, concat, gather, gather_nd, one_hot, shape, split, stack, strided_slice, unstack,
)
from gradflow.ops.index_ops import slice_ as slice  # noqa: A001 - TF1 name
from gradflow.ops.linalg_ops import einsum, norm, tensordot
from gradflow.ops.matrix_ops import (  # TF1's matrix functions (tf.linalg's too)
    cholesky, cholesky_solve, diag, diag_part, matrix_band_part, matrix_determinant, matrix_diag,
    matrix_diag_part, matrix_inverse, matrix_set_diag, matrix_solve, matrix_solve_ls,
    matrix_transpose, matrix_triangular_solve, qr, self_adjoint_eig, self_adjoint_eigvals, svd,
    trace,
)
from gradflow.ops.array_ops import count_nonzero, reduce_logsumexp
from gradflow.ops.functional_ops import foldl, foldr, map_fn, scan
from gradflow.ops.functional_ops import custom_gradient, py_function
from gradflow.ops.indexed_slices import IndexedSlices
from gradflow.ops.template import make_template
from gradflow.ops.math_ops import ceil, cos, expm1, is_finite, is_inf, is_nan, sin
from gradflow.ops.shape_ops import lin_space, linspace, meshgrid, sequence_mask
from gradflow.ops.sampling_ops import multinomial, random_shuffle
from gradflow.ops.random_ops import random_gamma, random_poisson
from gradflow.ops.queue_ops import (  # TF1's queues
    FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue,
)
from gradflow.ops.reader_ops import (  # TF1's readers
    FixedLengthRecordReader, ReaderBase, TextLineReader, TFRecordReader, WholeFileReader,
    decode_raw,
)
from gradflow.ops.parsing_ops import (  # tf.train.Example records to tensors
    FixedLenFeature, VarLenFeature, parse_example, parse_single_example,
)
from gradflow import tfrecord as python_io  # TF1's tf.python_io: TFRecord files
from gradflow.ops.csv_ops import decode_csv  # CSV lines to columns
from gradflow.image import random_crop  # TF1's tf.random_crop
from gradflow.image import extract_image_patches  # TF1's tf.extract_image_patches
from gradflow.ops.image_extra_ops import extract_volume_patches
from gradflow.ops.linalg_extra_ops import cross  # TF1's tf.cross
from gradflow import strings  # TF1's tf.strings (host ops on string tensors)
from gradflow.strings import (  # TF1's string ops at the top of tf
    as_string, reduce_join, regex_replace, string_split, string_to_hash_bucket_fast,
    string_to_number, substr,
)
from gradflow.strings import join as string_join
from gradflow.strings import (  # more of TF1's string ops at the top of tf
    fingerprint, string_strip, string_to_hash_bucket, string_to_hash_bucket_strong,
)
from gradflow import signal  # TF1's tf.signal (frames, windows, mel, DCT, Fourier transforms)
from gradflow import spectral  # TF1's tf.spectral: older names of tf.signal's transforms
from gradflow.dtypes import complex64, complex128
from gradflow.ops.fft_ops import (
    complex,  # noqa: A004 - TF1 name
    fft,
    fft2d,
    fft3d,
    ifft,
    ifft2d,
    ifft3d,
    to_complex64,
    to_complex128,
)
from gradflow import sets  # TF1's tf.sets
from gradflow import lookup  # TF1's tf.lookup: tables initialized per Session
from gradflow.lookup import initialize_all_tables, tables_initializer

initializers.tables_initializer = tables_initializer  # TF1's tf.initializers.tables_initializer
from gradflow.ops.scatter_ops import (
    bincount, scatter_add, scatter_nd, scatter_sub, scatter_update, tensor_scatter_add,
    tensor_scatter_nd_add, tensor_scatter_nd_sub, tensor_scatter_nd_update, tensor_scatter_sub,
    tensor_scatter_update,
)
from gradflow.ops.sort_ops import argsort, sort, unique
from gradflow.ops.partition_ops import dynamic_partition, dynamic_stitch
from gradflow.ops.segment_ops import (  # segment reductions
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n,
    unsorted_segment_sum,
)
from gradflow.ops.control_flow_ops import case
from gradflow.ops.math_ops import (
    abs,  # noqa: A004
    add,
    cast,
    clip_by_value,
    cumprod,
    cumsum,
    div,
    divide,
    equal,
    exp,
    floor,
    floor_div,
    floordiv,
    floormod,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    ones_like,
    pow,  # noqa: A004
    reciprocal,
    round,  # noqa: A004
    rsqrt,
    sigmoid,
    sign,
    sqrt,
    square,
    squared_difference,
    subtract,
    tanh,
    to_bfloat16,
    to_double,
    to_float,
    to_int32,
    to_int64,
    truediv,
    where,
    zeros_like,
)
from gradflow.ops.math_ops import (  # trigonometry, no-NaN divisions, truncations
    acos, acosh, asin, asinh, atan, atan2, atanh, cosh, div_no_nan, rint, sinh, tan, truncatediv,
    truncatemod,
)
from gradflow.ops.math_extra_ops import (
    accumulate_n, angle, confusion_matrix, conj, imag, is_non_decreasing, is_strictly_increasing,
    lbeta, log_sigmoid, real, realdiv, scalar_mul,
)
from gradflow.ops.manip_ops import (  # array manipulation
    batch_to_space, batch_to_space_nd, depth_to_space, invert_permutation, repeat,
    reverse_sequence, roll, searchsorted, setdiff1d, space_to_batch, space_to_batch_nd,
    space_to_depth, unique_with_counts,
)
from gradflow.ops.nn_ops import softmax
from gradflow.ops.special_ops import digamma, erf, erfc, lgamma, polygamma
from gradflow.ops.special_series_ops import betainc, igamma, igammac, zeta
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.ops.shape_ops import (
    broadcast_to, eye, fill, pad, rank, reverse, reverse_v2, size, tile,
)
from gradflow.ops.shape_ops import range_ as range  # noqa: A001 - TF1 name
from gradflow.ops.state_ops import (
    assign, assign_add, assign_sub, group, identity, no_op, placeholder, placeholder_with_default,
    random_normal, random_uniform, stop_gradient, truncated_normal,
)
from gradflow.session import InteractiveSession, Session, get_default_session
from gradflow.graph_io import GraphDef, import_graph_def  # TF1's graph files
from gradflow.graph_io.meta_graph import MetaGraphDef  # noqa: E402 - tf.MetaGraphDef
from gradflow import graph_util, onnx, saved_model  # noqa: E402 - frozen graphs, serving
# control flow and debugging; ``tuple`` and ``print`` shadow the builtins in this module
from gradflow.ops.control_flow_ops import cond, control_dependencies, while_loop
from gradflow.ops.control_flow_ops import tuple_ as tuple  # noqa: A001 - TF1 name
from gradflow.ops.tensor_array_ops import TensorArray
from gradflow.ops.debug_ops import (
    Assert, Print, add_check_numerics_ops, assert_equal, assert_greater, assert_greater_equal,
    assert_less, assert_less_equal, assert_negative, assert_non_negative, assert_non_positive,
    assert_none_equal, assert_positive, assert_rank, assert_type, check_numerics, numpy_function,
    py_func, verify_tensor_all_finite,
)
from gradflow.ops.debug_ops import print  # noqa: A001 - TF1 name (tf.print)
from gradflow.variables import (
    AUTO_REUSE, GraphKeys, Variable, VariableScope, add_to_collection, add_to_collections,
    all_variables, constant_initializer, get_collection, get_collection_ref, get_local_variable,
    get_variable, get_variable_scope, global_variables, global_variables_initializer,
    glorot_normal_initializer, glorot_uniform_initializer, he_normal_initializer,
    initialize_all_variables, initialize_local_variables, initialize_variables, local_variables,
    local_variables_initializer, model_variables, moving_average_variables, ones_initializer,
    random_normal_initializer, random_uniform_initializer, trainable_variables,
    truncated_normal_initializer, variable_scope, variables_initializer, zeros_initializer,
)


def _filled_with(value, shape, dtype, name):
    """TF1's ``zeros``/``ones``: a constant when it holds fewer than 1000 elements, else
    a ``fill`` node, which takes no memory until a run computes it (and refuses, naming
    itself, an output larger than the memory there is)."""
    import builtins as _builtins
    import math as _math

    import numpy as _np

    if isinstance(shape, Tensor) or (isinstance(shape, (_builtins.list, _builtins.tuple))
                                     and _builtins.any(isinstance(d, Tensor) for d in shape)):
        # a shape known only when the graph runs: [gf.shape(x)[0], 10]
        return fill(shape, constant(value, dtype=dtype), name=name)
    dims = _builtins.tuple(shape)
    if _builtins.all(isinstance(d, (_builtins.int, _np.integer)) and d >= 0 for d in dims) \
            and _math.prod(dims) < 1000:
        return constant(_np.full(dims, value), dtype=dtype, name=name)
    return fill(_builtins.list(dims), constant(value, dtype=dtype), name=name)


def zeros(shape, dtype=float32, name=None):
    """A tensor of zeros (TF1): a constant when small, else a ``fill`` node."""
    return _filled_with(0, shape, dtype, name or "zeros")


def ones(shape, dtype=float32, name=None):
    """A tensor of ones (TF1): a constant when small, else a ``fill`` node."""
    return _filled_with(1, shape, dtype, name or "ones")


def add_n(inputs, name=None):
    """The sum of a list of tensors."""
    total = inputs[0]
    for t in inputs[1:]:
        total = add(total, t)
    return identity(total, name=name) if name else total


sub = subtract
mul = multiply
newaxis = None  # TF1's tf.newaxis, for x[:, tf.newaxis]

__version__ = "0.1.0"

# TF1's tf.math and tf.linalg: aliases of the names above, so imported after them
from gradflow import linalg, math  # noqa: E402, A004
from gradflow import distributions, random  # noqa: E402, A004 - TF1's tf.distributions, tf.random
from gradflow import bitwise, manip  # noqa: E402 - TF1's tf.bitwise and tf.manip
from gradflow import feature_column  # noqa: E402 - TF1's tf.feature_column
from gradflow.ops.math_ops import logical_xor  # noqa: E402
from gradflow import debugging, nest, queue, resource_loader  # noqa: E402 - TF1 namespaces
from gradflow.ops.assert_ops import (  # noqa: E402 - TF1's other checks
    assert_integer, assert_near, assert_proper_iterable, assert_rank_at_least, assert_rank_in,
    assert_same_float_dtype, assert_scalar, is_numeric_tensor, is_tensor,
)
from gradflow.ops.extra_tf1_ops import (  # noqa: E402 - composites and shape helpers
    broadcast_dynamic_shape, broadcast_static_shape, clip_by_average_norm, colocate_with,
    histogram_fixed_width, histogram_fixed_width_bins, identity_n, op_scope, parallel_stack,
    saturate_cast, shape_n, switch_case, unravel_index, variable_op_scope, where_v2,
)
from gradflow.gradient_tools import grad_pass_through, hessians  # noqa: E402
from gradflow.framework import (  # noqa: E402 - TF1's small framework names
    AggregationMethod, NoGradient, NotDifferentiable, VariableAggregation, VariableSynchronization,
    convert_to_tensor_or_indexed_slices, convert_to_tensor_or_sparse_tensor, get_static_value,
    make_ndarray, make_tensor_proto, no_gradient, no_regularizer, recompute_grad,
    register_tensor_conversion_function,
)
from gradflow.ops.io_ops import (  # noqa: E402 - TF1's tf.io host functions, variable checks
    assert_variables_initialized, count_up_to, decode_base64, decode_compressed,
    deserialize_many_sparse, encode_base64, is_variable_initialized, matching_files, parse_tensor,
    report_uninitialized_variables, serialize_many_sparse, serialize_sparse, serialize_tensor,
    write_file,
)
from gradflow.ops.sequence_parsing_ops import (  # noqa: E402 - tf.train.SequenceExample records
    FixedLenSequenceFeature, parse_single_sequence_example,
)
from gradflow.ops.parsing_ops import SparseFeature  # noqa: E402

_SUMMARY_PROTOS = ("Summary", "Event", "SessionLog", "HistogramProto", "SummaryMetadata")


def __getattr__(name):
    # tf.Summary, tf.Event...: tensorboardX's protobuf classes, imported when first asked for
    if name in _SUMMARY_PROTOS:
        return getattr(summary, name)
    raise AttributeError(f"module 'gradflow' has no attribute {name!r}")
from gradflow.compat import dimension_at_index, dimension_value  # noqa: E402
from gradflow.errors import OpError  # noqa: E402 - tf.OpError, tf.errors.OpError
from gradflow.initializers import uniform_unit_scaling_initializer  # noqa: E402
from gradflow.random import get_seed  # noqa: E402 - tf.get_seed, tf.random.get_seed
from gradflow.tf_logging import get_logger  # noqa: E402 - tf.get_logger
from gradflow import dtypes  # noqa: E402 - tf.dtypes
# tf.dtypes also holds the casts (made above the dtypes layer, so attached here)
dtypes.bool = bool
dtypes.cast = cast
dtypes.saturate_cast = saturate_cast
dtypes.as_string = as_string
dtypes.complex = complex
# tf.io also holds the image codecs and write_graph (from modules of its own layer or above)
io.decode_bmp, io.decode_image = image.decode_bmp, image.decode_image
io.decode_jpeg, io.decode_png = image.decode_jpeg, image.decode_png
io.encode_jpeg, io.encode_png = image.encode_jpeg, image.encode_png
io.write_graph = train.write_graph
