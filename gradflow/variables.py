"""Variables, initializers, ``get_variable`` and ``variable_scope``."""

from __future__ import annotations

import functools
import weakref

from gradflow import dtypes
from gradflow.graph import Tensor, _find_session, get_default_graph, user_source_line
from gradflow.ops import state_ops
from gradflow.ops.custom_getter import call_custom_getter, chain, check_getter, is_initializer
from gradflow.ops.init_ops import (  # noqa: F401 - TF1's initializers, exported from here
    Initializer,
    _fans,
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    he_normal_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    zeros_initializer,
)
from gradflow.ops.math_ops import cast
from gradflow.prim.registry import REGISTRY, constant, convert_to_tensor

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"


class GraphKeys:
    """The standard collection names (TF1 ``tf.GraphKeys``): keys for
    ``get_collection`` and ``add_to_collection``."""

    GLOBAL_VARIABLES = GLOBAL_VARIABLES
    VARIABLES = GLOBAL_VARIABLES  # TF1's deprecated alias
    TRAINABLE_VARIABLES = TRAINABLE_VARIABLES
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SAVERS = "savers"
    ACTIVATIONS = "activations"
    WEIGHTS = "weights"
    BIASES = "biases"
    CONCATENATED_VARIABLES = "concatenated_variables"
    ASSET_FILEPATHS = "asset_filepaths"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


def _variable_collections(collections, trainable, name):
    """TF1's rule: the keys ``collections`` names (default: the global variables), plus
    the trainable variables when ``trainable``; each once, in order."""
    if collections is None:
        keys = [GLOBAL_VARIABLES]
    elif isinstance(collections, (list, tuple, set)):
        keys = list(collections)
    else:
        raise ValueError(f"Variable {name or ''}: collections must be a list, tuple or set "
                         f"of collection names, got {collections!r}")
    if trainable and TRAINABLE_VARIABLES not in keys:
        keys.append(TRAINABLE_VARIABLES)
    return list(dict.fromkeys(keys))


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
                init = cast(init, dtype)
        else:
            with graph.control_dependencies(None):
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
        for key in _variable_collections(collections, self.trainable, name):
            graph.add_to_collection(key, self)
        # as TF1's init_scope: initializing never waits on (and so never runs) the
        # control dependencies around the variable's creation, such as an optimizer's
        # slots made under ``control_dependencies(UPDATE_OPS)``
        with graph.control_dependencies(None):
            self.initializer = state_ops.assign(self, init, name=self.name + "/Initializer")
        _draw_initial_values_on_host(init)

    def __repr__(self) -> str:
        return f"<gf.Variable '{self.name}' shape={tuple(self.shape)} dtype={self.dtype.name}>"

    def assign(self, value, use_locking=False, name=None, read_value=True):
        """``gf.assign(self, value)``."""
        return state_ops.assign(self, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        """``gf.assign_add(self, delta)``: the increment lands on the value the variable
        holds when the run commits, so concurrent runs lose none."""
        return state_ops.assign_add(self, delta, use_locking=use_locking, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        """``gf.assign_sub(self, delta)``, like :meth:`assign_add`."""
        return state_ops.assign_sub(self, delta, use_locking=use_locking, name=name)

    def value(self):
        """TF1: the variable as a tensor holding its current value (here, the variable itself)."""
        return self

    def read_value(self):
        """TF1: a new tensor holding the variable's value, read after the control
        dependencies around the call (``with gf.control_dependencies([update]):``)."""
        return state_ops.identity(self, name=self.name + "/read_value")

    def initialized_value(self):
        """The initial value (for initializing other variables from this one)."""
        return self.initial_value

    def load(self, value, session=None):
        """Set the variable's value in ``session`` directly, outside any run."""
        _find_session(session, self).load_variable(self, value)


# -- collections (TF1 ``tf.get_collection`` and friends) -----------------------------


def get_collection(key, scope=None) -> list:
    """A copy of the collection ``key`` of the default graph (``[]`` if it is empty).

    With ``scope``, only the items whose ``name`` matches the regular expression
    ``scope`` from its start (``re.match``, so a plain scope name is a prefix);
    items without a name are left out, as in TF1.
    """
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key) -> list:
    """The list object of the collection ``key`` itself (created empty if missing):
    changes to it change the collection."""
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value) -> None:
    """Append ``value`` to the collection ``name`` of the default graph."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    """Append ``value`` to each collection named in ``names`` (a name or an iterable of
    names; each collection gets it once)."""
    names = (names,) if isinstance(names, str) else dict.fromkeys(names)
    for name in names:
        add_to_collection(name, value)


def global_variables(scope=None) -> list:
    """Every variable of the default graph, in creation order."""
    return get_collection(GLOBAL_VARIABLES, scope)


all_variables = global_variables  # TF1's deprecated name


def trainable_variables(scope=None) -> list:
    """The trainable variables of the default graph."""
    return get_collection(TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list:
    """The variables made with ``collections=[GraphKeys.LOCAL_VARIABLES]``."""
    return get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None) -> list:
    """The variables of ``GraphKeys.MODEL_VARIABLES`` (``contrib.layers`` puts its there)."""
    return get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None) -> list:
    """The variables of ``GraphKeys.MOVING_AVERAGE_VARIABLES``."""
    return get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An operation that gives every variable in ``var_list`` its initial value."""
    var_list = list(var_list)
    if not var_list:
        return state_ops.no_op(name=name)
    return state_ops.group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    """An operation that initializes every variable of the default graph."""
    return variables_initializer(global_variables())


