"""TF1's ``tf.train.AdagradDAOptimizer``: Adagrad dual averaging (Duchi et al., 2011),
for sparse linear models trained with L1 and L2 penalties."""

from __future__ import annotations

import numpy as np

from gradflow.ops.math_ops import abs, cast, maximum, sign, sqrt, square  # noqa: A004
from gradflow.train.optimizers import Optimizer, _check_non_negative

__all__ = ["AdagradDAOptimizer"]


def _as_float32(value):
    return value if hasattr(value, "graph") else float(np.float32(value))


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging: the variable is computed afresh from the sums of its
    gradients (not stepped), as TF1's kernel does::

        g_acc += grad
        gg_acc += grad^2
        t = global_step + 1                 (the value when the step runs)
        denominator = l2 * t * lr + sqrt(gg_acc)
        var = -lr * g_acc / denominator                                  (l1 == 0)
        var = -lr * sign(g_acc) * max(|g_acc| - l1 * t, 0) / denominator (l1 > 0)

    Slots ``"gradient_accumulator"`` (``<var>/AdagradDA``, from zero) and
    ``"gradient_squared_accumulator"`` (``<var>/AdagradDA_1``, from
    ``initial_gradient_squared_accumulator_value``). A looked-up variable's update
    changes only the rows looked up, as TF1's sparse kernel. ``global_step`` is required;
    ``minimize(global_step=...)`` counts it.
    """

    _lazy = True

    def __init__(self, learning_rate, global_step, initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"{name}: initial_gradient_squared_accumulator_value must be "
                             f"positive, got {initial_gradient_squared_accumulator_value}")
        _check_non_negative(name, l1_regularization_strength=l1_regularization_strength,
                            l2_regularization_strength=l2_regularization_strength)
        if global_step is None:
            raise ValueError(f"{name}: global_step is required")
        super().__init__(learning_rate, use_locking, name)
        self._global_step = global_step
        self._initial = initial_gradient_squared_accumulator_value
        # TF1 makes a Python number a float32 tensor before casting it to the variable's
        # dtype: the same rounding here gives TF1's float64 numbers
        self._l1 = _as_float32(l1_regularization_strength)
        self._l2 = _as_float32(l2_regularization_strength)

    def _update(self, grad, var, lr):
        g_acc = self._slot(var, "gradient_accumulator")
        gg_acc = self._slot(var, "gradient_squared_accumulator", self._initial)
        new_g = self._read(g_acc) + grad
        new_gg = self._read(gg_acc) + square(grad)
        t = cast(self._global_step, var.dtype) + 1.0
        denominator = self._l2 * t * lr + sqrt(new_gg)
        if not hasattr(self._l1, "graph") and self._l1 == 0:
            new_var = -lr * new_g / denominator
        else:
            new_var = -lr * sign(new_g) * maximum(abs(new_g) - self._l1 * t, 0.0) / denominator
        return [self._write(g_acc, new_g), self._write(gg_acc, new_gg),
                self._write(var, new_var)]
