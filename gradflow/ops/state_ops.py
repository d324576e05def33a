"""Placeholders, constants, variables, assignments, groups and random ops: TF1's
functions over the primitives of ``gradflow.prim.state``.

These are the ops with ``kind`` other than ``"compute"``: the executor gives
them their values (feeds, the session's variable store, host random numbers).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape, get_default_graph, user_source_line
from gradflow.ops.math_ops import add, multiply, subtract
from gradflow.prim import state as _prim
from gradflow.prim.index import as_index
from gradflow.prim.registry import (
    apply,
    constant,
    convert_to_tensor,
    is_weak,
    weak_cast,  # noqa: F401 - TF1-era home of the builder
)
from gradflow.prim.shape import fill
from gradflow.prim.state import compatible as _compatible
from gradflow.prim.state import read_current
from gradflow.prim.state import static_shape as _static_shape


def ensure_shape(x, shape, name=None):
    """``x``, checked at run time to have ``shape`` (``None`` = any size), TF1's
    ``tf.ensure_shape``. Its static shape is ``shape`` merged with ``x``'s."""
    x = convert_to_tensor(x)
    shape = _static_shape(shape, "ensure_shape")
    if shape is None:
        raise ValueError("ensure_shape: give a shape (a list of ints or None)")
    message = (f"'{x.name}' has shape {{actual}} at run time, expected {shape} "
               f"(None = any size); ensure_shape created at {user_source_line()}")
    return apply("ensure_shape", [x], name=name or "EnsureShape", shape=shape, message=message)


def set_shape(tensor, shape):
    """TF1's ``Tensor.set_shape``: declare sizes of ``tensor`` that shape inference
    could not know (a ``py_func``'s result, a slice with tensor bounds), for the ops
    built from it.

    The static shape becomes ``shape`` merged with the known one; a shape that
    contradicts it is a ``ValueError`` at once. Where the merge adds a size, the
    declaration is also checked at run time, as ``ensure_shape`` does, so that a wrong
    one fails naming this line instead of giving wrong numbers: ``tensor`` becomes the
    check of a copy of its node (``<name>/unchecked``), and the ops that already read
    it read the checked value. A placeholder's feeds are checked against its shape
    anyway: its shape is refined in place.

    >>> y = gf.py_func(np.sort, [x], gf.float32)
    >>> y.set_shape([None, 10])
    """
    claimed = _static_shape(shape, "set_shape")
    if tensor.opdef.kind == "group":
        raise TypeError(f"set_shape: '{tensor.name}' is an operation, which has no shape")
    current = tensor.shape
    if not _compatible(current, claimed):
        raise ValueError(f"set_shape: '{tensor.name}' has shape {tuple(current)}, "
                         f"which {tuple(claimed)} contradicts")
    if claimed is None:
        return
    merged = claimed if current is None else tuple(
        c if h is None else int(h) for h, c in zip(current, claimed))
    if current is not None and merged == tuple(current):
        return  # nothing new
    graph = tensor.graph
    if tensor.opdef.kind == "placeholder":
        tensor.shape = TensorShape(merged)
        tensor.attrs = {**tensor.attrs, "shape": merged}
        return
    inner = object.__new__(type(tensor))  # the node as it was, where it was
    inner.__dict__.update(tensor.__dict__)
    graph.nodes[tensor.index] = inner
    source = user_source_line()
    message = (f"'{tensor.name}' has shape {{actual}} at run time, but set_shape at "
               f"{source} declared {merged} (None = any size)")
    with graph.name_scope(None), graph.control_dependencies(None):
        inner.name = graph.unique_name(f"{tensor.name}/unchecked")
        checked = apply("ensure_shape", [inner], name=f"{tensor.name}/set_shape",
                        shape=merged, message=message)
    name = tensor.name
    tensor.__dict__.update(checked.__dict__)
    tensor.name = name
    graph.nodes[checked.index] = tensor



def placeholder(dtype=None, shape=None, name=None):
    """A value fed at run time through ``feed_dict`` (dtype defaults to float32).

    ``shape=None`` accepts any shape; ``None`` in a shape accepts any size.
    Without a dtype the placeholder is float32 but weakly typed, like a Python
    number: combined with a tensor of another numeric dtype (``matmul(A_int32, x)``)
    it is converted to that dtype, and a fed value that does not convert exactly
    (1.5 for an int32) is a run-time error naming the placeholder. With a dtype
    (``placeholder(gf.float32)``) it is strict, as every other tensor.
    """
    return _prim.placeholder(dtype, shape, name)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """A tensor that is ``input`` unless fed (TF1 ``placeholder_with_default``)."""
    x = convert_to_tensor(input)
    return apply("placeholder_with_default", [x], name=name or "PlaceholderWithDefault",
                 shape=_static_shape(shape, "placeholder_with_default"))


