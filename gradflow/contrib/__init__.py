"""TF1's ``tf.contrib``, for the parts gradflow has: ``contrib.rnn`` (the recurrent
cells and unrolling functions), ``contrib.layers`` (layer functions, initializers,
regularizers, ``optimize_loss``), ``contrib.framework`` (``arg_scope``),
``contrib.seq2seq`` (``sequence_loss``), ``contrib.training`` (``HParams``),
``contrib.learn.preprocessing`` (``VocabularyProcessor``) and ``contrib.mixed_precision``
(``LossScaleOptimizer`` and its loss-scale managers)."""

from gradflow.contrib import framework, layers, learn, mixed_precision, rnn, seq2seq, training

__all__ = ["framework", "layers", "learn", "mixed_precision", "rnn", "seq2seq", "training"]
