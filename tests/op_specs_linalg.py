"""Op specs of the linear-algebra primitives (gradflow/prim/linalg.py, linalg_solve.py,
linalg_decomp.py): forward against NumPy's ``linalg`` and float64 finite-difference
gradients (first and second order) on every backend, through test_ops.py.

Inputs keep away from singular matrices, repeated singular values and eigenvalues (where
the vectors' gradients do not exist) and ties in the sign rule of the vectors.
"""

from __future__ import annotations

import numpy as np
from op_specs import keep, uniform
from op_specs import spec as _spec

import gradflow as gf

LOOSE = {"float32": (2e-4, 2e-5)}  # float32 solves and factorizations lose a few digits
STATIC_MATRIX = keep(0, -2, -1)  # the vectors' gradients need the matrix dims (as TF's)


def well_conditioned(*shape):
    """Square matrices near ``3 I``: far from singular, positive determinants."""
    n = shape[-1]
    return lambda rng: rng.uniform(-1.0, 1.0, shape) + 3.0 * np.eye(n)


def spread(*shape):
    """Matrices whose singular values are well apart: ``U diag(s) V^T`` with ``s`` spaced."""
    def gen(rng):
        m, n = shape[-2:]
        k = min(m, n)
        u = np.linalg.qr(rng.normal(size=shape[:-2] + (m, m)))[0][..., :k]
        v = np.linalg.qr(rng.normal(size=shape[:-2] + (n, n)))[0][..., :k]
        s = 3.0 - np.arange(k) * 0.9 + rng.uniform(-0.1, 0.1, shape[:-2] + (k,))
        return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)

    return gen


def np_signed(vectors):
    """The sign rule of gradflow's singular vectors and eigenvectors, in NumPy."""
    first = np.argmax(np.abs(vectors) >= np.abs(vectors).max(-2, keepdims=True) * (1 - 1e-6),
                      axis=-2)
    picked = np.take_along_axis(vectors, first[..., None, :], -2)
    return vectors * np.where(picked < 0, -1.0, 1.0)


def np_sym_lower(x):
    return np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)


def np_svd(a, full=False):
    u, s, vt = np.linalg.svd(a, full_matrices=full)
    v = np.swapaxes(vt, -1, -2)
    k = s.shape[-1]
    first = np.argmax(np.abs(u[..., :k]) >= np.abs(u[..., :k]).max(-2, keepdims=True)
                      * (1 - 1e-6), axis=-2)
    signs = np.where(np.take_along_axis(u[..., :k], first[..., None, :], -2) < 0, -1.0, 1.0)
    u = np.concatenate([u[..., :k] * signs, np_signed(u[..., k:])], -1)
    v = np.concatenate([v[..., :k] * signs, np_signed(v[..., k:])], -1)
    return s, u, v


def spec(id, ops, fn, inputs, ref, **kw):  # noqa: A002 - op_specs' signature
    """``op_specs.spec``, with the reference's results in the dtype of the first input
    (NumPy's identity matrices and factorizations would give float64)."""
    def same_dtype(*xs):
        out = ref(*xs)
        if isinstance(out, (list, tuple)):
            return [np.asarray(o).astype(xs[0].dtype) for o in out]
        return np.asarray(out).astype(xs[0].dtype)

    _spec(id, ops, fn, inputs, same_dtype, **kw)


def _gram(x):
    """``x x^T + I``: symmetric positive definite, a smooth function of every entry of x."""
    return gf.matmul(x, x, transpose_b=True) + gf.eye(x.shape[-1], dtype=x.dtype)


def _np_gram(x):
    return x @ np.swapaxes(x, -1, -2) + np.eye(x.shape[-1])


# -- structure: band parts, transposes, diagonals ------------------------------------------

spec("band_part", "band_part", lambda x: gf.matrix_band_part(x, 1, 0), [uniform(2, 3, 4)],
     lambda x: np.triu(np.tril(x, 0), -1))
spec("band_part_upper", "band_part", lambda x: gf.linalg.band_part(x, 0, -1), [uniform(3, 3)],
     np.triu)
spec("band_part_int", "band_part", lambda x: gf.matrix_band_part(x, 0, 0),
     [lambda rng: rng.integers(-3, 3, (3, 3)).astype(np.int32)],
     lambda x: x * np.eye(3, dtype=x.dtype))
