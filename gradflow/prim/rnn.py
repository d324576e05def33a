"""Fused primitives for recurrent cells: the LSTM step's nonlinearity, and zero states.

An LSTM step is ``z = [x, h] @ kernel + bias`` (one matmul for all four gates,
in TF1's order ``i, j, f, o``) followed by three fused nodes:

    a = lstm_gates(z)     = [sigmoid(i), tanh(j), sigmoid(f + forget_bias), sigmoid(o)]
    c = lstm_c(a, c_prev) = a_f * c_prev + a_i * a_j
    h = lstm_h(a, c)      = a_o * tanh(c)

Written with elementary ops, that is about a dozen forward nodes and thirty
gradient nodes per step; here each line is one node and each gradient one or
two, and the transcendentals are computed once, in the forward pass (the
gradients use ``a``: ``sigmoid' = a (1 - a)``, ``tanh' = 1 - a^2``).

The gradient ops are differentiable again: their gradient rules rebuild the
same formulas with elementary ops, so higher-order gradients stay exact.
All forwards use the Array API only. TF1-style functions that build these nodes are in
``gradflow.ops.rnn_ops``; the graph compiler's fused steps (``lstm_step``...) are here too.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as _device

from gradflow.prim import call, rules
from gradflow.prim.registry import apply, constant, register


def _blocks(z):
    units = z.shape[-1] // 4
    return (z[..., :units], z[..., units:2 * units], z[..., 2 * units:3 * units],
            z[..., 3 * units:])


def _gate_axis(z):
    if len(z) != 2:
        raise ValueError(f"the gates must be 2-D [batch, 4 * units], got {tuple(z)}")
    if z[-1] is not None and z[-1] % 4:
        raise ValueError(f"the gate axis ({z[-1]}) must be 4 * units")


def _check_gates(z, state):
    _gate_axis(z)
    if len(state) != 2:
        raise ValueError(f"the state must be 2-D [batch, units], got {tuple(state)}")
    if z[-1] is not None and state[-1] is not None and z[-1] != 4 * state[-1]:
        raise ValueError(f"the gate axis ({z[-1]}) is not 4 x the state's {state[-1]} units")
    if z[0] is not None and state[0] is not None and z[0] != state[0]:
        raise ValueError(f"batch sizes differ: {z[0]} vs {state[0]}")
    return z[0] if z[0] is not None else state[0]


def _gates_infer(shapes, in_dtypes, **attrs):
    rules.require_floating(in_dtypes[0], "gates")
    _gate_axis(shapes[0])
    return shapes[0], in_dtypes[0]


def _state_infer(shapes, in_dtypes, **attrs):
    rules.require_floating(in_dtypes[0], "gates")
    batch = _check_gates(shapes[0], shapes[1])
    units = shapes[1][-1] if shapes[1][-1] is not None else \
        (shapes[0][-1] // 4 if shapes[0][-1] is not None else None)
    return (batch, units), rules.same_dtype(in_dtypes)


def _grad_infer(shapes, in_dtypes, wrt):
    _check_gates(shapes[1], shapes[2])
    return (shapes[1] if wrt == "gates" else shapes[2]), rules.same_dtype(in_dtypes)


# -- a = lstm_gates(z): sigmoid(x) = tanh(x / 2) / 2 + 1/2, so one tanh does all four ---


_KEPT = {}  # the gate vectors and masks on each library, device and dtype, made once


def _kept(xp, like, key, make):
    """``make()`` (host arrays) as arrays of ``like``'s library, device and dtype, made
    on the first call for ``key`` and kept: no host-to-device copy in a steady run (a
    captured CUDA graph cannot make one)."""
    full = (id(xp), str(_device(like)), like.dtype, key)  # dtypes hash; str() is slow
    arrays = _KEPT.get(full)
    if arrays is None:
        arrays = _KEPT[full] = [xp.asarray(v, dtype=like.dtype, device=_device(like))
                                for v in make()]
    return arrays


def _gate_vectors(xp, z, forget_bias):
    """``scale, shift, mul, add`` with ``a = tanh(z * scale + shift) * mul + add``."""
    return _kept(xp, z, ("gates", z.shape[-1], forget_bias),
                 lambda: _host_gate_vectors(z.shape[-1] // 4, forget_bias))


def _host_gate_vectors(units, forget_bias):
    half = np.full(4 * units, 0.5)
    scale, mul, add = half.copy(), half.copy(), half.copy()
    scale[units:2 * units] = mul[units:2 * units] = 1.0
    add[units:2 * units] = 0.0
    shift = np.zeros(4 * units)
    shift[2 * units:3 * units] = 0.5 * forget_bias
    return scale, shift, mul, add


def _lstm_gates_impl(xp, z, forget_bias):
    scale, shift, mul, add = _gate_vectors(xp, z, forget_bias)
    return xp.tanh(z * scale + shift) * mul + add


def _j_mask(xp, a):
    def make():
        units = a.shape[-1] // 4
        mask = np.zeros(4 * units)
        mask[units:2 * units] = 1.0
        return [mask]

    return _kept(xp, a, ("j mask", a.shape[-1]), make)[0]


def _lstm_gates_grad_impl(xp, g, a):  # (1 - a)(a + m): a (1 - a) for sigmoids, 1 - a^2 for tanh
    return g * (1.0 - a) * (a + _j_mask(xp, a))


# -- c = lstm_c(a, c_prev), h = lstm_h(a, c) ---------------------------------------


def _lstm_c_impl(xp, a, c_prev):
    i, j, f, _ = _blocks(a)
    return f * c_prev + i * j


def _lstm_h_impl(xp, a, c):
    return _blocks(a)[3] * xp.tanh(c)


def _fit(xp, g, like):
    """``g`` summed down to the shape of ``like`` where the forward broadcast (a state or
    gates of batch 1 against a larger batch): the gradients have their input's shape."""
    if g.shape == like.shape:
        return g
    g = xp.sum(g, axis=0, keepdims=True, dtype=g.dtype) if like.shape[0] == 1 else g
    return xp.reshape(g, like.shape)


