"""The primitives of TF1's ``TensorArray`` (``gradflow.ops.tensor_array_ops``).

A TensorArray is a list of arrays that lives for one run. Its *handle* is the value of
a ``tensor_array`` node (kind ``"call"``, dtype ``variant``): a fresh ``Storage`` each
time the node runs. Its *flow* is a float32 scalar that orders the operations on it,
as in TF1: every write returns a new flow, every read takes the flow of the writes it
must see. The flow carries no number (it is always 0), but, being a float tensor, it
takes part in differentiation like any value: a ``while_loop`` or ``cond`` carries a
TensorArray as its flow, and the gradient walker sends gradients along flows.

Gradients follow TF1's design. The gradient of a TensorArray is another TensorArray
(``tensor_array_grad``, one per forward array and per ``gradients`` call, found
through the forward array's storage), whose writes add up and whose reads take the
value out (a slot read once is empty again). The gradient of a read is a write of the
incoming gradient into the gradient array; the gradient of a write is a read of it
(zeros where nothing was written); stack and unstack, gather and scatter, concat and
split pair up the same way. Taking values out when they are read makes the gradient
right when a ``while_loop`` walks its iterations backwards once per output that
receives a gradient: each contribution is used by exactly one of those walks.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import VARIANT, declared
from gradflow.prim.registry import apply, register


class Storage:
    """The elements of one TensorArray in one run."""

    def __init__(self, name, dtype, size, dynamic_size, clear_after_read, element_shape,
                 infer_shape, forward=None):
        self.name = name
        self.dtype = dtype
        self.items: list = [None] * size
        self.cleared: set = set()
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.element_shape = element_shape  # a static shape (None entries unknown) or None
        self.infer_shape = infer_shape
        self.shapes: dict = {}  # index -> the shape of the array written there
        self.forward = forward  # the forward array of a gradient array, else None
        self.grads: dict = {}  # source -> the gradient array of that gradients call

    @property
    def root(self):
        """The forward array this one is a gradient of (of a gradient...), or itself."""
        where = self
        while where.forward is not None:
            where = where.forward
        return where

    @property
    def accumulates(self) -> bool:
        return self.forward is not None

    def grad(self, source):
        """The gradient array of this one for the ``gradients`` call ``source``."""
        found = self.grads.get(source)
        if found is None:
            found = self.grads[source] = Storage(
                f"{self.name}_grad_{source}", self.dtype, len(self.items), True, False,
                self.element_shape, False, forward=self)
        return found

    def _known_shape(self, index):
        """The shape of element ``index`` when nothing is there: what was written there
        (a gradient array: in its forward array), else the element shape if known."""
        where = self.root
        if index in where.shapes:
            return where.shapes[index]
        shape = where.element_shape
        if shape is not None and None not in shape:
            return tuple(shape)
        if where.shapes:
            return next(iter(where.shapes.values()))
        return None

    def write(self, index, value, node):
        if index < 0:
            raise InvalidArgumentError(f"TensorArray '{self.name}': '{node.name}' tried to "
                                       f"write to index {index}")
        if index >= len(self.items):
            if not self.dynamic_size:
                raise InvalidArgumentError(
                    f"TensorArray '{self.name}': '{node.name}' tried to write to index "
                    f"{index} but the array is not resizeable and its size is "
                    f"{len(self.items)}")
            self.items.extend([None] * (index + 1 - len(self.items)))
        shape = tuple(value.shape)
        if self.infer_shape and not self.accumulates:
            self._check_shape(index, shape, node)
        old = self.items[index]
        if old is not None and self.accumulates:
            value = old + value
        elif (old is not None or index in self.cleared) and not self.accumulates:
            raise InvalidArgumentError(
                f"TensorArray '{self.name}': '{node.name}' could not write to index {index} "
                "because it has already been written to")
        self.items[index] = value
        if not self.accumulates:
            self.shapes[index] = shape

    def _check_shape(self, index, shape, node):
        known = self.element_shape
        seen = next(iter(self.shapes.values())) if self.shapes else None
        for want in (known, seen):
            if want is not None and (len(want) != len(shape) or any(
                    w is not None and w != s for w, s in zip(want, shape))):
                raise InvalidArgumentError(
                    f"TensorArray '{self.name}': '{node.name}' could not write to index "
                    f"{index}: the value's shape {shape} is incompatible with the element "
                    f"shape {tuple(want)} (consider infer_shape=False)")

    def read(self, index, make_zeros, node, clear=True):
        if index < 0 or index >= len(self.items):
            raise InvalidArgumentError(
                f"TensorArray '{self.name}': '{node.name}' tried to read from index {index} "
                f"but the array's size is {len(self.items)}")
        value = self.items[index]
        if value is None:
            if index in self.cleared:
                raise InvalidArgumentError(
                    f"TensorArray '{self.name}': '{node.name}' could not read index {index} "
                    "twice because it was cleared after a previous read (perhaps try "
                    "setting clear_after_read=False?)")
            shape = self._known_shape(index)
            if shape is None:
                raise InvalidArgumentError(
                    f"TensorArray '{self.name}': '{node.name}' could not read from index "
                    f"{index}: nothing was written there and the element shape is not "
                    "fully defined")
            return make_zeros(shape)
        if self.accumulates:
            self.items[index] = None  # a gradient's contribution is used once
        elif clear and self.clear_after_read:
            self.items[index] = None
            self.cleared.add(index)
        return value


# -- runtime helpers ------------------------------------------------------------------


def _tools(run, dtype=None):
    """``(int of a host scalar, zeros of a shape, a new flow)`` on the run's backend."""
    backend = run.backend
    to_numpy = backend.to_numpy
    np_dtype = None if dtype is None else dtype.as_numpy_dtype

    def zeros(shape):
        return backend.asarray(np.zeros(shape, np_dtype))

    def flow():
        return backend.asarray(np.zeros((), np.float32))

    return (lambda a: int(to_numpy(a))), zeros, flow


