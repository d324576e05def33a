"""More of TF1's ``tf.linalg``: ``cross``, ``normalize``, ``matrix_rank``, the LU family
(``lu``, ``lu_solve``, ``lu_matrix_inverse``, ``lu_reconstruct``), ``expm``, the
tridiagonal functions (``tridiagonal_matmul``, ``tridiagonal_solve``,
``eigh_tridiagonal``). Each is a composite of gradflow's ops, so each is differentiable
where its pieces are (``lu`` through its pivoted elimination; ``expm`` through its Padé
approximant and squarings).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import argmax, matmul, reduce_max, reduce_sum, squeeze
from gradflow.ops.control_flow_ops import while_loop
from gradflow.ops.index_ops import concat, one_hot, stack, unstack
from gradflow.ops.linalg_ops import norm
from gradflow.ops.math_ops import abs, cast, floor, log, maximum, pow, where  # noqa: A004
from gradflow.ops.matrix_ops import (
    matrix_band_part,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_solve,
    matrix_transpose,
    matrix_triangular_solve,
    self_adjoint_eigvals,
    svd,
)
from gradflow.ops.shape_ops import eye, pad
from gradflow.ops.state_ops import identity
from gradflow.prim.array import expand_dims
from gradflow.prim.registry import convert_to_tensor

__all__ = ["cross", "eigh_tridiagonal", "expm", "lu", "lu_matrix_inverse", "lu_reconstruct",
           "lu_solve", "matrix_rank", "normalize", "tridiagonal_matmul", "tridiagonal_solve"]


def _named(t, name):
    return identity(t, name=name) if name is not None else t


def _float(x, what, rank=1):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: '{x.name}' must be floating point, got {x.dtype.name}")
    if x.shape is None or len(x.shape) < rank:
        raise ValueError(f"{what}: '{x.name}' must have rank {rank} or more, got shape "
                         f"{x.shape}")
    return x


def _square(x, what):
    x = _float(x, what, 2)
    n, m = x.shape[-2:]
    if n is None or m is None or int(n) != int(m):
        raise ValueError(f"{what}: '{x.name}' must be square matrices of known size, got "
                         f"shape {tuple(x.shape)}")
    return x, int(n)


def cross(a, b, name=None):
    """The cross products of the 3-vectors on the last axes of ``a`` and ``b`` (TF1
    ``tf.linalg.cross``, ``tf.cross``); both have one shape ``[..., 3]``."""
    a = _float(a, "cross")
    b = convert_to_tensor(b, like=a)
    if tuple(a.shape) != tuple(b.shape) or a.shape[-1] != 3:
        raise ValueError(f"cross: '{a.name}' and '{b.name}' must have one shape [..., 3], "
                         f"got {tuple(a.shape)} and {tuple(b.shape)}")
    a1, a2, a3 = unstack(a, 3, axis=-1)
    b1, b2, b3 = unstack(b, 3, axis=-1)
    return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=-1,
                 name=name)


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """``(tensor / norm, norm)``: ``tensor`` scaled to norm 1 along ``axis`` and the norm
    (kept dimensions), as ``tf.norm`` computes it (TF1 ``tf.linalg.normalize``)."""
    x = convert_to_tensor(tensor)
    size = norm(x, ord=ord, axis=axis, keepdims=True)
    return _named(x / size, name), size


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values of each matrix of ``a`` above ``tol`` (int32), by
    default ``eps * max(M, N) * largest singular value`` (TF1 ``tf.linalg.matrix_rank``)."""
    x = _float(a, "matrix_rank", 2)
    s = svd(x, compute_uv=False)
    if tol is None:
        rows, cols = x.shape[-2:]
        if rows is None or cols is None:
            raise ValueError(f"matrix_rank: the matrix size of '{x.name}' must be known")
        eps = float(np.finfo(x.dtype.as_numpy_dtype).eps)
        tol = reduce_max(s, axis=-1, keepdims=True) * (eps * max(int(rows), int(cols)))
    else:
        tol = convert_to_tensor(tol, like=s)
    return reduce_sum(cast(s > tol, dtypes.int32), axis=-1, name=name)


