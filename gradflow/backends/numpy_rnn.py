"""NumPy lowerings of the fused LSTM ops (``gradflow/ops/rnn_ops.py``).

Same formulas as the Array API impls, which stay the reference (the tests
compare the two), written with ufuncs that work in place (``out=``) so that
each op allocates its result and little else. Inputs of different batch sizes
(broadcasting) go to the reference impl.
"""

from __future__ import annotations

import numpy as np

from gradflow.ops import rnn_ops


def _vectors(cache, xp, a, make):
    key = (a.shape[-1], a.dtype)
    if key not in cache:
        cache[key] = make(xp, a)
    return cache[key]


def lstm_gates(xp, forget_bias):
    cache = {}

    def gates(z):
        scale, shift, mul, add = _vectors(
            cache, xp, z, lambda xp_, z_: rnn_ops._gate_vectors(xp_, z_, forget_bias))
        out = np.multiply(z, scale)
        out += shift
        np.tanh(out, out=out)
        out *= mul
        out += add
        return out

    return gates


def lstm_gates_grad(xp):
    cache = {}

    def gates_grad(g, a):  # g (1 - a)(a + m)
        if g.shape != a.shape:
            return rnn_ops._lstm_gates_grad_impl(xp, g, a)
        mask = _vectors(cache, xp, a, rnn_ops._j_mask)
        out = np.subtract(1.0, a, dtype=a.dtype)
        out *= g
        out *= np.add(a, mask)
        return out

    return gates_grad


def lstm_c_grad(xp, wrt):
    def c_grad(g, a, c_prev):
        if not (g.shape == c_prev.shape and a.shape[0] == g.shape[0]):
            return rnn_ops._lstm_c_grad_impl(xp, g, a, c_prev, wrt)
        n = g.shape[-1]
        if wrt == "state":
            return np.multiply(g, a[:, 2 * n:3 * n])
        out = np.empty_like(a)
        np.multiply(g, a[:, n:2 * n], out=out[:, :n])
        np.multiply(g, a[:, :n], out=out[:, n:2 * n])
        np.multiply(g, c_prev, out=out[:, 2 * n:3 * n])
        out[:, 3 * n:] = 0
        return out

    return c_grad


def lstm_h_grad(xp, wrt):
    def h_grad(g, a, c):
        if not (g.shape == c.shape and a.shape[0] == g.shape[0]):
            return rnn_ops._lstm_h_grad_impl(xp, g, a, c, wrt)
        n = g.shape[-1]
        tc = np.tanh(c)
        if wrt == "state":  # g o (1 - tanh(c)^2)
            np.multiply(tc, tc, out=tc)
            np.subtract(1.0, tc, out=tc)
            tc *= g
            tc *= a[:, 3 * n:]
            return tc
        out = np.zeros_like(a)
        np.multiply(g, tc, out=out[:, 3 * n:])
        return out

    return h_grad


LOWERINGS = {
    "lstm_gates": lstm_gates,
    "lstm_gates_grad": lstm_gates_grad,
    "lstm_c_grad": lstm_c_grad,
    "lstm_h_grad": lstm_h_grad,
}
