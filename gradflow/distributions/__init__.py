"""TF1's ``tf.distributions`` (``tf.compat.v1.distributions``): ``Normal``,
``Bernoulli``, ``Categorical``, ``Uniform``, ``Beta``, ``Gamma``, ``Exponential``,
``Laplace``, ``Multinomial`` and ``Dirichlet``, with ``kl_divergence`` and the
divergences TF1 registers (Normal, Bernoulli, Categorical, Beta and Gamma pairs).

Their methods build graph ops: ``sample`` (drawn on the host from a seeded generator,
the same numbers on every backend), ``log_prob``, ``prob``, ``cdf``, ``entropy``,
``mean``, ``stddev``, ``variance``, ``mode``... The reparameterized ones (Normal,
Uniform, Laplace, Exponential, Gamma, Beta, Dirichlet) pass gradients through their
samples, as a VAE needs; ``log_prob`` is differentiable in the parameters, as
REINFORCE needs.
"""

from gradflow.distributions.continuous import Laplace, Normal, Uniform
from gradflow.distributions.discrete import Bernoulli, Categorical, Multinomial
from gradflow.distributions.distribution import (
    FULLY_REPARAMETERIZED,
    NOT_REPARAMETERIZED,
    Distribution,
    RegisterKL,
    ReparameterizationType,
    kl_divergence,
)
from gradflow.distributions.gamma import Beta, Dirichlet, Exponential, Gamma

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Exponential",
           "FULLY_REPARAMETERIZED", "Gamma", "Laplace", "Multinomial", "NOT_REPARAMETERIZED",
           "Normal", "RegisterKL", "ReparameterizationType", "Uniform", "kl_divergence"]
