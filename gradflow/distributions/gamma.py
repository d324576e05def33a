"""TF1's ``Gamma``, ``Exponential``, ``Beta`` and ``Dirichlet`` distributions, sampled
from gamma draws (``gf.random_gamma``, differentiable in the concentration by the
implicit gradient, as TF1's), and the KL divergences of two gammas and of two betas.

Their samples need a sample shape known when the graph is built (ints), as the gamma
draws do. TF1's ``cdf`` of ``Gamma`` and ``Beta`` (the incomplete gamma and beta
functions) is not here; ``Exponential``'s is.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow.distributions.distribution import (
    FULLY_REPARAMETERIZED,
    Distribution,
    RegisterKL,
)
from gradflow.distributions.util import (
    draw_shape,
    dynamic_batch,
    float_params,
    static_batch,
)
from gradflow.ops.array_ops import expand_dims, reduce_all, reduce_sum
from gradflow.ops.index_ops import shape
from gradflow.ops.math_ops import (
    exp,
    expm1,
    log,
    log1p,
    ones_like,
    sqrt,
    square,
    zeros_like,
)
from gradflow.ops.random_ops import random_gamma
from gradflow.ops.shape_ops import eye
from gradflow.ops.special_ops import digamma, lgamma, xlogy
from gradflow.ops.state_ops import random_uniform


def _seed_after(seed, k):
    """A second op seed derived from ``seed`` (None stays None)."""
    return None if seed is None else (int(seed) * 1000003 + k) % (2**31 - 1)


def _static_n(n, what):
    if not isinstance(n, int):
        raise ValueError(f"{what}.sample: the sample shape must be ints known when the graph "
                         "is built (gamma draws need it)")
    return n


class Gamma(Distribution):
    """The gamma distribution of ``concentration`` (shape) ``alpha`` and ``rate`` ``beta``,
    density ``beta^alpha x^(alpha-1) e^(-beta x) / Gamma(alpha)`` (TF1's
    ``tf.distributions.Gamma``); fully reparameterized."""

    def __init__(self, concentration, rate, validate_args=False, allow_nan_stats=True,
                 name="Gamma"):
        parameters = dict(concentration=concentration, rate=rate,
                          validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                          name=name)
        concentration, rate = float_params(name, concentration=concentration, rate=rate)
        super().__init__(concentration.dtype, FULLY_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [concentration, rate], name)
        self._concentration = self._checked(concentration, "concentration")
        self._rate = self._checked(rate, "rate")

    @property
    def concentration(self):
        """The concentration (shape) parameter ``alpha``."""
        return self._concentration

    @property
    def rate(self):
        """The rate (inverse scale) parameter ``beta``."""
        return self._rate

    def _batch_shape(self):
        return static_batch(self._concentration, self._rate)

    def _batch_shape_tensor(self):
        return dynamic_batch(self._concentration, self._rate)

    def _sample_n(self, n, seed=None):
        return random_gamma([_static_n(n, self._name)], self._concentration, self._rate,
                            dtype=self._dtype, seed=seed)

    def _log_prob(self, x):
        a, b = self._concentration, self._rate
        return xlogy(a - 1.0, x) - b * x - lgamma(a) + a * log(b)

    def _entropy(self):
        a, b = self._concentration, self._rate
        return a - log(b) + lgamma(a) + (1.0 - a) * digamma(a)

    def _mean(self):
        return self._concentration / self._rate

    def _variance(self):
        return self._concentration / square(self._rate)

    def _stddev(self):
        return sqrt(self._concentration) / self._rate

    def _mode(self):
        mode = (self._concentration - 1.0) / self._rate
        return self._nan_stat(mode, self._concentration > 1.0, "the mode (concentration <= 1)")


class Exponential(Gamma):
    """The exponential distribution of ``rate``, density ``rate e^(-rate x)``: a
    ``Gamma`` of concentration 1 (TF1's ``tf.distributions.Exponential``)."""

    def __init__(self, rate, validate_args=False, allow_nan_stats=True, name="Exponential"):
        (rate,) = float_params(name, rate=rate)
        super().__init__(ones_like(rate), rate, validate_args, allow_nan_stats, name)
        self._parameters = dict(rate=rate, validate_args=validate_args,
                                allow_nan_stats=allow_nan_stats, name=name)

    def _sample_n(self, n, seed=None):
        tiny = float(np.finfo(self._dtype.as_numpy_dtype).tiny)
        u = random_uniform(draw_shape(n, self), minval=tiny, maxval=1.0, dtype=self._dtype,
                           seed=seed)
        return -log(u) / self._rate

    def _log_prob(self, x):
        return log(self._rate) - self._rate * x

    def _cdf(self, x):
        return -expm1(-self._rate * x)

    def _log_survival_function(self, x):
        return -self._rate * x


def _lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


class Beta(Distribution):
    """The beta distribution on ``(0, 1)``, density
    ``x^(c1-1) (1-x)^(c0-1) / B(c1, c0)`` (TF1's ``tf.distributions.Beta``): sampled as
    ``g1 / (g1 + g0)`` of two gamma draws; fully reparameterized."""

    def __init__(self, concentration1=None, concentration0=None, validate_args=False,
                 allow_nan_stats=True, name="Beta"):
        parameters = dict(concentration1=concentration1, concentration0=concentration0,
                          validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                          name=name)
        c1, c0 = float_params(name, concentration1=concentration1,
                              concentration0=concentration0)
        super().__init__(c1.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [c1, c0], name)
        self._c1 = self._checked(c1, "concentration1")
        self._c0 = self._checked(c0, "concentration0")

    @property
    def concentration1(self):
        """The concentration of ones (the ``alpha`` of ``x``)."""
        return self._c1

    @property
    def concentration0(self):
        """The concentration of zeros (the ``beta`` of ``1 - x``)."""
        return self._c0

    @property
    def total_concentration(self):
        """``concentration1 + concentration0``."""
        return self._c1 + self._c0

    def _batch_shape(self):
        return static_batch(self._c1, self._c0)

    def _batch_shape_tensor(self):
        return dynamic_batch(self._c1, self._c0)

    def _sample_n(self, n, seed=None):
        n = _static_n(n, self._name)
        both = zeros_like(self.total_concentration)
        g1 = random_gamma([n], self._c1 + both, dtype=self._dtype, seed=seed)
        g0 = random_gamma([n], self._c0 + both, dtype=self._dtype, seed=_seed_after(seed, 1))
        return g1 / (g1 + g0)

    def _log_prob(self, x):
        return xlogy(self._c1 - 1.0, x) + (self._c0 - 1.0) * log1p(-x) \
            - _lbeta(self._c1, self._c0)

    def _prob(self, x):
        return exp(self._log_prob(x))

    def _entropy(self):
        a, b = self._c1, self._c0
        return _lbeta(a, b) - (a - 1.0) * digamma(a) - (b - 1.0) * digamma(b) \
            + (a + b - 2.0) * digamma(a + b)

    def _mean(self):
        return self._c1 / self.total_concentration

    def _variance(self):
        total = self.total_concentration
        return self._mean() * (self._c0 / total) / (total + 1.0)

    def _mode(self):
        mode = (self._c1 - 1.0) / (self.total_concentration - 2.0)
        defined = (self._c1 > 1.0) & (self._c0 > 1.0)
        return self._nan_stat(mode, defined, "the mode (a concentration <= 1)")


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of the last axis of
    ``concentration`` (TF1's ``tf.distributions.Dirichlet``): sampled as gamma draws
    divided by their sum; fully reparameterized."""

    def __init__(self, concentration, validate_args=False, allow_nan_stats=True,
                 name="Dirichlet"):
        parameters = dict(concentration=concentration, validate_args=validate_args,
                          allow_nan_stats=allow_nan_stats, name=name)
        (c,) = float_params(name, concentration=concentration)
        if c.shape is not None and len(c.shape) == 0:
            raise ValueError(f"{name}: concentration '{c.name}' must have rank 1 or more")
        super().__init__(c.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [c], name)
        self._c = self._checked(c, "concentration")

    @property
    def concentration(self):
        """The concentration of each class (last axis)."""
        return self._c

    @property
    def total_concentration(self):
        """The sum of the concentrations over the last axis."""
        return reduce_sum(self._c, -1)

    def _batch_shape(self):
        return None if self._c.shape is None else tuple(self._c.shape[:-1])

    def _batch_shape_tensor(self):
        return shape(self._c)[:-1]

    def _event_shape(self):
        return None if self._c.shape is None else tuple(self._c.shape[-1:])

    def _event_shape_tensor(self):
        return shape(self._c)[-1:]

    def _sample_n(self, n, seed=None):
        g = random_gamma([_static_n(n, self._name)], self._c, dtype=self._dtype, seed=seed)
        return g / reduce_sum(g, -1, keepdims=True)

    def _log_prob(self, x):
        c = self._c
        return reduce_sum(xlogy(c - 1.0, x), -1) - reduce_sum(lgamma(c), -1) \
            + lgamma(self.total_concentration)

    def _prob(self, x):
        return exp(self._log_prob(x))

    def _entropy(self):
        c, total = self._c, self.total_concentration
        k = math.prod(self._event_shape()) if self._event_shape() and None not in \
            self._event_shape() else None
        k = k if k is not None else reduce_sum(ones_like(c), -1)
        lbeta = reduce_sum(lgamma(c), -1) - lgamma(total)
        return lbeta + (total - k) * digamma(total) - reduce_sum((c - 1.0) * digamma(c), -1)

    def _mean(self):
        return self._c / expand_dims(self.total_concentration, -1)

    def _variance(self):
        total = expand_dims(self.total_concentration, -1)
        mean = self._mean()
        return mean * (1.0 - mean) / (total + 1.0)

    def _covariance(self):
        k = self._event_shape()[0] if self._event_shape() else None
        if k is None:
            raise ValueError(f"{self._name}.covariance: the number of classes must be known")
        mean = self._mean()
        outer = expand_dims(mean, -1) * expand_dims(mean, -2)
        diag = expand_dims(mean, -1) * eye(k, dtype=self._dtype)
        return (diag - outer) / expand_dims(expand_dims(self.total_concentration, -1) + 1.0,
                                            -1)

    def _mode(self):
        total = expand_dims(self.total_concentration, -1)
        k = reduce_sum(ones_like(self._c), -1, keepdims=True)
        mode = (self._c - 1.0) / (total - k)
        defined = expand_dims(reduce_all(self._c > 1.0, -1), -1) & (self._c > 0.0)
        return self._nan_stat(mode, defined, "the mode (a concentration <= 1)")


@RegisterKL(Gamma, Gamma)
def _kl_gamma_gamma(g0, g1, name=None):
    """``KL[Gamma(a0, b0) || Gamma(a1, b1)]``."""
    a0, b0, a1, b1 = g0.concentration, g0.rate, g1.concentration, g1.rate
    return (a0 - a1) * digamma(a0) + lgamma(a1) - lgamma(a0) + a1 * log(b0) \
        - a1 * log(b1) + a0 * (b1 / b0 - 1.0)


@RegisterKL(Beta, Beta)
def _kl_beta_beta(d1, d2, name=None):
    """``KL[Beta(a1, b1) || Beta(a2, b2)]``."""
    a1, b1, a2, b2 = d1.concentration1, d1.concentration0, d2.concentration1, \
        d2.concentration0
    return _lbeta(a2, b2) - _lbeta(a1, b1) + (a1 - a2) * digamma(a1) \
        + (b1 - b2) * digamma(b1) + (a2 - a1 + b2 - b1) * digamma(a1 + b1)

