"""Graph, Tensor and Operation: the immutable data a model is built from."""

from __future__ import annotations

import difflib
import os
import re
import sys
import threading
from contextlib import contextmanager

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_INSIDE: dict = {}  # code filename -> whether it is a file of gradflow itself


def user_source_line() -> str:
    """``file:line`` of the first caller frame outside gradflow (for error messages)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = _INSIDE.get(filename)
        if inside is None:
            inside = _INSIDE[filename] = os.path.abspath(filename).startswith(_PACKAGE_DIR)
        if not inside:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class Dimension(int):
    """A known dimension of a static shape: an ``int`` that also answers TF1's
    ``.value`` (``x.get_shape()[1].value``). Unknown dimensions stay ``None``."""

    __slots__ = ()

    @property
    def value(self) -> int:
        """TF1: the dimension as an int (a ``None`` dimension has no ``.value``).

        >>> x.get_shape()[1].value
        784
        """
        return int(self)

    def __repr__(self) -> str:
        return int.__repr__(self)


class TensorShape(tuple):
    """A static shape: a tuple whose unknown dimensions are ``None``.
    ``TensorShape(None)`` is the shape of unknown rank (``UNKNOWN_SHAPE``)."""

    def __new__(cls, dims=()):
        if dims is None or dims is UNKNOWN_SHAPE:
            return UNKNOWN_SHAPE
        return super().__new__(cls, (None if d is None else Dimension(d) for d in dims))

    @property
    def ndims(self) -> int:
        """The rank."""
        return len(self)

    @property
    def dims(self) -> list:
        """TF1: the dimensions as a list (known ones answer ``.value``)."""
        return list(self)

    def as_list(self) -> list:
        """The dimensions as a list of ints and ``None``.

        >>> gf.placeholder(gf.float32, (None, 784)).shape.as_list()
        [None, 784]
        """
        return [None if d is None else int(d) for d in self]

    def is_fully_defined(self) -> bool:
        """Whether every dimension is known."""
        return all(d is not None for d in self)

    def is_compatible_with(self, other) -> bool:
        """TF1: whether some value could have both shapes (same rank, and equal sizes
        where both are known); ``None`` for ``other`` is a shape of unknown rank."""
        if other is None:
            return True
        other = TensorShape(other)
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other))

    def num_elements(self):
        """The number of elements, or ``None`` when a dimension is unknown."""
        if not self.is_fully_defined():
            return None
        return int(np.prod(self, dtype=np.int64))


class _UnknownShape:
    """TF1's ``TensorShape(None)``: a shape whose rank is not known. What ``get_shape()``
    gives for such a tensor (``.shape`` stays ``None``). Asking for its dimensions or
    length is a ``ValueError``, as in TF1: no code can take it for a scalar's shape."""

    ndims = None
    dims = None

    def as_list(self):
        """TF1: not defined for an unknown rank (``ValueError``)."""
        raise ValueError("as_list() is not defined on an unknown TensorShape.")

    def is_fully_defined(self) -> bool:
        """False: no dimension is known."""
        return False

    def is_compatible_with(self, other) -> bool:
        """True: any shape could be this one."""
        return True

    def num_elements(self):
        """``None``: the count is unknown."""
        return None

    def __len__(self):
        raise ValueError("Cannot take the length of shape with unknown rank.")

    def __iter__(self):
        raise ValueError("Cannot iterate over a shape with unknown rank.")

    def __eq__(self, other):
        return other is self or other is None

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "TensorShape(None)"


UNKNOWN_SHAPE = _UnknownShape()