spec("matrix_transpose", "matrix_transpose", gf.matrix_transpose, [uniform(2, 3, 4)],
     lambda x: np.swapaxes(x, -1, -2))
spec("matrix_diag", "matrix_diag", gf.matrix_diag, [uniform(2, 3)],
     lambda d: d[..., None, :] * np.eye(3))
spec("matrix_diag_k", "matrix_diag", lambda d: gf.linalg.diag(d, k=-1), [uniform(3)],
     lambda d: np.diag(d, -1))
spec("matrix_diag_part", "matrix_diag_part", lambda x: gf.matrix_diag_part(x, k=1),
     [uniform(2, 3, 4)], lambda x: np.diagonal(x, 1, -2, -1))
spec("matrix_set_diag", "matrix_set_diag", gf.matrix_set_diag, [uniform(2, 4, 3), uniform(2, 3)],
     lambda x, d: np.where(np.eye(4, 3, dtype=bool), np.pad(d, [(0, 0), (0, 1)])[..., :, None], x))
spec("trace", "matrix_diag_part", gf.trace, [uniform(2, 3, 3)],
     lambda x: np.trace(x, axis1=-2, axis2=-1))
spec("tensor_diag", "matrix_diag", gf.diag, [uniform(2, 2)],
     lambda d: np.diag(d.reshape(-1)).reshape(2, 2, 2, 2))
spec("tensor_diag_part", "matrix_diag_part", gf.diag_part, [uniform(2, 2, 2, 2)],
     lambda x: np.diagonal(x.reshape(4, 4)).reshape(2, 2), dynamic=None)

# -- inverses, determinants, solves ------------------------------------------------------------

spec("matrix_inverse", "matrix_inverse", gf.matrix_inverse, [well_conditioned(2, 3, 3)],
     np.linalg.inv, tol=LOOSE)
spec("matrix_inverse_adjoint", "matrix_inverse", lambda x: gf.matrix_inverse(x, adjoint=True),
     [well_conditioned(3, 3)], lambda x: np.linalg.inv(x.T), tol=LOOSE)
spec("matrix_determinant", ("matrix_determinant", "matrix_inverse"), gf.matrix_determinant,
     [well_conditioned(2, 3, 3)], np.linalg.det, tol=LOOSE)
spec("slogdet", ("log_abs_determinant", "determinant_sign"),
     lambda x: list(gf.linalg.slogdet(x)), [well_conditioned(2, 3, 3)],
     lambda x: list(np.linalg.slogdet(x)), grad=(0,), tol=LOOSE)
spec("determinant_sign", "determinant_sign", lambda x: gf.linalg.slogdet(x).sign,
     [lambda rng: rng.uniform(-1, 1, (2, 3, 3)) + np.array([3.0, -3.0])[:, None, None]
      * np.eye(3)], lambda x: np.linalg.slogdet(x)[0], grad=())
spec("matrix_solve", "matrix_solve", gf.matrix_solve,
     [well_conditioned(2, 3, 3), uniform(2, 3, 2)], np.linalg.solve, tol=LOOSE)
spec("matrix_solve_adjoint", "matrix_solve", lambda a, b: gf.linalg.solve(a, b, adjoint=True),
     [well_conditioned(3, 3), uniform(3, 2)], lambda a, b: np.linalg.solve(a.T, b), tol=LOOSE)
spec("triangular_solve", "matrix_triangular_solve", gf.matrix_triangular_solve,
     [well_conditioned(2, 3, 3), uniform(2, 3, 2)],
     lambda a, b: np.linalg.solve(np.tril(a), b), tol=LOOSE)
spec("triangular_solve_upper_adjoint", "matrix_triangular_solve",
     lambda a, b: gf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
     [well_conditioned(3, 3), uniform(2, 3, 2)],
     lambda a, b: np.linalg.solve(np.broadcast_to(np.triu(a).T, (2, 3, 3)), b), tol=LOOSE)
spec("cholesky", ("cholesky", "matrix_triangular_solve"), lambda x: gf.cholesky(_gram(x)),
     [uniform(2, 3, 3)], lambda x: np.linalg.cholesky(_np_gram(x)), tol=LOOSE,
     dynamic=keep(0, -1))
