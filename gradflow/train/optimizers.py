"""Optimizers with TF1's names, arguments and update formulas.

Each update is built from graph ops and assignments, so it runs on any
backend; slots (momentum, Adam's moments, ...) are variables, so they live
in the session like the weights.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.autodiff import gradients
from gradflow.graph import get_default_graph
from gradflow.ops.math_ops import cast, sqrt, square
from gradflow.ops.registry import convert_to_tensor
from gradflow.ops.state_ops import assign, assign_add, group, shaped_like_variable
from gradflow.variables import Variable


class Optimizer:
    """Base class: subclasses define ``_slots`` and ``_update(grad, var, lr)``."""

    _slots: tuple = ()

    def __init__(self, learning_rate, use_locking=False, name="Optimizer"):
        self._learning_rate = learning_rate
        self._name = name
        self._slot_vars: dict = {}

    # -- TF1 API -----------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, **unused):
        """``[(gradient or None, variable), ...]`` for ``var_list`` (default: trainables)."""
        loss = convert_to_tensor(loss)
        var_list = list(var_list) if var_list is not None else \
            [v for v in loss.graph.get_collection("trainable_variables")]
        if not var_list:
            raise ValueError("no variables to optimize: var_list is empty and the graph has "
                             "no trainable variables")
        grads = gradients(loss, var_list)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An operation that applies each gradient to its variable, and counts the step."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            names = [v.name for _, v in grads_and_vars]
            raise ValueError(f"no gradients provided for any variable: {names}; check that "
                             "the loss depends on the variables")
        graph = pairs[0][1].graph
        with graph.name_scope(name or self._name):
            self._create_shared(pairs)
            updates = []
            for grad, var in pairs:
                grad = convert_to_tensor(grad, like=var)
                # a gradient of unknown shape (fed, or computed elsewhere) is checked
                # against its variable before the update formulas broadcast it
                grad = shaped_like_variable(grad, var, "apply_gradients", "the gradient")
                lr = self._tensor(self._learning_rate, var.dtype, graph)
                updates.extend(self._update(grad, var, lr))
            updates.extend(self._finish())
            if global_step is not None:
                updates.append(assign_add(global_step, 1))
            return group(*updates, name="update")

    def minimize(self, loss, global_step=None, var_list=None, name=None, **unused):
        """``apply_gradients(compute_gradients(loss, var_list), global_step)``."""
        return self.apply_gradients(self.compute_gradients(loss, var_list),
                                    global_step=global_step, name=name)

    def get_slot_names(self) -> list:
        return list(self._slots)

    def get_slot(self, var, name):
        return self._slot_vars.get((var, name))

    def variables(self) -> list:
        return list(self._slot_vars.values())

    # -- helpers for subclasses ---------------------------------------------------
    def _slot(self, var, slot, fill=0.0):
        key = (var, slot)
        if key not in self._slot_vars:
            value = np.full(tuple(var.shape), fill, dtype=var.dtype.as_numpy_dtype)
            with var.graph.name_scope(None):
                self._slot_vars[key] = Variable(value, trainable=False,
                                                name=f"{var.name}/{self._name}/{slot}")
        return self._slot_vars[key]

    def _tensor(self, value, dtype, graph):
        if hasattr(value, "graph"):
            return cast(value, dtype)
        from gradflow.ops.registry import constant

        return constant(float(value), dtype=dtype, _graph=graph)

    def _create_shared(self, pairs):
        """Variables shared by all updates (Adam's beta powers)."""

    def _finish(self) -> list:
        return []


class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate, use_locking, name)

    def _update(self, grad, var, lr):
        return [assign(var, var - lr * grad)]


class MomentumOptimizer(Optimizer):
    """``accum = momentum * accum + grad; var -= lr * accum`` (or Nesterov's form)."""

    _slots = ("Momentum",)

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate, use_locking, name)
        self._momentum = momentum
        self._nesterov = use_nesterov

    def _update(self, grad, var, lr):
        accum = self._slot(var, "Momentum")
        new_accum = accum * self._momentum + grad
        step = grad + new_accum * self._momentum if self._nesterov else new_accum
        return [assign(accum, new_accum), assign(var, var - lr * step)]