class Tensor:
    """A symbolic value: the single output of one node of a Graph.

    A node records its op, its input tensors, its attributes, its static shape
    (``None`` for an unknown dimension), its dtype, its unique name and the line
    of user code that created it. Nodes are never changed after creation.
    """

    def __init__(self, graph, opdef, inputs, attrs, shape, dtype, name, source,
                 control_inputs=()):
        self.graph = graph
        self.opdef = opdef
        self.inputs = tuple(inputs)
        # nodes that must run before this one although it does not read their value
        self.control_inputs = tuple(control_inputs)
        self.attrs = attrs
        self.shape = TensorShape(shape) if shape is not None else None
        self.dtype = dtype
        self.name = name
        self.source = source
        self.index = len(graph.nodes)  # position in the graph: a stable, seedable id
        self.gradient_override = graph._gradient_overrides.get(opdef.name)

    # -- TF1 accessors -------------------------------------------------------
    @property
    def type(self) -> str:
        """TF1: the name of the op that makes this tensor (``'matmul'``; TF1 says ``'MatMul'``)."""
        return self.opdef.name

    @property
    def op(self):
        """TF1: the operation that makes this tensor: its attributes are the node's
        (``name``, ``type``, ``inputs``...); fetched, it runs and gives ``None``."""
        return _OpView(self)

    def get_shape(self) -> TensorShape:
        """TF1: the static shape (``self.shape``).

        >>> x.get_shape().as_list()
        [None, 784]
        """
        return UNKNOWN_SHAPE if self.shape is None else self.shape

    def eval(self, feed_dict=None, session=None):
        """Run this tensor in ``session`` (default: the default session)."""
        return _find_session(session, self).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        dt = self.dtype.name if self.dtype is not None else "none"
        shape = tuple(self.shape) if self.shape is not None else "unknown"
        return f"<gf.Tensor '{self.name}' shape={shape} dtype={dt}>"

    def describe(self) -> str:
        """One line naming the op, its name and the user line that built it."""
        return f"{self.opdef.name} '{self.name}' (created at {self.source})"

    __hash__ = object.__hash__

    # Operators are installed by gradflow.ops.overloads (they need the op modules).


class _OpView:
    """``tensor.op`` of a node with a value: the node seen as TF1's ``Operation``. It
    answers as the node does, and the graph functions take it for the node
    (``_as_graph_tensor``); ``Session.run`` runs the node and returns ``None`` for it."""

    __slots__ = ("_node",)

    def __init__(self, node):
        self._node = node

    def __getattr__(self, attr):
        return getattr(self._node, attr)

    def _as_graph_tensor(self):
        return self._node

    @property
    def outputs(self) -> list:
        """TF1: the tensors the operation makes (the node's one value)."""
        return [self._node]

    def values(self) -> tuple:
        """TF1: ``tuple(outputs)``."""
        return (self._node,)

    def run(self, feed_dict=None, session=None):
        """Run the operation in ``session`` (default: the default session)."""
        _find_session(session, self._node).run(self._node, feed_dict=feed_dict)

    def __eq__(self, other):
        return isinstance(other, _OpView) and other._node is self._node

    def __hash__(self):
        return hash(self._node)

    def __repr__(self) -> str:
        return f"<gf.Operation '{self._node.name}' type={self._node.opdef.name}>"


class Operation(Tensor):
    """A node that produces no value (``group``, ``no_op``, initializers).

    Running it runs its inputs; ``Session.run`` returns ``None`` for it.
    """

    @property
    def op(self):
        """TF1: the operation itself."""
        return self

    @property
    def outputs(self) -> list:
        """TF1: the tensors the operation makes: none."""
        return []

    def run(self, feed_dict=None, session=None):
        """Run this operation in ``session`` (default: the default session)."""
        return _find_session(session, self).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return f"<gf.Operation '{self.name}' type={self.opdef.name}>"


# The graph knows nothing of running: gradflow.session registers the function that
# finds the session for ``Tensor.eval``/``Operation.run`` when it is imported.
_session_finder = None


def register_session_finder(finder) -> None:
    """Set ``finder(session, tensor) -> Session`` (called by gradflow.session)."""
    global _session_finder
    _session_finder = finder


def _find_session(session, tensor):
    if _session_finder is None:
        raise RuntimeError("no session support loaded: import gradflow.session")
    return _session_finder(session, tensor)


