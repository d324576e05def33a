"""TF1's matrix functions: inverses, determinants, solves, factorizations (Cholesky, QR,
SVD, symmetric eigen), least squares, band parts, diagonals and traces. Their primitives
are in ``gradflow.prim.linalg``, ``gradflow.prim.linalg_solve`` and
``gradflow.prim.linalg_decomp``; every function takes a matrix or a batch of them (leading
axes), as TF1's do.
"""

from __future__ import annotations

import collections

import numpy as np

from gradflow.ops.array_ops import matmul, reduce_max, reduce_prod, reduce_sum, reshape
from gradflow.ops.control_flow_ops import cond
from gradflow.ops.index_ops import concat, shape
from gradflow.ops.math_ops import cast, greater, greater_equal, log, where
from gradflow.ops.state_ops import identity
from gradflow.prim import linalg as _lin
from gradflow.prim import linalg_decomp as _decomp  # noqa: F401 - registers its primitives
from gradflow.prim import linalg_solve as _solve
from gradflow.prim.array import expand_dims, squeeze
from gradflow.prim.registry import apply, convert_to_tensor

Qr = collections.namedtuple("Qr", ["q", "r"])
Qr.__doc__ = "The result of ``qr``: ``q`` with orthonormal columns, upper-triangular ``r``."
Eigh = collections.namedtuple("Eigh", ["e", "v"])
Eigh.__doc__ = "The result of ``self_adjoint_eig``: eigenvalues ``e`` (ascending), vectors ``v``."
Slogdet = collections.namedtuple("Slogdet", ["sign", "log_abs_determinant"])
Slogdet.__doc__ = "The result of ``slogdet``: the determinant's sign and log of its magnitude."


def _named(t, name):
    return identity(t, name=name) if name is not None else t


def _matrix(x, what):
    x = convert_to_tensor(x)
    if x.shape is not None and len(x.shape) < 2:
        raise ValueError(f"{what}: '{x.name}' must be a matrix or a batch of them, got shape "
                         f"{tuple(x.shape)}")
    return x


def _float_matrix(x, what):
    x = _matrix(x, what)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: '{x.name}' must be floating point, got {x.dtype.name}")
    return x


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """``a`` with its last two axes swapped (TF1 ``tf.matrix_transpose``, ``tf.linalg.
    matrix_transpose``); ``conjugate`` changes nothing for real tensors."""
    return _named(_lin.matrix_transpose(_matrix(a, "matrix_transpose")), name)


def adjoint(matrix, name=None):
    """The conjugate transpose of the last two axes (``tf.linalg.adjoint``): the transpose,
    for real tensors."""
    return _named(_lin.matrix_transpose(_matrix(matrix, "adjoint")), name)


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002 - TF1 names
    """The inverses of square matrices (TF1 ``tf.matrix_inverse``, ``tf.linalg.inv``); of
    their transposes when ``adjoint``. A singular matrix is an error when run."""
    x = _float_matrix(input, "matrix_inverse")
    a = _lin.matrix_transpose(x) if adjoint else x
    return apply("matrix_inverse", [a], name=name, tensor=x.name)


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinants of square matrices (TF1 ``tf.matrix_determinant``,
    ``tf.linalg.det``): shape ``input.shape[:-2]``."""
    x = _float_matrix(input, "matrix_determinant")
    return apply("matrix_determinant", [x], name=name, tensor=x.name)


def slogdet(input, name=None):  # noqa: A002
    """``(sign, log_abs_determinant)`` of square matrices (``tf.linalg.slogdet``): the log
    of a determinant's magnitude without its overflow. The sign has no gradient."""
    x = _float_matrix(input, "slogdet")
    return Slogdet(apply("determinant_sign", [x], tensor=x.name),
                   apply("log_abs_determinant", [x], name=name, tensor=x.name))


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular Cholesky factors ``L`` (``A = L L^T``) of symmetric
    positive-definite matrices (TF1 ``tf.cholesky``): only the lower triangle of ``input``
    is read. Its gradient is TF's, that of a symmetric input (symmetric itself)."""
    x = _float_matrix(input, "cholesky")
    return apply("cholesky", [x], name=name, tensor=x.name)


