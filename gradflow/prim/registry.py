"""The one registry of ops, and the function that turns an op into a graph node.

An op is one record: a forward ``impl(xp, *arrays, **attrs)`` written against
the Array API, a shape/dtype rule ``infer(shapes, dtypes, **attrs)`` run when
the node is built, and a gradient rule ``grad(node, g)`` that builds graph
nodes and returns one gradient (or ``None``) per input.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import ml_dtypes
import numpy as np

from gradflow import dtypes
from gradflow.graph import Dimension, Operation, Tensor, get_default_graph
from gradflow.prim import rules

REGISTRY: dict[str, "OpDef"] = {}


@dataclass(frozen=True)
class OpDef:
    """One op: its name, forward, shape/dtype rule, gradient rule and traits.

    ``kind`` tells the executor how a node is evaluated: ``"compute"`` (call
    the impl), ``"call"`` (``impl(run_state, node)`` is called once per plan, ``run_state`` the
    Session's ``gradflow.run_state.RunState``, and returns the callable of the input
    arrays: for ops that need a run's state, such as control flow over sub-graphs,
    queues or host callbacks), or one of the
    stateful kinds it handles itself: ``"placeholder"``, ``"variable"``,
    ``"constant"``, ``"assign"``, ``"random"``, ``"group"``.
    ``lower(xp, **attrs)`` may return a faster callable of the arrays alone.

    Traits, read by the graph compiler, autodiff and the backends (all off by default):

    - ``scalar(args, node)``: the op as a scalar expression for generated elementwise
      kernels (``gradflow.prim.scalar``): an op with one may join a fused group.
    - ``worth_alone``: fused into a kernel of its own even alone (its Array API form
      is more than one library call or allocates a temporary).
    - ``transcendental``: numba evaluates it with a C library call per element, which
      keeps a kernel from vectorizing (``exp``, ``tanh``...).
    - ``shape_only_inputs``: positions of the inputs whose shapes it reads, never their
      values (constant folding may fold it while those inputs are unknown).
    - ``value_shape(values, attrs)``: its output shape from the values of its inputs
      that are known when a plan is compiled (None for the others), where its shape
      rule cannot know it (``batch_zeros``; ``reshape`` and ``fill`` to a shape computed
      from fed shapes); None where those values do not settle it.
    - ``check``: a computed op that exists to check a value at run time (never folded away).
    - ``static_check(shapes)``: for a ``check`` of its inputs' shapes alone, whether
      those static shapes (all known) already pass it: the graph compiler then drops it
      from a plan specialized to them (so a captured plan has no check to make).
    - ``id_check(node)``: for an op that checks integer ids itself (its ``validate``
      attr: ``gather``), ``(input position, size)`` where ``node`` checks that the ids
      there lie in ``[0, size)`` (size None when unknown), else None. A device graph
      cannot raise, so a capture makes that check before each replay and captures the
      op bound with ``validate=False``.
    - ``pass_through``: returns its one input unchanged (common-subexpression elimination
      sees through it).
    - ``shape_noop``: a shape op that does nothing once its output has its first input's
      static shape and dtype (``reshape``, ``unbroadcast``...).
    - ``view``: its result may be a view of its first input's memory (a slice, a
      transpose), as that of ``shape_noop`` and ``pass_through`` ops may: the memory
      plan keeps that input's buffer while the view is read.
    - ``exact_grad``: its gradient rule returns, for every input, an array of that input's
      run-time shape (no ``unbroadcast`` needed).
    - ``broadcasting``: broadcasts its inputs and its gradients have the output's
      run-time shape (autodiff unbroadcasts only where an input may be smaller).
    - ``plan_only``: made only by the graph compiler, in plans (fused groups, LSTM steps),
      never in a user's graph.
    - ``takes_strings``: it accepts ``string`` tensors (host arrays of bytes on every
      backend: ``identity``, ``py_func``, text summaries); any other op refuses them
      when the graph is built.
    - ``takes_complex``: it accepts ``complex64``/``complex128`` inputs, with a forward and a
      gradient that are right for them (TF's convention: the gradient of a real loss with
      respect to ``z`` is ``dL/d(re z) + i dL/d(im z)``); any other op refuses them when
      the graph is built.
    - ``lowerings``: backend name -> ``lower(xp, **attrs)``, the backend's own kernel for
      the op; a backend module adds its own with ``add_lowering`` when imported.
    """

    name: str
    impl: Optional[Callable]
    infer: Callable
    grad: Optional[Callable]
    kind: str = "compute"
    lower: Optional[Callable] = None
    doc: str = field(default="", compare=False)
    # more than one: the value is a tuple, and the plan reads each entry through a
    # ``fused_output`` node (plan-only ops made by the graph compiler)
    outputs: int = 1
    scalar: Optional[Callable] = field(default=None, compare=False)
    worth_alone: bool = False
    transcendental: bool = False
    shape_only_inputs: tuple = ()
    value_shape: Optional[Callable] = field(default=None, compare=False)
    check: bool = False
    static_check: Optional[Callable] = field(default=None, compare=False)
    id_check: Optional[Callable] = field(default=None, compare=False)
    pass_through: bool = False
    shape_noop: bool = False
    view: bool = False
    exact_grad: bool = False
    broadcasting: bool = False
    plan_only: bool = False
    takes_strings: bool = False
    takes_complex: bool = False
    lowerings: dict = field(default_factory=dict, compare=False, repr=False)

    def bind(self, xp, attrs: dict) -> Callable:
        """A callable of the input arrays alone, for the executor's plan."""
        if self.lower is not None:
            return self.lower(xp, **attrs)
        return functools.partial(self.impl, xp, **attrs)


