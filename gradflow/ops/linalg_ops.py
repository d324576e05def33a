"""Contractions and norms: tensordot (the primitive of ``gradflow.prim.linalg``), einsum and
norm (graphs of ops)."""

from __future__ import annotations

import string

import numpy as np

from gradflow.ops.array_ops import (
    _keepdims_arg,
    matmul,
    reduce_max,
    reduce_sum,
    squeeze,
)
from gradflow.ops.math_ops import abs, pow, sqrt, square
from gradflow.ops.state_ops import identity
from gradflow.prim import rules
from gradflow.prim.linalg import _maybe_transpose, _tensordot
from gradflow.prim.registry import apply, convert_to_tensor


def _axis_list(axes, rank):
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return [rules.normalize_axis(int(ax), rank, allow_none=False)[0] for ax in axes]


def tensordot(a, b, axes, name=None):
    """Sum of products over ``axes`` of ``a`` and ``b`` (TF1 ``tf.tensordot``).

    ``axes`` is an int ``N`` (the last ``N`` axes of ``a`` with the first ``N`` of
    ``b``) or a pair ``[axes_a, axes_b]`` of ints or lists of ints. The result has
    the free axes of ``a`` followed by those of ``b``.
    """
    a = convert_to_tensor(a)
    b = convert_to_tensor(b, like=a)
    rules.known_rank(a, "tensordot")
    rules.known_rank(b, "tensordot")
    ra, rb = len(a.shape), len(b.shape)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(ra, rb):
            raise ValueError(f"tensordot: axes={n} for inputs of ranks {ra} and {rb}")
        axes_a, axes_b = list(range(ra - n, ra)), list(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, "
                             f"got {axes}")
        axes_a = _axis_list(axes[0], ra)
        axes_b = _axis_list(axes[1], rb)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot: {len(axes_a)} axes of a but {len(axes_b)} of b")
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError(f"tensordot: repeated axis in {axes}")
    return _tensordot(a, b, axes_a, axes_b, name=name or "Tensordot")


# -- einsum: planned at build time as tensordot, matmul, multiply, sum, transpose ---------


