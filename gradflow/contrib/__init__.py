"""TF1's ``tf.contrib``, for the parts gradflow has: ``contrib.rnn`` (the recurrent
cells and unrolling functions) and ``contrib.layers`` (initializers,
regularizers, ``fully_connected``, ``flatten``)."""

from gradflow.contrib import layers, rnn

__all__ = ["layers", "rnn"]
