"""TF1's ``tf.linalg`` namespace: matrix products, norms, solves, factorizations (Cholesky,
QR, SVD, symmetric eigen), band parts, diagonals, and the ``LinearOperator`` family."""

import gradflow as _gf
from gradflow.ops import matrix_ops as _m
from gradflow.ops.linalg_extra_ops import (  # noqa: F401 - tf.linalg's names
    cross,
    eigh_tridiagonal,
    expm,
    lu,
    lu_matrix_inverse,
    lu_reconstruct,
    lu_solve,
    matrix_rank,
    normalize,
    tridiagonal_matmul,
    tridiagonal_solve,
)
from gradflow.ops.linear_operator import (  # noqa: F401 - tf.linalg's names
    LinearOperator,
    LinearOperatorDiag,
    LinearOperatorFullMatrix,
    LinearOperatorIdentity,
    LinearOperatorLowerTriangular,
)
from gradflow.ops.linear_operator_more import (  # noqa: F401 - tf.linalg's names
    LinearOperatorAdjoint,
    LinearOperatorBlockDiag,
    LinearOperatorBlockLowerTriangular,
    LinearOperatorComposition,
    LinearOperatorHouseholder,
    LinearOperatorInversion,
    LinearOperatorKronecker,
    LinearOperatorLowRankUpdate,
    LinearOperatorPermutation,
    LinearOperatorScaledIdentity,
    LinearOperatorToeplitz,
    LinearOperatorTridiag,
    LinearOperatorZeros,
)

_MORE_OPERATORS = ["LinearOperator" + kind for kind in """Adjoint BlockDiag
BlockLowerTriangular Composition Householder Inversion Kronecker
LowRankUpdate Permutation ScaledIdentity Toeplitz Tridiag Zeros""".split()]
_TOP_LEVEL = "einsum eye matmul norm tensordot transpose global_norm".split()

globals().update({name: getattr(_gf, name) for name in _TOP_LEVEL})
l2_normalize = _gf.nn.l2_normalize

# tf.linalg's names for TF1's top-level functions
_RENAMED = {
    "adjoint": _m.adjoint, "band_part": _m.matrix_band_part, "cholesky": _m.cholesky,
    "cholesky_solve": _m.cholesky_solve, "det": _m.matrix_determinant,
    "diag": _m.matrix_diag, "diag_part": _m.matrix_diag_part, "eigh": _m.self_adjoint_eig,
    "eigvalsh": _m.self_adjoint_eigvals, "inv": _m.matrix_inverse, "logdet": _m.logdet,
    "lstsq": _m.matrix_solve_ls, "matrix_transpose": _m.matrix_transpose,
    "matvec": _m.matvec, "pinv": _m.pinv, "qr": _m.qr, "set_diag": _m.matrix_set_diag,
    "slogdet": _m.slogdet, "solve": _m.matrix_solve, "svd": _m.svd,
    "tensor_diag": _m.diag, "tensor_diag_part": _m.diag_part, "trace": _m.trace,
    "triangular_solve": _m.matrix_triangular_solve,
}
globals().update(_RENAMED)

__all__ = sorted(_TOP_LEVEL + list(_RENAMED) + [
    "l2_normalize", "LinearOperator", "LinearOperatorDiag", "LinearOperatorFullMatrix",
    "LinearOperatorIdentity", "LinearOperatorLowerTriangular", "cross", "eigh_tridiagonal",
    "expm", "lu", "lu_matrix_inverse", "lu_reconstruct", "lu_solve", "matrix_rank", "normalize",
    "tridiagonal_matmul", "tridiagonal_solve"] + _MORE_OPERATORS)
