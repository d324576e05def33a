"""The primitives of the QR, singular-value and symmetric eigen decompositions, over the
Array API's ``linalg`` extension, with their gradients. TF1's functions over them
(``qr``, ``svd``, ``self_adjoint_eig``...) are in ``gradflow.ops.linalg_ops``.

The registry's ops have one output each, so each factor is a primitive of its own
(``qr_q`` and ``qr_r``, ``svd_s``, ``svd_u`` and ``svd_v``, ``eigh_values`` and
``eigh_vectors``): a program that uses all of them factors the matrix once per factor.
Their gradients are linear in the factors' gradients, so each rule gives its own part.

Singular vectors and eigenvectors are defined up to sign, and libraries pick different
ones: here each vector (each pair of singular vectors) is flipped so that its first entry
of largest magnitude is positive, which gives the same numbers on every backend. QR keeps
LAPACK's signs (Householder reflections), which TensorFlow and the Array API libraries
share.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow.prim import call
from gradflow.prim.array import expand_dims, matmul
from gradflow.prim.linalg import (
    _matrix_shape,
    _positions,
    band_part,
    eye_like,
    leading_columns,
    matrix_diag,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
    pad_columns,
)
from gradflow.prim.linalg_solve import symmetric_from_lower, triangular_solve
from gradflow.prim.registry import register


def _signs(xp, vectors):
    """+1 or -1 per column of ``vectors``: the sign of its first entry of (nearly) the
    largest magnitude (nearly: ties a rounding apart pick the same entry everywhere)."""
    mag = xp.abs(vectors)
    top = xp.max(mag, axis=-2, keepdims=True)
    near = mag >= top * (1 - xp.finfo(vectors.dtype).eps ** 0.5)
    first = xp.argmax(xp.astype(near, xp.int8), axis=-2, keepdims=True)
    rows, _ = _positions(xp, vectors.shape[-2], 1, _device(vectors))
    picked = xp.sum(xp.where(rows == first, vectors, xp.zeros_like(vectors)), axis=-2,
                    keepdims=True)
    ones = xp.ones_like(picked)
    return xp.where(picked < 0, -ones, ones)


def _with_signs(xp, vectors):
    return vectors * _signs(xp, vectors)


def _rest(xp, lead, vectors, k):
    """``lead`` (the first ``k`` columns, signed) and the remaining columns, each signed."""
    if vectors.shape[-1] == k:
        return lead
    return xp.concat([lead, _with_signs(xp, vectors[..., k:])], axis=-1)


def _svd_impl(part):
    def impl(xp, a, full_matrices=False):
        u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
        v = xp.matrix_transpose(vh)
        k = s.shape[-1]
        signs = _signs(xp, u[..., :k])
        if part == "u":
            return _rest(xp, u[..., :k] * signs, u, k)
        return _rest(xp, v[..., :k] * signs, v, k)

    return impl


def _svd_infer(part):
    def infer(shapes, in_dtypes, full_matrices=False):
        shape = _matrix_shape(shapes[0], f"svd_{part}")
        m, n = shape[-2:]
        k = None if m is None or n is None else min(m, n)
        if not in_dtypes[0].is_floating:
            raise TypeError(f"svd needs a floating-point input, got {in_dtypes[0].name}")
        batch = tuple(shape[:-2])
        if part == "s":
            return batch + (k,), in_dtypes[0]
        rows = m if part == "u" else n
        return batch + (rows, rows if full_matrices else k), in_dtypes[0]

    return infer


def _reciprocal_gaps(values):
    """``F[i, j] = 1 / (values[j] - values[i])`` off the diagonal, 0 on it."""
    gaps = call.subtract(expand_dims(values, -2), expand_dims(values, -1))
    eye = eye_like(gaps)
    return call.divide(call.subtract(1.0, eye), call.add(gaps, eye))


def _svd_s_grad(n, g):  # dA = U diag(g) V^T (the reduced factors)
    a = n.inputs[0]
    u, v = call.svd_u(a, full_matrices=False), call.svd_v(a, full_matrices=False)
    return [matmul(call.multiply(u, expand_dims(g, -2)), v, transpose_b=True)]


def _svd_uv_grad(n, g):
    """TF's rule for the singular vectors (distinct singular values): the matrix dims must
    be known when the graph is built, as TF needs them."""
    a, full = n.inputs[0], n.attrs["full_matrices"]
    m, k = a.shape[-2:] if a.shape is not None else (None, None)
    if m is None or k is None:
        raise NotImplementedError(f"the gradient of svd's vectors needs the matrix dims of "
                                  f"'{a.name}' known when the graph is built (as in TF)")
    if full and abs(m - k) > 1:
        raise NotImplementedError(f"the gradient of svd(full_matrices=True) is defined for "
                                  f"|rows - columns| <= 1 only (as in TF); '{a.name}' is "
                                  f"{m} x {k}")
    s = call.svd_s(a)
    u, v = call.svd_u(a, full_matrices=full), call.svd_v(a, full_matrices=full)
    gu, gv = (g, None) if n.opdef.name == "svd_u" else (None, g)
    if m > k:  # the gradient for A^T = V S U^T, transposed at the end
        u, v, gu, gv = v, u, gv, gu
    grad = _svd_vectors_grad(s, u, v, gu, gv, full, m != k)
    return [matrix_transpose(grad) if m > k else grad]


def _svd_vectors_grad(s, u, v, gu, gv, full, wide):
    """For ``A = U S V1^T``, ``A`` no taller than wide, one of ``gu``, ``gv`` given."""
    s_mat = matrix_diag(s)
    f = _reciprocal_gaps(call.square(s))
    v1 = leading_columns(v, u)
    if gu is not None:
        f_u = call.multiply(f, matmul(u, gu, transpose_a=True))
        inner = matmul(call.add(f_u, matrix_transpose(f_u)), s_mat)
        return matmul(u, matmul(inner, v1, transpose_b=True))
    gv1 = leading_columns(gv, u)
    f_v = call.multiply(f, matmul(v1, gv1, transpose_a=True))
    inner = matmul(s_mat, call.add(f_v, matrix_transpose(f_v)))
    grad = matmul(u, matmul(inner, v1, transpose_b=True))
    if not wide:
        return grad
    gv1t = matrix_transpose(gv1)
    term = call.subtract(gv1t, matmul(matmul(gv1t, v1), v1, transpose_b=True))
    if full:  # minus V1^T gV2 V2^T, which is V1^T gV V^T - V1^T gV1 V1^T
        v1t_gv = matmul(v1, gv, transpose_a=True)
        term = call.subtract(term, call.subtract(
            matmul(v1t_gv, v, transpose_b=True),
            matmul(matmul(v1, gv1, transpose_a=True), v1, transpose_b=True)))
    u_s_inv = call.divide(u, expand_dims(s, -2))
    return call.add(grad, matmul(u_s_inv, term))


register("svd_s", lambda xp, a: xp.linalg.svdvals(a), _svd_infer("s"), grad=_svd_s_grad,
         exact_grad=True)
register("svd_u", _svd_impl("u"), _svd_infer("u"), grad=_svd_uv_grad, exact_grad=True)
register("svd_v", _svd_impl("v"), _svd_infer("v"), grad=_svd_uv_grad, exact_grad=True)


# -- symmetric eigen decomposition (the lower triangle is read, as TF) ----------------------


def _square(what):
    def infer(shapes, in_dtypes):
        shape = _matrix_shape(shapes[0], what)
        if None not in shape[-2:] and shape[-1] != shape[-2]:
            raise ValueError(f"{what} needs square matrices, got {shape[-2]} x {shape[-1]}")
        if not in_dtypes[0].is_floating:
            raise TypeError(f"{what} needs a floating-point input, got {in_dtypes[0].name}")
        rows = shape[-1] if shape[-1] is not None else shape[-2]
        return (tuple(shape[:-2]) + (rows,) if what == "eigh_values"
                else tuple(shape[:-2]) + (rows, rows)), in_dtypes[0]

    return infer


def _eigh_vectors_impl(xp, a):
    return _with_signs(xp, xp.linalg.eigh(symmetric_from_lower(xp, a))[1])


def _eigh_grad(n, g):
    """TF's rule: ``V (diag(ge) + F * (V^T gV)) V^T``, folded onto the lower triangle that
    the op reads."""
    a = n.inputs[0]
    v = call.eigh_vectors(a)
    if n.opdef.name == "eigh_values":
        inner = matrix_diag(g)
    else:
        inner = call.multiply(_reciprocal_gaps(call.eigh_values(a)),
                              matmul(v, g, transpose_a=True))
    grad = matmul(v, matmul(inner, v, transpose_b=True))
    grad = band_part(call.add(grad, matrix_transpose(grad)), -1, 0)
    return [matrix_set_diag(grad, call.multiply(matrix_diag_part(grad), 0.5))]


register("eigh_values", lambda xp, a: xp.linalg.eigvalsh(symmetric_from_lower(xp, a)),
         _square("eigh_values"), grad=_eigh_grad, exact_grad=True)
register("eigh_vectors", _eigh_vectors_impl, _square("eigh_vectors"), grad=_eigh_grad,
         exact_grad=True)


# -- QR -------------------------------------------------------------------------------------


def _qr_impl(part):
    def impl(xp, a, full_matrices):
        q, r = xp.linalg.qr(a, mode="complete" if full_matrices else "reduced")
        return q if part == "q" else r

    return impl


def _qr_infer(part):
    def infer(shapes, in_dtypes, full_matrices):
        shape = _matrix_shape(shapes[0], "qr")
        if not in_dtypes[0].is_floating:
            raise TypeError(f"qr needs a floating-point input, got {in_dtypes[0].name}")
        m, n = shape[-2:]
        k = m if full_matrices else (None if m is None or n is None else min(m, n))
        return tuple(shape[:-2]) + ((m, k) if part == "q" else (k, n)), in_dtypes[0]

    return infer


_QR_FULL = ("the gradient of qr(full_matrices=True) is defined for matrices with no more "
            "rows than columns only (as in TF)")


def _qr_grad(n, g):
    """TF's rule (square and tall matrices; wide ones through their leading square block),
    written once for both: the matrix dims need not be known when the graph is built."""
    a, full = n.inputs[0], n.attrs["full_matrices"]
    shape = a.shape
    if full and (shape is None or None in shape[-2:] or shape[-2] > shape[-1]):
        raise NotImplementedError(f"{_QR_FULL}; '{a.name}' has shape {shape}")
    q, r = call.qr_q(a, full_matrices=full), call.qr_r(a, full_matrices=full)
    dq, dr = (g, call.zeros_like(r)) if n.opdef.name == "qr_q" else (call.zeros_like(q), g)
    u, x, du = (leading_columns(t, q, _QR_FULL) for t in (r, a, dr))
    # the rows' part beyond the square block: Y dV^T = A dR^T - X dU^T (zero when tall)
    dq = call.add(dq, call.subtract(matmul(a, dr, transpose_b=True),
                                    matmul(x, du, transpose_b=True)))
    dx = _qr_square_grad(q, u, dq, du)
    return [call.add(matmul(q, dr), pad_columns(call.subtract(dx, matmul(q, du)), a))]


def _solve_r(x, r):
    """``x R^-T`` for the upper-triangular ``r`` (TF's ``_TriangularSolve``)."""
    return matrix_transpose(triangular_solve(r, matrix_transpose(x), lower=False,
                                             adjoint=False))


def _qr_square_grad(q, r, dq, dr):
    qdq = matmul(q, dq, transpose_a=True)
    rdr = matmul(r, dr, transpose_b=True)
    skew = call.add(call.subtract(qdq, matrix_transpose(qdq)),
                    call.subtract(rdr, matrix_transpose(rdr)))
    tril = band_part(skew, -1, 0)
    grad_a = matmul(q, call.add(dr, _solve_r(tril, r)))
    grad_b = _solve_r(call.subtract(dq, matmul(q, qdq)), r)
    return call.add(grad_a, grad_b)


register("qr_q", _qr_impl("q"), _qr_infer("q"), grad=_qr_grad, exact_grad=True)
register("qr_r", _qr_impl("r"), _qr_infer("r"), grad=_qr_grad, exact_grad=True)