def logdet(matrix, name=None):
    """The log-determinants of symmetric positive-definite matrices (``tf.linalg.logdet``),
    as TF: twice the sum of the logs of the Cholesky factor's diagonal."""
    chol = cholesky(matrix)
    return _named(reduce_sum(log(_lin.matrix_diag_part(chol)), -1) * 2.0, name)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """``X`` with ``matrix @ X = rhs`` (TF1 ``tf.matrix_solve``, ``tf.linalg.solve``); with
    ``matrix``'s transpose when ``adjoint``. ``matrix`` is ``[..., M, M]``, ``rhs``
    ``[..., M, K]`` with the same batch shape."""
    a = _float_matrix(matrix, "matrix_solve")
    b = _matrix(convert_to_tensor(rhs, like=a), "matrix_solve")
    m = _lin.matrix_transpose(a) if adjoint else a
    return apply("matrix_solve", [m, b], name=name, tensor=a.name)


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """``X`` with ``T @ X = rhs`` for ``T`` the lower (``lower=True``) or upper triangle of
    ``matrix``, the other triangle ignored (TF1 ``tf.matrix_triangular_solve``,
    ``tf.linalg.triangular_solve``); ``T``'s transpose when ``adjoint``. Batch axes
    broadcast, as TF's. A zero on the diagonal is an error when run (TF gives infs)."""
    a = _float_matrix(matrix, "matrix_triangular_solve")
    b = _matrix(convert_to_tensor(rhs, like=a), "matrix_triangular_solve")
    return _named(_solve.triangular_solve(a, b, lower, adjoint, a.name), name)


def cholesky_solve(chol, rhs, name=None):
    """``X`` with ``A @ X = rhs`` for ``A = chol @ chol^T``, from its Cholesky factor
    (``tf.cholesky_solve``): two triangular solves."""
    c = _float_matrix(chol, "cholesky_solve")
    b = _matrix(convert_to_tensor(rhs, like=c), "cholesky_solve")
    y = _solve.triangular_solve(c, b, True, False, c.name)
    return _named(_solve.triangular_solve(c, y, True, True, c.name), name)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """The QR decompositions ``input = q @ r`` (TF1 ``tf.qr``): a ``Qr(q, r)`` namedtuple,
    ``q`` ``[..., M, K]`` with orthonormal columns and ``r`` ``[..., K, N]`` upper
    triangular, ``K = min(M, N)`` (``K = M`` when ``full_matrices``). Signs are LAPACK's
    (TF's). The gradient of ``full_matrices=True`` needs ``M <= N``, as TF's."""
    x = _float_matrix(input, "qr")
    full = bool(full_matrices)
    return Qr(apply("qr_q", [x], name=name, full_matrices=full),
              apply("qr_r", [x], full_matrices=full))


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """Singular value decompositions ``tensor = u @ diag(s) @ v^T`` (TF1 ``tf.svd``):
    ``(s, u, v)`` in TF's order, ``s`` descending, or ``s`` alone when ``compute_uv`` is
    False. ``u`` is ``[..., M, K]``, ``v`` ``[..., N, K]`` (``M x M`` and ``N x N`` when
    ``full_matrices``). Each pair of singular vectors has the sign that makes the first
    entry of largest magnitude of ``u``'s column positive (TF's signs are its library's).
    Gradients assume distinct singular values; those of ``u`` and ``v`` need the matrix
    dims known when the graph is built, as TF's."""
    x = _float_matrix(tensor, "svd")
    s = apply("svd_s", [x], name=name)
    if not compute_uv:
        return s
    full = bool(full_matrices)
    return s, apply("svd_u", [x], full_matrices=full), apply("svd_v", [x], full_matrices=full)


