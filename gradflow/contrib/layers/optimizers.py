"""TF1's ``tf.contrib.layers.optimize_loss``: one call from a loss to a training op.

>>> train_op = gf.contrib.layers.optimize_loss(loss, gf.train.get_global_step(),
...                                           learning_rate=0.1, optimizer="Adam",
...                                           clip_gradients=5.0)
>>> loss_value = sess.run(train_op, feed)   # runs the step, returns the loss
"""

from __future__ import annotations

import numbers

from gradflow import train
from gradflow.clip_ops import clip_by_global_norm, global_norm
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.math_ops import multiply
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import GraphKeys, get_collection

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "optimize_loss"]

OPTIMIZER_CLS_NAMES = {
    "Adagrad": train.AdagradOptimizer,
    "Adam": train.AdamOptimizer,
    "Ftrl": train.FtrlOptimizer,
    "Momentum": lambda learning_rate: train.MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": train.RMSPropOptimizer,
    "SGD": train.GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm",
                       "global_gradient_norm"]


def _make_optimizer(optimizer, lr):
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}]"
                             f", you provided {optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, train.Optimizer):
        return optimizer
    if isinstance(optimizer, type) and issubclass(optimizer, train.Optimizer):
        return optimizer(learning_rate=lr)
    if callable(optimizer):  # a function of the learning rate
        made = optimizer(lr)
        if not isinstance(made, train.Optimizer):
            raise ValueError(f"Unrecognized optimizer: function should return subclass of "
                             f"Optimizer. Got {made}.")
        return made
    raise ValueError(f"Unrecognized optimizer: should be string, subclass of Optimizer, "
                     f"instance of subclass of Optimizer or function with one argument. "
                     f"Got {optimizer}.")


def _summarize(kinds, loss, lr, pairs):
    from gradflow import summary

    if "loss" in kinds:
        summary.scalar("loss", loss)
    if "learning_rate" in kinds and lr is not None:
        summary.scalar("learning_rate", convert_to_tensor(lr, dtype=loss.dtype))
    for g, v in pairs:
        name = v.name.replace(":", "_")
        if "gradients" in kinds:
            summary.histogram(f"gradients/{name}", g)
        if "gradient_norm" in kinds:
            summary.scalar(f"gradient_norm/{name}", global_norm([g]))
    if "global_gradient_norm" in kinds:
        summary.scalar("global_norm/gradient_norm", global_norm([g for g, _ in pairs]))


def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                  gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None,
                  update_ops=None, variables=None, name=None, summaries=None,
                  colocate_gradients_with_ops=False, increment_global_step=True):
    """A training op that computes the gradients of ``loss``, scales and clips them
    (``gradient_multipliers``: ``{variable: factor}``; ``clip_gradients``: a global norm
    or a function of the ``(gradient, variable)`` pairs), applies them with
    ``optimizer`` (a name of ``OPTIMIZER_CLS_NAMES``, an Optimizer class or instance, or
    a function of the learning rate) after ``update_ops`` (default: the UPDATE_OPS
    collection, as batch_norm's moving averages), counts ``global_step``, and returns
    the loss value when run. ``summaries`` (default all of ``OPTIMIZER_SUMMARIES``)
    adds TF1's scalar and histogram summaries."""
    if gradient_noise_scale is not None:
        raise NotImplementedError("optimize_loss: gradient_noise_scale is not supported")
    loss = convert_to_tensor(loss)
    graph = loss.graph
    with graph.name_scope(name or "OptimizeLoss"):
        lr = learning_rate
        if lr is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
        if lr is None and not isinstance(optimizer, train.Optimizer):
            raise ValueError(f"Learning rate is None, but should be specified if optimizer "
                             f"is string ({optimizer}).")
        opt = _make_optimizer(optimizer, lr)
        updates = get_collection(GraphKeys.UPDATE_OPS) if update_ops is None else update_ops
        loss_after = loss
        if updates:  # the moving averages of batch_norm run with the step
            with control_dependencies(list(updates)):
                loss_after = identity(loss)
        pairs = [(g, v) for g, v in opt.compute_gradients(loss_after, variables)
                 if g is not None]
        if gradient_multipliers:
            pairs = [(multiply(g, float(gradient_multipliers[v]))
                      if v in gradient_multipliers else g, v) for g, v in pairs]
        if isinstance(clip_gradients, numbers.Real):
            clipped, _ = clip_by_global_norm([g for g, _ in pairs], float(clip_gradients))
            pairs = list(zip(clipped, [v for _, v in pairs]))
        elif callable(clip_gradients):
            pairs = list(clip_gradients(pairs))
        elif clip_gradients is not None:
            raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
        _summarize(OPTIMIZER_SUMMARIES if summaries is None else summaries, loss,
                   lr, pairs)
        step = opt.apply_gradients(pairs, global_step=global_step
                                   if increment_global_step else None, name="train")
        with control_dependencies([step]):
            return identity(loss_after, name="train_op")


