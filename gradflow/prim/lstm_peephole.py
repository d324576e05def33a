"""Fused primitives for ``LSTMCell(use_peepholes=True)`` and ``cell_clip`` (TF1's cell).

With ``z = [x, h_prev] @ kernel + bias`` (gates ``i, j, f, o`` in TF1's order) and the
diagonal peephole weights ``w_i, w_f, w_o`` [units]:

    c = lstm_peep_c(z, c_prev, w_i, w_f)
      = clip(sigmoid((f + forget_bias) + w_f c_prev) c_prev + sigmoid(i + w_i c_prev) tanh(j))
    h = lstm_peep_h(z, c, w_o) = sigmoid(o + w_o c) tanh(c)

(``clip`` to ``[-cell_clip, cell_clip]`` where the cell has one; without peepholes the
weights are absent and the op is the clipped plain cell). Written with elementary ops,
a step is the split of the gates and a dozen nodes each way; here it is two nodes, and
each gradient one node per input (``lstm_peep_c_grad``/``lstm_peep_h_grad`` with
``wrt``), which the graph compiler joins into one node per op and step
(``passes/gru_steps.py``). The gradients recompute the activations from ``z`` (the
forward stores only ``c`` and ``h``). The clip passes the gradient where
``-cell_clip <= c <= cell_clip``, as ``minimum(maximum(c, -clip), clip)`` does.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import apply, register


def _blocks(z):
    n = z.shape[-1] // 4
    return z[..., :n], z[..., n:2 * n], z[..., 2 * n:3 * n], z[..., 3 * n:]


def _sigmoid(xp, x):
    return 0.5 * xp.tanh(0.5 * x) + 0.5  # as the ``sigmoid`` primitive computes it


def _check(shapes, names):
    z, state = shapes[0], shapes[1]
    if len(z) != 2 or len(state) != 2:
        raise ValueError(f"the gates [batch, 4 * units] and the state [batch, units] must be "
                         f"2-D, got {tuple(z)} and {tuple(state)}")
    units = state[-1] if state[-1] is not None else (None if z[-1] is None else z[-1] // 4)
    if z[-1] is not None and units is not None and z[-1] != 4 * units:
        raise ValueError(f"the gate axis ({z[-1]}) is not 4 x the state's {units} units")
    if z[0] is not None and state[0] is not None and z[0] != state[0]:
        raise ValueError(f"batch sizes differ: {z[0]} vs {state[0]}")
    for name, w in zip(names, shapes[2:]):
        if len(w) != 1 or (w[0] is not None and units is not None and w[0] != units):
            raise ValueError(f"the peephole weight {name} must be [{units}], got {tuple(w)}")
    return (z[0] if z[0] is not None else state[0], units)


def _infer(names):
    def infer(shapes, in_dtypes, **attrs):
        dtype = rules.same_dtype(in_dtypes)
        rules.require_floating(dtype, "gates")
        return _check(shapes, names), dtype

    return infer


def _grad_infer(names):
    def infer(shapes, in_dtypes, wrt, **attrs):
        dtype = rules.same_dtype(in_dtypes)
        batch, units = _check(shapes[1:], names)
        if wrt == "gates":
            return (batch, None if units is None else 4 * units), dtype
        return ((batch, units) if wrt == "state" else (units,)), dtype

    return infer


def _fit(xp, g, like):
    """``g`` summed down to ``like``'s shape where the forward broadcast a batch of 1."""
    if g.shape == like.shape:
        return g
    g = xp.sum(g, axis=0, keepdims=True, dtype=g.dtype) if like.shape[0] == 1 else g
    return xp.reshape(g, like.shape)


def _cell(xp, z, c_prev, w_i, w_f, forget_bias):
    """``(si, tj, sf, c_raw)``: the activations and the unclipped new cell state."""
    i, j, f, _ = _blocks(z)
    si = _sigmoid(xp, i + w_i * c_prev) if w_i is not None else _sigmoid(xp, i)
    af = f + forget_bias
    sf = _sigmoid(xp, af + w_f * c_prev) if w_f is not None else _sigmoid(xp, af)
    tj = xp.tanh(j)
    return si, tj, sf, sf * c_prev + si * tj


def _clip(xp, c, cell_clip):
    if cell_clip is None:
        return c
    return xp.minimum(xp.maximum(c, -cell_clip), cell_clip)


