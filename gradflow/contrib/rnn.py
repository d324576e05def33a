"""TF1's ``tf.contrib.rnn``: the recurrent cells of ``gf.nn.rnn_cell`` and the
unrolling functions of ``gf.nn``, under the names TF1 programs import them by.

>>> cell = gf.contrib.rnn.BasicLSTMCell(128, forget_bias=1.0)
>>> outputs, state = gf.contrib.rnn.static_rnn(cell, inputs, dtype=gf.float32)
"""

from gradflow.nn.rnn_cell import (
    BasicLSTMCell,
    BasicRNNCell,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    ResidualWrapper,
    RNNCell,
    static_bidirectional_rnn,
    static_rnn,
)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
           "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "static_bidirectional_rnn",
           "static_rnn"]
