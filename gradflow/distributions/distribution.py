"""``Distribution``, the base of TF1's ``tf.distributions`` classes, with the
reparameterization types and the registry of KL divergences (``RegisterKL``,
``kl_divergence``).

A distribution holds its parameters as tensors; its methods build graph ops. Samples
are ``sample_shape + batch_shape + event_shape``; ``log_prob(x)`` broadcasts ``x``
against the batch. A subclass writes ``_sample_n(n, seed)`` (``n`` draws stacked on
a new first axis) and the ``_log_prob``, ``_cdf``, ``_entropy``, ``_mean``... it
has; the others raise ``NotImplementedError`` naming the distribution, as TF1's do.
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape
from gradflow.ops.array_ops import reduce_all, reduce_prod, reshape
from gradflow.ops.debug_ops import Assert, assert_positive
from gradflow.ops.index_ops import concat, shape
from gradflow.ops.math_ops import (
    cast,
    exp,
    is_nan,
    log,
    log1p,
    logical_not,
    sqrt,
    square,
    where,
)
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import convert_to_tensor


class ReparameterizationType:
    """How a distribution's samples depend on its parameters (TF1's
    ``tf.distributions.ReparameterizationType``): ``FULLY_REPARAMETERIZED`` samples
    are differentiable functions of the parameters, ``NOT_REPARAMETERIZED`` ones are
    not (a score-function estimator such as REINFORCE uses ``log_prob`` instead)."""

    def __init__(self, rep_type):
        self._rep_type = rep_type

    def __repr__(self):
        return f"<Reparameterization Type: {self._rep_type}>"

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


FULLY_REPARAMETERIZED = ReparameterizationType("FULLY_REPARAMETERIZED")
NOT_REPARAMETERIZED = ReparameterizationType("NOT_REPARAMETERIZED")


def static_sample_shape(sample_shape):
    """``sample_shape`` (an int, a list or tuple of ints, or an int tensor) as a tuple
    of ints where the graph knows it, else as a 1-D int32 tensor."""
    if isinstance(sample_shape, Tensor) or hasattr(sample_shape, "_as_graph_tensor"):
        t = convert_to_tensor(sample_shape)
        if t.opdef.kind == "constant":
            value = t.attrs["value"].array
            return tuple(int(d) for d in value.reshape(-1)) if value.ndim else (int(value),)
        return reshape(cast(t, dtypes.int32), [-1])
    if isinstance(sample_shape, int) or getattr(sample_shape, "ndim", None) == 0:
        return (int(sample_shape),)
    return tuple(int(d) for d in sample_shape)


class Distribution:
    """A batch of probability distributions with parameters held as tensors (TF1's
    ``tf.distributions.Distribution``): sampling, densities, moments and the KL
    divergences registered for it."""

    def __init__(self, dtype, reparameterization_type, validate_args, allow_nan_stats,
                 parameters=None, graph_parents=None, name=None):
        self._dtype = dtype
        self._reparameterization_type = reparameterization_type
        self._validate_args = bool(validate_args)
        self._allow_nan_stats = bool(allow_nan_stats)
        self._parameters = dict(parameters or {})
        self._parameters.pop("self", None)
        self._parameters.pop("__class__", None)
        self._graph_parents = list(graph_parents or [])
        self._name = name or type(self).__name__

    # -- properties ---------------------------------------------------------------------

    @property
    def dtype(self):
        """The dtype of the samples."""
        return self._dtype

    @property
    def name(self):
        """The name given when the distribution was made."""
        return self._name

    @property
    def parameters(self):
        """The arguments the distribution was made with, as a dict."""
        return dict(self._parameters)

    @property
    def reparameterization_type(self):
        """``FULLY_REPARAMETERIZED`` or ``NOT_REPARAMETERIZED``."""
        return self._reparameterization_type

    @property
    def allow_nan_stats(self):
        """Whether an undefined statistic is NaN (True) or a run-time error (False)."""
        return self._allow_nan_stats

    @property
    def validate_args(self):
        """Whether the parameters and arguments are checked at run time."""
        return self._validate_args

    @property
    def batch_shape(self):
        """The static shape of the batch of distributions (``TensorShape``)."""
        return TensorShape(self._batch_shape())

    @property
    def event_shape(self):
        """The static shape of one draw of one distribution (``TensorShape``)."""
        return TensorShape(self._event_shape())

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        """The batch shape as a 1-D int32 tensor."""
        return self._batch_shape_tensor()

    def event_shape_tensor(self, name="event_shape_tensor"):
        """The event shape as a 1-D int32 tensor."""
        return self._event_shape_tensor()

    def _event_shape(self):
        return ()

    def _event_shape_tensor(self):
        return convert_to_tensor([], dtype=dtypes.int32)

    def is_scalar_event(self, name="is_scalar_event"):
        """Whether one draw is a scalar (a bool tensor, as TF1 gives it)."""
        return convert_to_tensor(len(self._event_shape()) == 0, name=name)

    def is_scalar_batch(self, name="is_scalar_batch"):
        """Whether the batch is a single distribution (a bool tensor)."""
        return convert_to_tensor(self._batch_shape() == (), name=name)

    def copy(self, **override_parameters_kwargs):
        """A new distribution of the same class, with some parameters replaced."""
        return type(self)(**{**self._parameters, **override_parameters_kwargs})

    # -- sampling -----------------------------------------------------------------------

    def sample(self, sample_shape=(), seed=None, name="sample"):
        """Draws of shape ``sample_shape + batch_shape + event_shape`` (new ones every run;
        ``seed`` makes them reproducible, and the same on every backend)."""
        dims = static_sample_shape(sample_shape)
        if not isinstance(dims, tuple):
            draws = self._sample_n(reduce_prod(dims), seed)
            return reshape(draws, concat([dims, shape(draws)[1:]], 0), name=name)
        n = math.prod(dims)
        draws = self._sample_n(n, seed)
        if dims == (n,):
            return identity(draws, name=name)
        if not dims:
            return identity(draws[0], name=name)
        rest = tuple(draws.shape[1:]) if draws.shape is not None else None
        if rest is not None:  # sizes the graph knows, the others read at run time
            sizes = shape(draws) if None in rest else None
            return reshape(draws, list(dims) + [d if d is not None else sizes[1 + i]
                                                for i, d in enumerate(rest)], name=name)
        lead = convert_to_tensor(list(dims), dtype=dtypes.int32)
        return reshape(draws, concat([lead, shape(draws)[1:]], 0), name=name)

    # -- densities: each from the other where a subclass has one ------------------------

    def log_prob(self, value, name="log_prob"):
        """The log density (or log probability mass) of ``value``."""
        value = self._checked_value(value)
        if type(self)._log_prob is not Distribution._log_prob:
            return self._log_prob(value)
        return log(self._method("_prob")(value))

    def prob(self, value, name="prob"):
        """The density (or probability mass) of ``value``."""
        value = self._checked_value(value)
        if type(self)._prob is not Distribution._prob:
            return self._prob(value)
        return exp(self._method("_log_prob")(value))

    def cdf(self, value, name="cdf"):
        """``P(X <= value)``."""
        value = self._checked_value(value)
        if type(self)._cdf is not Distribution._cdf:
            return self._cdf(value)
        return exp(self._method("_log_cdf")(value))

    def log_cdf(self, value, name="log_cdf"):
        """``log P(X <= value)``."""
        value = self._checked_value(value)
        if type(self)._log_cdf is not Distribution._log_cdf:
            return self._log_cdf(value)
        return log(self._method("_cdf")(value))

    def survival_function(self, value, name="survival_function"):
        """``P(X > value)``."""
        value = self._checked_value(value)
        if type(self)._survival_function is not Distribution._survival_function:
            return self._survival_function(value)
        return 1.0 - self._method("_cdf")(value)

    def log_survival_function(self, value, name="log_survival_function"):
        """``log P(X > value)``."""
        value = self._checked_value(value)
        if type(self)._log_survival_function is not Distribution._log_survival_function:
            return self._log_survival_function(value)
        return log1p(-self._method("_cdf")(value))

    def quantile(self, value, name="quantile"):
        """The value whose ``cdf`` is ``value``."""
        return self._method("_quantile")(convert_to_tensor(value, dtype=self._float_dtype()))

    # -- statistics ---------------------------------------------------------------------

    def entropy(self, name="entropy"):
        """Shannon entropy, in nats."""
        return self._method("_entropy")()

    def mean(self, name="mean"):
        """The mean."""
        return self._method("_mean")()

    def mode(self, name="mode"):
        """The mode."""
        return self._method("_mode")()

    def variance(self, name="variance"):
        """The variance."""
        if type(self)._variance is not Distribution._variance:
            return self._variance()
        return square(self._method("_stddev")())

    def stddev(self, name="stddev"):
        """The standard deviation."""
        if type(self)._stddev is not Distribution._stddev:
            return self._stddev()
        return sqrt(self._method("_variance")())

    def covariance(self, name="covariance"):
        """The covariance matrix of a vector-valued distribution."""
        return self._method("_covariance")()

    def cross_entropy(self, other, name="cross_entropy"):
        """``H[self, other] = KL[self || other] + H[self]``."""
        return kl_divergence(self, other) + self.entropy()

    def kl_divergence(self, other, name="kl_divergence"):
        """``KL[self || other]``, by the function registered for the two classes."""
        return kl_divergence(self, other)

    # -- what subclasses write ----------------------------------------------------------

    def _sample_n(self, n, seed=None):
        raise NotImplementedError(f"sample is not implemented: {type(self).__name__}")

    def _log_prob(self, value):
        raise NotImplementedError

    def _prob(self, value):
        raise NotImplementedError

    def _cdf(self, value):
        raise NotImplementedError

    def _log_cdf(self, value):
        raise NotImplementedError

    def _survival_function(self, value):
        raise NotImplementedError

    def _log_survival_function(self, value):
        raise NotImplementedError

    def _variance(self):
        raise NotImplementedError

    def _stddev(self):
        raise NotImplementedError

    def _method(self, attr):
        """The subclass's ``attr``, or a ``NotImplementedError`` naming what is missing."""
        fn = getattr(type(self), attr, None)
        if fn is None or getattr(Distribution, attr, None) is fn:
            raise NotImplementedError(f"{attr[1:]} is not implemented: {type(self).__name__}")
        return getattr(self, attr)

    def _float_dtype(self):
        return self._dtype if self._dtype.is_floating else dtypes.float32

    def _checked_value(self, value):
        """``value`` as a tensor of the distribution's value dtype."""
        return convert_to_tensor(value, dtype=self._value_dtype())

    def _value_dtype(self):
        return self._dtype

    # -- run-time checks ----------------------------------------------------------------

    def _checked(self, tensor, what, of=None):
        """``tensor``, with a run-time check that it (or ``of``) is positive when
        ``validate_args``."""
        if not self._validate_args:
            return tensor
        check = assert_positive(tensor if of is None else of,
                                message=f"{self._name}: {what} must be positive")
        with tensor.graph.control_dependencies([check]):
            return identity(tensor)

    def _nan_stat(self, value, defined, what):
        """``value`` where ``defined``, else NaN; with ``allow_nan_stats=False``, a
        run-time error where it is undefined, as TF1 raises."""
        nan = value * float("nan")
        if self._allow_nan_stats:
            return where(defined, value, nan)
        check = Assert(reduce_all(defined), [f"{self._name}: {what} is undefined here "
                                             "(allow_nan_stats=False)"])
        with value.graph.control_dependencies([check]):
            return identity(value)


