"""TF1's higher-order functions over the first axis: ``map_fn``, ``foldl``, ``foldr``,
``scan``; and the function wrappers ``custom_gradient`` and ``py_function``.

The first axis must be known when the graph is built: the function is applied
once per element and the results are stacked (an unrolled loop, which the
executor runs without the cost of a loop construct). TF1 runs them in a
``while_loop``; the values and gradients are the same.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from gradflow.graph import Operation, user_source_line
from gradflow.ops.control_flow_ops import _flatten, _pack
from gradflow.ops.debug_ops import py_func
from gradflow.ops.index_ops import stack, unstack
from gradflow.ops.math_ops import zeros_like
from gradflow.prim import custom_gradient as _custom  # noqa: F401 - registers its primitive
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import Variable


def _elements(what, elems):
    """``(structure, [per-element structures])`` of ``elems`` unstacked on axis 0."""
    leaves = [convert_to_tensor(t) for t in _flatten(elems)]
    if not leaves:
        raise ValueError(f"{what}: elems is empty")
    lengths = set()
    for t in leaves:
        if t.shape is None or len(t.shape) == 0 or t.shape[0] is None:
            raise ValueError(f"{what}: the first axis of '{t.name}' (shape {t.shape}) must "
                             f"be known when the graph is built; at {user_source_line()}")
        lengths.add(int(t.shape[0]))
    if len(lengths) != 1:
        raise ValueError(f"{what}: the elements have different first-axis lengths "
                         f"{sorted(lengths)}: " + ", ".join(f"'{t.name}' {tuple(t.shape)}"
                                                             for t in leaves))
    n = lengths.pop()
    columns = [unstack(t, num=n, axis=0) for t in leaves]
    return n, [_pack(elems, [c[i] for c in columns]) for i in range(n)]


def _stack_results(what, results):
    first = _flatten(results[0])
    for i, r in enumerate(results[1:], 1):
        if len(_flatten(r)) != len(first):
            raise ValueError(f"{what}: fn returned a different structure for element {i}")
    leaves = [stack([_flatten(r)[k] for r in results], axis=0) for k in range(len(first))]
    return _pack(results[0], leaves)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """``stack([fn(e) for e in unstack(elems)])``: ``fn`` applied to each slice along
    the first axis of ``elems`` (a tensor or a nested tuple/list of tensors, whose
    slices ``fn`` receives in the same structure). ``dtype`` is accepted for TF1
    programs; the results have the dtypes ``fn`` gives.

    >>> squares = gf.map_fn(lambda x: x * x, gf.constant([1.0, 2.0, 3.0]))
    """
    if not callable(fn):
        raise TypeError("map_fn: fn must be callable")
    n, elements = _elements("map_fn", elems)
    if n == 0:
        raise ValueError("map_fn: elems has no elements along the first axis")
    return _stack_results("map_fn", [fn(e) for e in elements])


def _fold(what, fn, elems, initializer, reverse):
    n, elements = _elements(what, elems)
    order = list(reversed(elements)) if reverse else elements
    if initializer is None:
        if not order:
            raise ValueError(f"{what}: elems is empty and no initializer was given")
        acc, order = order[0], order[1:]
    else:
        acc = initializer
    return acc, order


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """``fn(...fn(fn(initializer, e0), e1)..., en)`` over the first axis of ``elems``
    (the first element is the initializer when none is given; TF1 ``tf.foldl``)."""
    acc, order = _fold("foldl", fn, elems, initializer, reverse=False)
    for e in order:
        acc = fn(acc, e)
    return acc


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """Like ``foldl``, from the last element to the first (TF1 ``tf.foldr``)."""
    acc, order = _fold("foldr", fn, elems, initializer, reverse=True)
    for e in order:
        acc = fn(acc, e)
    return acc


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every intermediate accumulator of a fold, stacked (TF1 ``tf.scan``): output
    ``i`` is ``fn(output[i - 1], elems[i])``, starting from ``initializer`` (or from
    ``elems[0]``, which is then output 0)."""
    n, elements = _elements("scan", elems)
    order = list(reversed(elements)) if reverse else list(elements)
    outputs = []
    if initializer is None:
        acc = order.pop(0)
        outputs.append(acc)
    else:
        acc = initializer
    for e in order:
        acc = fn(acc, e)
        outputs.append(acc)
    if reverse:
        outputs.reverse()
    return _stack_results("scan", outputs)


# -- custom_gradient ----------------------------------------------------------------------


def _variables_read(ys, args):
    """The variables that ``ys`` read, other than through ``args`` (graph order)."""
    stop, found, seen = set(args), {}, set()
    pending = [y for y in ys]
    while pending:
        node = pending.pop()
        if node in seen or node in stop:
            continue
        seen.add(node)
        if isinstance(node, Variable):
            found[node] = None
            continue
        pending.extend(node.inputs)
    return sorted(found, key=lambda v: v.index)


