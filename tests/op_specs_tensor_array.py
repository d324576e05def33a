"""Op specs of TF1's TensorArray (gradflow/prim/tensor_array.py), loaded by op_specs.py.

Each spec builds a TensorArray the way TF1 programs do and reads it back; the gradient
checks run through the gradient arrays (a read's gradient is a write into one, a
write's a read, stack/unstack, gather/scatter and concat/split pair up). More in
tests/test_tensor_array_tf1.py.
"""

from __future__ import annotations

import numpy as np
from op_specs import ints, spec, uniform

import gradflow as gf

_GRAD_OPS = ("tensor_array", "tensor_array_grad")


def _write_stack(x, w):
    ta = gf.TensorArray(x.dtype, size=3)
    for i in range(3):
        ta = ta.write(i, x[i] * w)
    return ta.stack()


spec("tensor_array_write_stack",
     _GRAD_OPS + ("tensor_array_write", "tensor_array_stack", "tensor_array_read",
                  "tensor_array_unstack"),
     _write_stack, [uniform(3, 2), uniform(2)], lambda x, w: x * w)


def _unstack_read(x):
    ta = gf.TensorArray(x.dtype, size=3).unstack(x)
    return [ta.read(2), ta.read(0) * 2.0]


spec("tensor_array_unstack_read",
     _GRAD_OPS + ("tensor_array_unstack", "tensor_array_read", "tensor_array_write",
                  "tensor_array_stack"),
     _unstack_read, [uniform(3, 2)], lambda x: [x[2], x[0] * 2.0])


def _scatter_gather(x):
    ta = gf.TensorArray(x.dtype, size=4).scatter([3, 0, 1], x)
    return ta.gather([1, 3]) * ta.gather([0])


spec("tensor_array_scatter_gather",
     _GRAD_OPS + ("tensor_array_scatter", "tensor_array_gather"),
     _scatter_gather, [uniform(3, 2)], lambda x: x[[2, 0]] * x[1])


def _split_concat(x):
    ta = gf.TensorArray(x.dtype, size=3, infer_shape=False, element_shape=[None, 2])
    ta = ta.split(x, [2, 0, 3])
    return [ta.concat() * 2.0, ta.read(2)]


spec("tensor_array_split_concat",
     _GRAD_OPS + ("tensor_array_split", "tensor_array_concat", "tensor_array_lengths",
                  "tensor_array_read", "tensor_array_write"),
     _split_concat, [uniform(5, 2)], lambda x: [x * 2.0, x[2:]], value_shaped=True)


def _rnn(x, w):
    """An RNN reading its inputs from a TensorArray. (They are not cleared when read,
    and the loop writes no TensorArray: test_shape_rule fetches the body's nodes and
    those of its gradient from outside the loop too, which would read them once more and
    write twice; tests/test_tensor_array_tf1.py checks loops that write.)"""
    steps = gf.shape(x)[0]
    inputs = gf.TensorArray(x.dtype, size=steps, clear_after_read=False).unstack(x)

    def body(t, h):
        return t + 1, gf.tanh(gf.matmul(h, w) + inputs.read(t)[None, :])

    h0 = gf.zeros_like(x[:1]) + 0.5
    _, h = gf.while_loop(lambda t, h: t < steps, body, (0, h0))
    return h


def _np_rnn(x, w):
    h = np.full((1, x.shape[1]), 0.5)
    for t in range(x.shape[0]):
        h = np.tanh(h @ w + x[t][None, :])
    return h.astype(x.dtype)


# the gradient of the backward loop is not supported (as for while_loop): no second order
spec("tensor_array_while",
     _GRAD_OPS + ("tensor_array_unstack", "tensor_array_read", "tensor_array_write",
                  "tensor_array_stack", "while", "while_grad", "while_loop_var", "tuple_get"),
     _rnn, [uniform(3, 2), uniform(2, 2, lo=-1.0, hi=1.0)], _np_rnn,
     second_order=False, value_shaped=True,
     needs_rank="x[:1] and x[t] index the inputs' first axis")


def _size(x, n):
    ta = gf.TensorArray(x.dtype, size=0, dynamic_size=True).unstack(x)
    ta = ta.write(gf.shape(x)[0] + n[0], x[0])
    return ta.size()


spec("tensor_array_size", ("tensor_array", "tensor_array_unstack", "tensor_array_write",
                           "tensor_array_size"),
     _size, [uniform(3, 2), ints(1, lo=0, hi=3)],
     lambda x, n: np.int32(x.shape[0] + n[0] + 1), grad=())
