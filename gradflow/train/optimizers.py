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
from gradflow.ops.array_ops import reshape
from gradflow.ops.index_ops import gather
from gradflow.ops.math_ops import (
    abs,  # noqa: A004
    cast,
    maximum,
    pow,  # noqa: A004
    sign,
    sqrt,
    square,
    where,
    zeros_like,
)
from gradflow.ops.scatter_ops import scatter_update
from gradflow.ops.sort_ops import unique
from gradflow.ops.state_ops import (
    assign,
    assign_add,
    at_commit,
    group,
    shaped_like_variable,
)
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import Variable


class Optimizer:
    """Base class of the optimizers: ``minimize``, ``compute_gradients``,
    ``apply_gradients`` and slots, as in TF1's ``tf.train.Optimizer``.

    A subclass defines ``_update(grad, var, lr)``, which returns the
    assignments of one step for one variable, and creates its slots there with
    ``_slot``, in the order TF1 creates them (the order decides the ``_1``
    suffixes of the slot variables' names).

    The update formulas read the variable, its slots and the shared variables with
    ``_read`` (or ``at_commit``): the values they hold when the run commits, under the
    session's store lock (``read_current`` nodes), so that concurrent training steps
    lose no update (TF1's ``use_locking=True``).
    """

    # whether an update of a looked-up variable (its gradient TF1's ``IndexedSlices``,
    # here a ``gather_grad``) changes only the rows looked up, slots too, as TF1's
    # sparse kernels do; where the dense update leaves other rows alone anyway, no
    _lazy = False

    def __init__(self, learning_rate, use_locking=False, name="Optimizer"):
        self._learning_rate = learning_rate
        self._name = name
        self._slot_vars: dict = {}  # (variable, slot name) -> slot variable
        self._non_slot_vars: list = []
        self._rows = None  # the rows the update being built changes (None: all)

    # -- TF1 API -----------------------------------------------------------------
    # TF1's gating choices: every gradient here is computed in one run, so they all
    # give the same numbers
    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """``[(gradient or None, variable), ...]`` for ``var_list`` (default: trainables);
        ``grad_loss`` weighs the loss's elements (``gradients``' ``grad_ys``)."""
        loss = convert_to_tensor(loss)
        var_list = list(var_list) if var_list is not None else \
            [v for v in loss.graph.get_collection("trainable_variables")]
        if not var_list:
            raise ValueError("no variables to optimize: var_list is empty and the graph has "
                             "no trainable variables")
        grads = gradients(loss, var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An operation that applies each gradient to its variable, and counts the step."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            names = [v.name for _, v in grads_and_vars]
            raise ValueError(f"no gradients provided for any variable: {names}; check that "
                             "the loss depends on the variables")
        graph = pairs[0][1].graph
        with graph.as_default():
            # non-slot variables (Adam's beta powers) take the caller's name scope, as in TF1
            self._create_shared(pairs)
            with graph.name_scope(name or self._name):
                updates = []
                for grad, var in pairs:
                    grad = convert_to_tensor(grad, like=var)
                    rows = _looked_up_rows(grad) if self._lazy else None
                    # a gradient of unknown shape (fed, or computed elsewhere) is checked
                    # against its variable before the update formulas broadcast it
                    grad = shaped_like_variable(grad, var, "apply_gradients", "the gradient")
                    # a variable given as the learning rate (or the gradient) is read
                    # at commit too, as the variables the formulas update
                    lr = at_commit(self._tensor(self._learning_rate, var.dtype, graph))
                    grad = at_commit(grad)
                    if rows is not None:  # the gradient's rows, duplicates summed
                        grad = gather(grad, rows)
                    self._rows = rows
                    try:
                        updates.extend(self._update(grad, var, lr))
                    finally:
                        self._rows = None
                updates.extend(self._finish())
                if global_step is not None:
                    updates.append(assign_add(global_step, 1))
                return group(*updates, name="update")

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """``apply_gradients(compute_gradients(loss, var_list, grad_loss=grad_loss),
        global_step)``."""
        return self.apply_gradients(self.compute_gradients(loss, var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)

    def get_name(self) -> str:
        """The optimizer's name (``'Adam'``...), which prefixes its slot variables."""
        return self._name

    def get_slot_names(self) -> list:
        """The names of the slots this optimizer has created, sorted (TF1: e.g.
        ``["m", "v"]`` for Adam once ``minimize`` has run)."""
        return sorted({slot for _, slot in self._slot_vars})

    def get_slot(self, var, name):
        """The slot variable ``name`` of ``var`` (e.g. ``"momentum"``), or ``None``."""
        return self._slot_vars.get((var, name))

    def variables(self) -> list:
        """The slot and non-slot variables of this optimizer, sorted by name."""
        found = list(self._slot_vars.values()) + list(self._non_slot_vars)
        return sorted(found, key=lambda v: v.name)

    # -- helpers for subclasses ---------------------------------------------------
    def _slot(self, var, slot, fill=0.0, op_name=None):
        """The slot ``slot`` of ``var``, created on first use filled with ``fill`` and
        named ``<var>/<op_name>`` (then ``_1``, ``_2``, ...), TF1's slot variable names."""
        key = (var, slot)
        if key not in self._slot_vars:
            value = np.full(tuple(var.shape), fill, dtype=var.dtype.as_numpy_dtype)
            with var.graph.name_scope(None):
                self._slot_vars[key] = Variable(value, trainable=False,
                                                name=f"{var.name}/{op_name or self._name}")
        return self._slot_vars[key]

    def _read(self, t):
        """The value of ``t`` (a variable or slot) at commit, or its rows that the update
        being built changes."""
        current = at_commit(t)
        return current if self._rows is None else gather(current, self._rows)

    def _write(self, t, value):
        """Assign ``value`` to ``t``, or to the rows that the update being built changes
        (``scatter_update``: the other rows keep the value ``t`` holds at commit)."""
        return assign(t, value) if self._rows is None else scatter_update(t, self._rows, value)

    def _non_slot(self, value, dtype, name):
        """A variable shared by all the updates, named ``name`` in the current name scope."""
        var = Variable(np.asarray(value, dtype.as_numpy_dtype), trainable=False, name=name)
        self._non_slot_vars.append(var)
        return var

    def _tensor(self, value, dtype, graph):
        if hasattr(value, "graph"):
            return cast(value, dtype)
        return constant(float(value), dtype=dtype, _graph=graph)

    def _create_shared(self, pairs):
        """Variables shared by all updates (Adam's beta powers)."""

    def _finish(self) -> list:
        return []


def _looked_up_rows(grad):
    """The distinct rows of a variable that ``grad`` (``gather_grad`` along the first axis,
    the gradient of a lookup) touches, or None for any other gradient."""
    if grad.opdef.name != "gather_grad" or grad.attrs["axis"] != 0:
        return None
    return unique(reshape(grad.inputs[1], [-1]))[0]


def _check_non_negative(owner, **values):
    for arg, value in values.items():
        if not hasattr(value, "graph") and value < 0:
            raise ValueError(f"{owner}: {arg} must be positive or zero, got {value}")


def _soft_threshold(x, threshold):
    """``sign(x) * max(|x| - threshold, 0)``: the proximal step of an L1 penalty."""
    return sign(x) * maximum(abs(x) - threshold, 0.0)


class GradientDescentOptimizer(Optimizer):
    """``var -= learning_rate * grad``."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(learning_rate, use_locking, name)

    def _update(self, grad, var, lr):
        return [assign(var, self._read(var) - lr * grad)]


class MomentumOptimizer(Optimizer):
    """``accum = momentum * accum + grad; var -= lr * accum``, or with
    ``use_nesterov=True``: ``var -= lr * (grad + momentum * accum)``.

    Slot ``"momentum"`` (variable ``<var>/Momentum``).
    """

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(learning_rate, use_locking, name)
        self._momentum = momentum
        self._nesterov = use_nesterov

    _lazy = True

    def _update(self, grad, var, lr):
        accum = self._slot(var, "momentum")
        new_accum = self._read(accum) * self._momentum + grad
        step = grad + new_accum * self._momentum if self._nesterov else new_accum
        return [self._write(accum, new_accum), self._write(var, self._read(var) - lr * step)]


class AdagradOptimizer(Optimizer):
    """``accum += grad^2; var -= lr * grad / sqrt(accum)``.

    Slot ``"accumulator"`` (variable ``<var>/Adagrad``), starting at
    ``initial_accumulator_value``.
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"{name}: initial_accumulator_value must be positive, got "
                             f"{initial_accumulator_value}")
        super().__init__(learning_rate, use_locking, name)
        self._initial = initial_accumulator_value

    def _update(self, grad, var, lr):
        accum = self._slot(var, "accumulator", self._initial)
        new_accum = self._read(accum) + square(grad)
        return [assign(accum, new_accum),
                assign(var, self._read(var) - lr * grad / sqrt(new_accum))]


class RMSPropOptimizer(Optimizer):
    """TF1's RMSProp: ``ms = decay ms + (1-decay) g^2; mom = momentum mom + lr g / sqrt(ms + eps);
    var -= mom``; with ``centered=True`` the denominator is ``sqrt(ms - mg^2 + eps)``, where
    ``mg`` is the moving mean of the gradient.

    As in TF1, the mean-square slot starts at 1. Slots ``"rms"``, ``"mg"`` (when
    centered) and ``"momentum"``, variables ``<var>/RMSProp``, ``<var>/RMSProp_1``, ...
    in that order.
    """

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(learning_rate, use_locking, name)
        self._decay, self._momentum, self._epsilon = decay, momentum, epsilon
        self._centered = centered

    _lazy = True

    def _update(self, grad, var, lr):
        ms = self._slot(var, "rms", 1.0)
        mg = self._slot(var, "mg") if self._centered else None
        mom = self._slot(var, "momentum")
        new_ms = self._read(ms) * self._decay + square(grad) * (1.0 - self._decay)
        denom = new_ms
        updates = [self._write(ms, new_ms)]
        if self._centered:
            new_mg = self._read(mg) * self._decay + grad * (1.0 - self._decay)
            denom = new_ms - square(new_mg)
            updates.append(self._write(mg, new_mg))
        new_mom = self._read(mom) * self._momentum + lr * grad / sqrt(denom + self._epsilon)
        return updates + [self._write(mom, new_mom),
                          self._write(var, self._read(var) - new_mom)]


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with TF1's bias-corrected step size and epsilon placement:
    ``lr_t = lr sqrt(1 - beta2^t) / (1 - beta1^t); var -= lr_t m / (sqrt(v) + epsilon)``.

    Slots ``"m"`` and ``"v"`` (variables ``<var>/Adam`` and ``<var>/Adam_1``);
    the powers ``beta1_power`` and ``beta2_power`` are shared variables.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(learning_rate, use_locking, name)
        self._beta1, self._beta2, self._epsilon = beta1, beta2, epsilon
        self._powers = {}

    def _create_shared(self, pairs):
        var = pairs[0][1]
        if var.dtype not in self._powers:
            self._powers[var.dtype] = (self._non_slot(self._beta1, var.dtype, "beta1_power"),
                                       self._non_slot(self._beta2, var.dtype, "beta2_power"))
        self._used_dtypes = {v.dtype for _, v in pairs}
        if len(self._used_dtypes) > 1:
            names = ", ".join(sorted(dt.name for dt in self._used_dtypes))
            raise TypeError(f"Adam: all variables of one minimize() must share a dtype, "
                            f"got {names}")

    def _update(self, grad, var, lr):
        b1_power, b2_power = self._powers[var.dtype]
        m = self._slot(var, "m")
        v = self._slot(var, "v")
        lr_t = lr * sqrt(1.0 - self._read(b2_power)) / (1.0 - self._read(b1_power))
        new_m = self._read(m) * self._beta1 + grad * (1.0 - self._beta1)
        new_v = self._read(v) * self._beta2 + square(grad) * (1.0 - self._beta2)
        new_var = self._read(var) - lr_t * new_m / (sqrt(new_v) + self._epsilon)
        return [assign(m, new_m), assign(v, new_v), assign(var, new_var)]

    def _finish(self):
        out = []
        for dt in self._used_dtypes:
            b1, b2 = self._powers[dt]
            out += [assign(b1, at_commit(b1) * self._beta1),
                    assign(b2, at_commit(b2) * self._beta2)]
        return out


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012) as TF1 computes it::

        accum = rho * accum + (1 - rho) * grad^2
        update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
        accum_update = rho * accum_update + (1 - rho) * update^2
        var -= learning_rate * update

    Slots ``"accum"`` and ``"accum_update"`` (variables ``<var>/Adadelta`` and
    ``<var>/Adadelta_1``), both starting at zero. TF1's default learning rate
    0.001 is kept; the paper's method corresponds to ``learning_rate=1.0``.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(learning_rate, use_locking, name)
        self._rho, self._epsilon = rho, epsilon

    def _update(self, grad, var, lr):
        accum = self._slot(var, "accum")
        accum_update = self._slot(var, "accum_update")
        old_accum, old_update = self._read(accum), self._read(accum_update)
        new_accum = old_accum * self._rho + square(grad) * (1.0 - self._rho)
        update = sqrt(old_update + self._epsilon) / sqrt(new_accum + self._epsilon) * grad
        new_accum_update = old_update * self._rho + square(update) * (1.0 - self._rho)
        return [assign(accum, new_accum), assign(accum_update, new_accum_update),
                assign(var, self._read(var) - lr * update)]


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013) with TF1's update, for a learning-rate
    power ``p`` (``learning_rate_power``, -0.5 by default)::

        g_s = grad + 2 * l2_shrinkage * var
        new_accum = accum + grad^2
        linear += g_s - (new_accum^(-p) - accum^(-p)) / learning_rate * var
        quadratic = new_accum^(-p) / learning_rate + 2 * l2
        var = (sign(linear) * l1 - linear) / quadratic  if |linear| > l1  else 0
        accum = new_accum

    Slots ``"accum"`` (starting at ``initial_accumulator_value``) and ``"linear"``
    (zeros), variables ``<var>/Ftrl`` and ``<var>/Ftrl_1``; ``accum_name`` and
    ``linear_name`` replace ``Ftrl`` in those names, as in TF1.
    """

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        _check_non_negative(name, initial_accumulator_value=initial_accumulator_value,
                            l1_regularization_strength=l1_regularization_strength,
                            l2_regularization_strength=l2_regularization_strength,
                            l2_shrinkage_regularization_strength=(
                                l2_shrinkage_regularization_strength))
        if learning_rate_power > 0.0:
            raise ValueError(f"{name}: learning_rate_power must be negative or zero, got "
                             f"{learning_rate_power}")
        super().__init__(learning_rate, use_locking, name)
        self._power = learning_rate_power
        self._initial = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _scaled(self, accum):
        """``accum ** -learning_rate_power`` (a square root for the default power)."""
        return sqrt(accum) if self._power == -0.5 else pow(accum, -self._power)

    _lazy = True

    def _update(self, grad, var, lr):
        accum_var = self._slot(var, "accum", self._initial, self._accum_name)
        linear_var = self._slot(var, "linear", 0.0, self._linear_name)
        accum, linear, value = (self._read(t) for t in (accum_var, linear_var, var))
        shrunk = grad + value * (2.0 * self._l2_shrinkage) if self._l2_shrinkage else grad
        new_accum = accum + square(grad)
        new_linear = linear + shrunk - (self._scaled(new_accum) - self._scaled(accum)) / lr \
            * value
        quadratic = self._scaled(new_accum) / lr + 2.0 * self._l2
        shrunk_var = (sign(new_linear) * self._l1 - new_linear) / quadratic
        new_var = where(abs(new_linear) > self._l1, shrunk_var, zeros_like(value))
        return [self._write(accum_var, new_accum), self._write(linear_var, new_linear),
                self._write(var, new_var)]


class ProximalGradientDescentOptimizer(Optimizer):
    """Gradient descent followed by the proximal step of the L1 and L2 penalties::

        prox = var - lr * grad
        var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)

    (with ``l1 = 0``: ``var = prox / (1 + lr * l2)``). No slots.
    """

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        _check_non_negative(name, l1_regularization_strength=l1_regularization_strength,
                            l2_regularization_strength=l2_regularization_strength)
        super().__init__(learning_rate, use_locking, name)
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    _lazy = True

    def _update(self, grad, var, lr):
        return [self._write(var, _proximal(self._read(var) - lr * grad, lr, self._l1,
                                           self._l2))]


class ProximalAdagradOptimizer(Optimizer):
    """Adagrad's step followed by the proximal step of the L1 and L2 penalties::

        accum += grad^2
        rate = lr / sqrt(accum)
        prox = var - rate * grad
        var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)

    Slot ``"accumulator"`` (variable ``<var>/ProximalAdagrad``), starting at
    ``initial_accumulator_value``.
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"{name}: initial_accumulator_value must be positive, got "
                             f"{initial_accumulator_value}")
        _check_non_negative(name, l1_regularization_strength=l1_regularization_strength,
                            l2_regularization_strength=l2_regularization_strength)
        super().__init__(learning_rate, use_locking, name)
        self._initial = initial_accumulator_value
        self._l1 = l1_regularization_strength
        self._l2 = l2_regularization_strength

    _lazy = True

    def _update(self, grad, var, lr):
        accum = self._slot(var, "accumulator", self._initial)
        new_accum = self._read(accum) + square(grad)
        rate = lr / sqrt(new_accum)
        new_var = _proximal(self._read(var) - rate * grad, rate, self._l1, self._l2)
        return [self._write(accum, new_accum), self._write(var, new_var)]


def _proximal(prox, rate, l1, l2):
    """The proximal step of ``l1 |x| + l2 x^2 / 2`` at step size ``rate``."""
    if not hasattr(l1, "graph") and l1 == 0:
        return prox / (1.0 + rate * l2)
    return _soft_threshold(prox, rate * l1) / (1.0 + rate * l2)


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
    step = get_global_step(graph)  # a tensor has no truth value: no ``or`` here
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor):
    """The value of ``global_step_tensor`` in ``sess`` as a Python int (TF1
    ``tf.train.global_step``)."""
    return int(sess.run(global_step_tensor))
