"""TF 1.14's ``MixedPrecisionLossScaleOptimizer`` and the mixed-precision graph rewrite's
switch, ``enable_mixed_precision_graph_rewrite``.

``MixedPrecisionLossScaleOptimizer(opt, loss_scale)`` wraps an optimizer:
``compute_gradients`` multiplies the loss by the scale and the gradients by its
reciprocal; with a ``DynamicLossScale``, ``apply_gradients`` applies them (and counts
``global_step``) only where they are all finite, inside a ``cond``, so that an
overflowing step changes no variable, no slot and no step count, and updates the scale
in the same run (TF 1.14's behaviour, checked against TF 2.21's ``tf.compat.v1``).
"""

from __future__ import annotations

from gradflow import config, dtypes
from gradflow.ops.control_flow_ops import cond
from gradflow.ops.math_ops import cast
from gradflow.ops.state_ops import group, no_op
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.tf_logging import warning
from gradflow.train.experimental import loss_scale as loss_scale_module
from gradflow.train.optimizers import Optimizer


def scale_loss(loss, scale):
    """``loss * scale`` in the loss's dtype (a callable loss is called first)."""
    loss = convert_to_tensor(loss() if callable(loss) else loss)
    return loss * cast(scale, loss.dtype)


def unscale_grads(grads_and_vars, scale):
    """Each gradient of ``grads_and_vars`` times ``1 / scale`` (None stays None)."""
    reciprocal = 1.0 / convert_to_tensor(scale)
    return [(None if g is None else _scaled(convert_to_tensor(g), reciprocal), v)
            for g, v in grads_and_vars]


def _scaled(grad, factor):
    """``grad * factor``; the gradient of a lookup (``gather_grad``, TF's ``IndexedSlices``)
    keeps its form with its rows scaled, so that an optimizer still updates only the rows
    looked up (TF scales an ``IndexedSlices``' values the same way)."""
    factor = cast(factor, grad.dtype)
    if grad.opdef.name != "gather_grad":
        return grad * factor
    rows, indices, params = grad.inputs
    return apply("gather_grad", [rows * factor, indices, params], **grad.attrs)


def make_shared_outside_cond(opt, grads_and_vars):
    """Make ``opt``'s shared variables (Adam's beta powers) before the ``cond`` that
    applies its gradients, in the caller's name scope, so that they are named as TF
    names them (``beta1_power``, not ``cond/beta1_power``); making them is idempotent."""
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if pairs:
        opt._create_shared(pairs)


def _check_optimizer(opt):
    if not isinstance(opt, Optimizer):
        raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')


class MixedPrecisionLossScaleOptimizer(Optimizer):
    """An optimizer that scales the loss by ``loss_scale`` (a ``LossScale``,
    ``"dynamic"`` or a number) before differentiating it and unscales the gradients
    before ``opt`` applies them; a dynamic scale skips the steps whose gradients are
    not all finite (see the module docstring).

    >>> opt = gf.train.experimental.MixedPrecisionLossScaleOptimizer(
    ...     gf.train.AdamOptimizer(1e-3), "dynamic")
    """

    def __init__(self, opt, loss_scale):
        _check_optimizer(opt)
        super().__init__(0.0, name=opt.get_name())  # TF's: the wrapped optimizer's name
        self._optimizer = opt
        self._loss_scale = loss_scale_module.get(loss_scale)
        if self._loss_scale is None:
            raise ValueError("loss_scale cannot be None")

    @property
    def loss_scale(self):
        """The ``LossScale``; ``loss_scale()`` is its current value as a tensor."""
        return self._loss_scale

    def compute_gradients(self, loss, var_list=None, gate_gradients=Optimizer.GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """The wrapped optimizer's gradients of ``loss * scale``, times ``1 / scale``."""
        scale = self._loss_scale()
        grads_and_vars = self._optimizer.compute_gradients(
            scale_loss(loss, scale), var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        return unscale_grads(grads_and_vars, scale)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply the (unscaled) gradients where they are all finite, and update the scale."""
        grads_and_vars = list(grads_and_vars)
        if isinstance(self._loss_scale, loss_scale_module.FixedLossScale):
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        update_scale, finite = self._loss_scale.update([g for g, _ in grads_and_vars])
        make_shared_outside_cond(self._optimizer, grads_and_vars)
        applied = cond(finite, lambda: self._optimizer.apply_gradients(
            grads_and_vars, global_step, name), no_op)
        return group(applied, update_scale, name=name or self.get_name())

    def get_slot(self, var, name):
        """The wrapped optimizer's slot ``name`` of ``var``."""
        return self._optimizer.get_slot(var, name)

    def get_slot_names(self) -> list:
        """The wrapped optimizer's slot names."""
        return self._optimizer.get_slot_names()

    def variables(self) -> list:
        """The wrapped optimizer's variables, then the loss scale's (as TF's)."""
        return self._optimizer.variables() + list(self._loss_scale.weights)


def enable_mixed_precision_graph_rewrite(opt, loss_scale="dynamic"):
    """Wrap ``opt`` in a ``MixedPrecisionLossScaleOptimizer`` with ``loss_scale`` and
    have the Sessions made from now on run their plans in float16
    (``gradflow.passes.mixed_precision``), as TF 1.14 does. TF rewrites only on a GPU;
    gradflow rewrites on every backend that has float16 arrays (on array_api_strict,
    which has none, a Session warns and runs in float32). Returns the wrapped optimizer.
    """
    _check_optimizer(opt)
    if config.set_mixed_precision_graph_rewrite(dtypes.float16.name):
        warning("You already have existing Sessions that do not use mixed precision. "
                "enable_mixed_precision_graph_rewrite() will not affect these Sessions.")
    return MixedPrecisionLossScaleOptimizer(opt, loss_scale)


def disable_mixed_precision_graph_rewrite():
    """Turn the process-wide rewrite off for the Sessions made from now on (an optimizer
    already wrapped keeps its loss scaling, as in TF1)."""
    if config.mixed_precision_graph_rewrite() is None:
        warning("disable_mixed_precision_graph_rewrite() called when mixed precision is "
                "already disabled.")
    config.set_mixed_precision_graph_rewrite(None)
