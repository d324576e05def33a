"""Layer helpers with TF1 ``tf.layers`` names: variables made through get_variable."""

from __future__ import annotations

import math

from gradflow.ops.array_ops import matmul, reshape
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.registry import convert_to_tensor
from gradflow.variables import get_variable, variable_scope, zeros_initializer


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, trainable=True, name=None, reuse=None):
    """``activation(inputs @ kernel + bias)`` with variables ``<name>/kernel`` and ``/bias``.

    >>> h = gf.layers.dense(x, 512, activation=gf.nn.relu)
    """
    x = convert_to_tensor(inputs)
    if x.shape is None or x.shape[-1] is None:
        raise ValueError(f"dense: the last axis of '{x.name}' must be known, got shape "
                         f"{x.shape}")
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", (x.shape[-1], units), dtype=x.dtype,
                              initializer=kernel_initializer, trainable=trainable)
        out = matmul(x, kernel) if len(x.shape) == 2 else \
            reshape(matmul(reshape(x, (-1, x.shape[-1])), kernel),
                    tuple(-1 if d is None else d for d in x.shape[:-1]) + (units,))
        if use_bias:
            bias = get_variable("bias", (units,), dtype=x.dtype,
                                initializer=bias_initializer or zeros_initializer(),
                                trainable=trainable)
            out = bias_add(out, bias)
        return activation(out) if activation is not None else out


def flatten(inputs, name=None):
    """Reshape to ``(batch, -1)``, keeping the first axis."""
    x = convert_to_tensor(inputs)
    inner = x.shape[1:]
    if None in inner:
        raise ValueError(f"flatten: the non-batch axes of '{x.name}' must be known, got "
                         f"{tuple(x.shape)}")
    return reshape(x, (-1, math.prod(inner)), name=name)