def _takes_variables(grad_fn) -> bool:
    try:
        params = inspect.signature(grad_fn).parameters
    except (TypeError, ValueError):
        return False
    return "variables" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _user_grads(grad_fn, dys, args, variables, fname):
    """The gradients ``grad_fn`` gives for ``args`` and ``variables``, as tensors or None."""
    if variables:
        result = grad_fn(*dys, variables=variables)
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise TypeError(f"custom_gradient {fname}: grad_fn must return (input gradients, "
                            "variable gradients) when it is given variables")
        input_grads, var_grads = result
        var_grads = list(var_grads) if isinstance(var_grads, (list, tuple)) else [var_grads]
        if len(var_grads) != len(variables):
            raise ValueError(f"custom_gradient {fname}: grad_fn returned {len(var_grads)} "
                             f"variable gradients for {len(variables)} variables")
    else:
        input_grads, var_grads = grad_fn(*dys), []
    input_grads = _flatten(input_grads) if isinstance(input_grads, (list, tuple)) \
        else [input_grads]
    if len(input_grads) != len(args):
        raise ValueError(f"custom_gradient {fname}: grad_fn returned {len(input_grads)} "
                         f"gradients for {len(args)} inputs")
    return [None if g is None else convert_to_tensor(g, like=x)
            for g, x in zip(input_grads + var_grads, list(args) + list(variables))]


def custom_gradient(f=None):
    """Decorator: ``f(*args)`` returns ``(y, grad_fn)``, and the gradient of ``y`` is what
    ``grad_fn(*dys)`` says for ``args`` (TF1 ``tf.custom_gradient``, graph mode).

    ``y`` is a tensor or a (nested) list/tuple of tensors; ``grad_fn`` takes one
    gradient per tensor of ``y`` and returns one per argument. When ``f`` reads
    variables (not given as arguments), ``grad_fn(*dys, variables=...)`` receives them
    and returns ``(argument gradients, variable gradients)``. Where ``y`` has several
    tensors, the gradient that reaches each is passed with zeros for the others, and
    the results are added (``grad_fn`` is taken to be linear in ``dys``).

    >>> @gf.custom_gradient
    ... def clip_grad(x):
    ...     return gf.identity(x), lambda dy: gf.clip_by_norm(dy, 1.0)
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        if kwargs:
            raise TypeError(f"custom_gradient {f.__name__}: keyword arguments are not "
                            "supported in graph mode (as in TF1)")
        args = [convert_to_tensor(a) for a in args]
        result, grad_fn = f(*args)
        leaves = [convert_to_tensor(y) for y in _flatten(result)]
        for y in leaves:
            if isinstance(y, Operation):
                raise TypeError(f"custom_gradient {f.__name__}: the result '{y.name}' is an "
                                "operation, not a tensor")
        variables = _variables_read(leaves, args)
        if variables and not _takes_variables(grad_fn):
            raise TypeError(f"custom_gradient {f.__name__}: the function reads variables "
                            f"({', '.join(v.name for v in variables)}), so grad_fn must accept "
                            "a keyword argument 'variables'")

        def rule(node, g):
            k = node.attrs["index"]
            dys = [g if j == k else zeros_like(y) for j, y in enumerate(leaves)]
            return [None] + _user_grads(grad_fn, dys, args, variables, f.__name__)

        outs = [apply("custom_gradient", [y, *args, *variables], name="IdentityN",
                      rule=rule, index=k) for k, y in enumerate(leaves)]
        return _pack(result, outs) if isinstance(result, (list, tuple, dict)) else outs[0]

    return wrapped


# -- py_function ----------------------------------------------------------------------------


class _EagerValue(np.ndarray):
    """A NumPy array that answers ``.numpy()`` as TF's eager tensors do."""

    def numpy(self):
        """The value as a plain NumPy array (a bytes object for a scalar string)."""
        array = np.asarray(self).view(np.ndarray)
        return array.item() if array.dtype.kind == "O" and array.ndim == 0 else array


class _EagerBytes(bytes):
    """A scalar string that answers ``.numpy()`` (its bytes)."""

    def numpy(self):
        """The bytes."""
        return bytes(self)


def _eager(value):
    if isinstance(value, bytes):
        return _EagerBytes(value)
    return np.asarray(value).view(_EagerValue)


def _host_result(value):
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return value.view(np.ndarray)
    return value


def py_function(func, inp, Tout, name=None):  # noqa: N803
    """Run ``func`` on the host over its inputs' values, as TF's eager tensors: NumPy
    arrays that also answer ``.numpy()`` (TF ``tf.py_function``). ``Tout`` is a dtype
    (one result) or a list of dtypes; results may be arrays, Python values or objects
    with ``.numpy()``. There is no gradient through ``func`` (TF differentiates the
    eager ops inside it; here they are NumPy's).

    >>> y = gf.py_function(lambda a: a.numpy() * 2, [x], gf.float32)
    """
    if not callable(func):
        raise TypeError("py_function: func must be callable")

    def host(*values):
        result = func(*[_eager(v) for v in values])
        if isinstance(result, (list, tuple)):
            return [_host_result(r) for r in result]
        return _host_result(result)

    host.__name__ = getattr(func, "__name__", "py_function")
    return py_func(host, inp, Tout, stateful=True, name=name or "EagerPyFunc")


__all__ = ["custom_gradient", "foldl", "foldr", "map_fn", "py_function", "scan"]