def register(name, impl, infer, *, grad, kind="compute", lower=None, **traits) -> OpDef:
    """Add an op to the registry; ``grad=None`` states that it has no gradient.

    ``traits`` are the ``OpDef`` fields of the same names (``scalar=``, ``outputs=``,
    ``shape_only_inputs=``...; see ``OpDef``)::

        register("cube", lambda xp, x: x * x * x, lambda s, d: (s[0], d[0]),
                 grad=lambda n, g: [g * 3.0 * n.inputs[0] * n.inputs[0]],
                 scalar=lambda args, node: f"({args[0]} * {args[0]} * {args[0]})")
    """
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    if kind in ("compute", "call") and impl is None:
        raise ValueError(f"op {name!r} needs a forward impl")
    op = OpDef(name, impl, infer, grad, kind, lower, **traits)
    REGISTRY[name] = op
    return op


def add_lowering(op_name: str, backend: str, lower: Callable) -> None:
    """Give the registered op ``op_name`` its own kernel on the backend named ``backend``:
    ``lower(xp, **attrs)`` returns the callable of the input arrays, used in place of the
    op's impl there. Backend modules call this when imported (ops never import them)::

        add_lowering("matmul", "numpy", lower_matmul)
    """
    REGISTRY[op_name].lowerings[backend] = lower


class OpError(ValueError):
    """A node could not be built: wrong shapes, dtypes or arguments."""


def _describe_inputs(inputs) -> str:
    parts = []
    for t in inputs:
        shape = tuple(t.shape) if t.shape is not None else "none"
        dt = t.dtype.name if t.dtype is not None else "none"
        parts.append(f"'{t.name}' {shape} {dt}")
    return ", ".join(parts) if parts else "no inputs"


def _refuse_complex(op_name, inputs, source):
    for t in inputs:
        if getattr(getattr(t, "dtype", None), "is_complex", False):
            raise TypeError(f"{op_name}: '{t.name}' is a {t.dtype.name} tensor, and {op_name} "
                            "does not take complex tensors in gradflow (those that do: complex, "
                            "real, imag, conj, abs, angle, the Fourier transforms, cast, "
                            f"reduce_sum, +, -, *, reshapes and concat); at {source}")


