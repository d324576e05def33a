"""``tf.random_shuffle`` and ``tf.multinomial``, built on the host-drawn uniform
numbers of ``random_uniform``: the same seed gives the same draws on every
backend. As in TF1, no gradient flows through them.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.array_ops import argmax, expand_dims
from gradflow.ops.index_ops import gather, shape
from gradflow.ops.math_ops import cast, log, negative
from gradflow.ops.sort_ops import argsort
from gradflow.ops.state_ops import random_uniform, stop_gradient
from gradflow.prim.registry import convert_to_tensor

__all__ = ["multinomial", "random_shuffle"]


def random_shuffle(value, seed=None, name=None):
    """``value`` with its first axis in a new random order each run (TF1
    ``tf.random_shuffle``): the order sorts a uniform draw per row.

    >>> batch = gf.random_shuffle(gf.range(10))
    """
    x = convert_to_tensor(value)
    if x.shape is not None and len(x.shape) == 0:
        raise ValueError(f"random_shuffle: '{x.name}' is a scalar; it needs rank 1 or more")
    rows = x.shape[0] if x.shape is not None and x.shape[0] is not None else shape(x)[:1]
    keys = random_uniform([rows] if isinstance(rows, int) else rows, dtype=dtypes.float64,
                          seed=seed)
    return stop_gradient(gather(x, argsort(keys)), name=name or "RandomShuffle")


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=dtypes.int64):
    """``num_samples`` class indices per row of ``logits`` ``[batch, classes]``, drawn
    from ``softmax(logits)`` (TF1 ``tf.multinomial``): ``[batch, num_samples]`` of
    ``output_dtype``. Drawn by the Gumbel-max rule, ``argmax(logits + gumbel noise)``.

    >>> next_word = gf.multinomial(logits / temperature, 1)
    """
    x = stop_gradient(convert_to_tensor(logits))
    if x.shape is not None and len(x.shape) != 2:
        raise ValueError(f"multinomial: logits '{x.name}' must be [batch, classes], got "
                         f"shape {tuple(x.shape)}")
    if not x.dtype.is_floating:
        raise TypeError(f"multinomial: logits must be floating, got {x.dtype.name}")
    output_dtype = dtypes.as_dtype(output_dtype)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"multinomial: output_dtype must be int32 or int64, got "
                        f"{output_dtype.name}")
    dims = shape(x)
    u = random_uniform([dims[0], int(num_samples), dims[1]], minval=1e-20, maxval=1.0,
                       dtype=x.dtype, seed=seed)
    gumbel = negative(log(negative(log(u))))
    draws = argmax(expand_dims(x, 1) + gumbel, axis=-1)
    return cast(draws, output_dtype, name=name or "Multinomial")
