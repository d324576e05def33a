"""TF1's ``tf.contrib.mixed_precision`` loss-scale managers.

``FixedLossScaleManager(loss_scale)`` keeps one scale. ``ExponentialUpdateLossScaleManager``
keeps it in non-trainable variables (``loss_scale/loss_scale`` float32,
``loss_scale/good_steps`` and ``loss_scale/bad_steps`` int32, saved by a ``Saver``): after
``incr_every_n_steps`` finite steps in a row the scale is multiplied by ``incr_ratio``
(unless that overflows); after ``decr_every_n_nan_or_inf`` non-finite steps in a row it
is multiplied by ``decr_ratio``, to no less than 1; each change resets both counts, a
finite step resets the bad count and a non-finite one the good count, as TF 1.15's
``contrib/mixed_precision/python/loss_scale_manager.py`` does.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.math_ops import is_finite, logical_and, logical_not, maximum, where
from gradflow.ops.state_ops import assign, at_commit, group, no_op
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import Variable, variable_scope


class LossScaleManager:
    """The base class: ``get_loss_scale()`` (a float32 tensor) and
    ``update_loss_scale(finite_grads)`` (an operation)."""

    def get_loss_scale(self):
        """The loss scale, a float32 scalar tensor."""
        raise NotImplementedError("a LossScaleManager subclass defines get_loss_scale")

    def update_loss_scale(self, finite_grads):
        """The operation updating the scale after a step whose gradients were all finite
        where the bool tensor ``finite_grads`` is true."""
        raise NotImplementedError("a LossScaleManager subclass defines update_loss_scale")


class FixedLossScaleManager(LossScaleManager):
    """A manager whose scale is always ``loss_scale`` (at least 1)."""

    def __init__(self, loss_scale):
        if loss_scale < 1:
            raise ValueError("loss scale must be at least 1.")
        self._loss_scale = float(loss_scale)

    def get_loss_scale(self):
        return convert_to_tensor(self._loss_scale, dtype=dtypes.float32)

    def update_loss_scale(self, finite_grads):
        del finite_grads
        return no_op()


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """A manager whose scale grows by ``incr_ratio`` after ``incr_every_n_steps`` finite
    steps in a row and shrinks by ``decr_ratio`` after ``decr_every_n_nan_or_inf``
    non-finite ones (see the module docstring)."""

    def __init__(self, init_loss_scale, incr_every_n_steps, decr_every_n_nan_or_inf=2,
                 incr_ratio=2, decr_ratio=0.8):
        if incr_every_n_steps < 1 or decr_every_n_nan_or_inf < 1 or incr_ratio <= 1 \
                or not 0 < decr_ratio < 1 or init_loss_scale < 1:
            raise ValueError(
                "ExponentialUpdateLossScaleManager needs init_loss_scale >= 1, step counts "
                ">= 1, incr_ratio > 1 and 0 < decr_ratio < 1, got "
                f"{init_loss_scale}, {incr_every_n_steps}, {decr_every_n_nan_or_inf}, "
                f"{incr_ratio}, {decr_ratio}")
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        with variable_scope("loss_scale"):
            self._loss_scale = Variable(np.float32(init_loss_scale), trainable=False,
                                        name="loss_scale")
            self._num_good_steps = Variable(np.int32(0), trainable=False, name="good_steps")
            self._num_bad_steps = Variable(np.int32(0), trainable=False, name="bad_steps")

    def get_loss_scale(self):
        return self._loss_scale.value()

    def update_loss_scale(self, finite_grads):
        finite = convert_to_tensor(finite_grads)
        scale = at_commit(self._loss_scale)
        good = at_commit(self._num_good_steps) + 1
        bad = at_commit(self._num_bad_steps) + 1
        grow = logical_and(finite, good >= self._incr_every_n_steps)
        shrink = logical_and(logical_not(finite), bad >= self._decr_every_n_nan_or_inf)
        bigger = scale * self._incr_ratio
        new_scale = where(logical_and(grow, is_finite(bigger)), bigger,
                          where(shrink, maximum(scale * self._decr_ratio, 1.0), scale))
        zero = constant(0, dtype=dtypes.int32)
        changed = logical_and(logical_not(grow), logical_not(shrink))
        new_good = where(logical_and(finite, changed), good, zero)
        new_bad = where(logical_and(logical_not(finite), changed), bad, zero)
        return group(assign(self._loss_scale, new_scale),
                     assign(self._num_good_steps, new_good),
                     assign(self._num_bad_steps, new_bad))
