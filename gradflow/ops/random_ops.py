"""TF1's random ops whose distribution takes tensors: ``random_gamma``,
``random_poisson``, ``random.categorical``, and the multinomial counts of
``distributions.Multinomial``, over the host draws of ``gradflow.prim.random_draws``.

Each draw is made on the host from the op's seeded generator (op seed, graph seed or
the Session's, as every random op), so the same seed gives the same numbers on every
backend. A gamma draw is differentiable in ``alpha`` (the implicit gradient TF1 uses)
and in ``beta``; the other draws pass no gradient, as in TF1.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph
from gradflow.ops.math_ops import add, divide, zeros_like
from gradflow.ops.sampling_ops import multinomial
from gradflow.ops.state_ops import _random_shape, stop_gradient
from gradflow.prim import random_draws, rules  # noqa: F401 - random_draws registers the draws
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["categorical", "multinomial_counts", "random_gamma", "random_poisson"]

_POISSON_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32,
                   dtypes.int64)


def _seeds(graph, seed):
    """``(graph_seed, op_seed)`` of a new random op, as ``state_ops`` picks them: an op
    without a seed in a graph with one is seeded by its position in the graph."""
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)
    return graph.seed, op_seed


def _sample_shape(shape, what):
    static = _random_shape(shape, what)
    if static is None or None in static:
        raise ValueError(f"{what}: the shape must be known when the graph is built (ints, "
                         f"or tensors of known value), got {shape!r}")
    return static


def _draw(op, params, batch, sample_shape, dtype, seed, name):
    """A host draw of ``op`` over ``params``, of shape ``sample_shape + batch`` (``batch``
    None where a parameter's rank is unknown)."""
    graph = next((p.graph for p in params if p.opdef.kind != "constant"),
                 get_default_graph())
    graph_seed, op_seed = _seeds(graph, seed)
    shape = None if batch is None else tuple(sample_shape) + tuple(batch)
    return apply(op, params, name=name, graph=graph, shape=shape, dtype=dtype,
                 sample_shape=tuple(sample_shape), graph_seed=graph_seed, op_seed=op_seed)


def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None):
    """Gamma random numbers of concentration ``alpha`` and rate ``beta`` (default 1), of
    shape ``shape + broadcast(alpha, beta).shape``, new ones every run (TF1
    ``tf.random_gamma``, ``tf.random.gamma``).

    The result is differentiable in ``alpha`` (implicit reparameterization: the draw's
    quantile held fixed, TF1's ``RandomGammaGrad``) and in ``beta``. Draws are at least
    the dtype's smallest normal number, as in TF1.

    >>> g = gf.random_gamma([10], alpha=[0.5, 1.5])   # shape [10, 2]
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise TypeError(f"random_gamma: dtype must be float16, float32 or float64, got "
                        f"{dtype.name}")
    alpha = convert_to_tensor(alpha, dtype=dtype)
    sample_shape = _sample_shape(shape, "random_gamma")
    if beta is not None:
        beta = convert_to_tensor(beta, dtype=dtype)
        alpha = add(alpha, zeros_like(beta))  # alpha broadcast to beta's shape too
    draw = _draw("random_gamma", [stop_gradient(alpha)], alpha.shape, sample_shape, dtype,
                 seed, "RandomGamma")
    x = apply("gamma_reparam", [draw, alpha], name="RandomGammaReparam")
    if beta is None:
        return apply("identity", [x], name=name or "random_gamma")
    return divide(x, beta, name=name or "random_gamma")


def random_poisson(lam, shape, dtype=dtypes.float32, seed=None, name=None):
    """Poisson random numbers of rate ``lam``, of shape ``shape + lam.shape`` and type
    ``dtype`` (float16/32/64, int32 or int64), new ones every run (TF1
    ``tf.random_poisson``, ``tf.random.poisson``: note ``lam`` comes first). No gradient
    flows to ``lam``.

    >>> counts = gf.random_poisson([1.0, 4.0], [5])   # shape [5, 2]
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _POISSON_DTYPES:
        raise TypeError(f"random_poisson: dtype must be float16, float32, float64, int32 "
                        f"or int64, got {dtype.name}")
    lam = convert_to_tensor(lam) if isinstance(lam, Tensor) or hasattr(lam, "_as_graph_tensor") \
        else convert_to_tensor(lam, dtype=dtypes.float32)
    if not lam.dtype.is_floating:
        raise TypeError(f"random_poisson: lam '{lam.name}' must be floating, got "
                        f"{lam.dtype.name}")
    sample_shape = _sample_shape(shape, "random_poisson")
    return _draw("random_poisson", [stop_gradient(lam)], lam.shape, sample_shape, dtype,
                 seed, name or "random_poisson")


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """``num_samples`` class indices per row of ``logits`` ``[batch, classes]``, drawn from
    ``softmax(logits)`` (TF1 ``tf.random.categorical``): ``[batch, num_samples]`` of
    ``dtype`` (int64 by default), as ``tf.multinomial``.

    >>> actions = gf.random.categorical(policy_logits, 1)
    """
    return multinomial(logits, num_samples, seed=seed, name=name or "categorical",
                       output_dtype=dtypes.int64 if dtype is None else dtype)


def multinomial_counts(total_count, probs, sample_shape, seed=None, name=None):
    """Counts of ``total_count`` draws among the classes of the last axis of ``probs``,
    of shape ``sample_shape + batch + [classes]`` in the dtype of ``probs`` (the samples
    of ``distributions.Multinomial``); no gradient."""
    probs = convert_to_tensor(probs)
    total_count = convert_to_tensor(total_count, dtype=probs.dtype)
    batch = None
    if probs.shape is not None and total_count.shape is not None:
        batch = tuple(rules.broadcast_shapes(total_count.shape, probs.shape[:-1])) \
            + tuple(probs.shape[-1:])
    return _draw("multinomial_counts", [stop_gradient(total_count), stop_gradient(probs)],
                 batch, sample_shape, probs.dtype, seed, name or "Multinomial_sample")