def apply(op_name: str, inputs, name=None, *, graph=None, **attrs) -> Tensor:
    """Build a node of ``op_name`` over ``inputs`` (tensors) in their graph.

    Inputs that must share a dtype and do not are an error naming both (tensors
    never promote, as in TF1), unless the odd ones are placeholders made without
    a dtype: those are converted to the dtype of the others (see ``weak_cast``).
    """
    opdef = REGISTRY[op_name]
    graph = graph if graph is not None else _graph_of(inputs, op_name)
    source = graph.source_line()
    attrs = {k: _plain_dims(v) for k, v in attrs.items()}
    inputs = list(inputs)
    control_inputs = graph.current_control_inputs()
    if control_inputs:
        inputs = _read_after_assigns(inputs, control_inputs)
    if not opdef.takes_strings:
        for t in inputs:
            if getattr(t, "dtype", None) is dtypes.string:
                raise TypeError(f"{op_name}: '{t.name}' is a string tensor, and gradflow's "
                                "strings are values only: fetch them, or work on them in "
                                f"a py_func; at {source}")
    if not opdef.takes_complex:
        _refuse_complex(op_name, inputs, source)
    try:
        try:
            shape, dtype = _infer(opdef, inputs, attrs)
        except rules.DTypeMismatch as err:
            converted = _convert_weak(inputs, err)
            if converted is None:
                raise
            inputs = converted
            shape, dtype = _infer(opdef, inputs, attrs)
    except rules.DTypeMismatch as err:
        raise TypeError(_mismatch_message(op_name, inputs, err, source)) from None
    except (ValueError, TypeError, IndexError) as err:
        kind = TypeError if isinstance(err, TypeError) else OpError
        raise kind(f"{op_name}: {err}; inputs: {_describe_inputs(inputs)}; "
                   f"at {source}") from None
    node_cls = Operation if opdef.kind == "group" else Tensor
    control = tuple(c for c in control_inputs if c not in inputs)
    node = node_cls(graph, opdef, inputs, attrs, shape, dtype,
                    graph.unique_name(name or op_name), source, control)
    return graph.add_node(node)


def _plain_dims(value):
    """``value`` with the ``Dimension`` ints of static shapes made plain ints: attributes
    reach the backends, and array_api_strict takes no int subclass."""
    if isinstance(value, Dimension):
        return int(value)
    if type(value) in (tuple, list) and any(isinstance(v, (Dimension, tuple, list))
                                            for v in value):
        return type(value)(_plain_dims(v) for v in value)
    return value


def _assigns_in(control_inputs) -> dict:
    """``{variable: assign node}`` for the assignments among ``control_inputs``,
    looking through groups (their inputs) and every node's control inputs; the
    later of two assignments to one variable wins."""
    found, seen = {}, set()
    stack = list(reversed(list(control_inputs)))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        kind = node.opdef.kind
        if kind == "assign":
            found[node.attrs["var"]] = node
        nested = list(node.control_inputs)
        if kind == "group":
            nested = list(node.inputs) + nested
        stack.extend(reversed(nested))
    return found


def _read_after_assigns(inputs, control_inputs) -> list:
    """``inputs`` with each variable that one of ``control_inputs`` assigns replaced by
    that assignment, whose value is the new value: TF1 reads a variable after the
    assignments its reader depends on, while gradflow writes them at the end of the
    run (``with gf.control_dependencies([v.assign(3.0)]): y = gf.identity(v)`` is 3)."""
    if not any(t.opdef.kind == "variable" for t in inputs):
        return inputs
    assigned = _assigns_in(control_inputs)
    return [assigned.get(t, t) if t.opdef.kind == "variable" else t for t in inputs]


def _infer(opdef, inputs, attrs):
    """``(shape, dtype)`` of a node of ``opdef`` over ``inputs``, from its rule.

    An input of unknown rank (static shape ``None``) gives the node every static
    fact its rule can still state: a rule that passes shapes through (``cast``,
    the unary ops, ``unbroadcast`` to a variable) keeps them; one that needs the
    rank leaves the shape unknown, as TF1's shape inference does.
    """
    shapes = [t.shape for t in inputs]
    in_dtypes = [t.dtype for t in inputs]
    if opdef.kind != "compute" or all(s is not None for s in shapes):
        return opdef.infer(shapes, in_dtypes, **attrs)
    try:
        return opdef.infer(shapes, in_dtypes, **attrs)
    except rules.DTypeMismatch:
        raise
    except (ValueError, TypeError, IndexError, AttributeError):
        # The rule needs ranks; a genuine dtype error shows up again below.
        return None, _unknown_rank_dtype(opdef, shapes, in_dtypes, attrs)


