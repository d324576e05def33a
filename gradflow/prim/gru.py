"""Fused primitives for the GRU cell's step (TF1 ``GRUCell``).

A step of ``GRUCell`` (with its default ``tanh`` activation) is two products and
three elementwise nodes:

    gates = sigmoid([x, h] @ gates/kernel + gates/bias)      [batch, 2 * units]: r, u
    rh    = gru_rh(gates, h)      = r * h
    h_new = gru_h(gates, zc, h)   = u * h + (1 - u) * tanh(zc)
                                    (zc = [x, rh] @ candidate/kernel + candidate/bias)

Written with elementary ops, the split of the gates and its gradient (a concat
with zeros), the products and the sums are a dozen nodes a step each way; here
``gru_rh`` and ``gru_h`` are one node each, and their gradients one node per
input (``gru_rh_grad``, ``gru_h_grad`` with ``wrt``), which the graph compiler
joins into one node per step each (``gru_rh_grads``, ``gru_h_grads``:
``passes/gru_steps.py``). The candidate's ``tanh`` is inside ``gru_h``, so its
value is not stored: the backward recomputes it (one transcendental, as the LSTM
kernels recompute ``tanh(c)``). A cell with another activation is built from
elementary ops instead.

The gradient ops are differentiable again: their rules rebuild the forward with
elementary ops and differentiate that, so higher-order gradients stay exact.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import apply, register


def _halves(gates):
    n = gates.shape[-1] // 2
    return gates[..., :n], gates[..., n:]


def _check(gates, state):
    if len(gates) != 2 or len(state) != 2:
        raise ValueError(f"the gates [batch, 2 * units] and the state [batch, units] must "
                         f"be 2-D, got {tuple(gates)} and {tuple(state)}")
    if gates[-1] is not None and state[-1] is not None and gates[-1] != 2 * state[-1]:
        raise ValueError(f"the gate axis ({gates[-1]}) is not 2 x the state's {state[-1]} "
                         "units")
    if gates[0] is not None and state[0] is not None and gates[0] != state[0]:
        raise ValueError(f"batch sizes differ: {gates[0]} vs {state[0]}")
    batch = gates[0] if gates[0] is not None else state[0]
    units = state[-1] if state[-1] is not None else \
        (gates[-1] // 2 if gates[-1] is not None else None)
    return batch, units


def _rh_infer(shapes, in_dtypes):
    dtype = rules.same_dtype(in_dtypes)
    rules.require_floating(dtype, "gates")
    return _check(shapes[0], shapes[1]), dtype


def _h_infer(shapes, in_dtypes):
    dtype = rules.same_dtype(in_dtypes)
    rules.require_floating(dtype, "gates")
    batch, units = _check(shapes[0], shapes[2])
    cand = shapes[1]
    if len(cand) != 2 or any(a is not None and b is not None and a != b
                             for a, b in zip(cand, (batch, units))):
        raise ValueError(f"the candidate {tuple(cand)} must be [batch, units] like the "
                         f"state ({batch}, {units})")
    return (batch, units), dtype


def _grad_infer(shapes, in_dtypes, wrt):
    dtype = rules.same_dtype(in_dtypes)
    batch, units = _check(shapes[1], shapes[-1])
    if wrt == "gates":
        return (batch, None if units is None else 2 * units), dtype
    return (batch, units), dtype


def _fit(xp, g, like):
    """``g`` summed down to ``like``'s shape where the forward broadcast a batch of 1."""
    if g.shape == like.shape:
        return g
    g = xp.sum(g, axis=0, keepdims=True, dtype=g.dtype) if like.shape[0] == 1 else g
    return xp.reshape(g, like.shape)


# -- rh = gru_rh(gates, h) = r * h -------------------------------------------------------


def _gru_rh_impl(xp, gates, h):
    return _halves(gates)[0] * h


def _gru_rh_grad_impl(xp, g, gates, h, wrt):
    r = _halves(gates)[0]
    if wrt == "state":
        return _fit(xp, g * r, h)
    dr = g * h
    return _fit(xp, xp.concat([dr, xp.zeros_like(dr)], axis=-1), gates)


# -- h_new = gru_h(gates, zc, h) = u * h + (1 - u) * tanh(zc) ----------------------------


def _gru_h_impl(xp, gates, zc, h):
    u = _halves(gates)[1]
    return u * h + (1.0 - u) * xp.tanh(zc)


def _gru_h_grad_impl(xp, g, gates, zc, h, wrt):
    u = _halves(gates)[1]
    c = xp.tanh(zc)
    if wrt == "state":
        return _fit(xp, g * u, h)
    if wrt == "candidate":
        return _fit(xp, g * (1.0 - u) * (1.0 - c * c), zc)
    du = g * (h - c)
    return _fit(xp, xp.concat([xp.zeros_like(du), du], axis=-1), gates)


# -- the same formulas with elementary ops, for the gradients of the gradients ---------


def composite_gru_rh(gates, h):
    """``gru_rh`` written with elementary ops."""
    return call.multiply(call.split_like(gates, h, h, axis=1, index=0), h)


def composite_gru_h(gates, zc, h):
    """``gru_h`` written with elementary ops."""
    u = call.split_like(gates, h, h, axis=1, index=1)
    return call.add(call.multiply(u, h), call.multiply(call.subtract(1.0, u), call.tanh(zc)))


