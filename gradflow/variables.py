"""Variables, initializers, ``get_variable`` and ``variable_scope``."""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph, user_source_line
from gradflow.ops import state_ops
from gradflow.ops.registry import REGISTRY, constant, convert_to_tensor

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"


class Variable(Tensor):
    """A value that lives in each Session and persists across runs.

    ``initial_value`` is an array, nested list, scalar, tensor or initializer
    result. A session gives the variable this value when the initializer runs,
    or on the first run that needs it.

    >>> w = gf.Variable([[1.0, 0.0], [0.0, -1.0]], name="w")
    """

    def __init__(self, initial_value=None, trainable=True, name=None, dtype=None,
                 shape=None, collections=None):
        if initial_value is None:
            raise ValueError("Variable needs an initial_value")
        if callable(initial_value) and not isinstance(initial_value, Tensor):
            initial_value = initial_value()
        graph = initial_value.graph if isinstance(initial_value, Tensor) else get_default_graph()
        if isinstance(initial_value, Tensor):
            init = initial_value
            if dtype is not None and init.dtype is not dtypes.as_dtype(dtype):
                from gradflow.ops.math_ops import cast

                init = cast(init, dtype)
        else:
            init = constant(initial_value, dtype=dtype, _graph=graph)
        if init.shape is None or None in init.shape:
            if shape is None:
                raise ValueError(f"Variable {name or ''}: the initial value's shape "
                                 f"{init.shape} is not fully known; pass shape=")
            init_shape = tuple(shape)
        else:
            init_shape = tuple(init.shape)
        super().__init__(graph, REGISTRY["variable"], (), {"shape": init_shape,
                         "dtype": init.dtype}, init_shape, init.dtype,
                         graph.unique_name(name or "Variable"), user_source_line())
        graph.add_node(self)
        self.initial_value = init
        self.trainable = bool(trainable)
        default = [GLOBAL_VARIABLES] + ([TRAINABLE_VARIABLES] if trainable else [])
        for key in collections or default:
            graph.add_to_collection(key, self)
        self.initializer = state_ops.assign(self, init, name=self.name + "/Initializer")

    def __repr__(self) -> str:
        return f"<gf.Variable '{self.name}' shape={tuple(self.shape)} dtype={self.dtype.name}>"

    def assign(self, value, name=None):
        """``gf.assign(self, value)``."""
        return state_ops.assign(self, value, name=name)

    def assign_add(self, delta, name=None):
        """``gf.assign_add(self, delta)``."""
        return state_ops.assign_add(self, delta, name=name)

    def assign_sub(self, delta, name=None):
        """``gf.assign_sub(self, delta)``."""
        return state_ops.assign_sub(self, delta, name=name)

    def value(self):
        return self

    read_value = value

    def initialized_value(self):
        """The initial value (for initializing other variables from this one)."""
        return self.initial_value

    def load(self, value, session=None):
        """Set the variable's value in ``session`` directly, outside any run."""
        from gradflow.session import _session_for

        _session_for(session, self).load_variable(self, value)


def global_variables(scope=None) -> list:
    """Every variable of the default graph, in creation order."""
    return _filtered(get_default_graph().get_collection(GLOBAL_VARIABLES), scope)


def trainable_variables(scope=None) -> list:
    """The trainable variables of the default graph."""
    return _filtered(get_default_graph().get_collection(TRAINABLE_VARIABLES), scope)


def _filtered(variables, scope):
    return [v for v in variables if scope is None or v.name.startswith(scope)]


def variables_initializer(var_list, name="init"):
    """An operation that gives every variable in ``var_list`` its initial value."""
    var_list = list(var_list)
    if not var_list:
        return state_ops.no_op(name=name)
    return state_ops.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    """An operation that initializes every variable of the default graph."""
    return variables_initializer(global_variables())


# -- initializers: each builds the tensor that gives a variable its first value ---


class Initializer:
    """Base class: ``init(shape, dtype)`` returns an initial-value tensor."""

    def __call__(self, shape, dtype=dtypes.float32, partition_info=None):
        raise NotImplementedError


class zeros_initializer(Initializer):
    def __init__(self, dtype=dtypes.float32):
        self.dtype = dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return constant(np.zeros(shape), dtype=dtype or self.dtype)


class ones_initializer(zeros_initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return constant(np.ones(shape), dtype=dtype or self.dtype)


class constant_initializer(Initializer):
    def __init__(self, value=0, dtype=dtypes.float32):
        self.value, self.dtype = value, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        array = np.broadcast_to(np.asarray(self.value), shape)
        return constant(array, dtype=dtype or self.dtype)


class random_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                       seed=self.seed)


class truncated_normal_initializer(random_normal_initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                          seed=self.seed)