def _unknown_rank_dtype(opdef, shapes, in_dtypes, attrs):
    """The dtype of a node whose input has unknown rank (its shape stays unknown): the
    rule's, at the first ranks it accepts for those inputs (sizes unknown; top_k needs
    rank 1 or more, in_top_k a matrix and a vector)."""
    unknown = [k for k, s in enumerate(shapes) if s is None]
    for ranks in itertools.islice(itertools.product(range(5), repeat=len(unknown)), 200):
        filled = list(shapes)
        for k, rank in zip(unknown, ranks):
            filled[k] = (None,) * rank
        try:
            return opdef.infer(filled, in_dtypes, **attrs)[1]
        except (ValueError, IndexError):
            continue
    return in_dtypes[0]


def is_weak(t) -> bool:
    """Whether ``t`` is a placeholder made without a dtype (float32, weakly typed)."""
    return t.opdef.kind == "placeholder" and bool(t.attrs.get("weak"))


def _convert_weak(inputs, err):
    """``inputs`` with the dtype-less placeholders among ``err.positions`` converted
    to the one dtype the other inputs there share, or None if that does not apply."""
    weak = [i for i in err.positions if is_weak(inputs[i])]
    strong = {inputs[i].dtype for i in err.positions if i not in weak}
    if not weak or len(strong) != 1:
        return None
    target = strong.pop()
    if target.is_bool:
        return None
    other = next(inputs[i] for i in err.positions if i not in weak)
    return [weak_cast(t, target, other) if i in weak and t.dtype is not target else t
            for i, t in enumerate(inputs)]


def weak_cast(x, dtype, other=None):
    """The dtype-less placeholder ``x`` as ``dtype``, checked at run time to convert exactly.

    ``placeholder()`` without a dtype is float32 but weakly typed, like a Python
    number: where it meets a tensor of another numeric dtype (``other``) in an op
    whose inputs must share a dtype, it becomes that dtype through this node.
    Values are fed as float32 first, so integers are exact up to 2**24.
    """
    dtype = dtypes.as_dtype(dtype)
    with_other = f", with '{other.name}'" if other is not None else ""
    message = (f"placeholder '{x.name}' (created at {x.source}) has no dtype of its own and "
               f"is used as {dtype.name} here{with_other}, but the value fed to it has "
               f"elements{{example}} that {dtype.name} cannot hold exactly; feed "
               f"{'whole numbers in range' if dtype.is_integer else 'values in range'}, or "
               f"give the placeholder its dtype: gf.placeholder(gf.{dtype.name})")
    return apply("weak_cast", [x], name=x.name + "/Cast", dtype=dtype, message=message)


def _mismatch_message(op_name, inputs, err, source) -> str:
    a, b = inputs[err.first], inputs[err.other]
    kinds = "" if a.dtype.kind == b.dtype.kind else \
        " (the Array API does not promote across kinds either)"
    return (f"{op_name}: its inputs must have the same dtype, but '{a.name}' is "
            f"{a.dtype.name} (created at {a.source}) and '{b.name}' is {b.dtype.name} "
            f"(created at {b.source}); tensors do not promote (TF1 semantics){kinds}: "
            f"use gf.cast to convert one of them; at {source}")


def _graph_of(inputs, op_name):
    graph = None
    for t in inputs:
        if graph is None:
            graph = t.graph
        elif t.graph is not graph:
            raise ValueError(f"{op_name}: inputs come from different graphs "
                             f"('{t.name}' is not in the graph of the others)")
    return graph if graph is not None else get_default_graph()


# -- turning Python values into tensors ---------------------------------------

class HostValue:
    """A constant's value as a read-only NumPy array, hashed by identity."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        array = np.array(array, copy=True)
        array.flags.writeable = False
        self.array = array

    def __repr__(self) -> str:
        return f"HostValue(shape={self.array.shape}, dtype={self.array.dtype})"


def _python_default_dtype(value):
    """TF1's dtype for a Python value: float32 for floats, int32 for ints that fit."""
    array = np.asarray(value)
    if dtypes.numpy_kind(array.dtype) == "f":
        return dtypes.float32 if array.dtype.kind == "f" else dtypes.as_dtype(array.dtype)
    if array.dtype.kind in "iu":
        fits = array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)
        return dtypes.int32 if fits else dtypes.int64
    return dtypes.as_dtype(array.dtype)


