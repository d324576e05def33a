"""TF1's ``tensorflow.examples.tutorials.mnist.mnist``: the two-hidden-layer MNIST
model that TF1's ``fully_connected_feed.py`` tutorial imports, as four functions.

>>> logits = mnist.inference(images, 128, 32)
>>> train_op = mnist.training(mnist.loss(logits, labels), 0.01)
>>> correct = mnist.evaluation(logits, labels)   # how many of the batch are right
"""

from __future__ import annotations

import math

import gradflow as gf

NUM_CLASSES = 10  # the digits 0 to 9
IMAGE_SIZE = 28  # the images are 28 x 28 pixels
IMAGE_PIXELS = IMAGE_SIZE * IMAGE_SIZE


def _layer(inputs, fan_in, units, scope, activation=None):
    with gf.name_scope(scope):
        weights = gf.Variable(gf.truncated_normal([fan_in, units],
                                                  stddev=1.0 / math.sqrt(fan_in)),
                              name="weights")
        biases = gf.Variable(gf.zeros([units]), name="biases")
        out = gf.matmul(inputs, weights) + biases
        return out if activation is None else activation(out)


def inference(images, hidden1_units, hidden2_units):
    """The logits ``[batch, NUM_CLASSES]`` of ``images`` ``[batch, IMAGE_PIXELS]``
    through two ReLU layers (name scopes ``hidden1``, ``hidden2``, ``softmax_linear``;
    weights drawn with standard deviation ``1 / sqrt(fan_in)``, biases zero)."""
    hidden1 = _layer(images, IMAGE_PIXELS, hidden1_units, "hidden1", gf.nn.relu)
    hidden2 = _layer(hidden1, hidden1_units, hidden2_units, "hidden2", gf.nn.relu)
    return _layer(hidden2, hidden2_units, NUM_CLASSES, "softmax_linear")


def loss(logits, labels):
    """The mean softmax cross-entropy of ``logits`` against integer ``labels``."""
    labels = gf.cast(labels, gf.int64)
    return gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits),
                          name="xentropy_mean")


def training(loss, learning_rate):  # noqa: F811 - TF1's argument name
    """The op of one gradient-descent step on ``loss`` (also summarized as the scalar
    ``loss``), counting steps in a ``global_step`` variable."""
    gf.summary.scalar("loss", loss)
    optimizer = gf.train.GradientDescentOptimizer(learning_rate)
    global_step = gf.Variable(0, name="global_step", trainable=False)
    return optimizer.minimize(loss, global_step=global_step)


def evaluation(logits, labels):
    """How many of the batch's ``logits`` put the true label first (an int32 scalar)."""
    correct = gf.nn.in_top_k(logits, labels, 1)
    return gf.reduce_sum(gf.cast(correct, gf.int32))
