"""TF1's ``tf.contrib``, for the parts gradflow has: ``contrib.rnn`` (the recurrent
cells and unrolling functions), ``contrib.layers`` (layer functions, initializers,
regularizers, ``optimize_loss``), ``contrib.framework`` (``arg_scope``),
``contrib.seq2seq`` (``sequence_loss``), ``contrib.training`` (``HParams``) and
``contrib.learn.preprocessing`` (``VocabularyProcessor``)."""

from gradflow.contrib import framework, layers, learn, rnn, seq2seq, training

__all__ = ["framework", "layers", "learn", "rnn", "seq2seq", "training"]