def _is_text(value) -> bool:
    """Whether ``value`` is text or bytes, or an array or nested list of them."""
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "SU" or (value.dtype == object and value.size > 0 and
                                             isinstance(value.flat[0], (str, bytes)))
    return isinstance(value, (str, bytes))


def filled_to_shape(array, shape, what):
    """``array`` laid out as ``shape`` by TF1's rule for ``constant(value, shape=)`` and
    ``constant_initializer``: its elements in row-major order, the last one repeated to
    fill what remains (one value fills everything); more elements than ``shape`` holds
    is an error."""
    shape = tuple(int(d) for d in shape)
    flat = np.asarray(array).reshape(-1)
    size = math.prod(shape)
    if flat.size > size or (flat.size == 0 and size):
        raise ValueError(f"{what}: {flat.size} values for shape {shape}, which holds {size}")
    if flat.size < size:
        flat = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)])
    return flat.reshape(shape)


def constant(value, dtype=None, shape=None, name=None, *, _graph=None) -> Tensor:
    """A constant tensor (TF1 ``tf.constant``); Python floats default to float32."""
    if isinstance(value, Tensor):
        raise TypeError(f"constant() takes a value, not the tensor '{value.name}'")
    if _is_text(value) or (dtype is not None and dtypes.as_dtype(dtype) is dtypes.string):
        dtype = dtypes.string
        array = dtypes.bytes_array(value)  # a host value on every backend, as TF1's strings
    else:
        if dtype is None:
            if isinstance(value, np.ndarray) or isinstance(value, np.generic):
                dtype = dtypes.as_dtype(value.dtype)
            else:
                dtype = _python_default_dtype(value)
        dtype = dtypes.as_dtype(dtype)
        array = np.asarray(value)
        if dtypes.numpy_kind(array.dtype) not in "biufc":
            raise TypeError(f"constant: cannot make a tensor from {type(value).__name__} "
                            f"with NumPy dtype {array.dtype}")
        with np.errstate(over="ignore"):  # TF1: 1e5 as float16 is inf, silently
            array = array.astype(dtype.as_numpy_dtype)
    if shape is not None:
        array = filled_to_shape(array, shape, "constant")
    return apply("constant", [], name=name or "Const", value=HostValue(array),
                 dtype=dtype, graph=_graph or get_default_graph())


def convert_to_tensor(value, dtype=None, like: Tensor | None = None, name=None) -> Tensor:
    """A tensor for ``value``; a value that is not a tensor takes the dtype of ``like``.

    Python numbers, lists and NumPy arrays are weakly typed beside a tensor (TF1
    converts them to the tensor's dtype): ``x * 2`` and ``x_f32 + np.ones(3)`` keep
    the dtype of ``x``. The conversion must keep the values: a float with an
    integer tensor, an integer out of the tensor's range, or one a float dtype
    cannot hold exactly is a TypeError. Two tensors never convert (see ``apply``).
    """
    if isinstance(value, Tensor):
        if isinstance(value, Operation):
            raise TypeError(f"'{value.name}' is an operation ({value.type}) and has no "
                            "value to use as a tensor")
        if dtype is not None and value.dtype is not dtypes.as_dtype(dtype):
            raise TypeError(f"expected a {dtypes.as_dtype(dtype).name} tensor, got "
                            f"'{value.name}' of dtype {value.dtype.name}")
        return value
    if hasattr(value, "_as_graph_tensor"):
        return value._as_graph_tensor()
    if CONVERSIONS:  # TF1's register_tensor_conversion_function (gradflow.framework)
        converted = _registered_conversion(value, dtype, name)
        if converted is not None:
            return converted
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return _packed(value, dtype, name or "packed")
    if dtype is None and like is not None and like.dtype is not None:
        dtype = _weak_dtype(value, like)
    return constant(value, dtype=dtype, name=name, _graph=like.graph if like is not None else None)


# (priority, order registered, base type, function) of the user's conversions, sorted
CONVERSIONS: list = []