class Graph:
    """A static computational graph: the nodes, their names and the collections.

    >>> g = gf.Graph()
    >>> with g.as_default():
    ...     x = gf.placeholder(gf.float32, shape=(None, 3))
    """

    def __init__(self):
        self.nodes: list[Tensor] = []
        self._names: dict[str, int] = {}
        self._scope: list[str] = []
        self._collections: dict[str, list] = {}
        self.seed = None
        self._var_scopes: list = []
        self._var_store: dict = {}
        self._gradient_overrides: dict = {}
        self._control_stack: list[list] = []
        self._gradient_of: list = []  # forward nodes whose gradient is being built
        self._finalized = False
        # what higher layers keep per graph, by their own key (a cond's or while_loop's
        # internal nodes: gradflow.prim.construct); it dies with the graph, where a
        # module-level weak map keyed by the graph would be held alive by its values
        self.layer_state: dict = {}

    # -- default graph -------------------------------------------------------
    def as_default(self) -> "Graph":
        """Make this the default graph and return it.

        Used with ``with`` the previous default comes back at the end of the
        block; called alone (the tutorial style) it stays the default.
        """
        _state.graph_stack.append(self)
        return self

    def __enter__(self) -> "Graph":
        _state.with_blocks.append(self)
        return self

    def __exit__(self, *exc):
        if self in _state.with_blocks:
            _state.with_blocks.reverse()
            _state.with_blocks.remove(self)
            _state.with_blocks.reverse()
        stack = _state.graph_stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                break
        return False

    # -- names and scopes ----------------------------------------------------
    def unique_name(self, base: str) -> str:
        """``base`` under the current name scope, with ``_1``, ``_2``... added if taken.
        As in TF1, names that differ only in case count as taken (``Mean``, ``mean_1``)."""
        name = "/".join(self._scope + [base]) if self._scope else base
        key = name.lower()
        count = self._names.get(key, 0)
        self._names[key] = count + 1
        if count:
            while f"{key}_{count}" in self._names:
                count += 1
            self._names[key] = count + 1
            self._names[f"{key}_{count}"] = 1
            return f"{name}_{count}"
        return name

    @contextmanager
    def name_scope(self, name):
        """Prefix the names of the nodes made inside with ``name/``."""
        if name is None or name == "":
            saved = self._scope
            self._scope = []
            try:
                yield ""
            finally:
                self._scope = saved
            return
        name = name.rstrip("/")
        scoped = self.unique_name(name)
        saved = self._scope
        self._scope = scoped.split("/")
        try:
            yield scoped + "/"
        finally:
            self._scope = saved

    @contextmanager
    def gradient_of(self, node):
        """Nodes built inside belong to the gradient of ``node``: their source names the
        line that asked for the gradient and the line that built ``node``."""
        self._gradient_of.append(node)
        try:
            yield
        finally:
            self._gradient_of.pop()

    def source_line(self) -> str:
        """The source recorded for a node built now (see ``gradient_of``)."""
        source = user_source_line()
        if self._gradient_of:
            node = self._gradient_of[-1]
            source += f", in the gradient of {node.type} '{node.name}' (created at {node.source})"
        return source

    @contextmanager
    def gradient_override_map(self, op_type_map: dict):
        """Use gradients registered with ``RegisterGradient`` for the ops built inside."""
        saved = dict(self._gradient_overrides)
        self._gradient_overrides.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_overrides = saved

    @contextmanager
    def control_dependencies(self, control_inputs):
        """Nodes built inside run only after every one of ``control_inputs`` (TF1).

        ``None`` clears the dependencies of the enclosing blocks.
        """
        saved = self._control_stack
        if control_inputs is None:
            self._control_stack = []
        else:
            items = []
            for item in control_inputs:
                item = item._as_graph_tensor() if hasattr(item, "_as_graph_tensor") else item
                if not isinstance(item, Tensor):
                    raise TypeError(f"control_dependencies: {item!r} is not a tensor or "
                                    "operation")
                if item.graph is not self:
                    raise ValueError(f"control_dependencies: '{item.name}' is not in this graph")
                items.append(item)
            self._control_stack = saved + [items]
        try:
            yield
        finally:
            self._control_stack = saved

    def current_control_inputs(self) -> tuple:
        """The control inputs a node built now gets, without repeats."""
        if not self._control_stack:
            return ()
        seen = {}
        for items in self._control_stack:
            for item in items:
                seen.setdefault(item, None)
        return tuple(seen)

    # -- nodes ---------------------------------------------------------------
    def add_node(self, node: Tensor) -> Tensor:
        """Append a node made for this graph (the ops call it; users build nodes with ops)."""
        if self._finalized:
            raise RuntimeError(f"Graph is finalized and cannot be modified: adding "
                               f"'{node.name}' ({node.opdef.name}) at {node.source}")
        self.nodes.append(node)
        return node

    def finalize(self) -> None:
        """Make the graph read-only (TF1): building an op in it afterwards raises
        ``RuntimeError``, which catches a training loop that adds ops on every step.
        Sessions run it as before.

        >>> sess.graph.finalize()
        """
        self._finalized = True

    @property
    def finalized(self) -> bool:
        """Whether ``finalize`` was called."""
        return self._finalized

    def _unsafe_unfinalize(self) -> None:
        """Make a finalized graph writable again (TF1's escape hatch, for tests)."""
        self._finalized = False

    def get_tensor_by_name(self, name: str) -> Tensor:
        """The tensor (or op) named ``name`` (``':0'`` may follow); ``KeyError`` if none.

        >>> g.get_tensor_by_name("x:0")
        """
        name = name[:-2] if name.endswith(":0") else name
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(self.missing_name(name))

    def missing_name(self, name: str, kinds=None) -> str:
        """Why ``name`` (``':0'`` may follow) names nothing here, with the closest names
        of the graph (of its ops of type ``kinds`` where given: placeholders for a feed)."""
        name = name[:-2] if name.endswith(":0") else name
        names = [n.name for n in self.nodes if kinds is None or n.opdef.name in kinds]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c + ':0') for c in close)}?" if close else ""
        return f"the graph has no tensor named {name!r}{hint}"

    def get_operation_by_name(self, name: str):
        """TF1: the operation named ``name``, whose ``outputs[0]`` is the tensor
        ``name + ':0'``; ``KeyError`` if none.

        >>> x = g.get_operation_by_name("input_x").outputs[0]
        """
        if ":" in name:
            raise ValueError(f"get_operation_by_name: {name!r} names a tensor, not an "
                             f"operation; use get_tensor_by_name, or drop the ':0'")
        return self.get_tensor_by_name(name).op

    def get_operations(self) -> list:
        """Every node of the graph, in the order they were made."""
        return list(self.nodes)

    # -- collections ---------------------------------------------------------
    def add_to_collection(self, key: str, value) -> None:
        """Append ``value`` to collection ``key``.

        >>> g.add_to_collection("losses", loss)
        """
        self._collections.setdefault(key, []).append(value)

    def add_to_collections(self, keys, value) -> None:
        """Append ``value`` to each collection of ``keys`` (a name or a list of names)."""
        for key in [keys] if isinstance(keys, str) else keys:
            self.add_to_collection(key, value)

    def get_collection(self, key: str, scope=None) -> list:
        """The items of collection ``key``; with ``scope``, those whose name matches it
        from the start (a regular expression, as in TF1)."""
        items = list(self._collections.get(key, []))
        if scope is None:
            return items
        return [i for i in items if getattr(i, "name", None) is not None
                and re.match(scope, i.name)]

    def get_collection_ref(self, key: str) -> list:
        """The list that is collection ``key`` itself (changing it changes the collection)."""
        return self._collections.setdefault(key, [])

    def clear_collection(self, key: str) -> None:
        """Remove collection ``key`` and its items."""
        self._collections.pop(key, None)

    def get_all_collection_keys(self) -> list:
        """The names of the collections that hold something."""
        return list(self._collections)

    def __repr__(self) -> str:
        return f"<gf.Graph with {len(self.nodes)} nodes>"