def _lstm_c_grad_impl(xp, g, a, c_prev, wrt):
    i, j, f, _ = _blocks(a)
    if wrt == "state":
        return _fit(xp, g * f, c_prev)
    di = g * j
    return _fit(xp, xp.concat([di, g * i, g * c_prev, xp.zeros_like(di)], axis=-1), a)


def _lstm_h_grad_impl(xp, g, a, c, wrt):
    o = _blocks(a)[3]
    tc = xp.tanh(c)
    if wrt == "state":
        return _fit(xp, g * o * (1.0 - tc * tc), c)
    do = g * tc
    zero = xp.zeros_like(do)
    return _fit(xp, xp.concat([zero, zero, zero, do], axis=-1), a)


# -- the same formulas with elementary ops, for the gradients of the gradients --------


def _split4(a, like):
    """The four blocks of ``a``, each shaped like ``like`` ([batch, units]) at run time."""
    return [call.split_like(a, like, like, like, like, axis=1, index=k) for k in range(4)]


def composite_lstm_c(a, c_prev):
    """``lstm_c`` written with elementary ops."""
    i, j, f, _ = _split4(a, c_prev)
    return call.add(call.multiply(f, c_prev), call.multiply(i, j))


def composite_lstm_h(a, c):
    """``lstm_h`` written with elementary ops."""
    o = _split4(a, c)[3]
    return call.multiply(o, call.tanh(c))


def _second_order(forward):
    def rule(n, gout):
        # autodiff sits above the primitives: these rules differentiate a sub-graph
        from gradflow.autodiff import gradients

        g, a, state = n.inputs
        y = forward(a, state)
        wrt = a if n.attrs["wrt"] == "gates" else state
        # partial derivatives: in the graph the state may depend on the gates (lstm_h of
        # lstm_c's output), a path the outer chain rule adds already
        first = gradients(y, [wrt], grad_ys=g, stop_gradients=[a, state])[0]
        return gradients(first, [g, a, state], grad_ys=gout, stop_gradients=[g, a, state])

    return rule