def _parse_einsum(equation, tensors):
    """``([letters per operand], output letters)`` with any ``...`` spelled out."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(tensors):
        raise ValueError(f"einsum: the equation {equation!r} names {len(subs)} operands, "
                         f"{len(tensors)} were given")
    spare = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    ell_rank = 0
    for sub, t in zip(subs, tensors):
        if "..." in sub:
            ell_rank = max(ell_rank, len(t.shape) - (len(sub) - 3))
    ell = spare[:ell_rank]
    letters = []
    for sub, t in zip(subs, tensors):
        if "..." in sub:
            n = len(t.shape) - (len(sub) - 3)
            head, _, tail = sub.partition("...")
            parts = list(head) + ell[ell_rank - n:] + list(tail)
        else:
            parts = list(sub)
        if len(parts) != len(t.shape) or not all(c.isalpha() for c in parts):
            raise ValueError(f"einsum: subscripts {sub!r} do not fit '{t.name}' of shape "
                             f"{tuple(t.shape)}")
        if len(set(parts)) != len(parts):
            raise NotImplementedError(f"einsum: a letter repeated in one operand ({sub!r}: "
                                      "diagonals and traces) is not supported")
        letters.append(parts)
    if arrow:
        head, dots, tail = out.partition("...")
        output = list(head) + (ell if dots else []) + list(tail)
    else:
        counts = {}
        for parts in letters:
            for c in parts:
                counts[c] = counts.get(c, 0) + 1
        output = ell + sorted(c for c, k in counts.items() if k == 1 and c not in ell)
    used = {c for parts in letters for c in parts}
    if len(set(output)) != len(output) or not set(output) <= used:
        raise ValueError(f"einsum: bad output subscripts in {equation!r}")
    sizes = {}
    for parts, t in zip(letters, tensors):
        for c, d in zip(parts, t.shape):
            if d is not None and sizes.setdefault(c, d) != d and 1 not in (d, sizes[c]):
                raise ValueError(f"einsum: index {c!r} has sizes {sizes[c]} and {d}")
    return letters, output


def _sum_out(t, letters, keep):
    """Sum ``t`` over the axes whose letters are not in ``keep``."""
    drop = [i for i, c in enumerate(letters) if c not in keep]
    if not drop:
        return t, letters
    return reduce_sum(t, drop), [c for c in letters if c in keep]


def _arrange(t, letters, order):
    """``t`` with axes in ``order`` (a superset of ``letters``): transposed, with size-1
    axes for the missing letters."""
    mine = [c for c in order if c in letters]
    t = _maybe_transpose(t, tuple(letters.index(c) for c in mine))
    missing = tuple(i for i, c in enumerate(order) if c not in letters)
    return apply("expand_dims", [t], axes=missing) if missing else t


def _pair(a, la, b, lb, keep):
    """Contract two operands; the letters in ``keep`` survive."""
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    if contract and not batch:
        return _tensordot(a, b, [la.index(c) for c in contract],
                          [lb.index(c) for c in contract]), free_a + free_b
    if contract and len(free_a) <= 1 and len(free_b) <= 1 and len(contract) == 1:
        # a batched matrix product: (batch, m, k) @ (batch, k, n)
        nb = len(batch)
        a2 = _arrange(a, la, batch + (free_a or ["_m"]) + contract)
        b2 = _arrange(b, lb, batch + contract + (free_b or ["_n"]))
        out = matmul(a2, b2)
        if not free_b:
            out = squeeze(out, nb + 1)
        if not free_a:
            out = squeeze(out, nb)
        return out, batch + free_a + free_b
    order = batch + free_a + free_b + contract  # broadcast, multiply, sum
    out = _arrange(a, la, order) * _arrange(b, lb, order)
    if contract:
        out = reduce_sum(out, list(range(len(order) - len(contract), len(order))))
    return out, batch + free_a + free_b


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (TF1 ``tf.einsum``), e.g. ``'ij,jk->ik'``, ``'bij,bjk->bik'``,
    ``'i,i->'``, ``'ij->ji'``, ``'...ij,...jk->...ik'``, or with an implicit output.

    It is planned when the graph is built as tensordot, matmul, multiply,
    reduce_sum and transpose nodes, so its gradients are theirs. A letter repeated
    within one operand (a diagonal) is not supported.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected arguments {sorted(kwargs)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not inputs:
        raise ValueError("einsum needs at least one operand")
    tensors = [convert_to_tensor(inputs[0])]
    tensors += [convert_to_tensor(t, like=tensors[0]) for t in inputs[1:]]
    for t in tensors:
        rules.known_rank(t, "einsum")
    letters, output = _parse_einsum(equation, tensors)
    operands = []
    for k, (t, lt) in enumerate(zip(tensors, letters)):
        elsewhere = set(output).union(*(letters[j] for j in range(len(letters)) if j != k))
        operands.append(_sum_out(t, lt, elsewhere))
    while len(operands) > 1:
        (a, la), (b, lb), rest = operands[0], operands[1], operands[2:]
        keep = set(output).union(*(lr for _, lr in rest))
        operands = [_pair(a, la, b, lb, keep)] + rest
    out, lo = _sum_out(*operands[0], set(output))
    out = _maybe_transpose(out, tuple(lo.index(c) for c in output))
    if name is not None:
        out = identity(out, name=name)
    return out


# -- norm -------------------------------------------------------------------------------


def _vector_norm(x, ord, axis, keepdims):  # noqa: A002
    if ord in ("euclidean", 2, 2.0):
        return sqrt(reduce_sum(square(x), axis, keepdims))
    if ord in (1, 1.0):
        return reduce_sum(abs(x), axis, keepdims)
    if ord == np.inf:
        return reduce_max(abs(x), axis, keepdims)
    if isinstance(ord, (int, float)) and ord > 0:
        return pow(reduce_sum(pow(abs(x), float(ord)), axis, keepdims), 1.0 / ord)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', a positive number or np.inf, "
                     f"got {ord!r}")


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """Vector or matrix norm (TF1 ``tf.norm``).

    ``axis=None``: one vector norm over all elements; an int: vector norms along
    that axis; a pair of ints: matrix norms over those two axes. ``ord`` is
    ``'euclidean'`` (default), ``'fro'`` (the same as euclidean), 1, 2, ``np.inf``
    or any ``p > 0`` for vectors; ``'fro'``/``'euclidean'``, 1 (largest column sum)
    or ``np.inf`` (largest row sum) for matrices. ``keep_dims`` is TF1's
    deprecated ``keepdims``.
    """
    x = convert_to_tensor(tensor)
    if not x.dtype.is_floating:
        raise TypeError(f"norm: the input '{x.name}' must be floating point, got "
                        f"{x.dtype.name}")
    keepdims = _keepdims_arg("norm", keepdims, keep_dims)
    if ord == "fro" and axis is not None and (isinstance(axis, int) or len(axis) != 2):
        raise ValueError("norm: ord='fro' needs axis=None or a pair of axes")
    if axis is None:
        out = _vector_norm(x, "euclidean" if ord == "fro" else ord, None, keepdims)
    elif isinstance(axis, (int, np.integer)) or len(axis) == 1:
        axis = int(axis) if isinstance(axis, (int, np.integer)) else int(axis[0])
        out = _vector_norm(x, ord, axis, keepdims)
    elif len(axis) == 2:
        rank = len(x.shape)
        rows, cols = rules.normalize_axis(axis[0], rank)[0], rules.normalize_axis(axis[1],
                                                                                 rank)[0]
        if rows == cols:
            raise ValueError(f"norm: the two axes {tuple(axis)} are the same")
        if ord in ("euclidean", "fro"):
            out = sqrt(reduce_sum(square(x), (rows, cols), keepdims))
        elif ord in (1, 1.0):  # the largest sum of |x| down a column
            out = reduce_max(reduce_sum(abs(x), rows, True), cols, True)
        elif ord == np.inf:  # the largest sum of |x| along a row
            out = reduce_max(reduce_sum(abs(x), cols, True), rows, True)
        else:
            raise NotImplementedError(f"norm: matrix norm ord={ord!r} is not supported "
                                      "(use 'fro', 'euclidean', 1 or np.inf)")
        if ord not in ("euclidean", "fro") and not keepdims:
            out = squeeze(out, (rows, cols))
    else:
        raise ValueError(f"norm: axis must be None, an int or a pair of ints, got {axis}")
    if name is not None:
        out = identity(out, name=name)
    return out