def _indices(run, indices, node):
    host = np.asarray(run.backend.to_numpy(indices))
    if host.ndim != 1:
        raise InvalidArgumentError(f"'{node.name}': the indices must be a vector, got shape "
                                   f"{host.shape}")
    return [int(i) for i in host]


def _stacked(xp, values, zeros, count_shape, node):
    if values:
        return xp.stack(values, axis=0)
    if count_shape is None:
        raise InvalidArgumentError(f"'{node.name}': the TensorArray is empty and its element "
                                   "shape is not fully defined")
    return zeros((0, *count_shape))


# -- creation and gradient arrays -----------------------------------------------------


def _create_impl(run, node):
    a = node.attrs
    as_int = _tools(run)[0]

    def create(size):
        n = as_int(size)
        if n < 0:
            raise InvalidArgumentError(f"TensorArray '{a['label']}': the size must be at "
                                       f"least 0, got {n}")
        return Storage(a["label"], a["dtype"], n, a["dynamic_size"], a["clear_after_read"],
                       a["element_shape"], a["infer_shape"])

    return create


def _grad_impl(run, node):
    source = node.attrs["source"]
    return lambda handle, flow: handle.grad(source)


def _variant_infer(shapes, in_dtypes, **_):
    return None, VARIANT


register("tensor_array", _create_impl, _variant_infer, grad=None, kind="call")
register("tensor_array_grad", _grad_impl, _variant_infer, grad=None, kind="call")


def grad_source(graph) -> str:
    """Which ``gradients`` call a gradient is built in: the name scope up to its first
    part that starts with ``gradients`` (each call opens its own), else the whole scope."""
    parts = list(graph._scope)
    for k, part in enumerate(parts):
        if part.startswith("gradients"):
            return "/".join(parts[:k + 1])
    return "/".join(parts)


