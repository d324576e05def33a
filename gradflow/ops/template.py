"""TF1's ``tf.make_template``: a function whose variables are made on its first call and
shared by every later call, under one variable scope."""

from __future__ import annotations

import functools

from gradflow.graph import get_default_graph
from gradflow.variables import GraphKeys, get_collection, variable_scope


class Template:
    """A function wrapped by ``make_template``: the first call creates its variables in
    ``variable_scope``, later calls reuse them."""

    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        self._name = name
        self._func = func
        self._unique_name = unique_name
        self._custom_getter = custom_getter
        self._variable_scope = None
        self._variables_created = False
        if create_scope_now:
            with variable_scope(unique_name, default_name=name,
                                custom_getter=custom_getter) as scope:
                self._variable_scope = scope

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with variable_scope(self._variable_scope, reuse=self._variables_created or None,
                                auxiliary_name_scope=False):
                return self._call_func(args, kwargs)
        with variable_scope(self._unique_name, default_name=self._name,
                            custom_getter=self._custom_getter) as scope:
            self._variable_scope = scope
            return self._call_func(args, kwargs)

    def _call_func(self, args, kwargs):
        trainable_before = len(get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            made = get_collection(GraphKeys.TRAINABLE_VARIABLES)[trainable_before:]
            if made:
                raise ValueError(
                    f"Trainable variable created when calling template '{self._name}' after "
                    f"the first time, perhaps you used gf.Variable when you meant "
                    f"gf.get_variable: {[v.name for v in made]}")
        else:
            self._variables_created = True
        return result

    @property
    def name(self):
        """The name given to ``make_template``."""
        return self._name

    @property
    def func(self):
        """The wrapped function (with the keyword arguments given to ``make_template``)."""
        return self._func

    @property
    def variable_scope(self):
        """The variable scope of the template's variables (None before the first call,
        unless ``create_scope_now_``)."""
        return self._variable_scope

    @property
    def variable_scope_name(self):
        """The full name of that scope with a trailing ``/`` (TF1: so that it matches no
        longer scope name as a prefix), '' before it exists."""
        if self._variable_scope is None or not self._variable_scope.name:
            return ""
        return self._variable_scope.name + "/"

    def _scoped(self, key):
        if self._variable_scope is None:
            return []
        prefix = self._variable_scope.name + "/"
        graph = get_default_graph()
        return [v for v in graph.get_collection(key) if v.name.startswith(prefix)]

    @property
    def variables(self):
        """The global and local variables made in the template's scope."""
        return self.global_variables + self.local_variables

    @property
    def trainable_variables(self):
        """The trainable variables made in the template's scope."""
        return self._scoped(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        """The template's global variables that are not trainable."""
        trainable = set(self.trainable_variables)
        return [v for v in self.global_variables if v not in trainable]

    @property
    def global_variables(self):
        """The global variables made in the template's scope."""
        return self._scoped(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self):
        """The local variables made in the template's scope."""
        return self._scoped(GraphKeys.LOCAL_VARIABLES)

    @property
    def var_scope(self):
        """TF1's older name of ``variable_scope``."""
        return self._variable_scope


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """``func_`` wrapped so that its variables (made with ``get_variable``) are created
    on the first call, in a variable scope named after ``name_`` (``name_``, then
    ``name__1``... for later templates of that name), and reused by every later call
    (TF1 ``tf.make_template``). ``kwargs`` are passed to ``func_`` on every call;
    ``create_scope_now_`` opens the scope now rather than at the first call;
    ``unique_name_`` names the scope exactly.

    >>> dense = gf.make_template("dense", lambda x: gf.matmul(x, gf.get_variable("w", (4, 2))))
    >>> y1, y2 = dense(a), dense(b)   # one variable, dense/w
    """
    if not callable(func_):
        raise TypeError(f"make_template: func_ must be callable, got {func_!r}")
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_,
                    unique_name=unique_name_, custom_getter=custom_getter_)


__all__ = ["Template", "make_template"]
