"""A list of TF1 names that tutorials and model code use, and which of them gradflow has.

``python tests/test_tf1_names.py`` prints the share (the README quotes it); the test
keeps the list honest: every name not listed as missing must resolve on ``gradflow``,
and every name listed as missing must still be missing (so a new name is counted).

The list was chosen for this project: the graph/session core, dtypes, math and array
ops, ``tf.nn``, ``tf.layers``, initializers, ``tf.losses``, ``tf.metrics``, ``tf.train``
(optimizers, schedules, checkpoints, queues and hooks), ``tf.summary``, ``tf.app`` /
``tf.flags`` / ``tf.logging``, ``tf.contrib.layers``/``rnn``, and a few of the
data-pipeline and high-level APIs (``tf.data``, ``tf.estimator``, ``tf.keras``,
``tf.image``) that later TF1 code reaches for.
"""

from __future__ import annotations

import pytest

import gradflow

NAMES = """
# graph and session
Graph get_default_graph reset_default_graph Session InteractiveSession get_default_session
placeholder placeholder_with_default Variable get_variable variable_scope name_scope
get_variable_scope AUTO_REUSE global_variables_initializer initialize_all_variables
local_variables_initializer variables_initializer global_variables trainable_variables
local_variables model_variables get_collection add_to_collection get_collection_ref GraphKeys
control_dependencies device set_random_seed ConfigProto GPUOptions RunOptions RunMetadata
UnconnectedGradients
Tensor Operation TensorShape Dimension convert_to_tensor constant identity group no_op
# dtypes
float16 float32 float64 int8 int16 int32 int64 uint8 bool string as_dtype DType
# math
add subtract multiply divide truediv floordiv mod pow square sqrt rsqrt exp log log1p abs
negative sign reciprocal round floor ceil maximum minimum add_n sigmoid tanh sin cos
equal not_equal less less_equal greater greater_equal logical_and logical_or logical_not
where cast to_float to_int32 to_int64 clip_by_value clip_by_norm clip_by_global_norm
global_norm squared_difference cumsum matmul tensordot einsum norm logical_xor math linalg
reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_all reduce_any
reduce_logsumexp argmax argmin arg_max count_nonzero
erf erfc lgamma digamma polygamma math.erf math.erfc math.lgamma math.digamma
math.erfinv math.erfcinv math.ndtri
math.polygamma math.xlogy math.xdivy
igamma igammac betainc zeta math.igamma math.igammac math.betainc math.zeta math.bessel_i0
math.bessel_i0e math.bessel_i1 math.bessel_i1e math.special math.special.bessel_i0
math.special.bessel_i0e math.special.bessel_i1 math.special.bessel_i1e math.special.bessel_j0
math.special.bessel_j1 math.special.bessel_k0 math.special.bessel_k0e math.special.bessel_k1
math.special.bessel_k1e math.special.bessel_y0 math.special.bessel_y1 math.special.dawsn
math.special.expint math.special.fresnel_cos math.special.fresnel_sin math.special.spence
# linear algebra
matrix_inverse matrix_determinant matrix_solve matrix_triangular_solve matrix_solve_ls cholesky
cholesky_solve qr svd self_adjoint_eig self_adjoint_eigvals matrix_band_part matrix_transpose
matrix_diag matrix_diag_part matrix_set_diag diag diag_part trace linalg.inv linalg.det
linalg.slogdet linalg.logdet linalg.solve linalg.cholesky linalg.cholesky_solve linalg.qr
linalg.svd linalg.eigh linalg.eigvalsh linalg.triangular_solve linalg.lstsq linalg.band_part
linalg.matrix_transpose linalg.adjoint linalg.diag linalg.diag_part linalg.set_diag
linalg.tensor_diag linalg.tensor_diag_part linalg.trace linalg.matvec linalg.pinv linalg.eye
linalg.norm linalg.global_norm linalg.LinearOperator linalg.LinearOperatorFullMatrix
linalg.LinearOperatorDiag linalg.LinearOperatorIdentity linalg.LinearOperatorLowerTriangular
linalg.lu linalg.lu_solve linalg.lu_matrix_inverse linalg.lu_reconstruct linalg.expm cross
linalg.cross linalg.normalize linalg.matrix_rank linalg.tridiagonal_matmul
linalg.tridiagonal_solve linalg.eigh_tridiagonal linalg.LinearOperatorAdjoint
linalg.LinearOperatorBlockDiag linalg.LinearOperatorComposition linalg.LinearOperatorInversion
linalg.LinearOperatorKronecker linalg.LinearOperatorLowRankUpdate linalg.LinearOperatorZeros
linalg.LinearOperatorPermutation linalg.LinearOperatorScaledIdentity linalg.LinearOperatorToeplitz
linalg.LinearOperatorTridiag linalg.LinearOperatorHouseholder
linalg.LinearOperatorBlockLowerTriangular
tan asin acos atan atan2 sinh cosh asinh acosh atanh rint div_no_nan truncatediv truncatemod
realdiv scalar_mul lbeta log_sigmoid confusion_matrix is_non_decreasing
is_strictly_increasing math.log_sigmoid math.reciprocal_no_nan math.reduce_variance
math.reduce_std math.reduce_euclidean_norm math.divide_no_nan math.multiply_no_nan
math.xlog1py math.cumulative_logsumexp math.polyval math.nextafter math.accumulate_n
math.confusion_matrix math.zero_fraction math.atan2 math.tan
bitwise.bitwise_and bitwise.bitwise_or bitwise.bitwise_xor bitwise.invert
bitwise.left_shift bitwise.right_shift
# arrays
zeros ones zeros_like ones_like fill eye range linspace random_normal random_uniform
truncated_normal random_shuffle multinomial shape size rank reshape squeeze expand_dims
transpose concat stack unstack split tile pad slice strided_slice gather gather_nd
boolean_mask one_hot reverse sequence_mask unique sort argsort meshgrid scatter_nd
scatter_update stop_gradient gradients check_numerics Print print py_func cond while_loop
TensorArray make_template custom_gradient py_function IndexedSlices
case map_fn scan assign assign_add assign_sub
tensor_scatter_nd_update tensor_scatter_nd_add tensor_scatter_nd_sub tensor_scatter_update
tensor_scatter_add tensor_scatter_sub broadcast_to cumprod math.cumprod bincount math.bincount
segment_sum segment_mean segment_max segment_min segment_prod unsorted_segment_sum
unsorted_segment_max unsorted_segment_min unsorted_segment_mean unsorted_segment_prod
unsorted_segment_sqrt_n dynamic_partition dynamic_stitch math.segment_sum
math.unsorted_segment_sum math.unsorted_segment_mean math.unsorted_segment_sqrt_n
# random ops and tf.distributions
random_gamma random_poisson random.normal random.uniform random.truncated_normal
random.categorical random.multinomial random.shuffle random.gamma random.poisson
random.set_random_seed random.get_seed random.log_uniform_candidate_sampler
random.uniform_candidate_sampler distributions.Distribution distributions.Normal
random.stateless_normal random.stateless_uniform random.stateless_truncated_normal
random.stateless_categorical random.stateless_multinomial random.stateless_gamma
random.stateless_poisson random.stateless_binomial random.stateless_parameterized_truncated_normal
random.split random.fold_in random.all_candidate_sampler
nn.ctc_beam_search_decoder nn.ctc_beam_search_decoder_v2 nn.ctc_loss_v2 nn.ctc_unique_labels
nn.safe_embedding_lookup_sparse nn.with_space_to_batch
nn.fixed_unigram_candidate_sampler random.fixed_unigram_candidate_sampler nn.dilation2d
nn.learned_unigram_candidate_sampler random.learned_unigram_candidate_sampler
nn.static_state_saving_rnn
nn.erosion2d nn.fractional_max_pool nn.fractional_avg_pool
distributions.Bernoulli distributions.Categorical distributions.Uniform distributions.Beta
distributions.Gamma distributions.Exponential distributions.Laplace distributions.Multinomial
distributions.Dirichlet distributions.kl_divergence distributions.RegisterKL
distributions.ReparameterizationType distributions.FULLY_REPARAMETERIZED
distributions.NOT_REPARAMETERIZED
repeat roll reverse_sequence unique_with_counts searchsorted setdiff1d invert_permutation
space_to_depth depth_to_space space_to_batch_nd batch_to_space_nd space_to_batch
batch_to_space manip.roll nn.space_to_depth nn.depth_to_space nn.xw_plus_b nn.relu_layer
# nn
nn.relu nn.relu6 nn.elu nn.selu nn.leaky_relu nn.softplus nn.softsign nn.swish nn.sigmoid
nn.tanh nn.softmax nn.log_softmax nn.dropout nn.bias_add nn.conv2d nn.conv1d
nn.conv2d_transpose nn.depthwise_conv2d nn.separable_conv2d nn.atrous_conv2d nn.max_pool
nn.avg_pool nn.l2_loss nn.l2_normalize nn.moments nn.batch_normalization
nn.fused_batch_norm nn.local_response_normalization nn.embedding_lookup nn.top_k
nn.in_top_k nn.softmax_cross_entropy_with_logits nn.softmax_cross_entropy_with_logits_v2
nn.sparse_softmax_cross_entropy_with_logits nn.sigmoid_cross_entropy_with_logits
nn.weighted_cross_entropy_with_logits nn.nce_loss nn.sampled_softmax_loss nn.dynamic_rnn
nn.bidirectional_dynamic_rnn nn.static_rnn nn.raw_rnn nn.ctc_loss
nn.rnn_cell.BasicRNNCell nn.rnn_cell.BasicLSTMCell nn.rnn_cell.LSTMCell nn.rnn_cell.GRUCell
nn.rnn_cell.MultiRNNCell nn.rnn_cell.DropoutWrapper nn.rnn_cell.ResidualWrapper
nn.rnn_cell.LSTMStateTuple nn.rnn_cell.RNNCell
nn.conv3d nn.conv3d_transpose nn.conv3d_backprop_filter nn.max_pool3d nn.avg_pool3d
nn.conv2d_backprop_input nn.conv2d_backprop_filter nn.conv1d_transpose nn.max_pool_with_argmax
nn.embedding_lookup_sparse nn.max_pool1d nn.avg_pool1d nn.max_pool_v2 nn.avg_pool_v2
# layers
layers.dense layers.conv2d layers.conv1d layers.conv2d_transpose layers.max_pooling2d
layers.average_pooling2d layers.max_pooling1d layers.flatten layers.dropout
layers.batch_normalization layers.Dense layers.Conv2D
layers.Conv1D layers.Conv2DTranspose layers.Conv3D layers.Conv3DTranspose layers.conv3d
layers.conv3d_transpose layers.SeparableConv2D layers.separable_conv2d layers.BatchNormalization
layers.MaxPooling3D layers.AveragePooling1D layers.AveragePooling3D layers.max_pooling3d
nn.convolution nn.conv_transpose nn.atrous_conv2d_transpose nn.pool nn.depthwise_conv2d_native
nn.depthwise_conv2d_native_backprop_input nn.depthwise_conv2d_native_backprop_filter
nn.depthwise_conv2d_backprop_input nn.depthwise_conv2d_backprop_filter
nn.sufficient_statistics nn.normalize_moments nn.weighted_moments nn.log_poisson_loss
nn.compute_average_loss nn.scale_regularization_loss nn.batch_norm_with_global_normalization
nn.all_candidate_sampler nn.compute_accidental_hits nn.collapse_repeated
# initializers
zeros_initializer ones_initializer constant_initializer random_normal_initializer
random_uniform_initializer truncated_normal_initializer glorot_uniform_initializer
glorot_normal_initializer variance_scaling_initializer orthogonal_initializer
initializers.he_normal initializers.he_uniform initializers.glorot_uniform
initializers.lecun_normal initializers.zeros
# losses
losses.softmax_cross_entropy losses.sparse_softmax_cross_entropy losses.sigmoid_cross_entropy
losses.mean_squared_error losses.absolute_difference losses.log_loss losses.hinge_loss
losses.huber_loss losses.get_regularization_loss losses.get_total_loss losses.add_loss
losses.Reduction losses.mean_pairwise_squared_error
# metrics
metrics.accuracy metrics.mean metrics.precision metrics.recall metrics.auc
metrics.mean_squared_error
metrics.mean_iou metrics.precision_at_k metrics.recall_at_k metrics.average_precision_at_k
metrics.sparse_precision_at_k metrics.sparse_average_precision_at_k metrics.precision_at_top_k
metrics.recall_at_top_k metrics.precision_at_thresholds metrics.recall_at_thresholds
metrics.true_positives_at_thresholds metrics.false_positives_at_thresholds
metrics.true_negatives_at_thresholds metrics.false_negatives_at_thresholds
metrics.sensitivity_at_specificity metrics.specificity_at_sensitivity
metrics.mean_cosine_distance metrics.mean_relative_error metrics.percentage_below
metrics.root_mean_squared_error metrics.mean_tensor metrics.mean_per_class_accuracy
# training
train.GradientDescentOptimizer train.MomentumOptimizer train.AdagradOptimizer
train.RMSPropOptimizer train.AdamOptimizer train.AdadeltaOptimizer train.FtrlOptimizer
train.ProximalGradientDescentOptimizer train.Optimizer train.exponential_decay
train.piecewise_constant train.polynomial_decay train.inverse_time_decay
train.natural_exp_decay train.cosine_decay train.Saver train.latest_checkpoint
train.get_checkpoint_state train.get_global_step train.get_or_create_global_step
train.create_global_step train.global_step train.ExponentialMovingAverage
train.MonitoredTrainingSession train.Coordinator train.start_queue_runners
train.shuffle_batch train.SummarySaverHook train.StopAtStepHook
train.import_meta_graph train.export_meta_graph MetaGraphDef train.Supervisor train.Scaffold
train.SessionManager train.LoggingTensorHook train.NanTensorHook train.NanLossDuringTrainingError
train.StepCounterHook train.ProfilerHook train.CheckpointSaverHook train.FinalOpsHook
train.FeedFnHook train.GlobalStepWaiterHook train.SecondOrStepTimer train.CheckpointSaverListener
train.SessionRunHook train.SessionRunArgs train.MonitoredSession
train.SingularMonitoredSession train.ChiefSessionCreator train.WorkerSessionCreator
train.SessionCreator train.ClusterSpec train.replica_device_setter train.batch_join
train.shuffle_batch_join train.maybe_batch train.SequenceExample train.LooperThread
train.update_checkpoint_state train.checkpoints_iterator train.assert_global_step
# summaries
summary.scalar summary.histogram summary.image summary.text summary.merge summary.merge_all
summary.FileWriter
# programs
app.run app.flags flags.DEFINE_string flags.DEFINE_integer flags.DEFINE_float
flags.DEFINE_boolean flags.FLAGS logging.info logging.set_verbosity logging.INFO
flags.DEFINE_enum flags.DEFINE_list flags.DEFINE_multi_string flags.DEFINE_multi_integer
flags.DEFINE_alias flags.mark_flag_as_required flags.register_validator flags.FlagValues
logging.TaskLevelStatusMessage
errors.OutOfRangeError errors.InvalidArgumentError compat.v1 errors.OpError errors.NOT_FOUND
errors.DeadlineExceededError errors.AbortedError errors.exception_type_from_error_code
# contrib
contrib.layers.xavier_initializer contrib.layers.l2_regularizer contrib.layers.fully_connected
contrib.layers.flatten contrib.layers.batch_norm contrib.layers.variance_scaling_initializer
contrib.layers.layer_norm contrib.training.HParams newaxis
contrib.rnn.BasicLSTMCell contrib.rnn.LSTMCell contrib.rnn.GRUCell contrib.rnn.MultiRNNCell
contrib.rnn.DropoutWrapper contrib.rnn.static_rnn contrib.rnn.LSTMStateTuple
# data pipelines and high-level APIs
data.Dataset estimator.Estimator keras.layers.Dense keras.Model image.resize_images
image.random_flip_left_right io.read_file
# sparse tensors and CTC
SparseTensor SparseTensorValue sparse_placeholder sparse_tensor_to_dense sparse_to_dense
sparse.to_dense nn.ctc_greedy_decoder edit_distance sparse_retain sparse_tensor_dense_matmul
sparse_add sparse_concat sparse_reorder sparse_reshape sparse_transpose sparse_slice
sparse_split sparse_reduce_sum sparse_reduce_max sparse_softmax sparse_fill_empty_rows
sparse_to_indicator sparse_merge sparse_segment_sum sparse_segment_mean sparse_segment_sqrt_n
sparse.add sparse.concat sparse.reorder sparse.reshape sparse.from_dense sparse.eye
sparse.expand_dims sparse.reduce_sum sparse.softmax sparse.matmul
scatter_nd_update scatter_nd_add scatter_nd_sub scatter_mul scatter_div scatter_max scatter_min
tensor_scatter_nd_max tensor_scatter_nd_min batch_gather batch_scatter_update
# strings (host ops on string tensors)
string_split strings.split strings.join string_join reduce_join strings.reduce_join
strings.length substr strings.substr regex_replace strings.regex_replace
strings.regex_full_match strings.strip strings.lower strings.upper string_to_number
strings.to_number as_string string_to_hash_bucket_fast strings.to_hash_bucket_fast
string_to_hash_bucket strings.to_hash_bucket string_to_hash_bucket_strong
strings.to_hash_bucket_strong string_strip fingerprint strings.unsorted_segment_join
# images
image.random_flip_up_down image.random_saturation image.random_hue image.adjust_saturation
image.adjust_hue image.adjust_gamma image.rgb_to_grayscale image.grayscale_to_rgb
image.rgb_to_hsv image.hsv_to_rgb image.crop_to_bounding_box image.pad_to_bounding_box
image.image_gradients image.total_variation image.psnr image.resize_bilinear
image.resize_nearest_neighbor image.encode_png image.encode_jpeg image.decode_jpeg
image.decode_png image.random_crop image.per_image_standardization image.central_crop
image.resize_image_with_crop_or_pad image.flip_left_right image.flip_up_down
image.adjust_brightness image.adjust_contrast image.random_brightness image.random_contrast
image.non_max_suppression image.non_max_suppression_with_scores image.non_max_suppression_padded
image.combined_non_max_suppression image.crop_and_resize image.draw_bounding_boxes image.rot90
image.extract_image_patches image.extract_patches extract_image_patches extract_volume_patches
image.resize_bicubic image.resize_area image.resize image.resize_with_crop_or_pad
image.resize_image_with_pad image.sobel_edges image.ssim image.transpose image.transpose_image
image.rgb_to_yiq image.yiq_to_rgb image.rgb_to_yuv image.yuv_to_rgb
# signal (real signals)
signal.frame signal.overlap_and_add signal.hann_window signal.hamming_window
signal.linear_to_mel_weight_matrix signal.dct signal.idct signal.mfccs_from_log_mel_spectrograms
# complex numbers and the Fourier transforms
complex complex64 complex128 real imag conj angle to_complex64 fft ifft fft2d ifft2d fft3d
signal.fft signal.ifft signal.rfft signal.irfft signal.rfft2d signal.irfft2d signal.fftshift
signal.ifftshift signal.stft signal.inverse_stft signal.inverse_stft_window_fn spectral.fft
spectral.rfft spectral.irfft dtypes.complex64 dtypes.complex
# checks, nest, compat and composites (tf.debugging, tf.nest, tf.compat)
debugging.assert_equal debugging.assert_rank_at_least debugging.check_numerics assert_scalar
assert_near assert_integer is_tensor nest.flatten nest.map_structure nest.pack_sequence_as
compat.dimension_value compat.forward_compatible where_v2 hessians saturate_cast
histogram_fixed_width unravel_index broadcast_static_shape switch_case get_logger
queue.FIFOQueue saved_model.main_op saved_model.classification_signature_def
# sets
sets.set_size sets.set_intersection sets.set_union sets.set_difference sets.size
sets.intersection sets.union sets.difference
# lookup tables and feature columns
lookup.StaticHashTable lookup.StaticVocabularyTable lookup.KeyValueTensorInitializer
lookup.TextFileInitializer lookup.TextFileIndex tables_initializer initialize_all_tables
initializers.tables_initializer feature_column.numeric_column feature_column.bucketized_column
feature_column.categorical_column_with_identity feature_column.categorical_column_with_hash_bucket
feature_column.categorical_column_with_vocabulary_list
feature_column.categorical_column_with_vocabulary_file feature_column.crossed_column
feature_column.embedding_column feature_column.shared_embedding_columns
feature_column.indicator_column feature_column.weighted_categorical_column
feature_column.input_layer feature_column.linear_model feature_column.make_parse_example_spec
data.AUTOTUNE data.INFINITE_CARDINALITY data.UNKNOWN_CARDINALITY data.experimental.Counter
data.experimental.enumerate_dataset data.experimental.take_while data.experimental.unique
data.experimental.choose_from_datasets data.experimental.sample_from_datasets
data.experimental.INFINITE_CARDINALITY data.experimental.UNKNOWN_CARDINALITY
data.Options data.ThreadingOptions data.experimental.parallel_interleave data.experimental.scan
data.experimental.group_by_window data.experimental.group_by_reducer data.experimental.Reducer
data.experimental.bucket_by_sequence_length data.experimental.cardinality
data.experimental.assert_cardinality data.experimental.get_single_element
data.experimental.from_list data.experimental.TFRecordWriter data.experimental.copy_to_device
data.experimental.prefetch_to_device data.experimental.ThreadingOptions
data.experimental.OptimizationOptions data.experimental.AutotuneOptions
data.experimental.DistributeOptions data.experimental.AutoShardPolicy
data.experimental.ExternalStatePolicy data.experimental.AutotuneAlgorithm
# tf.io host functions, variable checks, sequence records, framework names, summaries
serialize_tensor parse_tensor io.serialize_tensor io.parse_tensor serialize_sparse
serialize_many_sparse deserialize_many_sparse encode_base64 decode_base64 decode_compressed
io.decode_compressed write_file matching_files io.matching_files train.match_filenames_once
io.match_filenames_once parse_single_sequence_example io.parse_sequence_example
FixedLenSequenceFeature io.FixedLenSequenceFeature SparseFeature io.SparseFeature
count_up_to is_variable_initialized report_uninitialized_variables
assert_variables_initialized NoGradient NotDifferentiable no_gradient VariableAggregation
VariableSynchronization AggregationMethod convert_to_tensor_or_indexed_slices
convert_to_tensor_or_sparse_tensor recompute_grad register_tensor_conversion_function
get_static_value no_regularizer make_tensor_proto make_ndarray train.AdagradDAOptimizer
train.noisy_linear_cosine_decay train.summary_iterator train.warm_start train.VocabInfo
summary.tensor_summary summary.audio Summary Event SessionLog HistogramProto SummaryMetadata
summary.TaggedRunMetadata
"""

MISSING = set("""
keras.Model
""".split())


def names():
    return [w for line in NAMES.splitlines() if not line.startswith("#") for w in line.split()]


def resolves(name) -> bool:
    obj = gradflow
    for part in name.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("name", names())
def test_name_is_present_unless_listed_missing(name):
    assert resolves(name) == (name not in MISSING), (
        f"gradflow.{name}: " + ("listed as missing but present: remove it from MISSING"
                                if name in MISSING else "missing"))


if __name__ == "__main__":
    listed = names()
    have = [n for n in listed if resolves(n)]
    print(f"gradflow has {len(have)} of {len(listed)} TF1 names ({len(have) / len(listed):.1%})")
    print("missing:", " ".join(n for n in listed if not resolves(n)))
