"""Neural-network ops (TF1 ``tf.nn``)."""

from gradflow.nn import rnn_cell
from gradflow.nn.rnn_cell import (
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from gradflow.ops.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from gradflow.ops.conv_ops import avg_pool, conv2d, dropout, max_pool
from gradflow.ops.math_ops import relu, sigmoid, tanh
from gradflow.ops.nn_ops import (
    bias_add,
    embedding_lookup,
    l2_loss,
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
)

__all__ = [
    "avg_pool", "conv2d", "dropout", "max_pool",
    "bias_add", "bidirectional_dynamic_rnn", "dynamic_rnn", "embedding_lookup", "rnn_cell",
    "static_bidirectional_rnn", "static_rnn",
    "l2_loss", "leaky_relu", "log_softmax", "relu", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "softplus", "sparse_softmax_cross_entropy_with_logits",
    "tanh",
    "log_uniform_candidate_sampler", "nce_loss", "sampled_softmax_loss",
    "uniform_candidate_sampler",
]