class AdagradOptimizer(Optimizer):
    """``accum += grad^2; var -= lr * grad / sqrt(accum)``."""

    _slots = ("Adagrad",)

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        super().__init__(learning_rate, use_locking, name)
        self._initial = initial_accumulator_value

    def _update(self, grad, var, lr):
        accum = self._slot(var, "Adagrad", self._initial)
        new_accum = accum + square(grad)
        return [assign(accum, new_accum), assign(var, var - lr * grad / sqrt(new_accum))]


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: ``ms = decay ms + (1-decay) g^2; mom = momentum mom + lr g / sqrt(ms + eps)``.

    As in TF1, the mean-square slot starts at 1.
    """

    _slots = ("RMSProp", "Momentum")

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(learning_rate, use_locking, name)
        self._decay, self._momentum, self._epsilon = decay, momentum, epsilon
        self._centered = centered

    def _update(self, grad, var, lr):
        ms = self._slot(var, "RMSProp", 1.0)
        mom = self._slot(var, "Momentum")
        new_ms = ms * self._decay + square(grad) * (1.0 - self._decay)
        denom = new_ms
        updates = [assign(ms, new_ms)]
        if self._centered:
            mg = self._slot(var, "MeanGrad")
            new_mg = mg * self._decay + grad * (1.0 - self._decay)
            denom = new_ms - square(new_mg)
            updates.append(assign(mg, new_mg))
        new_mom = mom * self._momentum + lr * grad / sqrt(denom + self._epsilon)
        return updates + [assign(mom, new_mom), assign(var, var - new_mom)]


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with TF1's bias-corrected step size and epsilon placement."""

    _slots = ("Adam", "Adam_1")

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, use_locking, name)
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon
        self._powers = {}

    def _create_shared(self, pairs):
        var = pairs[0][1]
        if var.dtype not in self._powers:
            with var.graph.name_scope(None):
                b1 = Variable(np.asarray(self._beta1, var.dtype.as_numpy_dtype),
                              trainable=False, name=f"{self._name}/beta1_power")
                b2 = Variable(np.asarray(self._beta2, var.dtype.as_numpy_dtype),
                              trainable=False, name=f"{self._name}/beta2_power")
            self._powers[var.dtype] = (b1, b2)
        self._used_dtypes = {v.dtype for _, v in pairs}
        if len(self._used_dtypes) > 1:
            names = ", ".join(sorted(dt.name for dt in self._used_dtypes))
            raise TypeError(f"Adam: all variables of one minimize() must share a dtype, "
                            f"got {names}")

    def _update(self, grad, var, lr):
        b1_power, b2_power = self._powers[var.dtype]
        m = self._slot(var, "Adam")
        v = self._slot(var, "Adam_1")
        lr_t = lr * sqrt(1.0 - b2_power) / (1.0 - b1_power)
        new_m = m * self._beta1 + grad * (1.0 - self._beta1)
        new_v = v * self._beta2 + square(grad) * (1.0 - self._beta2)
        new_var = var - lr_t * new_m / (sqrt(new_v) + self._epsilon)
        return [assign(m, new_m), assign(v, new_v), assign(var, new_var)]

    def _finish(self):
        out = []
        for dt in self._used_dtypes:
            b1, b2 = self._powers[dt]
            out += [assign(b1, b1 * self._beta1), assign(b2, b2 * self._beta2)]
        return out

    def variables(self) -> list:
        return super().variables() + [v for pair in self._powers.values() for v in pair]


# -- global step -------------------------------------------------------------------


def get_global_step(graph=None):
    """The graph's global step variable, or ``None``."""
    graph = graph or get_default_graph()
    found = graph.get_collection("global_step")
    return found[0] if found else None


def create_global_step(graph=None):
    """Create the int64 global step variable (starting at 0)."""
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError("the graph has a global step already")
    with graph.as_default(), graph.name_scope(None):
        step = Variable(np.int64(0), trainable=False, name="global_step",
                        dtype=dtypes.int64, collections=["variables", "global_step"])
    return step


def get_or_create_global_step(graph=None):
    """The global step variable, created if the graph has none."""
    return get_global_step(graph) or create_global_step(graph)


def global_step(sess, global_step_tensor):
    """The value of ``global_step_tensor`` in ``sess`` as a Python int (TF1
    ``tf.train.global_step``)."""
    return int(sess.run(global_step_tensor))