# -- LU ------------------------------------------------------------------------------------


def _swap_rows(a, k, p, n):
    """``(P, P @ a)``: ``P`` the permutation swapping rows ``k`` and ``p`` (per matrix)."""
    dtype = a.dtype
    e_k = convert_to_tensor(np.eye(n, dtype=dtype.as_numpy_dtype)[k])
    e_p = one_hot(p, n, dtype=dtype)
    outer = lambda u, v: expand_dims(u, -1) * expand_dims(v, -2)  # noqa: E731
    swap = eye(n, dtype=dtype) - outer(e_k, e_k) - outer(e_p, e_p) + outer(e_k, e_p) \
        + outer(e_p, e_k)
    return swap, matmul(swap, a)


def lu(input, output_idx_type=dtypes.int32, name=None):  # noqa: A002
    """``(lu, p)``: the LU factorization with partial pivoting of each square matrix of
    ``input`` (TF1 ``tf.linalg.lu``): ``lu`` holds ``L`` below the diagonal (its unit
    diagonal left out) and ``U`` on and above it, and ``input[..., p, :] = L @ U``. The
    pivot of each column is its entry of largest magnitude (the first of equal ones), as
    Eigen's PartialPivLU picks it. The matrix size must be known when the graph is built."""
    a, n = _square(input, "lu")
    output_idx_type = dtypes.as_dtype(output_idx_type)
    perm = None
    for k in range(n - 1):
        p = argmax(abs(a[..., k:, k]), axis=-1, output_type=dtypes.int32) + k
        swap, a = _swap_rows(a, k, p, n)
        perm = swap if perm is None else matmul(swap, perm)
        multipliers = a[..., k + 1:, k] / a[..., k:k + 1, k]
        rest = a[..., k + 1:, k + 1:] - expand_dims(multipliers, -1) * a[..., k:k + 1, k + 1:]
        below = concat([a[..., k + 1:, :k], expand_dims(multipliers, -1), rest], -1)
        a = concat([a[..., :k + 1, :], below], -2)
    if perm is None:
        order = cast(reduce_sum(a * 0.0, axis=[-2, -1], keepdims=True)[..., 0], output_idx_type)
    else:
        order = argmax(perm, axis=-1, output_type=output_idx_type)
    return _named(a, name), order


def _lu_parts(lower_upper, perm, what):
    lu_, n = _square(lower_upper, what)
    perm = convert_to_tensor(perm)
    if not perm.dtype.is_integer:
        raise TypeError(f"{what}: perm '{perm.name}' must be integers, got {perm.dtype.name}")
    ones = convert_to_tensor(np.ones(n, lu_.dtype.as_numpy_dtype))
    lower = matrix_set_diag(matrix_band_part(lu_, -1, 0), ones + 0.0 * matrix_diag_part(lu_))
    upper = matrix_band_part(lu_, 0, -1)
    return lower, upper, one_hot(perm, n, dtype=lu_.dtype)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    """The matrices ``lu`` factors: ``P^T @ L @ U`` (TF1 ``tf.linalg.lu_reconstruct``)."""
    lower, upper, p = _lu_parts(lower_upper, perm, "lu_reconstruct")
    return _named(matmul(p, matmul(lower, upper), transpose_a=True), name)


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    """``X`` with ``A @ X = rhs`` for ``A`` given by its LU factors (TF1
    ``tf.linalg.lu_solve``)."""
    lower, upper, p = _lu_parts(lower_upper, perm, "lu_solve")
    rhs = convert_to_tensor(rhs, like=lower)
    y = matrix_triangular_solve(lower, matmul(p, rhs), lower=True)
    return _named(matrix_triangular_solve(upper, y, lower=False), name)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    """The inverses of the matrices given by their LU factors (TF1
    ``tf.linalg.lu_matrix_inverse``)."""
    lu_, n = _square(lower_upper, "lu_matrix_inverse")
    identity_ = eye(n, dtype=lu_.dtype) + 0.0 * lu_
    return lu_solve(lu_, perm, identity_, name=name)


