"""The fused LSTM nodes and zero states of the recurrent cells, over the primitives of
``gradflow.prim.rnn`` (where the LSTM step's nonlinearity is described).

An LSTM step is ``z = [x, h] @ kernel + bias`` (one matmul for all four gates,
in TF1's order ``i, j, f, o``) followed by three fused nodes: ``lstm_gates(z)``,
``lstm_c(a, c_prev)`` and ``lstm_h(a, c)``.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.prim import rnn as _rnn  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, constant, convert_to_tensor


def lstm_gates(gates, forget_bias=1.0, name=None):
    """The activated gates ``[sigmoid(i), tanh(j), sigmoid(f + forget_bias), sigmoid(o)]``
    of pre-activations ``[batch, 4 * units]`` in TF1's order ``i, j, f, o``."""
    return apply("lstm_gates", [gates], name=name, forget_bias=float(forget_bias))


def lstm_c(gates, c_prev, name=None):
    """The new cell state ``f * c_prev + i * j`` from activated gates ``[batch, 4 * units]``."""
    return apply("lstm_c", [gates, c_prev], name=name)


def lstm_h(gates, c, name=None):
    """The LSTM output ``o * tanh(c)`` from activated gates ``[batch, 4 * units]``."""
    return apply("lstm_h", [gates, c], name=name)


def batch_zeros(batch_size, tail, dtype=dtypes.float32, name=None):
    """Zeros of shape ``(batch_size,) + tail``; ``batch_size`` may be a scalar tensor."""
    dtype = dtypes.as_dtype(dtype)
    tail = tuple(int(d) for d in tail)
    if isinstance(batch_size, (int, np.integer)):
        return constant(np.zeros((int(batch_size),) + tail), dtype=dtype, name=name or "zeros")
    return apply("batch_zeros", [convert_to_tensor(batch_size)], name=name or "zeros",
                 tail=tail, dtype=dtype)
