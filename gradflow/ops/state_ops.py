"""Placeholders, constants, variables, assignments, groups and random ops.

These are the ops with ``kind`` other than ``"compute"``: the executor gives
them their values (feeds, the session's variable store, host random numbers).
"""

from __future__ import annotations

import contextlib

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import UNKNOWN_SHAPE, TensorShape, get_default_graph, user_source_line
from gradflow.prim.registry import apply, constant, convert_to_tensor, register


def _placeholder_infer(shapes, in_dtypes, shape, dtype, weak=False):
    return shape, dtype


def _constant_infer(shapes, in_dtypes, value, dtype):
    return value.array.shape, dtype


register("placeholder", None, _placeholder_infer, grad=None, kind="placeholder")
register("constant", None, _constant_infer, grad=None, kind="constant")
register("variable", None, _placeholder_infer, grad=None, kind="variable")
def _random_infer(shapes, in_dtypes, shape, dtype, **params):
    """``shape``, or, for a draw shaped like its input, each dimension the input knows."""
    like = shapes[0] if shapes else None
    if like is None or shape is None or len(like) != len(shape):
        return shape, dtype
    return tuple(s if s is not None else k for s, k in zip(shape, like)), dtype


register("random", None, _random_infer, grad=None, kind="random")
register("group", None, lambda s, d: (None, None), grad=None, kind="group")


def _compatible(have, want) -> bool:
    """Whether static shapes ``have`` and ``want`` (``None`` = unknown) can agree."""
    if have is None or want is None:
        return True
    return len(have) == len(want) and all(
        h is None or w is None or h == w for h, w in zip(have, want))


def _assign_infer(shapes, in_dtypes, var):
    if in_dtypes[0] is not var.dtype:
        raise TypeError(f"variable '{var.name}' is {var.dtype.name}, the value is "
                        f"{in_dtypes[0].name}")
    if not _compatible(shapes[0], var.shape):
        raise ValueError(f"variable '{var.name}' has shape {tuple(var.shape)}, the value "
                         f"has shape {tuple(shapes[0])}")
    return var.shape, var.dtype


register("assign", None, _assign_infer, grad=None, kind="assign")
# The value a variable holds when the run commits (under the session's store lock),
# rather than when the run started: what an update of a variable from its own value
# reads, so that concurrent runs lose no update (TF1's ``use_locking=True``).
register("read_current", None, lambda shapes, in_dtypes, var: (var.shape, var.dtype),
         grad=None, kind="read_current")


def _identity_impl(xp, x):
    return x


def _same_infer(shapes, in_dtypes):
    return shapes[0], in_dtypes[0]


register("identity", _identity_impl, _same_infer, grad=lambda n, g: [g],
         lower=lambda xp: _identity_impl.__get__(xp), pass_through=True, takes_strings=True)
register("stop_gradient", _identity_impl, _same_infer, grad=lambda n, g: [None],
         lower=lambda xp: _identity_impl.__get__(xp), pass_through=True, takes_strings=True)


# -- ensure_shape: a static shape claim checked at run time -------------------------


def _ensure_shape_infer(shapes, in_dtypes, shape, message, copy=False):
    if not _compatible(shapes[0], shape):
        raise ValueError(f"the shape {tuple(shapes[0])} does not fit {tuple(shape)}")
    if shapes[0] is None:
        return shape, in_dtypes[0]
    return tuple(w if w is not None else h for h, w in zip(shapes[0], shape)), in_dtypes[0]


def _ensure_shape_impl(xp, x, shape, message, copy=False):
    actual = tuple(int(d) for d in x.shape)
    if not _compatible(actual, shape):
        raise InvalidArgumentError(message.replace("{actual}", str(actual)))
    return xp.asarray(x, copy=True) if copy else x


register("ensure_shape", _ensure_shape_impl, _ensure_shape_infer, grad=lambda n, g: [g], check=True,
         takes_strings=True)  # a string value is checked and passed on as it is


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


# -- weak_cast: a placeholder made without a dtype meets another dtype ---------------


def _weak_cast_impl(xp, x, dtype, message):
    target = dtype.resolve(xp)
    if dtype.is_integer:  # whole numbers within range: bounds are powers of two, exact
        ok = (xp.floor(x) == x) & (x >= float(dtype.min)) & (x < float(dtype.max + 1))
    elif dtype.bits < 32:
        ok = (xp.astype(xp.astype(x, target), x.dtype) == x) | xp.isnan(x)
    else:
        ok = None
    if ok is not None and not bool(xp.all(ok)):
        try:
            example = f" (such as {float(x[xp.logical_not(ok)][0])!r})"
        except Exception:  # noqa: BLE001 - the example is a courtesy
            example = ""
        raise InvalidArgumentError(message.replace("{example}", example))
    return xp.astype(x, target)