def self_adjoint_eig(tensor, name=None):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices (TF1
    ``tf.self_adjoint_eig``, ``tf.linalg.eigh``): an ``Eigh(e, v)`` namedtuple. Only the
    lower triangle is read. Each eigenvector has the sign that makes its first entry of
    largest magnitude positive. Gradients assume distinct eigenvalues."""
    x = _float_matrix(tensor, "self_adjoint_eig")
    return Eigh(apply("eigh_values", [x], name=name), apply("eigh_vectors", [x]))


def self_adjoint_eigvals(tensor, name=None):
    """The eigenvalues (ascending) of symmetric matrices (TF1 ``tf.self_adjoint_eigvals``,
    ``tf.linalg.eigvalsh``); only the lower triangle is read."""
    return apply("eigh_values", [_float_matrix(tensor, "self_adjoint_eigvals")], name=name)


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverses (``tf.linalg.pinv``), from the SVD: singular values
    at most ``rcond * max(s)`` count as zero; ``rcond`` defaults to TF's
    ``10 * max(M, N) * eps``."""
    x = _float_matrix(a, "pinv")
    s, u, v = svd(x)
    if rcond is None:
        dims = cast(shape(x)[-2:], x.dtype)
        rcond = reduce_max(dims) * (10.0 * float(np.finfo(x.dtype.as_numpy_dtype).eps))
    cutoff = expand_dims(reduce_max(s, -1), -1) * rcond
    kept = where(greater(s, cutoff), s, s * 0.0 + np.inf)
    return _named(matmul(v / expand_dims(kept, -2), u, transpose_b=True), name)


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least-squares solutions of ``matrix @ X = rhs`` (TF1 ``tf.matrix_solve_ls``,
    ``tf.linalg.lstsq``). ``fast=True``: TF's normal equations through a Cholesky factor,
    with ``l2_regularizer`` on the diagonal (over- and under-determined systems both);
    ``fast=False``: the minimum-norm solution through the pseudo-inverse (the regularizer
    ignored, as TF does), which also has gradients here."""
    a = _float_matrix(matrix, "matrix_solve_ls")
    b = _matrix(convert_to_tensor(rhs, like=a), "matrix_solve_ls")
    if not fast:
        return _named(matmul(pinv(a), b), name)
    lam = convert_to_tensor(l2_regularizer, like=a)

    def tall():
        gram = matmul(a, a, transpose_a=True)
        chol = cholesky(gram + lam * _lin.eye_like(gram))
        return cholesky_solve(chol, matmul(a, b, transpose_a=True))

    def wide():
        gram = matmul(a, a, transpose_b=True)
        chol = cholesky(gram + lam * _lin.eye_like(gram))
        return matmul(a, cholesky_solve(chol, b), transpose_a=True)

    dims = a.shape[-2:] if a.shape is not None else (None, None)
    if None not in dims:
        out = tall() if dims[0] >= dims[1] else wide()
    else:
        rows_cols = shape(a)[-2:]
        out = cond(greater_equal(rows_cols[0], rows_cols[1]), tall, wide)
    return _named(out, name)


def matrix_band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """``input`` with zeros outside a band (TF1 ``tf.matrix_band_part``,
    ``tf.linalg.band_part``): ``num_lower`` sub-diagonals and ``num_upper``
    super-diagonals kept, -1 for the whole triangle (ints or int scalar tensors)."""
    x = _matrix(input, "matrix_band_part")
    bounds = []
    for value in (num_lower, num_upper):
        t = convert_to_tensor(value, dtype=None if hasattr(value, "dtype") else "int64")
        if not t.dtype.is_integer:
            raise TypeError(f"matrix_band_part: the band sizes must be integers, got "
                            f"{t.dtype.name}")
        bounds.append(t)
    return apply("band_part", [x] + bounds, name=name)


def _check_align(align, what):
    # one diagonal (an int k) needs no alignment: every align gives the same result
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise ValueError(f"{what}: align must be RIGHT_LEFT, LEFT_RIGHT, LEFT_LEFT or "
                         f"RIGHT_RIGHT, got {align!r}")


def _diagonal_index(k, what):
    if isinstance(k, (list, tuple)) or (hasattr(k, "shape") and len(k.shape) > 0):
        raise NotImplementedError(f"{what}: a band of diagonals (k a pair) is not supported; "
                                  "give one diagonal, an int k")
    static = _lin.static_int(k)
    if static is None:
        raise TypeError(f"{what}: k must be an int known when the graph is built")
    return static


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    """Matrices with ``diagonal`` (``[..., L]``) on their diagonal ``k`` (0 the main one, >0
    above it) and ``padding_value`` elsewhere (TF1 ``tf.matrix_diag``, ``tf.linalg.diag``):
    ``[..., L + |k|, L + |k|]``, or ``num_rows x num_cols`` as TF's rule allows. One
    diagonal only: ``k`` as a pair (a band) is not supported."""
    d = convert_to_tensor(diagonal)
    _check_align(align, "matrix_diag")
    k = _diagonal_index(k, "matrix_diag")
    if d.shape is not None and len(d.shape) == 0:
        raise ValueError(f"matrix_diag: the diagonal '{d.name}' must have rank 1 or more")
    return _named(_lin.matrix_diag(d, k, num_rows, num_cols, padding_value), name)


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002
                     align="RIGHT_LEFT"):
    """Diagonal ``k`` of the matrices ``input`` (TF1 ``tf.matrix_diag_part``,
    ``tf.linalg.diag_part``): ``[..., L]``. One diagonal only (``padding_value`` pads the
    diagonals of a band, which is not supported)."""
    x = _matrix(input, "matrix_diag_part")
    _check_align(align, "matrix_diag_part")
    return _named(_lin.matrix_diag_part(x, _diagonal_index(k, "matrix_diag_part")), name)


def matrix_set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    """``input`` with its diagonal ``k`` replaced by ``diagonal`` (TF1
    ``tf.matrix_set_diag``, ``tf.linalg.set_diag``)."""
    x = _matrix(input, "matrix_set_diag")
    d = convert_to_tensor(diagonal, like=x)
    _check_align(align, "matrix_set_diag")
    return _named(_lin.matrix_set_diag(x, d, _diagonal_index(k, "matrix_set_diag")), name)


def trace(x, name=None):
    """The sums of the matrices' diagonals (TF1 ``tf.trace``, ``tf.linalg.trace``): shape
    ``x.shape[:-2]``."""
    x = _matrix(x, "trace")
    return _named(reduce_sum(_lin.matrix_diag_part(x, 0), -1), name)


def _static_shape(x):
    return None if x.shape is None or None in x.shape else [int(d) for d in x.shape]


def diag(diagonal, name=None):
    """A tensor of rank ``2k`` with ``diagonal`` (rank ``k``) on its diagonal (TF1
    ``tf.diag``, ``tf.linalg.tensor_diag``): ``out[i..., i...] = diagonal[i...]``."""
    d = convert_to_tensor(diagonal)
    square = _lin.matrix_diag(reshape(d, [-1]))
    dims = _static_shape(d)
    target = dims + dims if dims is not None else concat([shape(d), shape(d)], 0)
    return _named(reshape(square, target), name)


def diag_part(input, name=None):  # noqa: A002
    """The diagonal of a tensor of rank ``2k`` and shape ``s + s`` (TF1 ``tf.diag_part``,
    ``tf.linalg.tensor_diag_part``): ``out[i...] = input[i..., i...]``."""
    x = convert_to_tensor(input)
    rank = len(x.shape) if x.shape is not None else None
    if rank is None or rank % 2 or rank == 0:
        raise ValueError(f"diag_part: '{x.name}' must have an even, known rank, got shape "
                         f"{x.shape}")
    half = rank // 2
    dims = _static_shape(x)
    if dims is not None:
        if dims[:half] != dims[half:]:
            raise ValueError(f"diag_part: '{x.name}' has shape {tuple(dims)}, whose halves "
                             "differ")
        size, target = int(np.prod(dims[:half])), dims[:half]
    else:
        target = shape(x)[:half]
        size = reduce_prod(target)
    square = reshape(x, [size, size]) if dims is not None else \
        reshape(x, concat([expand_dims(size, 0), expand_dims(size, 0)], 0))
    return _named(reshape(_lin.matrix_diag_part(square, 0), target), name)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """Matrix-vector products ``a @ b`` (``tf.linalg.matvec``): ``a`` ``[..., M, N]``, ``b``
    ``[..., N]``; ``a`` transposed first when ``transpose_a`` or ``adjoint_a``."""
    a = _matrix(a, "matvec")
    b = convert_to_tensor(b, like=a)
    out = matmul(a, expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
    return _named(squeeze(out, -1), name)
