"""The ``tensordot`` primitive: a sum of products over paired axes, and its gradient
(``tensordot`` again, then a transpose). TF1's ``tensordot``, ``einsum`` and ``norm`` over
it are in ``gradflow.ops.linalg_ops``.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import apply, register


def _free_axes(rank, contracted):
    return [i for i in range(rank) if i not in contracted]


def _tensordot_infer(shapes, in_dtypes, axes_a, axes_b):
    a, b = shapes
    for i, j in zip(axes_a, axes_b):
        if a[i] is not None and b[j] is not None and a[i] != b[j]:
            raise ValueError(f"axis {i} of a (size {a[i]}) and axis {j} of b (size {b[j]}) "
                             "are contracted but differ")
    dtype = rules.same_dtype(in_dtypes)
    if dtype.is_bool:
        raise TypeError("tensordot of bool tensors")
    return tuple(a[i] for i in _free_axes(len(a), axes_a)) + \
        tuple(b[j] for j in _free_axes(len(b), axes_b)), dtype


def _inverse_perm(order):
    """The permutation that moves axis ``k`` of a result to position ``order[k]``."""
    return tuple(order.index(i) for i in range(len(order)))


def _maybe_transpose(t, perm):
    return t if list(perm) == list(range(len(perm))) else call.transpose(t, perm=perm)


def _tensordot_grad(n, g):
    """``c = tensordot(a, b)``: each gradient contracts ``g`` with the other operand over
    that operand's free axes, then puts the axes back in the input's order."""
    a, b = n.inputs
    axes_a, axes_b = list(n.attrs["axes_a"]), list(n.attrs["axes_b"])
    free_a = _free_axes(len(a.shape), axes_a)
    free_b = _free_axes(len(b.shape), axes_b)
    na, nb = len(free_a), len(free_b)
    # g (free_a + free_b) . b over free_b -> free_a, then b's contracted axes in b's order
    ga = _tensordot(g, b, tuple(range(na, na + nb)), tuple(free_b))
    order_a = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    # a . g over free_a -> a's contracted axes in a's order, then free_b
    gb = _tensordot(a, g, tuple(free_a), tuple(range(na)))
    order_b = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return [_maybe_transpose(ga, _inverse_perm(order_a)),
            _maybe_transpose(gb, _inverse_perm(order_b))]


register("tensordot",
         # no axes as 0: CuPy refuses ([], []) when an operand is a scalar
         lambda xp, a, b, axes_a, axes_b: xp.tensordot(
             a, b, axes=(list(axes_a), list(axes_b)) if axes_a else 0),
         _tensordot_infer, grad=_tensordot_grad)


def _tensordot(a, b, axes_a, axes_b, name=None):
    return apply("tensordot", [a, b], name=name, axes_a=tuple(axes_a), axes_b=tuple(axes_b))