def _peep_c_impl(xp, z, c_prev, *w, forget_bias, cell_clip):
    w_i, w_f = w if w else (None, None)
    return _clip(xp, _cell(xp, z, c_prev, w_i, w_f, forget_bias)[3], cell_clip)


def _peep_c_grad_impl(xp, g, z, c_prev, *w, forget_bias, cell_clip, wrt):
    w_i, w_f = w if w else (None, None)
    si, tj, sf, c_raw = _cell(xp, z, c_prev, w_i, w_f, forget_bias)
    if cell_clip is not None:
        inside = (c_raw >= -cell_clip) & (c_raw <= cell_clip)
        g = xp.where(inside, g, xp.zeros_like(g))
    dai = g * tj * (1.0 - si) * si
    daf = g * c_prev * (1.0 - sf) * sf
    if wrt == "gates":
        dj = g * si * (1.0 - tj * tj)
        return _fit(xp, xp.concat([dai, dj, daf, xp.zeros_like(dai)], axis=-1), z)
    if wrt == "state":
        d = g * sf
        if w:
            d = d + dai * w_i + daf * w_f
        return _fit(xp, d, c_prev)
    d = dai if wrt == "w_i" else daf
    return xp.sum(d * c_prev, axis=0, dtype=d.dtype)


def _peep_h_impl(xp, z, c, *w):
    o = _blocks(z)[3]
    so = _sigmoid(xp, o + w[0] * c) if w else _sigmoid(xp, o)
    return so * xp.tanh(c)


def _peep_h_grad_impl(xp, g, z, c, *w, wrt):
    o = _blocks(z)[3]
    so = _sigmoid(xp, o + w[0] * c) if w else _sigmoid(xp, o)
    tc = xp.tanh(c)
    dao = g * tc * (1.0 - so) * so
    if wrt == "gates":
        zero = xp.zeros_like(dao)
        return _fit(xp, xp.concat([zero, zero, zero, dao], axis=-1), z)
    if wrt == "state":
        d = g * so * (1.0 - tc * tc)
        return _fit(xp, d + dao * w[0] if w else d, c)
    return xp.sum(dao * c, axis=0, dtype=dao.dtype)


# -- the same formulas with elementary ops, for the gradients of the gradients ---------


def _split4(z, like):
    return [call.split_like(z, like, like, like, like, axis=1, index=k) for k in range(4)]


def composite_peep_c(z, c_prev, *w, forget_bias, cell_clip):
    """``lstm_peep_c`` written with elementary ops."""
    i, j, f, _ = _split4(z, c_prev)
    af = call.add(f, forget_bias)
    if w:
        i = call.add(i, call.multiply(w[0], c_prev))
        af = call.add(af, call.multiply(w[1], c_prev))
    c = call.add(call.multiply(call.sigmoid(af), c_prev),
                 call.multiply(call.sigmoid(i), call.tanh(j)))
    if cell_clip is not None:
        c = call.minimum(call.maximum(c, -cell_clip), cell_clip)
    return c


def composite_peep_h(z, c, *w):
    """``lstm_peep_h`` written with elementary ops."""
    o = _split4(z, c)[3]
    if w:
        o = call.add(o, call.multiply(w[0], c))
    return call.multiply(call.sigmoid(o), call.tanh(c))


def _second_order(forward, names):
    def rule(n, gout):
        # autodiff sits above the primitives: these rules differentiate a sub-graph
        from gradflow.autodiff import gradients

        g, *inputs = n.inputs
        attrs = {k: v for k, v in n.attrs.items() if k != "wrt"}
        y = forward(*inputs, **attrs)
        wrt = inputs[names.index(n.attrs["wrt"])]
        first = gradients(y, [wrt], grad_ys=g, stop_gradients=inputs)[0]
        return gradients(first, [g] + inputs, grad_ys=gout, stop_gradients=[g] + inputs)

    return rule


C_INPUTS = ("gates", "state", "w_i", "w_f")
H_INPUTS = ("gates", "state", "w_o")


def _grads(op, names):
    def rule(n, g):
        return [apply(op, [g] + list(n.inputs), wrt=w, **n.attrs)
                for w in names[:len(n.inputs)]]

    return rule


register("lstm_peep_c", _peep_c_impl, _infer(("w_i", "w_f")),
         grad=_grads("lstm_peep_c_grad", C_INPUTS), exact_grad=True, transcendental=True)
