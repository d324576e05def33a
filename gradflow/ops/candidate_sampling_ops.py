"""Candidate samplers (TF1 ``tf.nn.log_uniform_candidate_sampler`` and
``tf.nn.uniform_candidate_sampler``) for the sampled losses.

The classes are drawn on the host from the graph's seeded generator, like every
random op, so the same seed gives the same classes on every backend. One node of
kind ``"random"`` (op ``candidate_sampler``) draws them; its value is the
``num_sampled`` classes followed by ``num_tries``, the number of draws it took
(more than ``num_sampled`` when ``unique=True`` rejects repeats). The expected
counts are graph ops over that value, with TF1's formulas (range_sampler.cc)::

    P(k)  = (log(k + 2) - log(k + 1)) / log(range_max + 1)   log-uniform (Zipfian)
    P(k)  = 1 / range_max                                    uniform
    count = num_sampled * P(k)                   if num_tries == num_sampled
          = -expm1(num_tries * log1p(-P(k)))     otherwise (unique sampling)

computed in float64 and returned as float32, as TF1 returns them.
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.ops import state_ops
from gradflow.ops.math_ops import abs, cast, equal, exp, log1p, where
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.prim.sampling import draw_candidates

_KINDS = ("log_uniform", "uniform")

# the executor draws the sampler's value through state_ops.draw_host, by its ``dist``
state_ops.HOST_DRAWS["candidate_sampler"] = draw_candidates


def _probability(classes, sampler, range_max):
    """The base distribution's probability of each class, as float64 graph ops."""
    k = cast(classes, dtypes.float64)
    if sampler == "uniform":
        return k * 0.0 + 1.0 / range_max
    # log((k + 2) / (k + 1)) = log1p(1 / (k + 1))
    return log1p(1.0 / (k + 1.0)) / math.log(range_max + 1.0)


def _expected_count(p, num_tries, num_sampled):
    """TF1's ExpectedCountHelper in float64 graph ops, as float32."""
    tries = cast(num_tries, dtypes.float64)
    x = tries * log1p(-p)  # <= 0
    # -expm1(x): 1 - exp(x) loses digits for tiny |x|, where two terms of the series
    # are exact to float64 precision
    not_hit = where(abs(x) < 1e-5, -x * (1.0 + 0.5 * x), 1.0 - exp(x))
    count = where(equal(num_tries, num_sampled), p * float(num_sampled), not_hit)
    return cast(count, dtypes.float32)


def _candidate_sampler(sampler, true_classes, num_true, num_sampled, unique, range_max,
                       seed, name):
    what = f"{sampler}_candidate_sampler"
    num_true, num_sampled, range_max = int(num_true), int(num_sampled), int(range_max)
    if num_sampled < 1 or range_max < 1 or num_true < 1:
        raise ValueError(f"{what}: num_true, num_sampled and range_max must be positive, "
                         f"got {num_true}, {num_sampled}, {range_max}")
    if unique and num_sampled > range_max:
        raise ValueError(f"{what}: cannot draw {num_sampled} distinct classes "
                         f"(unique=True) from range_max={range_max}")
    true_classes = convert_to_tensor(true_classes)
    if not true_classes.dtype.is_integer:
        raise TypeError(f"{what}: true_classes '{true_classes.name}' must be int64, got "
                        f"{true_classes.dtype.name}")
    shape = true_classes.shape
    if shape is not None and (len(shape) != 2 or shape[1] not in (None, num_true)):
        raise ValueError(f"{what}: true_classes '{true_classes.name}' must have shape "
                         f"[batch_size, num_true={num_true}], got {tuple(shape)}")
    graph = true_classes.graph
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)  # deterministic per position in the graph, as _random
    packed = apply("candidate_sampler", [], name=name or what, graph=graph,
                   shape=(num_sampled + 1,), dtype=dtypes.int64, dist="candidate_sampler",
                   graph_seed=graph.seed, op_seed=op_seed, sampler=sampler,
                   num_sampled=num_sampled, unique=bool(unique), range_max=range_max)
    sampled = packed[:num_sampled]
    num_tries = packed[num_sampled]
    true_p = _probability(cast(true_classes, dtypes.int64), sampler, range_max)
    sampled_p = _probability(sampled, sampler, range_max)
    return (sampled, _expected_count(true_p, num_tries, num_sampled),
            _expected_count(sampled_p, num_tries, num_sampled))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Classes drawn from the log-uniform (Zipfian) distribution over ``[0, range_max)``:
    ``P(k) = (log(k + 2) - log(k + 1)) / log(range_max + 1)`` (TF1's default sampler).

    Returns ``(sampled_candidates, true_expected_count, sampled_expected_count)``:
    int64 ``[num_sampled]``, float32 ``[batch_size, num_true]`` and float32
    ``[num_sampled]``. ``unique=True`` draws without replacement within the batch;
    the expected counts are then TF1's ``1 - (1 - P(k)) ** num_tries``. New classes
    every run; ``seed`` and ``gf.set_random_seed`` make them reproducible, and the
    same on every backend.
    """
    return _candidate_sampler("log_uniform", true_classes, num_true, num_sampled, unique,
                              range_max, seed, name)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """Classes drawn uniformly from ``[0, range_max)``; see
    ``log_uniform_candidate_sampler`` for the arguments and results."""
    return _candidate_sampler("uniform", true_classes, num_true, num_sampled, unique,
                              range_max, seed, name)