def _grad_array(node, flow):
    handle = node.inputs[0]
    return apply("tensor_array_grad", [handle, flow], name="TensorArrayGrad",
                 source=grad_source(handle.graph))


def _floating(t) -> bool:
    return t.dtype is not None and t.dtype.is_floating


def _flow_infer(shapes, in_dtypes, **_):
    return (), dtypes.float32


# -- element by element ---------------------------------------------------------------


def _write_impl(run, node):
    as_int, _, flow = _tools(run)

    def write(handle, index, value, _flow):
        handle.write(as_int(index), value, node)
        return flow()

    return write


def _read_impl(run, node):
    as_int, zeros, _ = _tools(run, node.attrs["dtype"])
    return lambda handle, index, _flow: handle.read(as_int(index), zeros, node)


def _write_grad(node, g):
    value = node.inputs[2]
    if not _floating(value):
        return [None, None, None, g]
    gh = _grad_array(node, node.inputs[3])
    dv = apply("tensor_array_read", [gh, node.inputs[1], g], name="TensorArrayRead",
               dtype=value.dtype, shape=value.shape)
    return [None, None, dv, g]


def _read_grad(node, g):
    flow = node.inputs[2]
    gh = _grad_array(node, flow)
    return [None, None, apply("tensor_array_write", [gh, node.inputs[1], g, flow],
                              name="TensorArrayWrite")]


register("tensor_array_write", _write_impl, _flow_infer, grad=_write_grad, kind="call")
register("tensor_array_read", _read_impl, declared, grad=_read_grad, kind="call")


# -- many elements: gather/scatter, stack/unstack ---------------------------------------


def _gather_impl(run, node):
    _, zeros, _ = _tools(run, node.attrs["dtype"])
    xp = run.backend.xp
    elem = node.attrs["shape"][1:] if node.attrs["shape"] is not None else None
    known = tuple(elem) if elem is not None and None not in elem else None

    def gather(handle, indices, _flow):
        picked = [handle.read(i, zeros, node, clear=False) for i in _indices(run, indices, node)]
        return _stacked(xp, picked, zeros, known, node)

    return gather


def _stack_impl(run, node):
    _, zeros, _ = _tools(run, node.attrs["dtype"])
    xp = run.backend.xp
    elem = node.attrs["shape"][1:] if node.attrs["shape"] is not None else None
    known = tuple(elem) if elem is not None and None not in elem else None

    def stack(handle, _flow):
        picked = [handle.read(i, zeros, node, clear=False) for i in range(len(handle.items))]
        return _stacked(xp, picked, zeros, known or handle._known_shape(0), node)

    return stack


def _scatter_impl(run, node):
    _, _, flow = _tools(run)

    def scatter(handle, indices, value, _flow):
        where = _indices(run, indices, node)
        if len(where) != value.shape[0]:
            raise InvalidArgumentError(f"'{node.name}': {len(where)} indices for "
                                       f"{value.shape[0]} rows of the value")
        for k, i in enumerate(where):
            handle.write(i, value[k, ...], node)
        return flow()

    return scatter


def _unstack_impl(run, node):
    _, _, flow = _tools(run)

    def unstack(handle, value, _flow):
        for k in range(value.shape[0]):
            handle.write(k, value[k, ...], node)
        return flow()

    return unstack


def _gather_grad(node, g):
    flow = node.inputs[2]
    gh = _grad_array(node, flow)
    return [None, None, apply("tensor_array_scatter", [gh, node.inputs[1], g, flow],
                              name="TensorArrayScatter")]


def _scatter_grad(node, g):
    value = node.inputs[2]
    if not _floating(value):
        return [None, None, None, g]
    gh = _grad_array(node, node.inputs[3])
    dv = apply("tensor_array_gather", [gh, node.inputs[1], g], name="TensorArrayGather",
               dtype=value.dtype, shape=value.shape)
    return [None, None, dv, g]