def _weak_cast_grad(n, g):
    from gradflow.ops.math_ops import cast

    src = n.inputs[0].dtype
    return [cast(g, src) if src.is_floating and n.dtype.is_floating else None]


register("weak_cast", _weak_cast_impl, lambda s, d, dtype, message: (s[0], dtype),
         grad=_weak_cast_grad, check=True)


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


def _with_default_infer(shapes, in_dtypes, shape):
    if shape is None:  # TF1: an unknown shape accepts a feed of any shape
        return None, in_dtypes[0]
    if len(shape) != len(shapes[0]):
        raise ValueError(f"the default has rank {len(shapes[0])}, the shape {shape} "
                         f"has rank {len(shape)}")
    for have, want in zip(shapes[0], shape):
        if have is not None and want is not None and have != want:
            raise ValueError(f"the default's shape {tuple(shapes[0])} does not fit {shape}")
    return shape, in_dtypes[0]


register("placeholder_with_default", _identity_impl, _with_default_infer,
         grad=lambda n, g: [g], lower=lambda xp, shape: _identity_impl.__get__(xp),
         pass_through=True)


def _static_shape(shape, what):
    if shape is None or shape is UNKNOWN_SHAPE:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    try:
        return tuple(None if d is None or d == -1 else int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a tuple of ints or None, got {shape!r}") from None


def placeholder(dtype=None, shape=None, name=None):
    """A value fed at run time through ``feed_dict`` (dtype defaults to float32).

    ``shape=None`` accepts any shape; ``None`` in a shape accepts any size.
    Without a dtype the placeholder is float32 but weakly typed, like a Python
    number: combined with a tensor of another numeric dtype (``matmul(A_int32, x)``)
    it is converted to that dtype, and a fed value that does not convert exactly
    (1.5 for an int32) is a run-time error naming the placeholder. With a dtype
    (``placeholder(gf.float32)``) it is strict, as every other tensor.
    """
    weak = {"weak": True} if dtype is None else {}
    dtype = dtypes.float32 if dtype is None else dtypes.as_dtype(dtype)
    shape = _static_shape(shape, "placeholder")
    return apply("placeholder", [], name=name or "Placeholder", graph=get_default_graph(),
                 shape=shape, dtype=dtype, **weak)


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
    from gradflow.prim.registry import is_weak
    from gradflow.variables import Variable

    if not isinstance(ref, Variable):
        raise TypeError(f"assign: '{getattr(ref, 'name', ref)}' is not a gf.Variable")
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
    with reading_current(ref.graph):
        new = ref + value
    return assign(ref, new, name=name or ref.name + "/AssignAdd")


def assign_sub(ref, value, use_locking=None, name=None):
    """``ref -= value``, effective after the run, like :func:`assign_add`."""
    _check_ref("assign_sub", ref)
    with reading_current(ref.graph):
        new = ref - value
    return assign(ref, new, name=name or ref.name + "/AssignSub")


def _check_ref(what, ref):
    from gradflow.variables import Variable

    if not isinstance(ref, Variable):
        raise TypeError(f"{what}: '{getattr(ref, 'name', ref)}' is not a gf.Variable")


@contextlib.contextmanager
def reading_current(graph):
    """Within this block, ops built over a variable read the value it holds when the
    run commits (``read_current``), not the one it held when the run started: for
    the update of a variable from its own value (``assign_add``, optimizers, moving
    averages). Such ops run at the end of the run, under the store lock."""
    depth = getattr(graph, "_reading_current", 0)
    graph._reading_current = depth + 1
    try:
        yield
    finally:
        graph._reading_current = depth


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
    from gradflow.ops.math_ops import add, multiply, subtract

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
    from gradflow.graph import Tensor

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
    from gradflow.graph import Tensor

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
    from gradflow.ops.shape_ops import fill

    try:
        return fill(shape, constant(0, dtype=dtype, name=f"{what}_shape"),
                    name=f"{what}_zeros")
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what}: the shape must be ints or a 1-D int tensor: {err}") from None


def _static_value(t):
    """The integer value of ``t`` as a NumPy array if the graph alone determines it."""
    import numpy as np

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
            from gradflow.ops.index_ops import _as_index

            return np.asarray(inner[_as_index(t.attrs["key"])])
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
