"""The ``tensordot`` primitive: a sum of products over paired axes, and its gradient
(``tensordot`` again, then a transpose); and the primitives of matrices' structure (band
parts, transposes of the last two axes, diagonals) that TF1's ``matrix_*`` functions and the
factorizations' gradients build on. TF1's functions over them are in
``gradflow.ops.linalg_ops``.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as _device

from gradflow.graph import Tensor
from gradflow.prim import call, rules
from gradflow.prim.registry import apply, convert_to_tensor, register


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



# -- matrices' structure: transposes, bands, diagonals ------------------------------------
# (the primitives the factorizations' gradient rules build on; TF1's functions over them are
# in gradflow.ops.linalg_ops)


def _matrix_shape(shape, what):
    """``shape`` (a matrix or a batch of them), or a ValueError."""
    if len(shape) < 2:
        raise ValueError(f"{what} needs a matrix (rank 2 or more), got rank {len(shape)}")
    return shape


def _positions(xp, rows, cols, device):
    """Row and column indices of a ``rows x cols`` matrix, as int64 arrays that broadcast."""
    i = xp.arange(rows, dtype=xp.int64, device=device)
    j = xp.arange(cols, dtype=xp.int64, device=device)
    return i[:, None], j[None, :]


def _band_impl(xp, x, num_lower, num_upper):
    i, j = _positions(xp, x.shape[-2], x.shape[-1], _device(x))
    lower, upper = xp.astype(num_lower, xp.int64), xp.astype(num_upper, xp.int64)
    keep = xp.logical_and(xp.logical_or(lower < 0, i - j <= lower),
                          xp.logical_or(upper < 0, j - i <= upper))
    return xp.where(keep, x, xp.zeros_like(x))


def _band_infer(shapes, in_dtypes, **_):
    for k in (1, 2):
        if len(shapes[k]) != 0 or not in_dtypes[k].is_integer:
            raise TypeError("num_lower and num_upper must be integer scalars")
    return _matrix_shape(shapes[0], "band_part"), in_dtypes[0]


register("band_part", _band_impl, _band_infer, exact_grad=True,
         grad=lambda n, g: [band_part(g, n.inputs[1], n.inputs[2]), None, None])


def _int_scalar(value):
    return value if isinstance(value, Tensor) else convert_to_tensor(np.int64(value))


def band_part(x, num_lower, num_upper):
    """``x`` with zeros outside its band (ints or int scalar tensors; -1: the whole side)."""
    return apply("band_part", [x, _int_scalar(num_lower), _int_scalar(num_upper)])


def eye_like(x):
    """Identity matrices of the (run-time) shape of ``x``."""
    return band_part(call.ones_like(x), 0, 0)


def _swap_last(shape):
    return tuple(shape[:-2]) + (shape[-1], shape[-2])


# a copy, not a view: the torch backend's out= lowerings would write x + x^T into x's buffer
# while reading its transposed view (an error there; the same holds for ``transpose``)
register("matrix_transpose", lambda xp, x: xp.asarray(xp.matrix_transpose(x), copy=True),
         lambda s, d: (_swap_last(_matrix_shape(s[0], "matrix_transpose")), d[0]),
         grad=lambda n, g: [matrix_transpose(g)], exact_grad=True)


def matrix_transpose(x):
    """``x`` with its last two axes swapped."""
    return apply("matrix_transpose", [x])


def _diag_len(rows, cols, k):
    """The length of diagonal ``k`` of a ``rows x cols`` matrix (None when unknown)."""
    if k >= 0:
        return None if cols is None else (cols - k if rows is None else min(rows, cols - k))
    return None if rows is None else (rows + k if cols is None else min(rows + k, cols))


def _diagonal_matrix(xp, d, k, rows, cols):
    """``(values, mask)``: ``d`` (..., L) on diagonal ``k`` of ``rows x cols`` matrices,
    and where that diagonal lies."""
    length = d.shape[-1]
    width = rows if k >= 0 else cols
    if width > length:
        pad = xp.zeros(tuple(d.shape[:-1]) + (width - length,), dtype=d.dtype,
                       device=_device(d))
        d = xp.concat([d, pad], axis=-1)
    values = d[..., :, None] if k >= 0 else d[..., None, :]
    i, j = _positions(xp, rows, cols, _device(d))
    mask = (j - i) == k
    shape = tuple(d.shape[:-1]) + (rows, cols)
    return xp.broadcast_to(values, shape), xp.broadcast_to(mask, shape)


def _matrix_diag_size(length, k, num_rows, num_cols):
    """TF's rule for the shape of ``matrix_diag``'s result."""
    if length is None:
        return (num_rows if num_rows >= 0 else None), (num_cols if num_cols >= 0 else None)
    min_rows, min_cols = length - min(k, 0), length + max(k, 0)
    if num_rows < 0 and num_cols < 0:
        return max(min_rows, min_cols), max(min_rows, min_cols)
    rows = min_rows if num_rows < 0 else num_rows
    cols = min_cols if num_cols < 0 else num_cols
    if rows != min_rows and cols != min_cols:
        raise ValueError(f"num_rows={num_rows} and num_cols={num_cols} do not fit a "
                         f"diagonal of {length} at k={k}")
    return rows, cols


def _matrix_diag_impl(xp, d, k, num_rows, num_cols, padding_value):
    rows, cols = _matrix_diag_size(d.shape[-1], k, num_rows, num_cols)
    values, mask = _diagonal_matrix(xp, d, k, rows, cols)
    fill = xp.full(values.shape, padding_value, dtype=d.dtype, device=_device(d))
    return xp.where(mask, values, fill)


def _matrix_diag_infer(shapes, in_dtypes, k, num_rows, num_cols, padding_value):
    if len(shapes[0]) < 1:
        raise ValueError("the diagonal must have rank 1 or more")
    rows, cols = _matrix_diag_size(shapes[0][-1], k, num_rows, num_cols)
    return tuple(shapes[0][:-1]) + (rows, cols), in_dtypes[0]


register("matrix_diag", _matrix_diag_impl, _matrix_diag_infer, exact_grad=True,
         grad=lambda n, g: [matrix_diag_part(g, n.attrs["k"])])


def matrix_diag(d, k=0, num_rows=-1, num_cols=-1, padding_value=0):
    """Matrices with ``d`` (..., L) on their diagonal ``k`` and ``padding_value`` elsewhere."""
    return apply("matrix_diag", [d], k=int(k), num_rows=int(num_rows),
                 num_cols=int(num_cols), padding_value=padding_value)


def _diag_part_infer(shapes, in_dtypes, k):
    shape = _matrix_shape(shapes[0], "matrix_diag_part")
    rows, cols = shape[-2:]
    if (rows is not None and k <= -rows and rows) or (cols is not None and k >= cols and cols):
        raise ValueError(f"diagonal k={k} lies outside {rows} x {cols} matrices")
    return tuple(shape[:-2]) + (_diag_len(rows, cols, k),), in_dtypes[0]


register("matrix_diag_part", lambda xp, x, k: xp.linalg.diagonal(x, offset=k),
         _diag_part_infer, exact_grad=True,
         grad=lambda n, g: [matrix_set_diag(call.zeros_like(n.inputs[0]), g, n.attrs["k"])])


def matrix_diag_part(x, k=0):
    """Diagonal ``k`` of the matrices ``x``: shape (..., L)."""
    return apply("matrix_diag_part", [x], k=int(k))


def _set_diag_impl(xp, x, d, k):
    values, mask = _diagonal_matrix(xp, d, k, x.shape[-2], x.shape[-1])
    return xp.where(mask, values, x)


def _set_diag_infer(shapes, in_dtypes, k):
    x, d = shapes
    _matrix_shape(x, "matrix_set_diag")
    want = tuple(x[:-2]) + (_diag_len(x[-2], x[-1], k),)
    if len(d) != len(want) or any(a is not None and b is not None and a != b
                                  for a, b in zip(d, want)):
        raise ValueError(f"the diagonal has shape {tuple(d)}, diagonal k={k} of the input "
                         f"needs {want}")
    return x, rules.same_dtype(in_dtypes)


def _set_diag_grad(n, g):
    x, d = n.inputs
    k = n.attrs["k"]
    return [matrix_set_diag(g, call.zeros_like(d), k), matrix_diag_part(g, k)]


register("matrix_set_diag", _set_diag_impl, _set_diag_infer, grad=_set_diag_grad,
         exact_grad=True)


def matrix_set_diag(x, d, k=0):
    """``x`` with its diagonal ``k`` replaced by ``d``."""
    return apply("matrix_set_diag", [x, d], k=int(k))


# -- the leading columns of a matrix, and back (QR's and SVD's gradients of wide matrices) --


def _leading_impl(xp, x, like, message):
    if like.shape[-1] > x.shape[-1]:
        raise ValueError(message)
    return x[..., :like.shape[-1]]


def _leading_infer(shapes, in_dtypes, message):
    x, like = shapes
    _matrix_shape(x, "leading_columns")
    if x[-1] is not None and like[-1] is not None and like[-1] > x[-1]:
        raise ValueError(message)
    return tuple(x[:-1]) + (like[-1],), in_dtypes[0]


register("leading_columns", _leading_impl, _leading_infer, shape_only_inputs=(1,),
         view=True, exact_grad=True,
         grad=lambda n, g: [pad_columns(g, n.inputs[0]), None])


def leading_columns(x, like, message="leading_columns: the matrix has too few columns"):
    """The first ``like.shape[-1]`` columns of ``x`` (run-time sizes)."""
    return apply("leading_columns", [x, like], message=message)


def _pad_impl(xp, x, like):
    extra = like.shape[-1] - x.shape[-1]
    if extra == 0:
        return x
    zeros = xp.zeros(tuple(x.shape[:-1]) + (extra,), dtype=x.dtype, device=_device(x))
    return xp.concat([x, zeros], axis=-1)


def _pad_infer(shapes, in_dtypes):
    x, like = shapes
    _matrix_shape(x, "pad_columns")
    if x[-1] is not None and like[-1] is not None and like[-1] < x[-1]:
        raise ValueError("pad_columns: the matrix is wider than the width to pad it to")
    return tuple(x[:-1]) + (like[-1],), in_dtypes[0]


register("pad_columns", _pad_impl, _pad_infer, shape_only_inputs=(1,), exact_grad=True,
         grad=lambda n, g: [leading_columns(g, n.inputs[0]), None])


def pad_columns(x, like):
    """``x`` with columns of zeros on the right, to ``like.shape[-1]`` columns."""
    return apply("pad_columns", [x, like])


def static_int(value):
    """``value`` as an int when it is one known while the graph is built, else None."""
    if isinstance(value, Tensor):
        if value.opdef.kind != "constant":
            return None
        value = value.attrs["value"].array
    array = np.asarray(value)
    return int(array) if array.ndim == 0 and array.dtype.kind in "iu" else None