def all_finite_or_raise(value, what):
    """``value``, with a run-time check that it holds no NaN."""
    check = Assert(reduce_all(logical_not(is_nan(value))), [f"{what} is NaN"])
    with value.graph.control_dependencies([check]):
        return identity(value)


# -- KL divergences -----------------------------------------------------------------------

_DIVERGENCES: dict = {}


class RegisterKL:
    """Register the function computing ``KL[a || b]`` for distribution classes ``a`` and
    ``b`` (TF1's ``tf.distributions.RegisterKL``), as a decorator::

        @tf.distributions.RegisterKL(MyDist, tf.distributions.Normal)
        def _kl(a, b, name=None): ...
    """

    def __init__(self, dist_cls_a, dist_cls_b):
        self._key = (dist_cls_a, dist_cls_b)

    def __call__(self, kl_fn):
        if not callable(kl_fn):
            raise TypeError(f"RegisterKL: kl_fn must be callable, got {kl_fn!r}")
        if self._key in _DIVERGENCES:
            raise ValueError(f"KL({self._key[0].__name__} || {self._key[1].__name__}) is "
                             "already registered")
        _DIVERGENCES[self._key] = kl_fn
        return kl_fn


def _registered(type_a, type_b):
    """The function for the nearest registered pair of ``type_a``'s and ``type_b``'s
    classes (by the sum of their distances in the class hierarchies)."""
    best, best_distance = None, None
    for i, a in enumerate(type_a.__mro__):
        for j, b in enumerate(type_b.__mro__):
            fn = _DIVERGENCES.get((a, b))
            if fn is not None and (best_distance is None or i + j < best_distance):
                best, best_distance = fn, i + j
    return best


def kl_divergence(distribution_a, distribution_b, allow_nan_stats=True, name=None):
    """``KL[distribution_a || distribution_b]`` by the function registered for their
    classes (TF1's ``tf.distributions.kl_divergence``); with ``allow_nan_stats=False``,
    a NaN result is a run-time error."""
    fn = _registered(type(distribution_a), type(distribution_b))
    if fn is None:
        raise NotImplementedError(
            f"No KL(distribution_a || distribution_b) registered for distribution_a type "
            f"{type(distribution_a).__name__} and distribution_b type "
            f"{type(distribution_b).__name__}")
    value = fn(distribution_a, distribution_b, name=name)
    if allow_nan_stats:
        return value
    return all_finite_or_raise(value, "KL divergence")