class random_uniform_initializer(Initializer):
    def __init__(self, minval=0.0, maxval=1.0, seed=None, dtype=dtypes.float32):
        self.minval, self.maxval, self.seed, self.dtype = minval, maxval, seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        return state_ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype,
                                        seed=self.seed)


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class glorot_uniform_initializer(Initializer):
    """Uniform in ``±sqrt(6 / (fan_in + fan_out))`` (TF1's default for get_variable)."""

    def __init__(self, seed=None, dtype=dtypes.float32):
        self.seed, self.dtype = seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, fan_out = _fans(tuple(shape))
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return state_ops.random_uniform(shape, -limit, limit, dtype or self.dtype,
                                        seed=self.seed)


class glorot_normal_initializer(glorot_uniform_initializer):
    """Truncated normal with ``stddev = sqrt(2 / (fan_in + fan_out))`` (corrected)."""

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, fan_out = _fans(tuple(shape))
        stddev = math.sqrt(2.0 / (fan_in + fan_out)) / 0.87962566103423978
        return state_ops.truncated_normal(shape, 0.0, stddev, dtype or self.dtype,
                                          seed=self.seed)


class he_normal_initializer(glorot_uniform_initializer):
    """Truncated normal with ``stddev = sqrt(2 / fan_in)`` (corrected), for ReLU nets."""

    def __call__(self, shape, dtype=None, partition_info=None):
        fan_in, _ = _fans(tuple(shape))
        stddev = math.sqrt(2.0 / fan_in) / 0.87962566103423978
        return state_ops.truncated_normal(shape, 0.0, stddev, dtype or self.dtype,
                                          seed=self.seed)


# -- variable_scope and get_variable ----------------------------------------------

AUTO_REUSE = "auto_reuse"


class _Scope:
    def __init__(self, name, reuse, initializer):
        self.name, self.reuse, self.initializer = name, reuse, initializer


@contextmanager
def variable_scope(name_or_scope, default_name=None, reuse=None, initializer=None,
                   values=None):
    """Prefix variable names with the scope; ``reuse=True`` or ``AUTO_REUSE`` shares them."""
    graph = get_default_graph()
    name = name_or_scope.name if isinstance(name_or_scope, _Scope) else name_or_scope
    if name is None:
        if default_name is None:
            raise ValueError("variable_scope needs a name or a default_name")
        name = _unique_scope_name(graph, default_name)
    outer = graph._var_scopes[-1] if graph._var_scopes else None
    full = f"{outer.name}/{name}" if outer and outer.name else name
    if reuse is None and outer is not None:
        reuse = outer.reuse
    if initializer is None and outer is not None:
        initializer = outer.initializer
    scope = _Scope(full, reuse, initializer)
    graph._var_scopes.append(scope)
    try:
        with graph.name_scope(name):
            yield scope
    finally:
        graph._var_scopes.pop()


def _unique_scope_name(graph, base):
    outer = graph._var_scopes[-1].name if graph._var_scopes else ""
    prefix = f"{outer}/" if outer else ""
    name, k = base, 0
    while any(key.startswith(f"{prefix}{name}/") for key in graph._var_store):
        k += 1
        name = f"{base}_{k}"
    return name


def get_variable_scope():
    graph = get_default_graph()
    return graph._var_scopes[-1] if graph._var_scopes else _Scope("", None, None)


def get_variable(name, shape=None, dtype=dtypes.float32, initializer=None, trainable=True,
                 collections=None):
    """Create a variable named by the variable scope, or reuse it (TF1 semantics)."""
    graph = get_default_graph()
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    existing = graph._var_store.get(full)
    if scope.reuse is True and existing is None:
        raise ValueError(f"variable {full} does not exist, or was not created with "
                         "get_variable(); did you mean reuse=None or AUTO_REUSE?")
    if existing is not None:
        if scope.reuse not in (True, AUTO_REUSE):
            raise ValueError(f"variable {full} already exists; set reuse=True or "
                             "reuse=gf.AUTO_REUSE in variable_scope to share it")
        if shape is not None and tuple(shape) != tuple(existing.shape):
            raise ValueError(f"variable {full} has shape {tuple(existing.shape)}, asked for "
                             f"{tuple(shape)}")
        return existing
    if initializer is None:  # (an array initializer has no truth value)
        initializer = scope.initializer or glorot_uniform_initializer()
    dtype = dtypes.as_dtype(dtype)
    with graph.name_scope(None):
        if isinstance(initializer, Initializer) or (callable(initializer) and
                                                   not isinstance(initializer, Tensor)):
            if shape is None:
                raise ValueError(f"get_variable {full}: shape is needed with an initializer")
            with graph.name_scope(full + "/Initializer"):
                value = initializer(tuple(shape), dtype=dtype)
        else:
            value = convert_to_tensor(initializer, dtype=None)
        var = Variable(value, trainable=trainable, name=full, dtype=dtype,
                       collections=collections)
    graph._var_store[full] = var
    return var