def identity(input, name=None):  # noqa: A002
    """The same value as a new node (TF1 ``tf.identity``).

    Under ``control_dependencies`` that assign a variable, ``identity`` of that
    variable is the assigned (new) value, as in TF1 (see ``registry.apply``).
    """
    return apply("identity", [convert_to_tensor(input)], name=name)


def stop_gradient(input, name=None):  # noqa: A002
    """The same value, through which no gradient flows."""
    return apply("stop_gradient", [convert_to_tensor(input)], name=name)


def group(*inputs, name=None):
    """An operation that runs all of ``inputs`` (tensors or operations)."""
    flat = []
    for item in inputs:
        flat.extend(item if isinstance(item, (list, tuple)) else [item])
    flat = [t._as_graph_tensor() if hasattr(t, "_as_graph_tensor") else t for t in flat]
    graph = flat[0].graph if flat else get_default_graph()
    return apply("group", flat, name=name or "group_deps", graph=graph)


def no_op(name=None):
    """An operation that does nothing."""
    return apply("group", [], name=name or "NoOp", graph=get_default_graph())


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """Set variable ``ref`` to ``value`` once the run has computed everything else.

    The result is the new value. All assignments of one ``Session.run`` take
    effect together after the run, so every op of the run sees the old value;
    of two runs that assign one variable at once, the last to finish wins.
    A value whose static shape is not fully known is checked at run time.
    ``use_locking`` (TF1) is accepted: assignments always land under the
    session's store lock. ``validate_shape=False`` is refused: a variable's
    shape is fixed.
    """
    if validate_shape is False:
        raise ValueError(f"assign: validate_shape=False is not supported: variable "
                         f"'{getattr(ref, 'name', ref)}' keeps its shape")
    _check_ref("assign", ref)
    value = convert_to_tensor(value, like=ref)
    if value.graph is not ref.graph:
        raise ValueError(f"assign: the value '{value.name}' is not in the graph of "
                         f"variable '{ref.name}'")
    if is_weak(value) and value.dtype is not ref.dtype and not ref.dtype.is_bool:
        value = weak_cast(value, ref.dtype, other=ref)
    if (value.shape is None or None in value.shape) and _compatible(value.shape, ref.shape):
        # A fed value is copied, as the executor copies one assigned directly.
        value = shaped_like_variable(value, ref, "assign", "the value",
                                     copy=value.opdef.kind == "placeholder")
    return apply("assign", [value], name=name or ref.name + "/Assign", var=ref)


def shaped_like_variable(value, var, what, role, copy=False):
    """``value`` with ``var``'s static shape, checked at run time (``ensure_shape``).

    The run-time error names the variable, both shapes, and the placeholders of
    unknown shape the value comes from. ``what`` and ``role`` word it:
    ``"assign"``, ``"the value"``.
    """
    if value.shape is not None and None not in value.shape:
        return value
    if not _compatible(value.shape, var.shape):
        raise ValueError(f"{what}: variable '{var.name}' has shape {tuple(var.shape)}, but "
                         f"{role} '{value.name}' has shape {tuple(value.shape)}")
    sources = [p.name for p in _unknown_shape_placeholders(value)]
    via = ""
    if sources and sources != [value.name]:
        via = f" (its shape comes from placeholder(s) {', '.join(repr(n) for n in sources)})"
    message = (f"{what}: variable '{var.name}' has shape {tuple(var.shape)}, but {role} "
               f"'{value.name}'{via} has shape {{actual}} at run time; created at "
               f"{user_source_line()}")
    return apply("ensure_shape", [value], name=var.name + "/EnsureShape", shape=var.shape,
                 message=message, copy=copy)


def _unknown_shape_placeholders(t, limit=10000):
    """The placeholders without a fully known shape that ``t`` is computed from."""
    found, seen, stack = [], {t}, [t]
    while stack and len(seen) < limit:
        node = stack.pop()
        if node.opdef.kind == "placeholder":
            if node.shape is None or None in node.shape:
                found.append(node)
            continue
        for i in node.inputs:
            if i not in seen:
                seen.add(i)
                stack.append(i)
    return sorted(found, key=lambda n: n.index)


def assign_add(ref, value, use_locking=None, name=None):
    """``ref += value``, effective after the run; returns the new value.

    The sum is taken with the value ``ref`` holds when the run commits, under the
    session's store lock, so concurrent runs lose no increment (TF1's
    ``use_locking=True``; gradflow always locks, and accepts ``use_locking``)."""
    _check_ref("assign_add", ref)
    new = add(at_commit(ref), at_commit(convert_to_tensor(value, like=ref)))
    return assign(ref, new, name=name or ref.name + "/AssignAdd")


