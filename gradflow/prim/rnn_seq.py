"""A whole unrolled LSTM layer as one node each way, for backends with a sequence kernel.

``passes/cudnn_rnn.py`` replaces the ``T`` forward steps ``lstm_step_rec`` of an unrolled
single-layer LSTM (and its ``T`` backward steps) by

    y, c_last = lstm_seq(x, h0, w, row, c0)
    dx, dc0 = lstm_seq_grad(dy, x, h0, w, row, c0, y)

where ``x`` is ``[T * batch, 4 * units]``: the input projection of every step, time-major
(step ``t`` is rows ``t * batch`` to ``(t + 1) * batch``), ``w`` the recurrent block
``[units, 4 * units]`` of TF1's kernel, ``row`` the bias (gate order ``i, j, f, o``,
``forget_bias`` added to ``f`` inside), ``y`` every step's output ``h_t`` stacked the same
way and ``c_last`` the last cell state. ``dy`` is the gradient reaching each ``h_t`` from
the layers above (not the recurrent part); ``dx`` is each step's pre-activation gradient
``dz_t`` (what the input projection, the recurrent weights and the bias take their
gradients from) and ``dc0`` the gradient of the first cell state.

The functions here are the reference: the steps of ``gradflow.prim.rnn`` in a loop over
the Array API (the backward recomputes the forward's gates, it keeps nothing). The CuPy
backend runs cuDNN's RNN instead (``gradflow.backends.cupy.cudnn_rnn``), which keeps its
own saved values between the two nodes. Plan-only nodes: never differentiated.
"""

from __future__ import annotations

from gradflow.prim import rules
from gradflow.prim.registry import register
from gradflow.prim.rnn import _lstm_step_rec_grad_impl, _lstm_step_rec_impl


def _rows(v, t, batch):
    return v[t * batch:(t + 1) * batch, ...]


def _forward_states(xp, x, h0, w, row, c0, forget_bias, steps):
    """``[(a_t, c_t, h_t)]`` of every step."""
    batch = h0.shape[0]
    h, c, out = h0, c0, []
    for t in range(steps):
        a, c, h = _lstm_step_rec_impl(xp, _rows(x, t, batch), h, w, row, c, forget_bias)
        out.append((a, c, h))
    return out


def _lstm_seq_impl(xp, x, h0, w, row, c0, forget_bias, steps, link=None):
    states = _forward_states(xp, x, h0, w, row, c0, forget_bias, steps)
    return xp.concat([h for _, _, h in states], axis=0), states[-1][1]


def _lstm_seq_grad_impl(xp, dy, x, h0, w, row, c0, y, forget_bias, steps, link=None):
    batch = h0.shape[0]
    states = _forward_states(xp, x, h0, w, row, c0, forget_bias, steps)
    dz_next, dc_next = xp.zeros_like(x[:batch, ...]), xp.zeros_like(c0)
    dzs = [None] * steps
    for t in reversed(range(steps)):
        a, c, _ = states[t]
        c_prev = states[t - 1][1] if t else c0
        dz_next, dc_next = _lstm_step_rec_grad_impl(xp, _rows(dy, t, batch), dz_next, w,
                                                    dc_next, a, c, c_prev)
        dzs[t] = dz_next
    return xp.concat(dzs, axis=0), dc_next


def _seq_infer(shapes, in_dtypes, forget_bias, steps, link=None):
    x, h0 = shapes[0], shapes[1]
    return (x[0], h0[1]), rules.same_dtype(in_dtypes)


def _seq_grad_infer(shapes, in_dtypes, forget_bias, steps, link=None):
    return shapes[1], rules.same_dtype(in_dtypes)


# ``link`` (an attribute both nodes share, ``passes.cudnn_rnn.SequenceLink``) is where a
# backend's kernels keep what the forward saves for the backward; the reference ignores it.
LSTM_SEQ = register("lstm_seq", _lstm_seq_impl, _seq_infer, grad=None, outputs=2,
                    plan_only=True)
LSTM_SEQ_GRAD = register("lstm_seq_grad", _lstm_seq_grad_impl, _seq_grad_infer, grad=None,
                         outputs=2, plan_only=True)