def _stack_grad(node, g):
    flow = node.inputs[1]
    gh = _grad_array(node, flow)
    return [None, apply("tensor_array_unstack", [gh, g, flow], name="TensorArrayUnstack")]


def _unstack_grad(node, g):
    value = node.inputs[1]
    if not _floating(value):
        return [None, None, g]
    gh = _grad_array(node, node.inputs[2])
    dv = apply("tensor_array_stack", [gh, g], name="TensorArrayStack", dtype=value.dtype,
               shape=value.shape)
    return [None, dv, g]


register("tensor_array_gather", _gather_impl, declared, grad=_gather_grad, kind="call")
register("tensor_array_scatter", _scatter_impl, _flow_infer, grad=_scatter_grad, kind="call")
register("tensor_array_stack", _stack_impl, declared, grad=_stack_grad, kind="call")
register("tensor_array_unstack", _unstack_impl, _flow_infer, grad=_unstack_grad, kind="call")


# -- concat and split along the elements' first axis -------------------------------------


def _concat_impl(run, node):
    _, zeros, _ = _tools(run, node.attrs["dtype"])
    xp = run.backend.xp
    shape = node.attrs["shape"]
    rest = tuple(shape[1:]) if shape is not None and None not in shape[1:] else None

    def concat(handle, _flow):
        picked = [handle.read(i, zeros, node, clear=False) for i in range(len(handle.items))]
        if picked:
            return xp.concat(picked, axis=0)
        if rest is None:
            raise InvalidArgumentError(f"'{node.name}': the TensorArray is empty and its "
                                       "element shape is not fully defined")
        return zeros((0, *rest))

    return concat


def _split_impl(run, node):
    _, _, flow = _tools(run)

    def split(handle, value, lengths, _flow):
        sizes = [int(n) for n in np.asarray(run.backend.to_numpy(lengths)).reshape(-1)]
        if sum(sizes) != value.shape[0] or min(sizes, default=0) < 0:
            raise InvalidArgumentError(f"'{node.name}': the lengths {sizes} do not split the "
                                       f"{value.shape[0]} rows of the value")
        start = 0
        for k, n in enumerate(sizes):
            handle.write(k, value[start:start + n, ...], node)
            start += n
        return flow()

    return split


def _lengths_impl(run, node):
    backend = run.backend

    def lengths(handle, _flow):
        where = handle.root
        sizes = [where.shapes[i][0] if i in where.shapes else 0 for i in range(len(where.items))]
        return backend.asarray(np.asarray(sizes, np.int32))

    return lengths


def _size_impl(run, node):
    backend = run.backend
    return lambda handle, _flow: backend.asarray(np.asarray(len(handle.items), np.int32))


def _concat_grad(node, g):
    handle, flow = node.inputs
    gh = _grad_array(node, flow)
    lengths = apply("tensor_array_lengths", [handle, flow], name="TensorArrayLengths")
    return [None, apply("tensor_array_split", [gh, g, lengths, flow], name="TensorArraySplit")]


def _split_grad(node, g):
    value = node.inputs[1]
    if not _floating(value):
        return [None, None, None, g]
    gh = _grad_array(node, node.inputs[3])
    dv = apply("tensor_array_concat", [gh, g], name="TensorArrayConcat", dtype=value.dtype,
               shape=value.shape)
    return [None, dv, None, g]


def _int_vector(shapes, in_dtypes, **_):
    return (None,), dtypes.int32


def _int_scalar(shapes, in_dtypes, **_):
    return (), dtypes.int32


register("tensor_array_concat", _concat_impl, declared, grad=_concat_grad, kind="call")
register("tensor_array_split", _split_impl, _flow_infer, grad=_split_grad, kind="call")
register("tensor_array_lengths", _lengths_impl, _int_vector, grad=None, kind="call")
register("tensor_array_size", _size_impl, _int_scalar, grad=None, kind="call")