def _gates_second_order(n, gout):
    # autodiff sits above the primitives: this rule differentiates a sub-graph
    from gradflow.autodiff import gradients

    g, a = n.inputs
    if a.shape is None or a.shape[-1] is None:
        raise ValueError(f"lstm_gates_grad: the gate axis of '{a.name}' must be known to "
                         "differentiate twice")
    units = a.shape[-1] // 4
    mask = np.zeros(4 * units)
    mask[units:2 * units] = 1.0
    first = call.multiply(call.multiply(g, call.subtract(1.0, a)),
                          call.add(a, constant(mask, dtype=a.dtype)))
    return gradients(first, [g, a], grad_ys=gout, stop_gradients=[g, a])


register("lstm_gates", _lstm_gates_impl, _gates_infer,
         grad=lambda n, g: [apply("lstm_gates_grad", [g, n])], exact_grad=True)
register("lstm_gates_grad", _lstm_gates_grad_impl,
         lambda s, d: (_gates_infer([s[1]], d[1:]))[0:1] + (rules.same_dtype(d),),
         grad=_gates_second_order)
register("lstm_c", _lstm_c_impl, _state_infer,
         grad=lambda n, g: [apply("lstm_c_grad", [g] + list(n.inputs), wrt=w)
                            for w in ("gates", "state")], exact_grad=True)
register("lstm_h", _lstm_h_impl, _state_infer,
         grad=lambda n, g: [apply("lstm_h_grad", [g] + list(n.inputs), wrt=w)
                            for w in ("gates", "state")], exact_grad=True)
register("lstm_c_grad", _lstm_c_grad_impl, _grad_infer, grad=_second_order(composite_lstm_c))
register("lstm_h_grad", _lstm_h_grad_impl, _grad_infer, grad=_second_order(composite_lstm_h))


# -- the gates of a sum, and the whole gate gradient of one step, for the graph compiler --


def _lstm_gates_sum_impl(xp, *terms, forget_bias):
    """``lstm_gates(terms[0] + terms[1] + ...)``, summed left to right: the input and
    state products of a step and the bias, activated in one pass."""
    z = terms[0]
    for t in terms[1:]:
        z = z + t
    return _lstm_gates_impl(xp, z, forget_bias)


def _gates_sum_infer(shapes, in_dtypes, forget_bias):
    return shapes[0], rules.same_dtype(in_dtypes)


def _lstm_cell_grad_impl(xp, dc, dh, a, c, c_prev):
    """``lstm_gates_grad(lstm_c_grad(dc, a, c_prev, "gates") + lstm_h_grad(dh, a, c,
    "gates"), a)``: the pre-activation gradient ``dz`` of one step from the gradients of
    its new cell state and of its output."""
    both = _lstm_c_grad_impl(xp, dc, a, c_prev, "gates") + \
        _lstm_h_grad_impl(xp, dh, a, c, "gates")
    return _lstm_gates_grad_impl(xp, both, a)


def _cell_grad_infer(shapes, in_dtypes):
    return shapes[2], rules.same_dtype(in_dtypes)


def _lstm_step_impl(xp, *inputs, forget_bias):
    """``(a, c, h)`` of one step from the gates' terms (as ``lstm_gates_sum``) and the
    previous cell state (the last input)."""
    *terms, c_prev = inputs
    a = _lstm_gates_sum_impl(xp, *terms, forget_bias=forget_bias)
    c = _lstm_c_impl(xp, a, c_prev)
    return a, c, _lstm_h_impl(xp, a, c)


def _step_infer(shapes, in_dtypes, forget_bias):
    return shapes[0], rules.same_dtype(in_dtypes)


