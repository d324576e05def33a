"""TF1's ``tf.train.noisy_linear_cosine_decay``: ``linear_cosine_decay`` whose linear part
is perturbed by normal noise that fades as the steps go (Bello et al., 2017)."""

from __future__ import annotations

import math

from gradflow.ops.math_ops import cos, minimum, pow, sqrt  # noqa: A004
from gradflow.ops.state_ops import random_normal
from gradflow.train.learning_rate import _named, _number, _rate_and_step

__all__ = ["noisy_linear_cosine_decay"]


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """As TF1's::

        step = min(global_step, decay_steps)
        linear = (decay_steps - step) / decay_steps
        noise = normal(0, sqrt(initial_variance / (1 + step) ** variance_decay))
        cosine = 0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps))
        learning_rate * ((alpha + linear + noise) * cosine + beta)

    with a new draw of the noise at each run.
    """
    what = "noisy_linear_cosine_decay"
    rate, step = _rate_and_step(learning_rate, global_step, what)
    decay_steps = _number(decay_steps, rate.dtype, what, "decay_steps", positive=True)
    initial_variance = _number(initial_variance, rate.dtype, what, "initial_variance")
    variance_decay = _number(variance_decay, rate.dtype, what, "variance_decay")
    num_periods = _number(num_periods, rate.dtype, what, "num_periods")
    alpha = _number(alpha, rate.dtype, what, "alpha")
    beta = _number(beta, rate.dtype, what, "beta")
    step = minimum(step, decay_steps)
    linear = (decay_steps - step) / decay_steps
    std = sqrt(initial_variance / pow(step + 1.0, variance_decay))
    noisy = linear + random_normal([], stddev=std, dtype=rate.dtype)
    cosine = (cos(step / decay_steps * (2.0 * math.pi) * num_periods) + 1.0) * 0.5
    return _named(rate * ((noisy + alpha) * cosine + beta), name)
