"""TF1's ``Bernoulli``, ``Categorical`` and ``Multinomial`` distributions (not
reparameterized: a policy gradient differentiates their ``log_prob``), and the KL
divergences of two Bernoullis and of two categoricals."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.distributions.distribution import (
    NOT_REPARAMETERIZED,
    Distribution,
    RegisterKL,
)
from gradflow.distributions.util import (
    draw_shape,
    dynamic_batch,
    float_params,
    static_batch,
)
from gradflow.ops.activation_ops import softplus
from gradflow.ops.array_ops import argmax, expand_dims, reduce_sum, reshape, transpose
from gradflow.ops.index_ops import concat, one_hot, shape
from gradflow.ops.math_ops import cast, log, log1p, sigmoid, where, zeros_like
from gradflow.ops.nn_ops import log_softmax, softmax
from gradflow.ops.random_ops import multinomial_counts
from gradflow.ops.sampling_ops import multinomial
from gradflow.ops.shape_ops import eye, range_
from gradflow.ops.special_ops import lgamma
from gradflow.ops.state_ops import random_uniform
from gradflow.prim import rules
from gradflow.prim.registry import convert_to_tensor


def _logits_and_probs(what, logits, probs, multidimensional):
    """Both parameterizations from the one given: sigmoid/logit for one class,
    softmax/log for a last axis of classes."""
    if (logits is None) == (probs is None):
        raise ValueError(f"{what}: must pass probs or logits, but not both")
    if logits is not None:
        (logits,) = float_params(what, logits=logits)
        return logits, (softmax(logits) if multidimensional else sigmoid(logits)), True
    (probs,) = float_params(what, probs=probs)
    return (log(probs) if multidimensional else log(probs) - log1p(-probs)), probs, False


class Bernoulli(Distribution):
    """The Bernoulli distribution: 1 with probability ``probs`` (or
    ``sigmoid(logits)``), else 0 (TF1's ``tf.distributions.Bernoulli``); samples are
    ``dtype`` (int32 by default) and not reparameterized."""

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Bernoulli"):
        parameters = dict(logits=logits, probs=probs, dtype=dtype, validate_args=validate_args,
                          allow_nan_stats=allow_nan_stats, name=name)
        self._logits, self._probs, _ = _logits_and_probs(name, logits, probs, False)
        super().__init__(dtypes.as_dtype(dtype), NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._logits, self._probs], name)

    @property
    def logits(self):
        """The log-odds of a 1."""
        return self._logits

    @property
    def probs(self):
        """The probability of a 1."""
        return self._probs

    def _batch_shape(self):
        return static_batch(self._logits)

    def _batch_shape_tensor(self):
        return shape(self._logits)

    def _checked_value(self, value):
        return cast(convert_to_tensor(value), self._logits.dtype)

    def _sample_n(self, n, seed=None):
        u = random_uniform(draw_shape(n, self), dtype=self._probs.dtype, seed=seed)
        return cast(u < self._probs, self._dtype)

    def _log_prob(self, event):
        return self._logits * event - softplus(self._logits)

    def _entropy(self):
        x = self._logits
        return -x * (sigmoid(x) - 1.0) + softplus(-x)

    def _mean(self):
        return self._probs

    def _variance(self):
        return self._probs * (1.0 - self._probs)

    def _mode(self):
        return cast(self._probs > 0.5, self._dtype)


class Categorical(Distribution):
    """A distribution over the classes ``0 .. K-1`` of the last axis of ``logits`` (or
    ``probs``) (TF1's ``tf.distributions.Categorical``): samples are ``dtype`` (int32
    by default), drawn as ``tf.multinomial`` draws; not reparameterized.

    >>> pi = gf.distributions.Categorical(logits=policy_logits)
    >>> loss = -gf.reduce_mean(pi.log_prob(actions) * advantages)
    """

    def __init__(self, logits=None, probs=None, dtype=dtypes.int32, validate_args=False,
                 allow_nan_stats=True, name="Categorical"):
        parameters = dict(logits=logits, probs=probs, dtype=dtype, validate_args=validate_args,
                          allow_nan_stats=allow_nan_stats, name=name)
        self._logits, self._probs, _ = _logits_and_probs(name, logits, probs, True)
        if self._logits.shape is not None and len(self._logits.shape) == 0:
            raise ValueError(f"{name}: logits/probs must have rank 1 or more (the classes)")
        super().__init__(dtypes.as_dtype(dtype), NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters, [self._logits, self._probs], name)

    @property
    def logits(self):
        """The unnormalized log-probabilities of the classes."""
        return self._logits

    @property
    def probs(self):
        """The probabilities of the classes."""
        return self._probs

    @property
    def event_size(self):
        """The number of classes (an int where known, else a scalar tensor)."""
        k = None if self._logits.shape is None else self._logits.shape[-1]
        return int(k) if k is not None else shape(self._logits)[-1]

    def _batch_shape(self):
        return None if self._logits.shape is None else tuple(self._logits.shape[:-1])

    def _batch_shape_tensor(self):
        return shape(self._logits)[:-1]

    def _checked_value(self, value):
        value = convert_to_tensor(value)
        return value if value.dtype.is_integer else cast(value, dtypes.int32)

    def _sample_n(self, n, seed=None):
        k = self.event_size
        draws = multinomial(reshape(self._logits, [-1, k]), n, seed=seed)  # [rows, n]
        draws = transpose(draws)
        batch = self._batch_shape()
        if isinstance(n, int) and batch is not None and None not in batch:
            return cast(reshape(draws, [n, *batch]), self._dtype)
        return cast(reshape(draws, concat([[n], self.batch_shape_tensor()], 0)), self._dtype)

    def _log_prob(self, k):
        logp = log_softmax(self._logits)
        hot = one_hot(k, self.event_size, on_value=True, off_value=False, dtype=dtypes.bool_)
        picked = logp + zeros_like(cast(hot, logp.dtype))  # both broadcast to the batch
        return reduce_sum(where(hot, picked, zeros_like(picked)), -1)

    def _cdf(self, k):
        """TF1's: the probability of a class below ``k`` (0 for ``k <= 0``, 1 for
        ``k >= K``)."""
        classes = range_(self.event_size, dtype=k.dtype)
        below = classes < expand_dims(k, -1)
        probs = self._probs + zeros_like(cast(below, self._probs.dtype))
        return reduce_sum(where(below, probs, zeros_like(probs)), -1)

    def _entropy(self):
        return -reduce_sum(log_softmax(self._logits) * self._probs, -1)

    def _mode(self):
        return cast(argmax(self._logits, axis=-1), self._dtype)


class Multinomial(Distribution):
    """Counts of ``total_count`` draws among the classes of the last axis of ``logits``
    (or ``probs``) (TF1's ``tf.distributions.Multinomial``); samples are floating counts,
    not reparameterized."""

    def __init__(self, total_count, logits=None, probs=None, validate_args=False,
                 allow_nan_stats=True, name="Multinomial"):
        parameters = dict(total_count=total_count, logits=logits, probs=probs,
                          validate_args=validate_args, allow_nan_stats=allow_nan_stats,
                          name=name)
        self._logits, self._probs, _ = _logits_and_probs(name, logits, probs, True)
        self._total_count = convert_to_tensor(total_count, dtype=self._logits.dtype)
        super().__init__(self._logits.dtype, NOT_REPARAMETERIZED, validate_args,
                         allow_nan_stats, parameters,
                         [self._total_count, self._logits, self._probs], name)

    @property
    def total_count(self):
        """The number of draws."""
        return self._total_count

    @property
    def logits(self):
        """The unnormalized log-probabilities of the classes."""
        return self._logits

    @property
    def probs(self):
        """The probabilities of the classes."""
        return self._probs

    def _batch_shape(self):
        if self._logits.shape is None or self._total_count.shape is None:
            return None
        return tuple(rules.broadcast_shapes(tuple(self._total_count.shape),
                                            tuple(self._logits.shape[:-1])))

    def _batch_shape_tensor(self):
        return dynamic_batch(self._total_count, self._logits[..., 0])

    def _event_shape(self):
        return None if self._logits.shape is None else tuple(self._logits.shape[-1:])

    def _event_shape_tensor(self):
        return shape(self._logits)[-1:]

    def _checked_value(self, value):
        return cast(convert_to_tensor(value), self._logits.dtype)

    def _sample_n(self, n, seed=None):
        if not isinstance(n, int):
            raise ValueError(f"{self._name}.sample: the sample shape must be ints known when "
                             "the graph is built")
        return multinomial_counts(self._total_count, self._probs, [n], seed=seed)

    def _log_prob(self, counts):
        unnormalized = reduce_sum(counts * log_softmax(self._logits), -1)
        n = self._total_count
        return unnormalized + lgamma(n + 1.0) - reduce_sum(lgamma(counts + 1.0), -1)

    def _mean(self):
        return expand_dims(self._total_count, -1) * self._probs

    def _variance(self):
        return expand_dims(self._total_count, -1) * self._probs * (1.0 - self._probs)

    def _covariance(self):
        k = self._event_shape()[0] if self._event_shape() else None
        if k is None:
            raise ValueError(f"{self._name}.covariance: the number of classes must be known")
        p = self._probs
        diag = expand_dims(p, -1) * eye(k, dtype=self._dtype)
        outer = expand_dims(p, -1) * expand_dims(p, -2)
        return expand_dims(expand_dims(self._total_count, -1), -1) * (diag - outer)


@RegisterKL(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(a, b, name=None):
    """``KL[Ber(a) || Ber(b)]`` from the logits, without forming ``log(p)``."""
    zero = softplus(-b.logits) - softplus(-a.logits)
    one = softplus(b.logits) - softplus(a.logits)
    return sigmoid(a.logits) * zero + sigmoid(-a.logits) * one


@RegisterKL(Categorical, Categorical)
def _kl_categorical_categorical(a, b, name=None):
    """``KL[Cat(a) || Cat(b)] = sum_k p_a(k) (log p_a(k) - log p_b(k))``."""
    pa = softmax(a.logits)
    return reduce_sum(pa * (log_softmax(a.logits) - log_softmax(b.logits)), -1)