register("lstm_peep_h", _peep_h_impl, _infer(("w_o",)),
         grad=_grads("lstm_peep_h_grad", H_INPUTS), exact_grad=True, transcendental=True)
register("lstm_peep_c_grad", _peep_c_grad_impl, _grad_infer(("w_i", "w_f")),
         grad=_second_order(composite_peep_c, C_INPUTS), transcendental=True)
register("lstm_peep_h_grad", _peep_h_grad_impl, _grad_infer(("w_o",)),
         grad=_second_order(composite_peep_h, H_INPUTS), transcendental=True)


# -- all the gradients of one node in one call, made by the graph compiler -----------


def _peep_c_grads_impl(xp, g, z, c_prev, *w, forget_bias, cell_clip):
    """The ``lstm_peep_c_grad`` of every input (gates, state[, w_i, w_f]) in one node."""
    return tuple(_peep_c_grad_impl(xp, g, z, c_prev, *w, forget_bias=forget_bias,
                                   cell_clip=cell_clip, wrt=name)
                 for name in C_INPUTS[:2 + len(w)])


def _peep_h_grads_impl(xp, g, z, c, *w):
    """The ``lstm_peep_h_grad`` of every input (gates, state[, w_o]) in one node."""
    return tuple(_peep_h_grad_impl(xp, g, z, c, *w, wrt=name) for name in H_INPUTS[:2 + len(w)])


def _first_infer(shapes, in_dtypes, **attrs):
    return shapes[1], rules.same_dtype(in_dtypes)


LSTM_PEEP_C_GRADS = register("lstm_peep_c_grads", _peep_c_grads_impl, _first_infer,
                             grad=None, outputs=4, plan_only=True, transcendental=True)
LSTM_PEEP_H_GRADS = register("lstm_peep_h_grads", _peep_h_grads_impl, _first_infer,
                             grad=None, outputs=3, plan_only=True, transcendental=True)


# -- whole steps, made by the graph compiler (``passes/gru_steps.py``) --------------------


def _sum(terms):
    z = terms[0]
    for t in terms[1:]:
        z = z + t
    return z


def _peep_step_impl(xp, *inputs, forget_bias, cell_clip):
    """``(z, c, h)`` of a step from the gates' terms ``x [, y], row`` (summed left to
    right) and ``c_prev, w_i, w_f, w_o`` (the last four inputs)."""
    *terms, c_prev, w_i, w_f, w_o = inputs
    z = _sum(terms)
    c = _peep_c_impl(xp, z, c_prev, w_i, w_f, forget_bias=forget_bias, cell_clip=cell_clip)
    return z, c, _peep_h_impl(xp, z, c, w_o)


def _peep_step_grad_impl(xp, *inputs, forget_bias, cell_clip, terms, carry):
    """``(dz, dc_prev, dw_i, dw_f, dw_o)`` of a step: ``lstm_peep_h_grads`` of the output's
    gradient (the sum of the first ``terms`` inputs), its state gradient plus ``dc_next``
    (the next input, where ``carry``) into ``lstm_peep_c_grads``, and the two gates'
    gradients summed; then ``z, c_prev, c, w_i, w_f, w_o``."""
    g = _sum(inputs[:terms])
    rest = inputs[terms:]
    dc_next, rest = (rest[0], rest[1:]) if carry else (None, rest)
    z, c_prev, c, w_i, w_f, w_o = rest
    dzh, dch, dwo = _peep_h_grads_impl(xp, g, z, c, w_o)
    gc = dch + dc_next if carry else dch
    dzc, dcp, dwi, dwf = _peep_c_grads_impl(xp, gc, z, c_prev, w_i, w_f,
                                            forget_bias=forget_bias, cell_clip=cell_clip)
    return dzc + dzh, dcp, dwi, dwf, dwo


def _step_infer(shapes, in_dtypes, **attrs):
    return shapes[0], rules.same_dtype(in_dtypes)


LSTM_PEEP_STEP = register("lstm_peep_step", _peep_step_impl, _step_infer, grad=None,
                          outputs=3, plan_only=True, transcendental=True)
LSTM_PEEP_STEP_GRAD = register("lstm_peep_step_grad", _peep_step_grad_impl, _step_infer,
                               grad=None, outputs=5, plan_only=True, transcendental=True)