class _State(threading.local):
    def __init__(self):
        self.graph_stack: list[Graph] = []
        self.with_blocks: list[Graph] = []  # graphs entered with `with`, innermost last
        self.session_stack: list = []


_state = _State()
_global_default = [Graph()]


def get_default_graph() -> Graph:
    """The graph new nodes go into: the innermost ``as_default`` one."""
    if _state.graph_stack:
        return _state.graph_stack[-1]
    return _global_default[0]


def reset_default_graph() -> None:
    """Replace the global default graph with a new, empty one.

    Graphs made the default by ``as_default()`` called alone (the tutorial style)
    stop being the default; inside a ``with graph.as_default()`` block this is an
    error, as in TF1.
    """
    if _state.with_blocks:
        raise AssertionError("reset_default_graph called inside a `with graph.as_default()` "
                             "block; leave the block first")
    _state.graph_stack.clear()
    _global_default[0] = Graph()


def name_scope(name, default_name=None, values=None):
    """Context manager that prefixes node names in the default graph (TF1)."""
    return get_default_graph().name_scope(name if name is not None else default_name)


def set_random_seed(seed: int) -> None:
    """Set the graph-level seed of the default graph (TF1 ``set_random_seed``)."""
    get_default_graph().seed = int(seed)


def topological_order(fetches, fed, control=True):
    """Nodes needed to compute ``fetches`` when ``fed`` are given, inputs (and, with
    ``control``, control inputs) first: the one order of a graph that autodiff, the
    passes and the executor share."""
    order, seen = [], set()
    for root in fetches:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            if node not in fed:
                if control:
                    stack.extend((i, False) for i in reversed(node.control_inputs)
                                 if i not in seen)
                stack.extend((i, False) for i in reversed(node.inputs) if i not in seen)
    return order
