"""The ``candidate_sampler`` primitive of the candidate samplers (TF1
``tf.nn.log_uniform_candidate_sampler``, ``tf.nn.uniform_candidate_sampler``): a node of
kind ``"random"`` whose value the executor draws on the host from the graph's seeded
generator (``draw_candidates``), so the same seed gives the same classes on every
backend. TF1's functions, and the expected counts over its value, are in
``gradflow.ops.candidate_sampling_ops``.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow.prim.registry import register


def _sampler_infer(shapes, in_dtypes, shape, dtype, **params):
    return shape, dtype


# kind "random": the executor draws its value on the host (state_ops.draw_host), no gradient
register("candidate_sampler", None, _sampler_infer, grad=None, kind="random")


def _draw_one_batch(rng, kind, range_max, size):
    """``size`` independent draws from the base distribution, as int64."""
    if kind == "uniform":
        return rng.integers(0, range_max, size=size, dtype=np.int64)
    # TF1's LogUniformSampler::Sample: floor(exp(u log(range_max + 1))) - 1, u in [0, 1)
    values = np.exp(rng.random(size) * math.log(range_max + 1.0)).astype(np.int64) - 1
    return values % range_max  # TF1 guards against roundoff the same way


def draw_candidates(rng, attrs):
    """The value of a ``candidate_sampler`` node: int64 ``[num_sampled + 1]``, the
    sampled classes then the number of draws it took (called through ``draw_host``)."""
    kind, range_max = attrs["sampler"], attrs["range_max"]
    num_sampled, unique = attrs["num_sampled"], attrs["unique"]
    if not unique:
        classes = _draw_one_batch(rng, kind, range_max, num_sampled)
        return np.concatenate([classes, np.array([num_sampled], np.int64)])
    # Without replacement: draw until num_sampled distinct classes came up, keeping each
    # class's first appearance in draw order, as TF1's rejection loop does. Draws come in
    # chunks; those after the last one needed are discarded (they count as no tries).
    draws = np.empty(0, np.int64)
    chunk = max(2 * num_sampled, 64)
    while True:
        draws = np.concatenate([draws, _draw_one_batch(rng, kind, range_max, chunk)])
        _, first = np.unique(draws, return_index=True)
        if len(first) >= num_sampled:
            first = np.sort(first)[:num_sampled]
            num_tries = int(first[-1]) + 1
            return np.concatenate([draws[first], np.array([num_tries], np.int64)])
        chunk *= 2