def _second_order(forward, names):
    def rule(n, gout):
        # autodiff sits above the primitives: these rules differentiate a sub-graph
        from gradflow.autodiff import gradients

        g, *inputs = n.inputs
        y = forward(*inputs)
        wrt = inputs[names.index(n.attrs["wrt"])]
        first = gradients(y, [wrt], grad_ys=g, stop_gradients=inputs)[0]
        return gradients(first, [g] + inputs, grad_ys=gout, stop_gradients=[g] + inputs)

    return rule


_RH_INPUTS = ("gates", "state")
_H_INPUTS = ("gates", "candidate", "state")

register("gru_rh", _gru_rh_impl, _rh_infer,
         grad=lambda n, g: [apply("gru_rh_grad", [g] + list(n.inputs), wrt=w)
                            for w in _RH_INPUTS], exact_grad=True)
register("gru_h", _gru_h_impl, _h_infer,
         grad=lambda n, g: [apply("gru_h_grad", [g] + list(n.inputs), wrt=w)
                            for w in _H_INPUTS], exact_grad=True, transcendental=True)
register("gru_rh_grad", _gru_rh_grad_impl, _grad_infer,
         grad=_second_order(composite_gru_rh, _RH_INPUTS))
register("gru_h_grad", _gru_h_grad_impl, _grad_infer,
         grad=_second_order(composite_gru_h, _H_INPUTS), transcendental=True)


# -- whole steps, made by the graph compiler (``passes/gru_steps.py``) --------------------


def _sum(terms):
    """``terms[0] + terms[1] + ...``, left to right (the order of the add nodes replaced)."""
    z = terms[0]
    for t in terms[1:]:
        z = z + t
    return z


def _sigmoid(xp, z):
    return 0.5 * xp.tanh(0.5 * z) + 0.5  # as the ``sigmoid`` primitive computes it


def _gru_gates_step_impl(xp, *inputs):
    """``(gates, rh)``: ``gates = sigmoid(terms[0] + terms[1] + ...)`` (the step's input
    and state products and the bias) and ``rh = gru_rh(gates, h)``; ``h`` is the last
    input."""
    *terms, h = inputs
    gates = _sigmoid(xp, _sum(terms))
    return gates, _gru_rh_impl(xp, gates, h)


def _gru_h_step_impl(xp, *inputs):
    """``(zc, h_new)``: ``zc = terms[0] + ...`` and ``h_new = gru_h(gates, zc, h)``; the
    last two inputs are ``gates, h``."""
    *terms, gates, h = inputs
    zc = _sum(terms)
    return zc, _gru_h_impl(xp, gates, zc, h)


def _gru_rh_grads_impl(xp, g, gates, h):
    """``(d gates, d h)`` of ``gru_rh``: its two ``gru_rh_grad`` nodes in one."""
    return tuple(_gru_rh_grad_impl(xp, g, gates, h, w) for w in _RH_INPUTS)


def _gru_h_grads_impl(xp, *inputs):
    """``(d gates, d zc, d h)`` of ``gru_h``: its three ``gru_h_grad`` nodes in one, their
    output gradient the sum of the leading inputs (the gradients of a step's output from
    the loss and from the next step); the last three are ``gates, zc, h``."""
    *terms, gates, zc, h = inputs
    g = _sum(terms)
    return tuple(_gru_h_grad_impl(xp, g, gates, zc, h, w) for w in _H_INPUTS)


def _gru_gates_grad_impl(xp, drh, dgh, gates, h):
    """``(dz, dh)`` of a step's gates: ``dz = sigmoid'(dgh + gru_rh_grad(drh, gates, h,
    "gates"))`` (``dgh``: ``gru_h``'s gradient for the gates) and ``dh =
    gru_rh_grad(drh, gates, h, "state")``, in the order the replaced nodes compute."""
    total = dgh + _gru_rh_grad_impl(xp, drh, gates, h, "gates")
    return (total * gates) * (1.0 - gates), _gru_rh_grad_impl(xp, drh, gates, h, "state")


def _first_infer(index):
    def infer(shapes, in_dtypes):
        return shapes[index], rules.same_dtype(in_dtypes)

    return infer


# Plan nodes only; plans are never differentiated. Each output's shape is that of the
# node it stands for.
GRU_GATES_STEP = register("gru_gates_step", _gru_gates_step_impl, _first_infer(0), grad=None,
                          outputs=2, plan_only=True, transcendental=True)
GRU_H_STEP = register("gru_h_step", _gru_h_step_impl, _first_infer(-1), grad=None, outputs=2,
                      plan_only=True, transcendental=True)
GRU_RH_GRADS = register("gru_rh_grads", _gru_rh_grads_impl, _first_infer(1), grad=None,
                        outputs=2, plan_only=True)
GRU_H_GRADS = register("gru_h_grads", _gru_h_grads_impl, _first_infer(-3), grad=None,
                       outputs=3, plan_only=True, transcendental=True)
GRU_GATES_GRAD = register("gru_gates_grad", _gru_gates_grad_impl, _first_infer(2), grad=None,
                          outputs=2, plan_only=True)