def _registered_conversion(value, dtype, name):
    """The tensor the first registered conversion of ``value``'s type gives, or None."""
    for _, _, base_type, function in CONVERSIONS:
        if isinstance(value, base_type):
            result = function(value, dtype=dtype, name=name, as_ref=False)
            if result is not NotImplemented:
                if not isinstance(result, Tensor):
                    raise TypeError(f"the conversion function {function!r} of "
                                    f"{type(value).__name__} returned {result!r}, not a "
                                    "tensor")
                return convert_to_tensor(result, dtype=dtype)
    return None
def _holds_tensor(value) -> bool:
    """Whether the (nested) list or tuple ``value`` holds a tensor anywhere."""
    return any(isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor")
               or (isinstance(v, (list, tuple)) and _holds_tensor(v)) for v in value)


def _first_tensor(value) -> Tensor:
    """The first tensor of the (nested) list or tuple ``value``, depth first."""
    for v in value:
        if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor"):
            return convert_to_tensor(v)
        if isinstance(v, (list, tuple)) and _holds_tensor(v):
            return _first_tensor(v)
    raise ValueError("no tensor in the list")


def _packed(value, dtype, name) -> Tensor:
    """TF1's packing of a (nested) list that holds tensors, such as ``[x[0], x[1] * 2]``
    or ``[[a, 0.0], [0.0, b]]``: the elements stacked along a new first axis. Python
    numbers beside the tensors take their dtype (when it keeps their value); tensors of
    different dtypes are an error, as in TF1."""
    like = _first_tensor(value)
    parts = []
    for v in value:
        if isinstance(v, (list, tuple)) and _holds_tensor(v):
            part = _packed(v, dtype, None)
        else:
            part = convert_to_tensor(v, dtype=dtype, like=like)
        if part.dtype is not like.dtype and dtype is None:
            raise TypeError(f"a list packed into a tensor holds '{like.name}' of dtype "
                            f"{like.dtype.name} and '{part.name}' of dtype {part.dtype.name}")
        parts.append(part)
    if len(parts) == 1:
        return apply("expand_dims", parts, axes=(0,), name=name)
    parts = [apply("expand_dims", [part], axes=(0,)) for part in parts]
    return apply("concat", parts, axis=0, name=name)


def _weak_dtype(value, like):
    """The dtype ``value`` (not a tensor) takes beside the tensor ``like``, or None."""
    like_dtype = like.dtype
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - constant() says what is wrong with it
        return None
    kind = dtypes.numpy_kind(array.dtype)
    if isinstance(value, float):
        what = f"the Python float {value!r}"
    elif isinstance(value, (bool, int)):
        what = f"the Python int {value!r}"
    else:
        what = f"the {type(value).__name__} value of dtype {array.dtype} and shape {array.shape}"
    if kind == "b":
        return like_dtype if like_dtype.is_bool else dtypes.bool_
    if like_dtype.is_complex and kind in "iufc":
        return like_dtype
    if kind not in "iuf" or like_dtype.is_bool:
        return dtypes.int32 if isinstance(value, int) and like_dtype.is_bool else None
    if kind == "f":
        if like_dtype.is_floating:
            return like_dtype
        raise TypeError(f"cannot combine {what} with a {like_dtype.name} tensor ('{like.name}'); "
                        "use gf.cast first")
    if array.size and like_dtype.is_integer and \
            (array.min() < like_dtype.min or array.max() > like_dtype.max):
        raise TypeError(f"{what} does not fit in {like_dtype.name}, the dtype of "
                        f"'{like.name}'; use gf.cast first")
    if array.size and like_dtype.is_floating and not _exact_in_float(array, like_dtype):
        raise TypeError(f"{what} has integers that {like_dtype.name}, the dtype of "
                        f"'{like.name}', cannot hold exactly; use gf.cast first")
    return like_dtype


def _exact_in_float(array, dtype) -> bool:
    """Whether every integer of ``array`` is exactly representable in float ``dtype``."""
    # every integer up to this is exact
    limit = 2 ** (ml_dtypes.finfo(dtype.as_numpy_dtype).nmant + 1)
    big = array[np.abs(array.astype(np.float64)) > limit]
    to = dtype.as_numpy_dtype
    with np.errstate(over="ignore"):
        converted = [(int(v), to(int(v))) for v in big.ravel()]
    return all(np.isfinite(f) and int(f) == v for v, f in converted)
