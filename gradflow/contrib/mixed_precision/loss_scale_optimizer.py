"""TF1's ``tf.contrib.mixed_precision.LossScaleOptimizer``: an optimizer whose loss is
scaled by a ``LossScaleManager``'s scale and whose gradients are unscaled, and which
applies them (and counts ``global_step``) only where they are all finite, updating the
manager's scale in the same run (TF 1.15's ``contrib/mixed_precision``)."""

from __future__ import annotations

from gradflow.ops.control_flow_ops import cond
from gradflow.ops.state_ops import group, no_op
from gradflow.train.experimental.loss_scale import all_finite
from gradflow.train.experimental.loss_scale_optimizer import (
    make_shared_outside_cond,
    scale_loss,
    unscale_grads,
)
from gradflow.train.optimizers import Optimizer


class LossScaleOptimizer(Optimizer):
    """``opt`` with the loss scaled by ``loss_scale_manager``'s scale (see the module
    docstring).

    >>> manager = gf.contrib.mixed_precision.ExponentialUpdateLossScaleManager(2**15, 2000)
    >>> opt = gf.contrib.mixed_precision.LossScaleOptimizer(gf.train.AdamOptimizer(1e-3),
    ...                                                     manager)
    """

    def __init__(self, opt, loss_scale_manager):
        if not isinstance(opt, Optimizer):
            raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')
        super().__init__(0.0, name="LossScaleOptimizer")
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager

    def compute_gradients(self, loss, var_list=None, gate_gradients=Optimizer.GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """The wrapped optimizer's gradients of ``loss * scale``, times ``1 / scale``."""
        scale = self._loss_scale_manager.get_loss_scale()
        grads_and_vars = self._opt.compute_gradients(
            scale_loss(loss, scale), var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        return unscale_grads(grads_and_vars, scale)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply the gradients where all are finite; update the manager's scale."""
        grads_and_vars = list(grads_and_vars)
        finite = all_finite([g for g, _ in grads_and_vars])
        make_shared_outside_cond(self._opt, grads_and_vars)
        applied = cond(finite, lambda: self._opt.apply_gradients(
            grads_and_vars, global_step, name), no_op)
        return group(applied, self._loss_scale_manager.update_loss_scale(finite))

    def get_slot(self, var, name):
        """The wrapped optimizer's slot ``name`` of ``var``."""
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> list:
        """The wrapped optimizer's slot names."""
        return self._opt.get_slot_names()

    def variables(self) -> list:
        """The wrapped optimizer's variables."""
        return self._opt.variables()
