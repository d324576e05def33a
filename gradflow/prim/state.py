"""The primitives of state and identity: placeholders, constants, variables,
assignments, the commit-time read of a variable, groups, random draws, ``identity``,
``ensure_shape`` and ``weak_cast``.

The ops of a kind other than ``"compute"`` are given their values by the executor
(feeds, the session's variable store, host random numbers). TF1's functions over
them live in ``gradflow.ops.state_ops``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import UNKNOWN_SHAPE, get_default_graph
from gradflow.prim.math import cast
from gradflow.prim.registry import _read_after_assigns, apply, register


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


def static_shape(shape, what):
    """``shape`` (ints, ``None`` or -1 for an unknown size; ``None`` for an unknown rank)
    as a static shape tuple, or None."""
    if shape is None or shape is UNKNOWN_SHAPE:
        return None
    if isinstance(shape, int):
        shape = (shape,)
    try:
        return tuple(None if d is None or d == -1 else int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a tuple of ints or None, got {shape!r}") from None


def placeholder(dtype=None, shape=None, name=None):
    """A placeholder of ``dtype`` (None: float32, weakly typed) and ``shape``."""
    weak = {"weak": True} if dtype is None else {}
    dtype = dtypes.float32 if dtype is None else dtypes.as_dtype(dtype)
    return apply("placeholder", [], name=name or "Placeholder", graph=get_default_graph(),
                 shape=static_shape(shape, "placeholder"), dtype=dtype, **weak)


register("random", None, _random_infer, grad=None, kind="random")
register("group", None, lambda s, d: (None, None), grad=None, kind="group")


def compatible(have, want) -> bool:
    """Whether static shapes ``have`` and ``want`` (``None`` = unknown) can agree."""
    if have is None or want is None:
        return True
    return len(have) == len(want) and all(
        h is None or w is None or h == w for h, w in zip(have, want))


def _assign_infer(shapes, in_dtypes, var):
    if in_dtypes[0] is not var.dtype:
        raise TypeError(f"variable '{var.name}' is {var.dtype.name}, the value is "
                        f"{in_dtypes[0].name}")
    if not compatible(shapes[0], var.shape):
        raise ValueError(f"variable '{var.name}' has shape {tuple(var.shape)}, the value "
                         f"has shape {tuple(shapes[0])}")
    return var.shape, var.dtype


register("assign", None, _assign_infer, grad=None, kind="assign")
# The value a variable holds when the run commits (under the session's store lock),
# rather than when the run started: what an update of a variable from its own value
# reads, so that concurrent runs lose no update (TF1's ``use_locking=True``).
register("read_current", None, lambda shapes, in_dtypes, var: (var.shape, var.dtype),
         grad=None, kind="read_current")


def read_current(var):
    """The value the variable ``var`` holds when the run commits, read under the session's
    store lock after every other value of the run is computed (one ``read_current`` node
    per variable, ``<var>/ReadCurrent``): an update of a variable from its own value
    (``assign_add``, optimizers, moving averages) is built from it, so concurrent runs
    lose no update. The ops built from it run at the end of the run, in the commit.

    Under ``control_dependencies`` that assign ``var``, it is that assignment (the new
    value), as any read of ``var`` there (see ``registry.apply``)."""
    control = var.graph.current_control_inputs()
    if control:
        assigned = _read_after_assigns([var], control)[0]
        if assigned is not var:
            return assigned
    node = getattr(var, "_current_read", None)
    if node is None:
        graph = var.graph
        with graph.control_dependencies(None), graph.name_scope(None):
            node = apply("read_current", [], name=var.name + "/ReadCurrent", graph=graph,
                         var=var)
        var._current_read = node
    return node


def _identity_impl(xp, x):
    return x


def _same_infer(shapes, in_dtypes):
    return shapes[0], in_dtypes[0]


register("identity", _identity_impl, _same_infer, grad=lambda n, g: [g],
         lower=lambda xp: _identity_impl.__get__(xp), pass_through=True, takes_strings=True,
         takes_complex=True)
register("stop_gradient", _identity_impl, _same_infer, grad=lambda n, g: [None],
         lower=lambda xp: _identity_impl.__get__(xp), pass_through=True, takes_strings=True,
         takes_complex=True)


# -- ensure_shape: a static shape claim checked at run time -------------------------


def _ensure_shape_infer(shapes, in_dtypes, shape, message, copy=False):
    if not compatible(shapes[0], shape):
        raise ValueError(f"the shape {tuple(shapes[0])} does not fit {tuple(shape)}")
    if shapes[0] is None:
        return shape, in_dtypes[0]
    return tuple(w if w is not None else h for h, w in zip(shapes[0], shape)), in_dtypes[0]


def _ensure_shape_impl(xp, x, shape, message, copy=False):
    actual = tuple(int(d) for d in x.shape)
    if not compatible(actual, shape):
        raise InvalidArgumentError(message.replace("{actual}", str(actual)))
    return xp.asarray(x, copy=True) if copy else x


register("ensure_shape", _ensure_shape_impl, _ensure_shape_infer, grad=lambda n, g: [g],
         check=True, takes_strings=True)  # a string value is checked and passed on as it is


# -- weak_cast: a placeholder made without a dtype meets another dtype ---------------
# (its node is built by ``registry.weak_cast``, which ``registry.apply`` calls)


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
    src = n.inputs[0].dtype
    return [cast(g, src) if src.is_floating and n.dtype.is_floating else None]


register("weak_cast", _weak_cast_impl, lambda s, d, dtype, message: (s[0], dtype),
         grad=_weak_cast_grad, check=True)


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