# -- expm ----------------------------------------------------------------------------------

# the Padé coefficients b_0 ... b_m of degree m (Higham, "The scaling and squaring method
# for the matrix exponential revisited", 2005), and the 1-norm below which each degree is
# accurate enough (the last degree scales the matrix down to its bound)
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
         1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
         33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}
_BOUNDS = {
    "float64": ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1),
                (7, 9.504178996162932e-1), (9, 2.097847961257068), (13, 5.371920351148152)),
    "float32": ((3, 4.258730016922831e-1), (5, 1.880152677804762), (7, 3.925724783138660)),
}


def _pade(a, degree, ident):
    """``(U, V)`` of the degree's approximant: ``exp(a) ~ (V - U)^-1 (V + U)``."""
    b = _PADE[degree]
    powers = [ident, matmul(a, a)]
    for _ in range(2, degree // 2 + 1):
        powers.append(matmul(powers[-1], powers[1]))
    odd = sum(powers[j] * b[2 * j + 1] for j in range(len(powers)))
    even = sum(powers[j] * b[2 * j] for j in range(len(powers)))
    return matmul(a, odd), even


def expm(input, name=None):  # noqa: A002
    """The matrix exponential of each square matrix of ``input`` (TF1 ``tf.linalg.expm``),
    by scaling and squaring with the Padé approximant of the degree the matrix's 1-norm
    calls for (degrees 3 to 13 in float64, 3 to 7 in float32/float16), as TF computes it."""
    a, n = _square(input, "expm")
    bounds = _BOUNDS["float64" if a.dtype is dtypes.float64 else "float32"]
    l1 = reduce_max(reduce_sum(abs(a), axis=-2), axis=-1)
    l1 = expand_dims(expand_dims(l1, -1), -1)
    top_degree, top_norm = bounds[-1]
    squarings = maximum(floor(log(l1 / top_norm) / float(np.log(2.0))), 0.0)
    ident = eye(n, dtype=a.dtype) + 0.0 * a
    u, v = _pade(a / pow(2.0, squarings), top_degree, ident)
    for degree, bound in reversed(bounds[:-1]):
        u_low, v_low = _pade(a, degree, ident)
        u, v = where(l1 < bound, u_low, u), where(l1 < bound, v_low, v)
    result = matrix_solve(v - u, v + u)
    most = reduce_max(squarings)

    def body(i, r):
        return i + 1.0, where(i < squarings, matmul(r, r), r)

    _, result = while_loop(lambda i, r: i < most, body,
                           [convert_to_tensor(0.0, dtype=a.dtype), result])
    return _named(result, name)


# -- tridiagonal ---------------------------------------------------------------------------


def _tridiagonals(diagonals, diagonals_format, what):
    """``(superdiagonal, main, subdiagonal)``, each ``[..., M]`` (the superdiagonal's last
    and the subdiagonal's first entry unused), from TF's three formats."""
    if diagonals_format == "compact":
        d = _float(diagonals, what, 2)
        if d.shape[-2] != 3:
            raise ValueError(f"{what}: compact diagonals '{d.name}' must be [..., 3, M], got "
                             f"shape {tuple(d.shape)}")
        return tuple(unstack(d, 3, axis=-2))
    if diagonals_format == "sequence":
        if not isinstance(diagonals, (list, tuple)) or len(diagonals) != 3:
            raise ValueError(f"{what}: sequence diagonals must be a list of three tensors")
        sup = _float(diagonals[0], what)
        return sup, convert_to_tensor(diagonals[1], like=sup), \
            convert_to_tensor(diagonals[2], like=sup)
    if diagonals_format == "matrix":
        m = _float(diagonals, what, 2)
        main = matrix_diag_part(m)
        sup = pad(matrix_diag_part(m, k=1), [[0, 0]] * (len(m.shape) - 2) + [[0, 1]])
        sub = pad(matrix_diag_part(m, k=-1), [[0, 0]] * (len(m.shape) - 2) + [[1, 0]])
        return sup, main, sub
    raise ValueError(f"{what}: diagonals_format must be 'compact', 'sequence' or 'matrix', "
                     f"got {diagonals_format!r}")


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """The tridiagonal matrices given by ``diagonals`` times ``rhs`` ``[..., M, N]`` (TF1
    ``tf.linalg.tridiagonal_matmul``)."""
    sup, main, sub = _tridiagonals(diagonals, diagonals_format, "tridiagonal_matmul")
    x = convert_to_tensor(rhs, like=main)
    rank = len(x.shape)
    edge = [[0, 0]] * (rank - 2)
    out = expand_dims(main, -1) * x
    out += pad(expand_dims(sup[..., :-1], -1) * x[..., 1:, :], edge + [[0, 1], [0, 0]])
    out += pad(expand_dims(sub[..., 1:], -1) * x[..., :-1, :], edge + [[1, 0], [0, 0]])
    return _named(out, name)


def tridiagonal_dense(sup, main, sub):
    """The ``[..., M, M]`` matrices of the three diagonals."""
    return matrix_diag(main) + matrix_diag(sup[..., :-1], k=1) + \
        matrix_diag(sub[..., 1:], k=-1)


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False,
                      conjugate_rhs=False, name=None, partial_pivoting=True,
                      perturb_singular=False):
    """``X`` with ``A @ X = rhs`` for the tridiagonal matrices ``A`` of ``diagonals``
    (TF1 ``tf.linalg.tridiagonal_solve``); ``rhs`` is ``[..., M, K]`` (``[..., K, M]``
    with ``transpose_rhs``) or ``[..., M]``. Solved with partial pivoting; a singular
    matrix is an error when run."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular is not supported")
    sup, main, sub = _tridiagonals(diagonals, diagonals_format, "tridiagonal_solve")
    x = convert_to_tensor(rhs, like=main)
    vector = len(x.shape) == len(main.shape)
    if vector:
        x = expand_dims(x, -1)
    elif transpose_rhs:
        x = matrix_transpose(x)
    out = matrix_solve(tridiagonal_dense(sup, main, sub), x)
    return _named(squeeze(out, [-1]) if vector else out, name)


def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None,
                     tol=None, name=None):
    """The eigenvalues, ascending, of the real symmetric tridiagonal matrix with diagonal
    ``alpha`` ``[n]`` and off-diagonal ``beta`` ``[n - 1]`` (TF1
    ``tf.linalg.eigh_tridiagonal``): all of them (``select='a'``) or those of indices
    ``select_range = [lo, hi]`` (``'i'``). A range of values (``'v'``) and the
    eigenvectors (``eigvals_only=False``) are not supported."""
    if not eigvals_only:
        raise NotImplementedError("eigh_tridiagonal: only eigvals_only=True is supported")
    if select not in ("a", "i"):
        raise NotImplementedError("eigh_tridiagonal: only select='a' or 'i' is supported")
    a = _float(alpha, "eigh_tridiagonal")
    b = convert_to_tensor(beta, like=a)
    if len(a.shape) != 1 or len(b.shape) != 1 or None in (a.shape[0], b.shape[0]) \
            or int(b.shape[0]) != int(a.shape[0]) - 1:
        raise ValueError(f"eigh_tridiagonal: alpha '{a.name}' must be [n] and beta "
                         f"'{b.name}' [n - 1], got {a.shape} and {b.shape}")
    edge = pad(b, [[0, 1]])
    values = self_adjoint_eigvals(tridiagonal_dense(edge, a, pad(b, [[1, 0]])))
    if select == "i":
        lo, hi = (int(v) for v in select_range)
        values = values[lo:hi + 1]
    return _named(values, name)
