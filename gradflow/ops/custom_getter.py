"""TF1's custom getters: what ``variable_scope(custom_getter=)`` and
``get_variable(custom_getter=)`` call instead of making the variable themselves.

A getter is called as ``getter(next_getter, name=..., shape=..., dtype=...)`` with every
argument of ``get_variable`` as a keyword (``name`` is the full, scope-prefixed name;
``constraint`` only where the getter accepts it or ``**kwargs``, as TF1 does); it may
change them, call ``next_getter`` and return what it likes, such as a float16 cast of
the float32 variable that ``next_getter`` made (NVIDIA's mixed-precision examples).
A scope's getter wraps its outer scope's: the inner one is called first, and its
``next_getter`` calls the outer one, whose ``next_getter`` makes the variable.
"""

from __future__ import annotations

import functools
import inspect

from gradflow.graph import Tensor
from gradflow.ops.init_ops import Initializer


def check_getter(custom_getter, where: str) -> None:
    """Raise unless ``custom_getter`` is None or callable (TF1's error is a ValueError)."""
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"{where}: custom_getter must be callable, got {custom_getter!r}")


def chain(inner, outer):
    """The getter of a scope with its own getter ``inner`` inside a scope whose getter is
    ``outer`` (None: there is none): ``inner`` is called with a ``next_getter`` that
    calls ``outer`` first."""
    if outer is None:
        return inner

    def chained(getter, *args, **kwargs):
        return inner(functools.partial(outer, getter), *args, **kwargs)

    return chained


def _takes_constraint(fn) -> bool:
    """Whether ``fn`` has a ``constraint`` parameter or takes ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature: give it everything
        return True
    return any(p.name == "constraint" or p.kind is p.VAR_KEYWORD for p in params)


def call_custom_getter(custom_getter, true_getter, constraint, **kwargs):
    """``custom_getter(getter=true_getter, **kwargs)``, with ``constraint`` added where the
    getter takes it."""
    if _takes_constraint(custom_getter):
        kwargs["constraint"] = constraint
    return custom_getter(getter=true_getter, **kwargs)


def is_initializer(initializer) -> bool:
    """Whether ``get_variable``'s ``initializer`` is one (a class or instance of
    ``Initializer``, or a function of shape and dtype) rather than a value."""
    return (isinstance(initializer, type) and issubclass(initializer, Initializer)) or \
        isinstance(initializer, Initializer) or (callable(initializer) and
                                                 not isinstance(initializer, Tensor))
