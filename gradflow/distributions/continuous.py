"""TF1's ``Normal``, ``Uniform`` and ``Laplace`` distributions (location-scale
families, sampled by transforming standard draws: their samples are differentiable in
the parameters), and the KL divergence of two normals."""

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
    log_ndtr,
    ndtr,
    static_batch,
)
from gradflow.ops.math_ops import abs as abs_
from gradflow.ops.math_ops import (
    exp,
    expm1,
    is_nan,
    log,
    log1p,
    logical_or,
    maximum,
    ones_like,
    sign,
    square,
    where,
    zeros_like,
)
from gradflow.ops.state_ops import random_normal, random_uniform

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class _LocationScale(Distribution):
    """A family ``loc + scale * Z`` of a standard distribution ``Z``."""

    def __init__(self, loc, scale, validate_args, allow_nan_stats, name, parameters):
        loc, scale = float_params(name, loc=loc, scale=scale)
        self._loc, self._scale = loc, None
        super().__init__(loc.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [loc, scale], name)
        self._scale = self._checked(scale, "scale")

    @property
    def loc(self):
        """The location parameter."""
        return self._loc

    @property
    def scale(self):
        """The scale parameter."""
        return self._scale

    def _batch_shape(self):
        return static_batch(self._loc, self._scale)

    def _batch_shape_tensor(self):
        return dynamic_batch(self._loc, self._scale)

    def _z(self, x):
        return (x - self._loc) / self._scale

    def _mean(self):
        return self._loc * ones_like(self._scale)

    def _mode(self):
        return self._mean()


class Normal(_LocationScale):
    """The normal distribution of mean ``loc`` and standard deviation ``scale`` (TF1's
    ``tf.distributions.Normal``); fully reparameterized: ``sample()`` is
    ``loc + scale * z``, so gradients reach ``loc`` and ``scale`` (a VAE's
    reparameterization trick).

    >>> q = gf.distributions.Normal(loc=mu, scale=gf.exp(log_sigma))
    >>> z = q.sample()
    """

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True, name="Normal"):
        super().__init__(loc, scale, validate_args, allow_nan_stats, name,
                         dict(loc=loc, scale=scale, validate_args=validate_args,
                              allow_nan_stats=allow_nan_stats, name=name))

    def _sample_n(self, n, seed=None):
        z = random_normal(draw_shape(n, self), dtype=self._dtype, seed=seed)
        return z * self._scale + self._loc

    def _log_prob(self, x):
        z = self._z(x)
        return -0.5 * square(z) - _HALF_LOG_2PI - log(self._scale)

    def _cdf(self, x):
        return ndtr(self._z(x))

    def _log_cdf(self, x):
        return log_ndtr(self._z(x))

    def _survival_function(self, x):
        return ndtr(-self._z(x))

    def _log_survival_function(self, x):
        return log_ndtr(-self._z(x))

    def _entropy(self):
        return (0.5 + _HALF_LOG_2PI) + log(self._scale) + zeros_like(self._loc)

    def _stddev(self):
        return self._scale * ones_like(self._loc)


