"""TF 1.14's loss scales (``tf.train.experimental.LossScale`` and its two kinds).

A loss scale is the factor a ``MixedPrecisionLossScaleOptimizer`` multiplies the loss
by before differentiating it, so that small float16 gradients do not flush to zero,
and divides the gradients by afterwards. ``FixedLossScale`` is one number.
``DynamicLossScale`` keeps the scale in a non-trainable float32 variable
(``current_loss_scale``, beside the int64 ``good_steps``), saved by a ``Saver`` like any
other variable: a step whose gradients are not all finite halves it (at least 1) and is
skipped; ``increment_period`` finite steps in a row double it, as TF 1.14's
``DynamicLossScale`` does (checked against TF 2.21's ``tf.compat.v1``).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import reduce_all
from gradflow.ops.index_ops import stack
from gradflow.ops.math_ops import is_finite, logical_and, logical_not, maximum, where
from gradflow.ops.state_ops import assign, at_commit, group, no_op
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import Variable


class LossScale:
    """The base class of loss scales: ``loss_scale()`` is the scale as a float32 tensor,
    ``update(grads)`` returns ``(update_op, should_apply_gradients)``."""

    weights: tuple = ()  # the variables holding its state

    def __call__(self):
        """The current loss scale, a float32 scalar tensor."""
        raise NotImplementedError("a LossScale subclass defines __call__")

    def update(self, grads):
        """``(an operation updating the scale, a bool tensor or Python bool saying
        whether the step's gradients should be applied)`` for the list ``grads``."""
        raise NotImplementedError("a LossScale subclass defines update")

    def get_config(self) -> dict:
        """The constructor's arguments, as a dict."""
        raise NotImplementedError("a LossScale subclass defines get_config")

    @classmethod
    def from_config(cls, config):
        """The loss scale made by ``cls(**config)``."""
        return cls(**config)


class FixedLossScale(LossScale):
    """A loss scale that never changes: ``loss_scale_value`` (a number of at least 1 is
    usual; TF refuses a value below 1 with a warning, gradflow with a ``ValueError``)."""

    def __init__(self, loss_scale_value):
        if isinstance(loss_scale_value, bool) or not isinstance(
                loss_scale_value, (int, float, np.integer, np.floating)):
            raise ValueError(f"loss_scale_value must be a Python int or float, got "
                             f"{loss_scale_value!r}")
        if loss_scale_value < 1:
            raise ValueError(f"loss_scale_value must be at least 1, got {loss_scale_value}")
        self._value = float(loss_scale_value)

    def __call__(self):
        return constant(self._value, dtype=dtypes.float32)

    def update(self, grads):
        """Nothing to update; the gradients are always applied."""
        del grads
        return no_op(), True

    def get_config(self) -> dict:
        return {"loss_scale_value": self._value}

    def __repr__(self) -> str:
        return f"FixedLossScale({self._value})"


class DynamicLossScale(LossScale):
    """A loss scale that starts at ``initial_loss_scale`` (2**15), is multiplied by
    ``multiplier`` (2) after ``increment_period`` (2000) finite steps in a row (unless
    the product overflows) and divided by it, to no less than 1, at each step whose
    gradients are not all finite."""

    def __init__(self, initial_loss_scale=2 ** 15, increment_period=2000, multiplier=2.0):
        self._initial_loss_scale = float(initial_loss_scale)
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)
        if self._initial_loss_scale < 1 or self._increment_period < 1 or self._multiplier <= 1:
            raise ValueError(
                f"DynamicLossScale needs initial_loss_scale >= 1, increment_period >= 1 and "
                f"multiplier > 1, got {initial_loss_scale}, {increment_period}, {multiplier}")
        self._current_loss_scale = Variable(np.float32(self._initial_loss_scale),
                                            trainable=False, name="current_loss_scale")
        self._num_good_steps = Variable(np.int64(0), trainable=False, name="good_steps")
        self.weights = (self._current_loss_scale, self._num_good_steps)

    @property
    def initial_loss_scale(self) -> float:
        """The scale the variable starts at."""
        return self._initial_loss_scale

    @property
    def increment_period(self) -> int:
        """How many finite steps in a row raise the scale."""
        return self._increment_period

    @property
    def multiplier(self) -> float:
        """The factor the scale is raised (and lowered) by."""
        return self._multiplier

    def __call__(self):
        return self._current_loss_scale.value()

    def update(self, grads):
        """The scale's update for this step's ``grads`` and whether they are all finite."""
        finite = all_finite(grads)
        scale, good = at_commit(self._current_loss_scale), at_commit(self._num_good_steps)
        one_more = good + 1
        raise_now = logical_and(finite, one_more >= self._increment_period)
        bigger = scale * self._multiplier
        grown = where(logical_and(raise_now, is_finite(bigger)), bigger, scale)
        new_scale = where(finite, grown, maximum(scale / self._multiplier, 1.0))
        new_good = where(logical_and(finite, logical_not(raise_now)), one_more,
                         constant(0, dtype=dtypes.int64))
        update_op = group(assign(self._current_loss_scale, new_scale),
                          assign(self._num_good_steps, new_good))
        return update_op, finite

    def get_config(self) -> dict:
        return {"initial_loss_scale": self._initial_loss_scale,
                "increment_period": self._increment_period, "multiplier": self._multiplier}

    def __repr__(self) -> str:
        return (f"DynamicLossScale(initial_loss_scale={self._initial_loss_scale}, "
                f"increment_period={self._increment_period}, multiplier={self._multiplier})")


def all_finite(grads):
    """A bool scalar tensor: whether every element of every gradient of ``grads`` (None
    entries skipped) is finite."""
    flags = [reduce_all(is_finite(convert_to_tensor(g))) for g in grads if g is not None]
    if not flags:
        return constant(True)
    return flags[0] if len(flags) == 1 else reduce_all(stack(flags))


def get(identifier):
    """The loss scale ``identifier`` names: a ``LossScale`` as it is, ``"dynamic"`` a
    default ``DynamicLossScale``, a number a ``FixedLossScale``, None None."""
    if identifier is None or isinstance(identifier, LossScale):
        return identifier
    if isinstance(identifier, str) and identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, (int, float, np.integer, np.floating)) \
            and not isinstance(identifier, bool):
        return FixedLossScale(identifier)
    raise ValueError(f"Could not interpret loss scale identifier: {identifier}")
