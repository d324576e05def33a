"""``import gradflow.compat.v1 as tf``: TF1's ``tensorflow.compat.v1``.

Every public name of ``gradflow`` is here (looked up in ``gradflow`` when
first used), plus the switches TF 1.15 and TF2 programs call at the top to
ask for TF1 behaviour. gradflow is TF1 graph mode, so the switches towards
it are no-ops and the ones away from it (eager execution, v2 behaviour)
raise ``NotImplementedError`` saying so.
"""

from __future__ import annotations

import importlib


def _graph_mode_only(what):
    return NotImplementedError(
        f"{what}: gradflow runs TF1 graph mode only (build a graph, run it in a "
        "tf.Session); it has no eager execution or TF2 behaviour. Remove the call, or "
        "call tf.compat.v1.disable_v2_behavior() / disable_eager_execution() instead")


def disable_v2_behavior():
    """A no-op: gradflow always behaves as TF1 (graph mode, TF1 semantics)."""


def enable_v2_behavior():
    """Raises NotImplementedError: gradflow has only TF1's graph mode."""
    raise _graph_mode_only("enable_v2_behavior()")


def disable_eager_execution():
    """A no-op: gradflow never executes eagerly."""


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Raises NotImplementedError: gradflow has only TF1's graph mode."""
    raise _graph_mode_only("enable_eager_execution()")


def executing_eagerly():
    """``False``: ops build graph nodes, which a Session runs."""
    return False


def enable_resource_variables():
    """A no-op: gradflow's variables already read and write as a Session orders it."""


def disable_resource_variables():
    """A no-op (see ``enable_resource_variables``)."""


def resource_variables_enabled():
    """``False``, TF1's default; gradflow has one kind of variable."""
    return False


def disable_v2_tensorshape():
    """A no-op: gradflow's shapes are TF1's (``Dimension`` objects with ``.value``)."""


def enable_v2_tensorshape():
    """Raises NotImplementedError: gradflow keeps TF1's ``TensorShape``."""
    raise _graph_mode_only("enable_v2_tensorshape()")


_OWN = ("disable_v2_behavior", "enable_v2_behavior", "disable_eager_execution",
        "enable_eager_execution", "executing_eagerly", "enable_resource_variables",
        "disable_resource_variables", "resource_variables_enabled", "disable_v2_tensorshape",
        "enable_v2_tensorshape")


def _gradflow():
    # imported here, not at the top: gradflow imports this module while it starts
    return importlib.import_module("gradflow")


def _public_names():
    names = {n for n in dir(_gradflow()) if not n.startswith("_")}
    return sorted(names | set(_OWN))


def __getattr__(name):
    if name == "__all__":
        return _public_names()
    if not name.startswith("_"):
        try:
            return getattr(_gradflow(), name)
        except AttributeError:
            pass
    raise AttributeError(f"module 'gradflow.compat.v1' has no attribute {name!r}: gradflow "
                         f"has no tf.{name} (tf.compat.v1.{name})")


def __dir__():
    return sorted(set(globals()) | set(_public_names()))
