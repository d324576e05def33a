"""Functions of ``Dataset.map`` and ``Dataset.filter``, traced as TF1 traces them.

The function is called once, when the pipeline is built, on symbolic tensors
that stand for one element's components; what it returns (tensors, or values
made constants) is a graph that the pipeline runs on the host for each element,
in a NumPy session of the user's graph that the iterator owns. Tensors of the
graph the function uses besides its arguments (placeholders, variables) are
captured: their values are read when the iterator is initialized.

When every op between the arguments and the results is elementwise (or a cast,
an identity, a ``one_hot``), the function gives the same rows on a stack of
elements as on each alone; ``batch`` then runs it once per batch on a copy of
that graph whose arguments have a leading batch axis (``Vectorized``).

A Python function that cannot be traced (it calls NumPy on a tensor, branches on
a tensor's value) fails when ``map`` is called, as in TF1, with the advice to
wrap that code in ``gf.py_func``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.data.dataset import Dataset
from gradflow.data.structure import flatten, pack, shape_of
from gradflow.graph import Tensor, TensorShape, get_default_graph, topological_order
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

ARGS = "data_function_args"  # the key of a host session's argument values

# ops that give row i of a stack from row i of their stacked inputs
_ROWWISE = {"identity", "stop_gradient", "cast", "one_hot"}


class TracedFunction:
    """``fn`` traced over elements of ``(template, types, shapes)`` (flat lists)."""

    def __init__(self, fn, template, types, shapes, what, allow_dataset=False):
        if not callable(fn):
            raise TypeError(f"{what}: expected a function, got {fn!r}")
        self.what = what
        self.label = getattr(fn, "__name__", type(fn).__name__)
        graph = get_default_graph()
        self.graph = graph
        with graph.name_scope(what.replace(".", "_")):
            self.args = [_argument(dt, sh, what, graph) for dt, sh in zip(types, shapes)]
            element = pack(template, self.args)
            try:
                result = fn(*element) if type(element) is tuple else fn(element)
            except Exception as err:
                err.add_note(f"(in {what}: {self.label} is called once on symbolic tensors "
                             "that stand for the components of an element, as TF1 traces "
                             "it; Python code that needs their values must be wrapped in "
                             "gf.py_func)")
                raise
        if isinstance(result, list):  # TF1 takes a returned list as a tuple
            result = tuple(result)
        self.template = result
        if allow_dataset and isinstance(result, Dataset):  # flat_map's: no outputs
            self.outputs, self.captures, self.vectorized = [], [], None
            return
        self.outputs = [_as_output(v, what, self.label) for v in flatten(result)]
        self.captures = _captured(self.outputs, self.args)
        self.vectorized = Vectorized.of(self)

    @property
    def types(self):
        return [t.dtype for t in self.outputs]

    @property
    def shapes(self):
        return [t.shape for t in self.outputs]

    def __call__(self, run, element):
        """The outputs for one element (a flat tuple of host arrays)."""
        return _run_graph(run, self.args, self.outputs, self.captures, element)


class Vectorized:
    """A traced function rebuilt over arguments with a leading batch axis."""

    def __init__(self, traced, args, outputs):
        self.traced, self.args, self.outputs = traced, args, outputs

    @classmethod
    def of(cls, traced):
        """The batched copy of ``traced``, or None where rows would not be independent."""
        order = _rowwise_order(traced.outputs, traced.args)
        if order is None:
            return None
        graph = traced.graph
        with graph.name_scope(traced.what.replace(".", "_") + "_batched"):
            copies = {a: _argument(a.dtype, _batched(a.shape), traced.what, graph)
                      for a in traced.args}
            for node in order:
                inputs = [copies.get(i, i) for i in node.inputs]
                copies[node] = apply(node.opdef.name, inputs, name=node.name.split("/")[-1],
                                     **node.attrs)
        return cls(traced, [copies[a] for a in traced.args],
                   [copies[t] for t in traced.outputs])

    def __call__(self, run, batch):
        return _run_graph(run, self.args, self.outputs, self.traced.captures, batch)


def _argument(dtype, shape, what, graph):
    return apply("dataset_function_arg", [], name="arg", graph=graph, what=what,
                 shape=None if shape is None else tuple(shape), dtype=dtype)


def _batched(shape):
    return None if shape is None else TensorShape((None, *shape))


def _as_output(value, what, label):
    if isinstance(value, SparseTensor):
        raise TypeError(f"{what}: {label} returned a SparseTensor; gradflow's data sets hold "
                        "dense elements: return gf.sparse_tensor_to_dense(...) of it (and "
                        "padded_batch to batch them)")
    if isinstance(value, Tensor) and value.opdef.kind == "group":
        raise TypeError(f"{what}: {label} returned the operation '{value.name}', which has "
                        "no value")
    return convert_to_tensor(value)


def _subgraph(outputs, args):
    """The nodes between ``args`` and ``outputs``, inputs first (args excluded)."""
    return [n for n in topological_order(outputs, set(args)) if n not in set(args)]


def _captured(outputs, args):
    """The placeholders and variables of the graph that ``outputs`` read besides ``args``,
    and the arguments of an enclosing function (``flat_map``'s, whose values the run of
    the inner data set holds)."""
    return [n for n in _subgraph(outputs, args)
            if n.opdef.kind in ("placeholder", "variable")
            or n.opdef.name == "dataset_function_arg"]


def _rowwise_order(outputs, args):
    """The nodes that depend on ``args``, in order, if each one maps rows to rows;
    else None."""
    derived = set(args)
    order = []
    for node in _subgraph(outputs, args):
        kind = node.opdef.kind
        if kind in ("random", "call") or node.control_inputs:
            return None  # drawn or called once per element: not once per batch
        if not any(i in derived for i in node.inputs):
            continue
        if not _maps_rows(node, derived):
            return None
        derived.add(node)
        order.append(node)
    return order if all(t in derived for t in outputs) else None


def _maps_rows(node, derived):
    """Whether ``node`` on inputs with a leading batch axis gives the stack of its
    per-element results: an elementwise op whose element inputs have its rank and
    whose other inputs no higher rank (they broadcast from the right)."""
    name = node.opdef.name
    if node.opdef.kind != "compute" or (node.opdef.scalar is None and name not in _ROWWISE):
        return False
    if name == "one_hot" and node.attrs.get("axis", -1) not in (-1, None):
        return False
    if node.shape is None or any(i.shape is None for i in node.inputs):
        return False
    rank = len(node.shape) - (1 if name == "one_hot" else 0)
    for inp in node.inputs:
        if inp in derived and len(inp.shape) != rank:
            return False
        if inp not in derived and len(inp.shape) > rank:
            return False
    return True


def _run_graph(run, args, outputs, captures, arrays):
    host = run.host_session()
    slots = host.resources.setdefault(ARGS, {})
    for arg, value in zip(args, arrays):
        slots[arg] = value
    feeds = {c: run.values[c] for c in captures}
    return tuple(host.run(outputs, feed_dict=feeds, output="native"))


def check_predicate(traced):
    """``filter``'s function must return one scalar bool."""
    out = traced.outputs
    if len(out) != 1 or out[0].dtype is not dtypes.bool_ or \
            (out[0].shape is not None and len(out[0].shape) != 0):
        got = ", ".join(f"{t.dtype.name} {shape_of(t)}" for t in out)
        raise ValueError(f"{traced.what}: the predicate {traced.label} must return a scalar "
                         f"bool tensor, got {got}")
