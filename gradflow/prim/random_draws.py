"""Random draws whose distribution depends on tensor values: TF1's ``random_gamma``,
``random_poisson`` and the counts of a ``Multinomial`` distribution, plus the implicit
gradient of a gamma draw (``random_gamma_grad``).

A draw is an op of kind ``"call"``: the executor hands it the Session's run state, and
it draws on the host from the node's own seeded generator (``run.host_rng``, the one a
``random`` node gets), given its parameters' values. So the same seed gives the same
numbers on every backend, as for every random op. TF1's functions over them are in
``gradflow.ops.random_ops``.

``random_gamma_grad(alpha, x)`` is ``dx/dalpha`` of a standard gamma draw ``x`` when
the draw's quantile is held fixed (the implicit reparameterization TF1 uses):
``-dP(alpha, x)/dalpha / p(x; alpha)``, with ``P`` the regularized lower incomplete
gamma function and ``p`` the density. It is computed in float64 over the Array API:
by ``P``'s power series where ``x <= alpha + 1``, else from the continued fraction of
``1 - P``, each differentiated in ``alpha`` term by term.
"""

from __future__ import annotations

import numpy as np

from gradflow.prim import call, rules
from gradflow.prim.construct import declared
from gradflow.prim.registry import register
from gradflow.prim.special import _digamma64, _in_float64

_EPS = 1e-17  # terms below this share of the sum no longer change a float64 result
_MAX_TERMS = 10000


def _draw_impl(draw):
    """The ``impl(run, node)`` of a host draw: ``draw(rng, attrs, *arrays)`` gives a
    NumPy array from the parameters' values."""
    def impl(run, node):
        backend, attrs = run.backend, node.attrs
        rng = run.host_rng(node)
        dtype = attrs["dtype"].as_numpy_dtype

        def call(*values):
            host = [np.asarray(backend.to_numpy(v), np.float64) for v in values]
            return backend.device_value(np.asarray(draw(rng, attrs, *host), dtype))

        return call

    return impl


def _gamma(rng, attrs, alpha):
    """Standard gamma numbers (rate 1) of shape ``sample_shape + alpha.shape``, none below the
    dtype's smallest normal number (TF1 clamps its draws there too)."""
    out = rng.standard_gamma(np.broadcast_to(alpha, attrs["sample_shape"] + alpha.shape))
    return np.maximum(out, float(np.finfo(attrs["dtype"].as_numpy_dtype).tiny))


def _poisson(rng, attrs, lam):
    return rng.poisson(np.broadcast_to(lam, attrs["sample_shape"] + lam.shape))


def _counts(rng, attrs, total_count, probs):
    """Multinomial counts over the last axis of ``probs``: ``sample_shape + batch + [k]``."""
    batch = np.broadcast_shapes(total_count.shape, probs.shape[:-1])
    n = np.broadcast_to(total_count, attrs["sample_shape"] + batch).astype(np.int64)
    p = np.broadcast_to(probs, attrs["sample_shape"] + batch + probs.shape[-1:])
    p = p / p.sum(axis=-1, keepdims=True)  # exactly one, as numpy asks
    return rng.multinomial(n, p)


# kind "call": drawn on the host from the node's seeded generator (attrs: the static
# ``shape`` and ``dtype`` of the result, the ``sample_shape`` before the parameters'
# shape, ``graph_seed`` and ``op_seed``); a gamma draw's gradient is gamma_reparam's
register("random_gamma", _draw_impl(_gamma), declared, grad=None, kind="call")
register("random_poisson", _draw_impl(_poisson), declared, grad=None, kind="call")
register("multinomial_counts", _draw_impl(_counts), declared, grad=None, kind="call")


# -- the implicit gradient of a gamma draw ---------------------------------------------


def _lower_series(xp, a, x, log_x):
    """``-dP/da / p`` by ``P``'s series ``sum_n x^(a+n) e^-x / Gamma(a+n+1)``: the terms
    over ``p`` are ``r_n = x^(n+1) / (a (a+1) ... (a+n))``, each times
    ``log x - digamma(a+n+1)`` once differentiated."""
    r = x / a
    psi = _digamma64(xp, a + 1.0)
    total = r * (log_x - psi)
    for n in range(1, _MAX_TERMS):
        psi = psi + 1.0 / (a + n)
        r = r * x / (a + n)
        term = r * (log_x - psi)
        total = total + term
        if not bool(xp.any(xp.abs(term) > _EPS * xp.abs(total))):
            break
    return -total


def _upper_fraction(xp, a, x, log_x, depth):
    """``dQ/da / p`` for ``Q = 1 - P = x p(x; a) F``, ``F`` the continued fraction
    ``1 / (b_0 - a_1 / (b_1 - a_2 / ...))`` with ``b_k = x + 2k + 1 - a`` and
    ``a_k = k (k - a)``, evaluated from ``depth`` up along with ``dF/da``."""
    t = xp.zeros_like(x)
    dt = xp.zeros_like(x)
    for k in range(depth, 0, -1):
        den = x + (2 * k + 1) - a - t
        ak = k * (k - a)
        t, dt = ak / den, (-k * den - ak * (-1.0 - dt)) / (den * den)
    den = x + 1.0 - a - t
    f = 1.0 / den
    df = (1.0 + dt) / (den * den)
    return x * ((log_x - _digamma64(xp, a)) * f + df)


def _gamma_grad64(xp, a, x):
    a, x = xp.broadcast_arrays(a, x)
    tiny = xp.finfo(x.dtype).smallest_normal
    x = xp.where(x > tiny, x, xp.full_like(x, tiny))
    log_x = xp.log(x)
    lower = x <= a + 1.0
    one = xp.ones_like(x)
    # each branch on the elements it suits, the others at a harmless point
    low = _lower_series(xp, a, xp.where(lower, x, one * 0.5 * a), xp.where(lower, log_x,
                                                                           xp.log(0.5 * a)))
    if bool(xp.all(lower)):
        return low
    far = xp.logical_not(lower)
    xs = xp.where(far, x, a + 2.0)
    depth = int(min(_MAX_TERMS, 40 + 4 * float(xp.max(xp.sqrt(xp.where(far, a, one))))))
    up = _upper_fraction(xp, a, xs, xp.log(xs), depth)
    return xp.where(lower, low, up)


def _gamma_grad_infer(shapes, in_dtypes):
    dtype = rules.same_dtype(in_dtypes)
    rules.require_floating(dtype, "alpha and sample")
    return rules.broadcast_shapes(shapes[0], shapes[1]), dtype


# TF1's RandomGammaGrad has no gradient of its own either
register("random_gamma_grad", _in_float64(_gamma_grad64), _gamma_grad_infer, grad=None,
         broadcasting=True)


def _reparam_impl(xp, x, alpha):
    return x


def _reparam_infer(shapes, in_dtypes):
    return shapes[0], in_dtypes[0]


def _reparam_grad(node, g):
    """``g``, and ``g dx/dalpha`` summed down to alpha's shape (the sample's trailing one)."""
    x, alpha = node.inputs
    slope = call.random_gamma_grad(alpha, x, name="RandomGammaGrad")
    return [g, call.unbroadcast(call.multiply(g, slope), alpha)]


# ``x``, a standard gamma draw of parameter ``alpha`` (of shape ``sample_shape`` +
# alpha's), as a function of ``alpha`` through the implicit gradient (TF1's
# reparameterization of ``random_gamma``): ``gf.random_gamma``'s result
register("gamma_reparam", _reparam_impl, _reparam_infer, grad=_reparam_grad, view=True)