def assign_sub(ref, value, use_locking=None, name=None):
    """``ref -= value``, effective after the run, like :func:`assign_add`."""
    _check_ref("assign_sub", ref)
    new = subtract(at_commit(ref), at_commit(convert_to_tensor(value, like=ref)))
    return assign(ref, new, name=name or ref.name + "/AssignSub")


def at_commit(t):
    """``read_current(t)`` for a variable ``t`` (its value when the run commits, see
    ``gradflow.prim.state.read_current``), any other tensor as it is: the operands of an
    update of a variable from its own value (``assign_add``, the optimizers' formulas)."""
    return read_current(t) if isinstance(t, Tensor) and t.opdef.kind == "variable" else t


def _check_ref(what, ref):
    if not (isinstance(ref, Tensor) and ref.opdef.kind == "variable"):  # a gf.Variable
        raise TypeError(f"{what}: '{getattr(ref, 'name', ref)}' is not a gf.Variable")


# -- random ops: drawn on the host so every backend sees the same numbers ----------


_STANDARD = {"random_normal": {"mean": 0.0, "stddev": 1.0},
             "truncated_normal": {"mean": 0.0, "stddev": 1.0},
             "random_uniform": {"minval": 0.0, "maxval": 1.0}}


def _random(dist, shape, dtype, seed, name, **params):
    """A random op. Parameters given as tensors (``stddev=1 / gf.sqrt(n)``) scale and
    shift the standard distribution drawn on the host with graph ops, so the same seed
    gives the same numbers on every backend either way."""
    dtype = dtypes.as_dtype(dtype)
    integer = dist == "random_uniform" and dtype.is_integer
    if integer:
        params = _integer_bounds(params, dtype)
    elif not dtype.is_floating:
        kinds = "floating or integer" if dist == "random_uniform" else "floating"
        raise TypeError(f"{dist}: dtype must be {kinds}, got {dtype.name}")
    elif params.get("maxval", 0.0) is None:
        params = dict(params, maxval=1.0)
    static = _random_shape(shape, dist)
    if static is not None and None in static:
        raise ValueError(f"{dist}: the shape must be fully known, got {static}")
    tensors = {k: _param_tensor(dist, k, v, dtype) for k, v in params.items()
               if _is_tensor_like(v)}
    like = None if static is not None else _shaped_like(shape, dist, dtype)
    graph = _graph_of_params(tensors.values()) if like is None else like.graph
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)  # deterministic per position in the graph
    inputs, static = ([], static) if like is None else ([like], like.shape)
    if not tensors:
        kind = int if integer else float
        return apply("random", inputs, name=name or dist, graph=graph, shape=static,
                     dtype=dtype, dist=dist, graph_seed=graph.seed, op_seed=op_seed,
                     **{k: kind(v) for k, v in params.items()})
    z = apply("random", inputs, name=dist, graph=graph, shape=static, dtype=dtype, dist=dist,
              graph_seed=graph.seed, op_seed=op_seed, **_STANDARD[dist])
    p = {k: tensors[k] if k in tensors else float(v) for k, v in params.items()}
    if dist == "random_uniform":  # minval + (maxval - minval) u
        return add(p["minval"], multiply(subtract(p["maxval"], p["minval"]), z),
                   name=name or dist)
    return add(p["mean"], multiply(p["stddev"], z), name=name or dist)  # mean + stddev z


def _integer_bounds(params, dtype):
    """TF1's integer ``random_uniform``: ``maxval`` given, both bounds Python integers
    with ``minval < maxval``, both within ``dtype``."""
    low, high = params["minval"], params["maxval"]
    if high is None:
        raise ValueError(f"random_uniform: an integer dtype ({dtype.name}) needs maxval")
    if _is_tensor_like(low) or _is_tensor_like(high) or isinstance(low, float) \
            or isinstance(high, float):
        raise TypeError(f"random_uniform: with dtype {dtype.name}, minval and maxval must "
                        f"be Python integers, got {low!r} and {high!r}")
    if not dtype.min <= int(low) < int(high) <= dtype.max + 1:
        raise ValueError(f"random_uniform: need minval < maxval within {dtype.name}, got "
                         f"[{low}, {high})")
    return {"minval": int(low), "maxval": int(high)}




def _is_tensor_like(v) -> bool:
    """Whether a random-op parameter is a tensor (or an array or list, made one)."""
    if isinstance(v, (Tensor, list, tuple)) or hasattr(v, "_as_graph_tensor"):
        return True
    return getattr(v, "ndim", 0) > 0  # a NumPy array; NumPy scalars are numbers


def _param_tensor(dist, key, value, dtype):
    try:
        return convert_to_tensor(value, dtype=dtype)
    except TypeError as err:
        raise TypeError(f"{dist}: {key} must be {dtype.name}, the dtype of the result: "
                        f"{err}") from None


