"""Placeholders, constants, variables, assignments, groups and random ops.

These are the ops with ``kind`` other than ``"compute"``: the executor gives
them their values (feeds, the session's variable store, host random numbers).
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import get_default_graph
from gradflow.ops.registry import apply, convert_to_tensor, register


def _placeholder_infer(shapes, in_dtypes, shape, dtype):
    return shape, dtype


def _constant_infer(shapes, in_dtypes, value, dtype):
    return value.array.shape, dtype


register("placeholder", None, _placeholder_infer, grad=None, kind="placeholder")
register("constant", None, _constant_infer, grad=None, kind="constant")
register("variable", None, _placeholder_infer, grad=None, kind="variable")
register("random", None, lambda s, d, shape, dtype, **params: (shape, dtype),
         grad=None, kind="random")
register("group", None, lambda s, d: (None, None), grad=None, kind="group")


def _assign_infer(shapes, in_dtypes, var):
    if in_dtypes[0] is not var.dtype:
        raise TypeError(f"variable '{var.name}' is {var.dtype.name}, the value is "
                        f"{in_dtypes[0].name}")
    for have, want in zip(shapes[0], var.shape):
        if len(shapes[0]) != len(var.shape) or (have is not None and have != want):
            raise ValueError(f"variable '{var.name}' has shape {tuple(var.shape)}, the value "
                             f"has shape {tuple(shapes[0])}")
    if len(shapes[0]) != len(var.shape):
        raise ValueError(f"variable '{var.name}' has shape {tuple(var.shape)}, the value "
                         f"has shape {tuple(shapes[0])}")
    return var.shape, var.dtype


register("assign", None, _assign_infer, grad=None, kind="assign")


def _identity_impl(xp, x):
    return x


def _same_infer(shapes, in_dtypes):
    return shapes[0], in_dtypes[0]


register("identity", _identity_impl, _same_infer, grad=lambda n, g: [g],
         lower=lambda xp: _identity_impl.__get__(xp))
register("stop_gradient", _identity_impl, _same_infer, grad=lambda n, g: [None],
         lower=lambda xp: _identity_impl.__get__(xp))


def _with_default_infer(shapes, in_dtypes, shape):
    if len(shape) != len(shapes[0]):
        raise ValueError(f"the default has rank {len(shapes[0])}, the shape {shape} "
                         f"has rank {len(shape)}")
    for have, want in zip(shapes[0], shape):
        if have is not None and want is not None and have != want:
            raise ValueError(f"the default's shape {tuple(shapes[0])} does not fit {shape}")
    return shape, in_dtypes[0]


register("placeholder_with_default", _identity_impl, _with_default_infer,
         grad=lambda n, g: [g], lower=lambda xp, shape: _identity_impl.__get__(xp))


def _static_shape(shape, what):
    if shape is None:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    try:
        return tuple(None if d is None or d == -1 else int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a tuple of ints or None, got {shape!r}") from None


def placeholder(dtype=dtypes.float32, shape=None, name=None):
    """A value fed at run time through ``feed_dict`` (dtype defaults to float32).

    ``shape=None`` accepts any shape; ``None`` in a shape accepts any size.
    """
    dtype = dtypes.as_dtype(dtype)
    shape = _static_shape(shape, "placeholder")
    return apply("placeholder", [], name=name or "Placeholder", graph=get_default_graph(),
                 shape=shape, dtype=dtype)


def placeholder_with_default(input, shape, name=None):  # noqa: A002
    """A tensor that is ``input`` unless fed (TF1 ``placeholder_with_default``)."""
    x = convert_to_tensor(input)
    return apply("placeholder_with_default", [x], name=name or "PlaceholderWithDefault",
                 shape=_static_shape(shape, "placeholder_with_default"))


def identity(input, name=None):  # noqa: A002
    """The same value as a new node."""
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


def assign(ref, value, name=None):
    """Set variable ``ref`` to ``value`` once the run has computed everything else.

    The result is the new value. All assignments of one ``Session.run`` take
    effect together after the run, so every op of the run sees the old value.
    """
    from gradflow.variables import Variable

    if not isinstance(ref, Variable):
        raise TypeError(f"assign: '{getattr(ref, 'name', ref)}' is not a gf.Variable")
    value = convert_to_tensor(value, like=ref)
    if value.graph is not ref.graph:
        raise ValueError(f"assign: the value '{value.name}' is not in the graph of "
                         f"variable '{ref.name}'")
    return apply("assign", [value], name=name or ref.name + "/Assign", var=ref)


def assign_add(ref, value, name=None):
    """``ref += value``, effective after the run; returns the new value."""
    return assign(ref, ref + value, name=name or ref.name + "/AssignAdd")


def assign_sub(ref, value, name=None):
    """``ref -= value``, effective after the run; returns the new value."""
    return assign(ref, ref - value, name=name or ref.name + "/AssignSub")


# -- random ops: drawn on the host so every backend sees the same numbers ----------


def _random(dist, shape, dtype, seed, name, **params):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{dist}: dtype must be floating, got {dtype.name}")
    shape = _static_shape(shape, dist)
    if shape is None or None in shape:
        raise ValueError(f"{dist}: the shape must be fully known, got {shape}")
    graph = get_default_graph()
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)  # deterministic per position in the graph
    return apply("random", [], name=name or dist, graph=graph, shape=shape, dtype=dtype,
                 dist=dist, graph_seed=graph.seed, op_seed=op_seed, **params)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal random numbers, new ones every run (TF1 ``tf.random_normal``)."""
    return _random("random_normal", shape, dtype, seed, name, mean=float(mean),
                   stddev=float(stddev))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Normal numbers redrawn until within two standard deviations of the mean."""
    return _random("truncated_normal", shape, dtype, seed, name, mean=float(mean),
                   stddev=float(stddev))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Uniform random numbers in ``[minval, maxval)``."""
    return _random("random_uniform", shape, dtype, seed, name, minval=float(minval),
                   maxval=float(maxval))


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


def draw_host(rng, attrs, shape=None):
    """Draw a random op's value as a NumPy array (called by the executor).

    ``shape`` is the run-time shape of a random op that takes a tensor to copy it from.
    """
    shape, dist = attrs["shape"] if shape is None else tuple(shape), attrs["dist"]
    if dist == "random_uniform":
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
