"""The primitives of inverses, determinants, linear solves and the Cholesky factor, over the
Array API's ``linalg`` extension (``xp.linalg``), with their gradients. A triangular solve,
which the standard lacks, is its ``solve`` of the masked triangle. TF1's functions over them
are in ``gradflow.ops.linalg_ops``.

Every input is a matrix or a batch of them (leading axes). A matrix that the library cannot
invert or factor raises one message on every backend, naming the user's tensor.
"""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow.prim import call, rules
from gradflow.prim.array import expand_dims, matmul
from gradflow.prim.linalg import (
    _matrix_shape,
    _positions,
    band_part,
    eye_like,
    matrix_diag_part,
    matrix_set_diag,
    matrix_transpose,
)
from gradflow.prim.registry import apply, register


def _linalg(what, tensor, fn, *arrays):
    """``fn(*arrays)``, with the library's LinAlgError (NumPy's, torch's...) as one message."""
    try:
        return fn(*arrays)
    except Exception as err:  # each library has its own LinAlgError class
        if "LinAlgError" not in type(err).__name__:
            raise
        raise ValueError(f"{what}: the matrix '{tensor}' is {_PROBLEM[what]}") from None


_PROBLEM = {
    "matrix_inverse": "not invertible",
    "matrix_solve": "not invertible",
    "matrix_triangular_solve": "not invertible (a zero on its diagonal)",
    "cholesky": "not positive definite",
}


def _square_infer(what, result):
    """A shape rule for square matrices; ``result(shape)`` gives the result's shape."""
    def infer(shapes, in_dtypes, **_):
        shape = _matrix_shape(shapes[0], what)
        if shape[-1] is not None and shape[-2] is not None and shape[-1] != shape[-2]:
            raise ValueError(f"{what} needs square matrices, got {shape[-2]} x {shape[-1]}")
        rules.require_floating(in_dtypes[0])
        return result(shape), in_dtypes[0]

    return infer


def _scalar_times_inverse_t(g, a, factor=None):
    """``g[..., None, None] * factor[..., None, None] * inv(a)^T``: the gradients of the
    determinant (``factor`` the determinant) and of its log."""
    scale = g if factor is None else call.multiply(g, factor)
    scale = expand_dims(expand_dims(scale, -1), -1)
    return call.multiply(scale, matrix_transpose(apply("matrix_inverse", [a], tensor=a.name)))


def _inverse_grad(n, g):  # d inv(A) = -inv(A) dA inv(A)
    return [call.negative(matmul(matmul(n, g, transpose_a=True), n, transpose_b=True))]


register("matrix_inverse",
         lambda xp, a, tensor: _linalg("matrix_inverse", tensor, xp.linalg.inv, a),
         _square_infer("matrix_inverse", lambda s: s), grad=_inverse_grad, exact_grad=True)
register("matrix_determinant", lambda xp, a, tensor: xp.linalg.det(a),
         _square_infer("matrix_determinant", lambda s: tuple(s[:-2])), exact_grad=True,
         grad=lambda n, g: [_scalar_times_inverse_t(g, n.inputs[0], n)])
register("log_abs_determinant", lambda xp, a, tensor: xp.linalg.slogdet(a)[1],
         _square_infer("log_abs_determinant", lambda s: tuple(s[:-2])), exact_grad=True,
         grad=lambda n, g: [_scalar_times_inverse_t(g, n.inputs[0])])
register("determinant_sign", lambda xp, a, tensor: xp.linalg.slogdet(a)[0],
         _square_infer("determinant_sign", lambda s: tuple(s[:-2])), grad=None)


def _solve_infer(what, same_batch):
    def infer(shapes, in_dtypes, **_):
        a, b = _matrix_shape(shapes[0], what), _matrix_shape(shapes[1], f"{what}'s rhs")
        _square_infer(what, lambda s: s)(shapes, in_dtypes)
        if a[-1] is not None and b[-2] is not None and a[-1] != b[-2]:
            raise ValueError(f"{what}: {a[-2]} x {a[-1]} matrices but a right-hand side of "
                             f"{b[-2]} rows")
        if same_batch:
            if len(a) != len(b) or any(x is not None and y is not None and x != y
                                       for x, y in zip(a[:-2], b[:-2])):
                raise ValueError(f"{what}: the matrices' batch shape {tuple(a[:-2])} differs "
                                 f"from the right-hand side's {tuple(b[:-2])}")
            batch = tuple(x if x is not None else y for x, y in zip(a[:-2], b[:-2]))
        else:
            batch = rules.broadcast_shapes(a[:-2], b[:-2])
        return batch + (a[-1], b[-1]), rules.same_dtype(in_dtypes)

    return infer


