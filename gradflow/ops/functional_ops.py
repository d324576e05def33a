"""TF1's higher-order functions over the first axis: ``map_fn``, ``foldl``, ``foldr``,
``scan``.

The first axis must be known when the graph is built: the function is applied
once per element and the results are stacked (an unrolled loop, which the
executor runs without the cost of a loop construct). TF1 runs them in a
``while_loop``; the values and gradients are the same.
"""

from __future__ import annotations

from gradflow.graph import user_source_line
from gradflow.ops.control_flow_ops import _flatten, _pack
from gradflow.ops.index_ops import stack, unstack
from gradflow.prim.registry import convert_to_tensor


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


__all__ = ["foldl", "foldr", "map_fn", "scan"]
