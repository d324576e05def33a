"""Neural-network ops (TF1 ``tf.nn``)."""

from gradflow.nn import rnn_cell
from gradflow.nn.raw_rnn import raw_rnn, static_state_saving_rnn
from gradflow.nn.rnn_cell import (
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from gradflow.ops.activation_ops import crelu, elu, relu6, selu, silu, softsign, swish
from gradflow.ops.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from gradflow.ops.conv3d_ops import (
    avg_pool3d,
    conv3d,
    conv3d_backprop_filter,
    conv3d_backprop_filter_v2,
    conv3d_transpose,
    max_pool3d,
)
from gradflow.ops.conv_ops import (
    avg_pool,
    conv1d,
    conv2d,
    conv2d_transpose,
    dropout,
    max_pool,
)
from gradflow.ops.conv_variants import (
    atrous_conv2d,
    depthwise_conv2d,
    local_response_normalization,
    lrn,
    separable_conv2d,
)
from gradflow.ops.ctc_more_ops import (
    ctc_beam_search_decoder,
    ctc_beam_search_decoder_v2,
    ctc_loss_v2,
    ctc_unique_labels,
)
from gradflow.ops.ctc_ops import ctc_greedy_decoder, ctc_loss
from gradflow.ops.fractional_pool_ops import fractional_avg_pool, fractional_max_pool
from gradflow.ops.manip_ops import depth_to_space, space_to_batch, space_to_depth
from gradflow.ops.math_extra_ops import relu_layer, xw_plus_b
from gradflow.ops.math_ops import relu, sigmoid, tanh
from gradflow.ops.morphology_ops import dilation2d, erosion2d
from gradflow.ops.nn_composite_ops import safe_embedding_lookup_sparse, with_space_to_batch
from gradflow.ops.nn_conv_more_ops import (
    atrous_conv2d_transpose,
    conv_transpose,
    convolution,
    depthwise_conv2d_backprop_filter,
    depthwise_conv2d_backprop_input,
    depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter,
    depthwise_conv2d_native_backprop_input,
    pool,
)
from gradflow.ops.nn_extra_ops import (
    avg_pool1d,
    avg_pool2d,
    avg_pool_v2,
    conv1d_transpose,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    embedding_lookup_sparse,
    max_pool1d,
    max_pool2d,
    max_pool_v2,
    max_pool_with_argmax,
)
from gradflow.ops.nn_more_ops import (
    all_candidate_sampler,
    batch_norm_with_global_normalization,
    collapse_repeated,
    compute_accidental_hits,
    compute_average_loss,
    log_poisson_loss,
    normalize_moments,
    scale_regularization_loss,
    sufficient_statistics,
    weighted_moments,
)
from gradflow.ops.nn_ops import (
    bias_add,
    embedding_lookup,
    l2_loss,
    l2_normalize,
    leaky_relu,
    log_softmax,
    nce_loss,
    sampled_softmax_loss,
    sigmoid_cross_entropy_with_logits,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
    weighted_cross_entropy_with_logits,
    zero_fraction,
)
from gradflow.ops.normalization_ops import batch_normalization, fused_batch_norm, moments
from gradflow.ops.topk_ops import in_top_k, top_k
from gradflow.ops.unigram_sampling_ops import (
    fixed_unigram_candidate_sampler,
    learned_unigram_candidate_sampler,
)

__all__ = [
    "ctc_greedy_decoder", "ctc_loss",
    "ctc_beam_search_decoder", "ctc_beam_search_decoder_v2", "ctc_loss_v2", "ctc_unique_labels",
    "safe_embedding_lookup_sparse", "with_space_to_batch", "raw_rnn",
    "fixed_unigram_candidate_sampler", "dilation2d", "erosion2d", "fractional_avg_pool",
    "fractional_max_pool", "learned_unigram_candidate_sampler", "static_state_saving_rnn",
    "atrous_conv2d", "depthwise_conv2d", "local_response_normalization", "lrn",
    "separable_conv2d",
    "batch_normalization", "fused_batch_norm", "moments",
    "avg_pool", "conv2d", "dropout", "max_pool",
    "bias_add", "bidirectional_dynamic_rnn", "dynamic_rnn", "embedding_lookup", "rnn_cell",
    "static_bidirectional_rnn", "static_rnn",
    "l2_loss", "zero_fraction", "leaky_relu", "log_softmax", "relu", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "softplus", "sparse_softmax_cross_entropy_with_logits",
    "tanh",
    "log_uniform_candidate_sampler", "nce_loss", "sampled_softmax_loss",
    "uniform_candidate_sampler",
    "conv1d", "conv2d_transpose", "crelu", "elu", "in_top_k", "l2_normalize", "relu6",
    "selu", "silu", "softsign", "swish", "top_k", "weighted_cross_entropy_with_logits",
    "depth_to_space", "relu_layer", "space_to_batch", "space_to_depth", "xw_plus_b",
    "avg_pool3d", "conv3d", "conv3d_backprop_filter", "conv3d_backprop_filter_v2",
    "conv3d_transpose", "max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool_v2", "conv1d_transpose", "conv2d_backprop_filter",
    "conv2d_backprop_input", "embedding_lookup_sparse", "max_pool1d", "max_pool2d",
    "max_pool_v2", "max_pool_with_argmax",
    "atrous_conv2d_transpose", "conv_transpose", "convolution",
    "depthwise_conv2d_backprop_filter", "depthwise_conv2d_backprop_input",
    "depthwise_conv2d_native", "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input", "pool",
    "all_candidate_sampler", "batch_norm_with_global_normalization", "collapse_repeated",
    "compute_accidental_hits", "compute_average_loss", "log_poisson_loss", "normalize_moments",
    "scale_regularization_loss", "sufficient_statistics", "weighted_moments",
]
