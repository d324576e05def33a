"""Learning-rate schedules of the global step (TF1 ``tf.train.*_decay``).

Each returns a float32 scalar tensor computed from the step every run, so it
can be passed as an optimizer's ``learning_rate``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.math_ops import cast, floor, pow  # noqa: A004
from gradflow.ops.registry import convert_to_tensor


def _step_and_rate(learning_rate, global_step, what):
    if global_step is None:
        raise ValueError(f"{what}: global_step is required (e.g. "
                         "gf.train.get_or_create_global_step())")
    rate = convert_to_tensor(learning_rate, dtype=dtypes.float32)
    return rate, cast(global_step, dtypes.float32)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)``; with ``staircase``
    the exponent is floored, so the rate drops once every ``decay_steps`` steps.

    >>> lr = gf.train.exponential_decay(1e-3, step, decay_steps=469, decay_rate=0.7)
    """
    if decay_steps <= 0:
        raise ValueError(f"exponential_decay: decay_steps must be positive, got {decay_steps}")
    rate, step = _step_and_rate(learning_rate, global_step, "exponential_decay")
    exponent = step / float(decay_steps)
    if staircase:
        exponent = floor(exponent)
    return rate * pow(convert_to_tensor(float(decay_rate), dtype=dtypes.float32), exponent)