class Laplace(_LocationScale):
    """The Laplace distribution, density ``exp(-|x - loc| / scale) / (2 scale)`` (TF1's
    ``tf.distributions.Laplace``); fully reparameterized."""

    def __init__(self, loc, scale, validate_args=False, allow_nan_stats=True,
                 name="Laplace"):
        super().__init__(loc, scale, validate_args, allow_nan_stats, name,
                         dict(loc=loc, scale=scale, validate_args=validate_args,
                              allow_nan_stats=allow_nan_stats, name=name))

    def _sample_n(self, n, seed=None):
        # u uniform in (-1, 1), never -1: x = loc - scale sign(u) log(1 - |u|)
        low = float(np.nextafter(self._dtype.as_numpy_dtype(-1.0),
                                 self._dtype.as_numpy_dtype(0.0)))
        u = random_uniform(draw_shape(n, self), minval=low, maxval=1.0, dtype=self._dtype,
                           seed=seed)
        return self._loc - self._scale * sign(u) * log1p(-abs_(u))

    def _log_prob(self, x):
        return -abs_(self._z(x)) - math.log(2.0) - log(self._scale)

    def _cdf(self, x):
        z = self._z(x)
        return 0.5 - 0.5 * sign(z) * expm1(-abs_(z))

    def _log_cdf(self, x):
        return _log_cdf_laplace(self._z(x))

    def _survival_function(self, x):
        z = -self._z(x)
        return 0.5 - 0.5 * sign(z) * expm1(-abs_(z))

    def _log_survival_function(self, x):
        return _log_cdf_laplace(-self._z(x))

    def _entropy(self):
        return (math.log(2.0) + 1.0) + log(self._scale) + zeros_like(self._loc)

    def _stddev(self):
        return math.sqrt(2.0) * self._scale * ones_like(self._loc)


def _log_cdf_laplace(z):
    """``log`` of the standard Laplace CDF: ``log(1/2) + z`` below 0, else
    ``log1p(-exp(-z) / 2)``; each branch fed only the values it suits."""
    below = math.log(0.5) + _minimum_zero(z)
    above = log1p(-0.5 * exp(-maximum(z, 0.0)))
    return where(z < 0.0, below, above)


def _minimum_zero(z):
    """``min(z, 0)``."""
    return -maximum(-z, 0.0)


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)`` (TF1's ``tf.distributions.Uniform``);
    fully reparameterized: ``sample()`` is ``low + (high - low) * u``."""

    def __init__(self, low=0.0, high=1.0, validate_args=False, allow_nan_stats=True,
                 name="Uniform"):
        parameters = dict(low=low, high=high, validate_args=validate_args,
                          allow_nan_stats=allow_nan_stats, name=name)
        low, high = float_params(name, low=low, high=high)
        super().__init__(low.dtype, FULLY_REPARAMETERIZED, validate_args, allow_nan_stats,
                         parameters, [low, high], name)
        self._low, self._high = low, high
        self._high = self._checked(high, "high - low", of=high - low)

    @property
    def low(self):
        """The lower bound, included."""
        return self._low

    @property
    def high(self):
        """The upper bound, excluded."""
        return self._high

    def range(self, name="range"):
        """``high - low``."""
        return self._high - self._low

    def _batch_shape(self):
        return static_batch(self._low, self._high)

    def _batch_shape_tensor(self):
        return dynamic_batch(self._low, self._high)

    def _sample_n(self, n, seed=None):
        u = random_uniform(draw_shape(n, self), dtype=self._dtype, seed=seed)
        return self._low + self.range() * u

    def _prob(self, x):
        inside = ones_like(x) / self.range()
        outside = logical_or(x < self._low, x >= self._high)
        return where(is_nan(x), x, where(outside, zeros_like(inside), inside))

    def _cdf(self, x):
        ratio = (x - self._low) / self.range()
        zeros, ones = zeros_like(ratio), ones_like(ratio)
        return where(x >= self._high, ones, where(x < self._low, zeros, ratio))

    def _entropy(self):
        return log(self.range())

    def _mean(self):
        return (self._low + self._high) / 2.0

    def _variance(self):
        return square(self.range()) / 12.0

    def _stddev(self):
        return self.range() / math.sqrt(12.0)


@RegisterKL(Normal, Normal)
def _kl_normal_normal(a, b, name=None):
    """``KL[N(m_a, s_a) || N(m_b, s_b)] = (m_a - m_b)^2 / (2 s_b^2)
    + (r - 1 - log r) / 2`` with ``r = s_a^2 / s_b^2``."""
    var_b = square(b.scale)
    ratio = square(a.scale) / var_b
    return square(a.loc - b.loc) / (2.0 * var_b) + 0.5 * (ratio - 1.0 - log(ratio))