def _graph_of_params(tensors):
    for t in tensors:
        if t.opdef.kind != "constant":
            return t.graph
    return get_default_graph()


def _random_shape(shape, what):
    """A static shape from ints, or from tensors whose values are known when the graph
    is built (constants, ``gf.shape`` of a tensor of known shape, items of those);
    ``None`` where a tensor's value is known only at run time."""
    if isinstance(shape, Tensor):
        value = _static_value(shape)
        if value is None or len(value.shape) != 1:
            return None
        return tuple(int(d) for d in value)
    if isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape):
        dims = []
        for d in shape:
            if isinstance(d, Tensor):
                value = _static_value(d)
                if value is None or value.shape != ():
                    return None
                d = int(value)
            dims.append(d)
        shape = dims
    return _static_shape(shape, what)


def _shaped_like(shape, what, dtype):
    """Zeros of the run-time ``shape`` (a 1-D int tensor, or a list mixing ints and
    scalar int tensors such as ``[gf.shape(x)[0], 10]``): a random op with an input
    draws numbers of that input's shape (``random_normal(gf.shape(z))`` in a VAE)."""
    try:
        return fill(shape, constant(0, dtype=dtype, name=f"{what}_shape"),
                    name=f"{what}_zeros")
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: the shape must be ints or a 1-D int tensor: {err}") from None


def _static_value(t):
    """The integer value of ``t`` as a NumPy array if the graph alone determines it."""
    if t.dtype is None or not t.dtype.is_integer:
        return None
    if t.opdef.kind == "constant":
        return t.attrs["value"].array
    if t.opdef.name == "shape":
        known = t.inputs[0].shape
        if known is not None and None not in known:
            return np.array(known, dtype=np.int64)
    if t.opdef.name == "getitem":
        inner = _static_value(t.inputs[0])
        if inner is not None:
            return np.asarray(inner[as_index(t.attrs["key"])])
    if t.opdef.name in ("identity", "cast"):
        return _static_value(t.inputs[0])
    return None


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal random numbers, new ones every run (TF1 ``tf.random_normal``).

    ``mean`` and ``stddev`` may be numbers or tensors (``stddev=1 / gf.sqrt(n)``).
    """
    return _random("random_normal", shape, dtype, seed, name, mean=mean, stddev=stddev)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal numbers redrawn until within two standard deviations of the mean."""
    return _random("truncated_normal", shape, dtype, seed, name, mean=mean, stddev=stddev)


def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None):
    """Uniform random numbers in ``[minval, maxval)`` (numbers or tensors; ``maxval``
    defaults to 1). With an integer ``dtype``, uniform integers: ``maxval`` is required
    and both bounds are Python integers, as in TF1."""
    return _random("random_uniform", shape, dtype, seed, name, minval=minval, maxval=maxval)


def random_uniform_like(x, minval=0.0, maxval=1.0, seed=None, name=None):
    """Uniform numbers of ``x``'s run-time shape and dtype (for shapes known only at run time)."""
    x = convert_to_tensor(x)
    graph = x.graph
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)
    return apply("random", [x], name=name or "random_uniform", shape=x.shape, dtype=x.dtype,
                 dist="random_uniform", graph_seed=graph.seed, op_seed=op_seed,
                 minval=float(minval), maxval=float(maxval))


# Other random ops' host draws, by their ``dist`` attribute: ``draw(rng, attrs)``
# returns the value as a NumPy array (candidate_sampling_ops adds its sampler).
HOST_DRAWS = {}


def draw_host(rng, attrs, shape=None):
    """Draw a random op's value as a NumPy array (called by the executor).

    ``shape`` is the run-time shape of a random op that takes a tensor to copy it from.
    """
    if attrs["dist"] in HOST_DRAWS:
        return HOST_DRAWS[attrs["dist"]](rng, attrs)
    shape, dist = attrs["shape"] if shape is None else tuple(shape), attrs["dist"]
    if dist == "random_uniform" and attrs["dtype"].is_integer:
        out = rng.integers(attrs["minval"], attrs["maxval"], size=shape)
    elif dist == "random_uniform":
        out = rng.uniform(attrs["minval"], attrs["maxval"], size=shape)
    elif dist == "random_normal":
        out = rng.normal(attrs["mean"], attrs["stddev"], size=shape)
    else:
        out = rng.standard_normal(size=shape)
        bad = abs(out) > 2.0
        while bad.any():
            out[bad] = rng.standard_normal(size=int(bad.sum()))
            bad = abs(out) > 2.0
        out = out * attrs["stddev"] + attrs["mean"]
    return out.astype(attrs["dtype"].as_numpy_dtype)