def _lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev):
    """``(dz, dc_prev)`` of one step from the gradient of its output ``dh`` and the cell
    gradient ``dc_next`` coming back from the next step: ``dc = lstm_h_grad(dh, a, c,
    "state") + dc_next``, then ``lstm_cell_grad`` and ``lstm_c_grad(..., "state")``."""
    dc = _lstm_h_grad_impl(xp, dh, a, c, "state") + dc_next
    return (_lstm_cell_grad_impl(xp, dc, dh, a, c, c_prev),
            _lstm_c_grad_impl(xp, dc, a, c_prev, "state"))


def _step_grad_infer(shapes, in_dtypes):
    return shapes[2], rules.same_dtype(in_dtypes)


# One LSTM step forward (three outputs) and backward (two), made only by the graph
# compiler (``passes/lstm_steps.py``): plan nodes, never in a user's graph.
LSTM_STEP = register("lstm_step", _lstm_step_impl, _step_infer, grad=None, outputs=3,
                     plan_only=True)
LSTM_STEP_GRAD = register("lstm_step_grad", _lstm_step_grad_impl, _step_grad_infer, grad=None,
                          outputs=2, plan_only=True)


def _lstm_step_rec_impl(xp, x, h_prev, w, row, c_prev, forget_bias):
    """``lstm_step(x, h_prev @ w, row, c_prev)``: a step with its recurrent product."""
    return _lstm_step_impl(xp, x, xp.matmul(h_prev, w), row, c_prev, forget_bias=forget_bias)


def _lstm_step_rec_grad_impl(xp, dy, dz_next, w, dc_next, a, c, c_prev):
    """``lstm_step_grad(dy + dz_next @ w^T, dc_next, a, c, c_prev)``: a backward step with
    the recurrent part of its output's gradient."""
    dh = dy + xp.matmul(dz_next, xp.matrix_transpose(w))
    return _lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)


# The same steps with the recurrent product inside (``passes/lstm_recurrence.py``, for
# backends whose kernels do it: one kernel per time step each way).
LSTM_STEP_REC = register("lstm_step_rec", _lstm_step_rec_impl, _step_infer, grad=None,
                         outputs=3, plan_only=True)
LSTM_STEP_REC_GRAD = register("lstm_step_rec_grad", _lstm_step_rec_grad_impl,
                              lambda shapes, in_dtypes: (shapes[4], rules.same_dtype(in_dtypes)),
                              grad=None, outputs=2, plan_only=True)


def _transposed_copy_impl(xp, w):
    """``w``'s transpose as a new row-major array: BLAS multiplies by it faster than by a
    transposed view (``passes/lstm_steps.py``'s ``contiguous_recurrent_transposes``)."""
    t = xp.matrix_transpose(w)
    return xp.reshape(xp.reshape(t, (-1,)), t.shape)


TRANSPOSED_COPY = register(
    "transposed_copy", _transposed_copy_impl,
    lambda shapes, in_dtypes: ((shapes[0][1], shapes[0][0]), in_dtypes[0]), grad=None,
    plan_only=True)


# Made only by the graph compiler (``passes/rewrites.py``) from the ops they stand for,
# in plans, which are never differentiated: no gradients.
register("lstm_gates_sum", _lstm_gates_sum_impl, _gates_sum_infer, grad=None)
register("lstm_cell_grad", _lstm_cell_grad_impl, _cell_grad_infer, grad=None)


# -- zeros with a run-time batch size ---------------------------------------------------


def _batch_zeros_infer(shapes, in_dtypes, tail, dtype):
    if len(shapes[0]) != 0 or not in_dtypes[0].is_integer:
        raise ValueError(f"the batch size must be a scalar integer tensor, got shape "
                         f"{tuple(shapes[0])} {in_dtypes[0].name}")
    return (None,) + tuple(tail), dtype


def _batch_zeros_impl(xp, batch_size, tail, dtype):
    return xp.zeros((int(batch_size),) + tuple(tail), dtype=dtype.resolve(xp),
                    device=_device(batch_size))


register("batch_zeros", _batch_zeros_impl, _batch_zeros_infer, grad=None,
         value_shape=lambda values, attrs: None if values[0] is None
         else (int(values[0]),) + tuple(attrs["tail"]))