def _solve_grad(n, g):  # X = A^-1 B: dB = A^-T g, dA = -dB X^T
    a = n.inputs[0]
    gb = apply("matrix_solve", [matrix_transpose(a), g], tensor=n.attrs["tensor"])
    return [call.negative(matmul(gb, n, transpose_b=True)), gb]


register("matrix_solve",
         lambda xp, a, b, tensor: _linalg("matrix_solve", tensor, xp.linalg.solve, a, b),
         _solve_infer("matrix_solve", True), grad=_solve_grad, exact_grad=True)


def _triangle(xp, a, lower, strict=False):
    """The lower (or upper) triangle of ``a``, without the diagonal when ``strict``."""
    i, j = _positions(xp, a.shape[-2], a.shape[-1], _device(a))
    if strict:
        keep = j < i if lower else j > i
    else:
        keep = j <= i if lower else j >= i
    return xp.where(keep, a, xp.zeros_like(a))


def symmetric_from_lower(xp, a):
    """The symmetric matrices that the lower triangles of ``a`` define (what LAPACK's
    symmetric routines read, made explicit so that every backend reads the same)."""
    return _triangle(xp, a, True) + xp.matrix_transpose(_triangle(xp, a, True, strict=True))


def _triangular_solve_impl(xp, a, b, lower, adjoint, tensor):
    t = _triangle(xp, a, lower)
    if adjoint:
        t = xp.matrix_transpose(t)
    batch = tuple(_broadcast(a.shape[:-2], b.shape[:-2]))
    t = xp.broadcast_to(t, batch + tuple(t.shape[-2:]))
    b = xp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    return _linalg("matrix_triangular_solve", tensor, xp.linalg.solve, t, b)


def _broadcast(a, b):
    a, b = (1,) * (len(b) - len(a)) + tuple(a), (1,) * (len(a) - len(b)) + tuple(b)
    return [y if x == 1 else x for x, y in zip(a, b)]


def triangular_solve(a, b, lower=True, adjoint=False, tensor=None):
    """``op(T) X = b`` for ``T`` the lower (or upper) triangle of ``a``, ``op`` the transpose
    when ``adjoint``; batch axes broadcast."""
    return apply("matrix_triangular_solve", [a, b], lower=bool(lower), adjoint=bool(adjoint),
                 tensor=tensor or a.name)


def _triangular_solve_grad(n, g):
    a, b = n.inputs
    lower, adjoint = n.attrs["lower"], n.attrs["adjoint"]
    gb = triangular_solve(a, g, lower, not adjoint, n.attrs["tensor"])
    ga = matmul(n, gb, transpose_b=True) if adjoint else matmul(gb, n, transpose_b=True)
    ga = band_part(call.negative(ga), -1, 0) if lower else band_part(call.negative(ga), 0, -1)
    return [call.unbroadcast(ga, a), call.unbroadcast(gb, b)]


register("matrix_triangular_solve", _triangular_solve_impl,
         _solve_infer("matrix_triangular_solve", False), grad=_triangular_solve_grad)


def _cholesky_impl(xp, a, tensor):
    return _linalg("cholesky", tensor, xp.linalg.cholesky, symmetric_from_lower(xp, a))


def _cholesky_grad(n, g):
    """TF's rule (after Murray 2016, "Differentiation of the Cholesky decomposition"): the
    gradient of a symmetric input, symmetric itself."""
    chol = n
    chol_inv = triangular_solve(chol, eye_like(chol), True, False, n.attrs["tensor"])
    middle = matmul(chol, g, transpose_a=True)
    middle = matrix_set_diag(middle, call.multiply(matrix_diag_part(middle), 0.5))
    middle = band_part(middle, -1, 0)
    grad = matmul(matmul(chol_inv, middle, transpose_a=True), chol_inv)
    return [call.multiply(call.add(grad, matrix_transpose(grad)), 0.5)]


register("cholesky", _cholesky_impl, _square_infer("cholesky", lambda s: s),
         grad=_cholesky_grad, exact_grad=True)