def local_variables_initializer():
    """An operation that initializes every local variable of the default graph."""
    return variables_initializer(local_variables())


# TF1's deprecated names
initialize_variables = variables_initializer
initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer


# -- initializers: each builds the tensor that gives a variable its first value ---


def _draw_initial_values_on_host(value):
    """Mark the random ops that ``value`` is computed from (up to variables) as drawn on
    the host on every backend, so that every backend starts from the same weights (a
    GPU backend draws its other random numbers on the device)."""
    stack, seen = [value], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.opdef.kind == "variable":
            continue
        seen.add(id(node))
        if node.opdef.kind == "random":
            node.host_draw = True
        stack.extend(node.inputs)


# -- variable_scope and get_variable ----------------------------------------------

AUTO_REUSE = "auto_reuse"


class VariableScope:
    """A variable scope (TF1 ``tf.VariableScope``): the prefix of the names that
    ``get_variable`` makes, whether it shares existing variables (``reuse``), and
    the defaults it gives them (``initializer``, ``regularizer``, ``dtype``).

    ``with gf.variable_scope("rnn") as scope:`` yields one; ``get_variable_scope()``
    returns the current one (at top level, the graph's root scope, named ``""``).
    """

    def __init__(self, reuse, name="", initializer=None, regularizer=None,
                 caching_device=None, partitioner=None, custom_getter=None,
                 name_scope="", dtype=dtypes.float32, use_resource=None, constraint=None):
        self._reuse = reuse if reuse is AUTO_REUSE else bool(reuse)
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._dtype = dtypes.as_dtype(dtype)
        self._name_scope = name_scope
        self.caching_device, self.partitioner, self.custom_getter = \
            caching_device, partitioner, custom_getter
        self.use_resource, self.constraint = use_resource, constraint

    name = property(lambda self: self._name, doc="The full name: ``outer/inner``.")
    reuse = property(lambda self: self._reuse,
                     doc="``True``, ``False`` or ``AUTO_REUSE``: does get_variable share?")
    initializer = property(lambda self: self._initializer,
                           doc="The default initializer of get_variable in this scope.")
    regularizer = property(lambda self: self._regularizer,
                           doc="The default regularizer of get_variable in this scope.")
    dtype = property(lambda self: self._dtype, doc="The default dtype of its variables.")
    original_name_scope = property(
        lambda self: self._name_scope,
        doc="The name scope (``'rnn/'``) opened when the scope was first entered.")

    def reuse_variables(self):
        """Share variables from now on: later ``get_variable`` calls in this scope
        (and in the scopes opened inside it) return the existing ones."""
        self._reuse = True

    def set_initializer(self, initializer):
        """Set the default initializer of ``get_variable`` in this scope.

        >>> with gf.variable_scope("layer") as scope:
        ...     scope.set_initializer(gf.zeros_initializer())
        """
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        """Set the default regularizer of ``get_variable`` in this scope."""
        self._regularizer = regularizer

    def set_dtype(self, dtype):
        """Set the default dtype of ``get_variable`` in this scope."""
        self._dtype = dtypes.as_dtype(dtype)

    def set_custom_getter(self, custom_getter):
        """Set the custom getter of ``get_variable`` in this scope (replacing its own;
        see ``gradflow.ops.custom_getter``)."""
        check_getter(custom_getter, "set_custom_getter")
        self.custom_getter = custom_getter

    def get_variable(self, var_store, name, *args, **kwargs):
        """``get_variable`` in this scope (TF1's method; ``var_store`` is ignored)."""
        with variable_scope(self):
            return get_variable(name, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<gf.VariableScope '{self._name}' reuse={self._reuse}>"


class _ScopeState:
    """Per graph: the root scope, and how often each scope name was opened (TF1
    makes ``default_name`` scopes unique by these counts)."""

    def __init__(self):
        self.root = VariableScope(False)
        self.counts: dict = {}


_SCOPE_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _scope_state(graph) -> _ScopeState:
    state = _SCOPE_STATES.get(graph)
    if state is None:
        state = _SCOPE_STATES[graph] = _ScopeState()
    return state


def _is_reusing(reuse) -> bool:
    return reuse is True or reuse is AUTO_REUSE


class variable_scope:  # noqa: N801 - TF1 name
    """Prefix the names ``get_variable`` makes with a scope, and set how it shares.

    ``name_or_scope`` is a name (nested under the current scope), a
    ``VariableScope`` (re-entered by its full name, as TF1 does: no ``_1``
    suffix) or ``None`` with ``default_name`` (made unique: ``dense``,
    ``dense_1``...). ``reuse=True`` shares existing variables,
    ``AUTO_REUSE`` shares or creates; ``None``/``False`` inherit the outer
    scope's. Ops built inside get a name scope of the same name.

    >>> with gf.variable_scope("rnn") as scope:
    ...     w = gf.get_variable("w", (3, 3))
    ...     scope.reuse_variables()
    ...     assert gf.get_variable("w") is w
    """

    def __init__(self, name_or_scope, default_name=None, values=None, initializer=None,
                 regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                 reuse=None, dtype=None, use_resource=None, constraint=None,
                 auxiliary_name_scope=True):
        if name_or_scope is None and default_name is None:
            raise TypeError("variable_scope: if default_name is None then name_or_scope is "
                            "required")
        if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
            raise TypeError(f"variable_scope: name_or_scope must be a string or a "
                            f"VariableScope, got {type(name_or_scope).__name__}")
        if reuse is False:  # TF1: False means "inherit", like None
            reuse = None
        if not (reuse is None or reuse is True or reuse is AUTO_REUSE):
            raise ValueError(f"variable_scope: reuse must be True, False, None or "
                             f"AUTO_REUSE, got {reuse!r}")
        if name_or_scope is None and reuse is True:
            raise ValueError("variable_scope: reuse=True cannot be used without a "
                             "name_or_scope")
        if partitioner is not None:
            raise NotImplementedError("variable_scope: partitioner is not supported")
        check_getter(custom_getter, "variable_scope")
        self._custom_getter = custom_getter
        self._name_or_scope, self._default_name = name_or_scope, default_name
        self._reuse, self._initializer, self._regularizer = reuse, initializer, regularizer
        self._dtype = dtype
        self._extra = {"caching_device": caching_device, "use_resource": use_resource,
                       "constraint": constraint}
        self._auxiliary_name_scope = auxiliary_name_scope
        self._entered = None

    def __enter__(self) -> VariableScope:
        if self._entered is not None:
            raise RuntimeError("variable_scope: this scope object is already entered; make "
                               "a new gf.variable_scope(...) to enter it again")
        graph = get_default_graph()
        state = _scope_state(graph)
        outer = get_variable_scope()
        given = self._name_or_scope
        if isinstance(given, VariableScope):  # re-entered by its full name
            base, full = given, given.name
            reuse = self._reuse if self._reuse else given.reuse
            name_scope = given.name.split("/")[-1]
        else:
            base = outer
            reuse = self._reuse or outer.reuse
            name = given if given is not None else \
                _unique_scope_name(state, outer.name, self._default_name, graph,
                                   _is_reusing(reuse))
            full = f"{outer.name}/{name}" if outer.name else name
            name_scope = name
        getter = base.custom_getter if self._custom_getter is None else \
            chain(self._custom_getter, base.custom_getter)
        name_ctx = graph.name_scope(name_scope) \
            if self._auxiliary_name_scope and name_scope else None
        opened = name_ctx.__enter__() if name_ctx is not None else None
        if isinstance(given, VariableScope):
            original = given.original_name_scope
        else:
            original = opened if opened is not None else \
                ("/".join(graph._scope) + "/" if graph._scope else "")
        scope = VariableScope(
            reuse, name=full,
            initializer=self._initializer if self._initializer is not None
            else base.initializer,
            regularizer=self._regularizer if self._regularizer is not None
            else base.regularizer,
            name_scope=original,
            dtype=self._dtype if self._dtype is not None else base.dtype,
            caching_device=self._extra["caching_device"], custom_getter=getter,
            use_resource=self._extra["use_resource"],
            constraint=self._extra["constraint"])
        state.counts[full] = state.counts.get(full, 0) + 1
        saved_counts = dict(state.counts) if isinstance(given, VariableScope) else None
        graph._var_scopes.append(scope)
        self._entered = (graph, scope, name_ctx, saved_counts)
        return scope

    def __exit__(self, *exc):
        graph, scope, name_ctx, saved_counts = self._entered
        self._entered = None
        stack = graph._var_scopes
        if stack and stack[-1] is scope:
            stack.pop()
        state = _scope_state(graph)
        if saved_counts is not None:
            state.counts = saved_counts
        else:  # the scopes opened inside may take their plain names again (TF1)
            prefix = scope.name + "/"
            for key in state.counts:
                if key.startswith(prefix):
                    state.counts[key] = 0
        if name_ctx is not None:
            name_ctx.__exit__(*exc)
        return False


def _unique_scope_name(state, outer_name, base, graph, reusing):
    """``base``, or ``base_1``, ``base_2``...: the first not yet opened inside the current
    scope. When not sharing, a name that already holds variables is taken too, so a
    second layer gets new variables instead of TF1's "already exists" error."""
    prefix = f"{outer_name}/" if outer_name else ""

    def taken(candidate):
        full = prefix + candidate
        if state.counts.get(full, 0) > 0:
            return True
        return not reusing and any(key.startswith(full + "/") for key in graph._var_store)

    name, k = base, 0
    while taken(name):
        k += 1
        name = f"{base}_{k}"
    return name


def get_variable_scope() -> VariableScope:
    """The current variable scope; at top level the default graph's root scope, so
    ``gf.get_variable_scope().reuse_variables()`` shares variables everywhere after it."""
    graph = get_default_graph()
    return graph._var_scopes[-1] if graph._var_scopes else _scope_state(graph).root


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """Create a variable named by the variable scope, or reuse it (TF1 semantics).

    ``initializer`` is an initializer (needs ``shape``), a tensor or an array
    value (its dtype is the variable's unless ``dtype`` is given); the default
    is the scope's initializer, else ``glorot_uniform_initializer()``.
    ``regularizer(var)`` (or the scope's) runs when the variable is created and
    its result goes to ``GraphKeys.REGULARIZATION_LOSSES``. ``collections``
    defaults to the global variables; trainable ones also join the trainable
    variables. ``custom_getter`` (else the scope's) is called instead, with the
    function that makes the variable (``gradflow.ops.custom_getter``).
    """
    check_getter(custom_getter, "get_variable")
    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    # a value keeps its dtype unless one is asked for; a getter sees the scope's (TF1)
    value_dtype = dtype is None and initializer is not None and not is_initializer(initializer)
    getter = custom_getter if custom_getter is not None else scope.custom_getter
    args = dict(name=full, shape=shape,
                dtype=scope.dtype if dtype is None else dtypes.as_dtype(dtype),
                initializer=initializer if initializer is not None else scope.initializer,
                regularizer=regularizer if regularizer is not None else scope.regularizer,
                reuse=scope.reuse, trainable=True if trainable is None else bool(trainable),
                collections=collections, caching_device=caching_device,
                partitioner=partitioner, validate_shape=validate_shape,
                use_resource=use_resource, synchronization=synchronization,
                aggregation=aggregation)
    made = functools.partial(_true_getter, value_dtype=scope.dtype if value_dtype else None)
    return made(constraint=constraint, **args) if getter is None else \
        call_custom_getter(getter, made, constraint, **args)


def _true_getter(name, shape=None, dtype=dtypes.float32, initializer=None, regularizer=None,
                 reuse=None, trainable=None, collections=None, caching_device=None,
                 partitioner=None, validate_shape=True, use_resource=None, constraint=None,
                 synchronization=None, aggregation=None, *, value_dtype=None):
    """``get_variable`` without a custom getter: the variable of full name ``name``, made
    or shared by ``reuse``; a value initializer keeps its own dtype where ``dtype`` is
    ``value_dtype`` (the scope's, filled in by ``get_variable``)."""
    if partitioner is not None or constraint is not None:
        raise NotImplementedError("get_variable: partitioner and constraint are not supported")
    graph = get_default_graph()
    dtype = dtypes.as_dtype(dtype if dtype is not None else dtypes.float32)
    existing = graph._var_store.get(name)
    if reuse is True and existing is None:
        raise ValueError(f"variable {name} does not exist, or was not created with "
                         "get_variable(); did you mean reuse=None or AUTO_REUSE?")
    if existing is not None:
        if not _is_reusing(reuse):
            raise ValueError(f"variable {name} already exists; set reuse=True or "
                             "reuse=gf.AUTO_REUSE in variable_scope to share it")
        if shape is not None and tuple(shape) != tuple(existing.shape):
            raise ValueError(f"variable {name} has shape {tuple(existing.shape)}, asked for "
                             f"{tuple(shape)}")
        if dtype is not value_dtype and dtype is not existing.dtype:
            raise ValueError(f"variable {name} has dtype {existing.dtype.name}, asked for "
                             f"{dtype.name}")
        return existing
    if initializer is None:  # TF1: integers, bools and strings start at zero
        initializer = glorot_uniform_initializer() if dtype.is_floating else \
            zeros_initializer()
    with graph.name_scope(None):
        if isinstance(initializer, type) and issubclass(initializer, Initializer):
            initializer = initializer()
        if is_initializer(initializer):
            if shape is None:
                raise ValueError(f"get_variable {name}: shape is needed with an initializer")
            var_dtype = dtype
            with graph.name_scope(name + "/Initializer"):
                value = initializer(tuple(shape), dtype=dtype)
        else:
            value = convert_to_tensor(initializer, dtype=None)
            var_dtype = None if dtype is value_dtype else dtype
            if shape is not None and value.shape is not None and None not in value.shape \
                    and tuple(shape) != tuple(value.shape):
                raise ValueError(f"get_variable {name}: shape {tuple(shape)} does not match "
                                 f"the initial value's {tuple(value.shape)}")
        var = Variable(value, trainable=True if trainable is None else bool(trainable),
                       name=name, dtype=var_dtype, collections=collections)
        graph._var_store[name] = var
        if regularizer is not None:
            with graph.name_scope(name + "/Regularizer"):
                loss = regularizer(var)
            if loss is not None:
                graph.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return var


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, **kwargs):
    """``get_variable`` for a local variable: in ``GraphKeys.LOCAL_VARIABLES`` (and
    ``collections``), not in the global ones, not trainable."""
    return get_variable(name, shape, dtype, initializer, regularizer, trainable=False,
                        collections=[GraphKeys.LOCAL_VARIABLES] + list(collections or ()),
                        **kwargs)