spec("cholesky_lower_only", "cholesky", gf.cholesky,
     [lambda rng: np.tril(_np_gram(rng.uniform(-1, 1, (3, 3)))) + np.triu(
         rng.uniform(5, 9, (3, 3)), 1)], lambda x: np.linalg.cholesky(np_sym_lower(x)),
     grad=(), tol=LOOSE)
spec("cholesky_solve", "matrix_triangular_solve",
     lambda x, b: gf.cholesky_solve(gf.cholesky(_gram(x)), b), [uniform(3, 3), uniform(3, 2)],
     lambda x, b: np.linalg.solve(_np_gram(x), b), tol=LOOSE, dynamic=keep(0, -1))
spec("logdet", "cholesky", lambda x: gf.linalg.logdet(_gram(x)), [uniform(2, 3, 3)],
     lambda x: np.linalg.slogdet(_np_gram(x))[1], tol=LOOSE, dynamic=keep(0, -1))
spec("lstsq_tall", ("cholesky", "matrix_triangular_solve"), gf.matrix_solve_ls,
     [spread(4, 3), uniform(4, 2)], lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
     tol=LOOSE, dynamic=STATIC_MATRIX)
spec("lstsq_wide_regularized", "cholesky",
     lambda a, b: gf.linalg.lstsq(a, b, l2_regularizer=0.5), [spread(2, 3), uniform(2, 2)],
     lambda a, b: a.T @ np.linalg.solve(a @ a.T + 0.5 * np.eye(2), b), tol=LOOSE,
     dynamic=STATIC_MATRIX)
# with unknown dims a cond picks the normal equations of tall or wide matrices at run time
# (test_shape_rule runs both branches: the regularizer keeps the wide one's gram definite)
spec("lstsq_unknown_dims", "cholesky", lambda a, b: gf.matrix_solve_ls(a, b, 0.1),
     [spread(4, 3), uniform(4, 2)],
     lambda a, b: np.linalg.solve(a.T @ a + 0.1 * np.eye(3), a.T @ b), tol=LOOSE,
     second_order=False)
spec("lstsq_pinv", ("svd_s", "svd_u", "svd_v"),
     lambda a, b: gf.matrix_solve_ls(a, b, fast=False), [spread(4, 3), uniform(4, 2)],
     lambda a, b: np.linalg.pinv(a) @ b, tol=LOOSE, dynamic=STATIC_MATRIX)

# -- decompositions ------------------------------------------------------------------------------

spec("svd_values", "svd_s", lambda x: gf.svd(x, compute_uv=False), [spread(2, 3, 2)],
     lambda x: np.linalg.svd(x, compute_uv=False), tol=LOOSE, dynamic=STATIC_MATRIX)
for _id, _shape, _full in (("tall", (2, 3, 2), False), ("wide", (2, 3), False),
                           ("square", (3, 3), False), ("full_tall", (3, 2), True),
                           ("full_wide", (2, 3), True)):
    spec(f"svd_{_id}", ("svd_s", "svd_u", "svd_v"),
         lambda x, full=_full: list(gf.svd(x, full_matrices=full)), [spread(*_shape)],
         lambda x, full=_full: list(np_svd(x, full)), tol=LOOSE, dynamic=STATIC_MATRIX)
spec("eigh", ("eigh_values", "eigh_vectors"), lambda x: list(gf.self_adjoint_eig(x)),
     [spread(2, 3, 3)], lambda x: [np.linalg.eigvalsh(x), np_signed(np.linalg.eigh(x)[1])],
     tol=LOOSE)
spec("eigvalsh", "eigh_values", gf.linalg.eigvalsh, [spread(3, 3)], np.linalg.eigvalsh,
     tol=LOOSE)
for _id, _shape, _full in (("tall", (2, 3, 2), False), ("wide", (2, 3), False),
                           ("square", (3, 3), False), ("full_wide", (2, 3), True),
                           ("full_tall", (3, 2), True)):
    _ops = ("qr_q", "qr_r") if _id == "full_tall" else \
        ("qr_q", "qr_r", "leading_columns", "pad_columns")
    spec(f"qr_{_id}", _ops, lambda x, full=_full: list(gf.qr(x, full_matrices=full)),
         [spread(*_shape)],
         lambda x, full=_full: list(np.linalg.qr(x, "complete" if full else "reduced")),
         tol=LOOSE, grad=() if _id == "full_tall" else None,
         dynamic=STATIC_MATRIX if _full else keep(0))
