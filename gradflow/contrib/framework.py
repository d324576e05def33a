"""TF1's ``tf.contrib.framework``: ``arg_scope`` and ``add_arg_scope``.

``arg_scope(ops, **kwargs)`` sets default keyword arguments of the listed ops
(functions decorated with ``add_arg_scope``) for the code in its ``with``
block. Scopes nest as in TF1: an inner scope starts from a copy of the outer
one and its arguments win for the ops it names; arguments passed in the call
win over both. The scope object that ``with arg_scope(...) as sc`` yields can
be re-entered later with ``with arg_scope(sc):``, which restores exactly that
scope.

>>> with gf.contrib.framework.arg_scope([layers.fully_connected], activation_fn=gf.nn.tanh):
...     h = layers.fully_connected(x, 64)          # tanh
...     y = layers.fully_connected(h, 10, activation_fn=None)
"""

from __future__ import annotations

import functools
import inspect
import threading
from contextlib import contextmanager

__all__ = ["add_arg_scope", "arg_scope", "arg_scoped_arguments", "current_arg_scope",
           "has_arg_scope"]


class _ScopeStack(threading.local):
    """The scopes entered in this thread, innermost last (as TF1, per thread)."""

    def __init__(self):
        self.scopes = []


_STACK = _ScopeStack()


def current_arg_scope() -> dict:
    """The innermost scope: ``{op key: {argument: value}}`` (empty outside any scope)."""
    return _STACK.scopes[-1] if _STACK.scopes else {}


def _key(op):
    return getattr(op, "_key_op", str(op))


def has_arg_scope(func) -> bool:
    """Whether ``func`` was decorated with ``add_arg_scope``."""
    return hasattr(func, "_key_op")


def arg_scoped_arguments(func) -> list:
    """The names of the arguments that an ``arg_scope`` can set for ``func``."""
    if not has_arg_scope(func):
        raise ValueError(f"{func} is not decorated with @add_arg_scope")
    return list(func._arg_names)


@contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Default ``kwargs`` for each op of ``list_ops_or_scope`` inside the block (or, given
    a scope dict that an earlier ``arg_scope`` yielded, that scope again)."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError("When attempting to re-use a scope by suppling a dictionary, "
                             "kwargs must be empty.")
        scope = list_ops_or_scope
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError("list_ops_or_scope must either be a list/tuple or reused scope "
                            f"(i.e. dict), got {type(list_ops_or_scope).__name__}")
        scope = dict(current_arg_scope())
        for op in list_ops_or_scope:
            if not has_arg_scope(op):
                raise ValueError(f"{getattr(op, '__name__', op)} is not decorated with "
                                 "@add_arg_scope")
            merged = dict(scope.get(_key(op), {}))
            merged.update(kwargs)
            scope[_key(op)] = merged
    _STACK.scopes.append(scope)
    try:
        yield scope
    finally:
        _STACK.scopes.pop()


def add_arg_scope(func):
    """Decorate ``func`` so that ``arg_scope`` can set its keyword arguments."""
    @functools.wraps(func)
    def scoped(*args, **kwargs):
        defaults = current_arg_scope().get(key)
        if defaults:  # arguments given in the call win, by keyword or by position
            given = set(scoped._arg_names[:len(args)])
            kwargs = {**{k: v for k, v in defaults.items() if k not in given}, **kwargs}
        return func(*args, **kwargs)

    key = scoped._key_op = f"{func.__module__}.{func.__qualname__}"
    scoped._arg_names = tuple(inspect.signature(func).parameters)
    return scoped
