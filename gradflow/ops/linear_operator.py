"""A small part of ``tf.linalg``'s ``LinearOperator`` family: operators given by a full
matrix, a diagonal, the identity and a lower-triangular matrix, each with ``matmul``,
``matvec``, ``solve``, ``solvevec``, ``determinant``, ``log_abs_determinant``,
``to_dense``, ``diag_part``, ``trace`` and its shapes. Batches (leading axes) work as in TF.
Each operator computes with the structure it has (a diagonal divides; a triangle solves
by substitution) rather than through its dense matrix.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import TensorShape
from gradflow.ops.array_ops import matmul, reduce_prod, reduce_sum
from gradflow.ops.index_ops import shape
from gradflow.ops.math_ops import abs, log
from gradflow.ops.matrix_ops import (
    cholesky,
    matrix_band_part,
    matrix_determinant,
    matrix_diag,
    matrix_diag_part,
    matrix_solve,
    matrix_transpose,
    matrix_triangular_solve,
    slogdet,
)
from gradflow.ops.shape_ops import eye
from gradflow.ops.state_ops import identity
from gradflow.prim.array import expand_dims, squeeze
from gradflow.prim.registry import convert_to_tensor


class LinearOperator:
    """The base of TF's linear operators: an ``[..., M, N]`` matrix, possibly known only
    through its structure. Subclasses give ``_shape``, ``_to_dense``, ``_matmul``,
    ``_solve``, ``_log_abs_determinant`` and may give faster ``_determinant`` and
    ``_diag_part``."""

    def __init__(self, dtype, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        if is_positive_definite and is_non_singular is False:
            raise ValueError("a positive-definite operator is always non-singular")
        self._dtype = dtypes.as_dtype(dtype)
        self.is_non_singular = is_non_singular
        self.is_self_adjoint = is_self_adjoint
        self.is_positive_definite = is_positive_definite
        self._is_square = is_square
        self._name = name or type(self).__name__

    @property
    def name(self):
        """The operator's name."""
        return self._name

    @property
    def dtype(self):
        """The dtype of the matrix."""
        return self._dtype

    @property
    def shape(self):
        """The static shape ``batch_shape + [M, N]`` (a ``TensorShape``)."""
        return TensorShape(self._shape())

    @property
    def batch_shape(self):
        """The static shape of the batch (a ``TensorShape``)."""
        return TensorShape(self._shape()[:-2])

    @property
    def tensor_rank(self):
        """The rank of the matrix tensor: ``len(batch_shape) + 2``."""
        return len(self._shape())

    @property
    def domain_dimension(self):
        """``N``: the size of the vectors the operator takes."""
        return self.shape[-1]

    @property
    def range_dimension(self):
        """``M``: the size of the vectors the operator gives."""
        return self.shape[-2]

    @property
    def is_square(self):
        """Whether ``M == N`` (None when not known)."""
        if self._is_square is not None:
            return self._is_square
        rows, cols = self._shape()[-2:]
        return None if rows is None or cols is None else rows == cols

    def shape_tensor(self, name="shape_tensor"):
        """The shape as an int32 tensor."""
        return identity(shape(self.to_dense()), name=name)

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        """The batch shape as an int32 tensor."""
        return identity(shape(self.to_dense())[:-2], name=name)

    def to_dense(self, name="to_dense"):
        """The operator's matrix, ``[..., M, N]``."""
        return identity(self._to_dense(), name=name)

    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        """``op(A) @ op(x)``, ``op`` the transpose where ``adjoint``/``adjoint_arg``."""
        x = convert_to_tensor(x, like=self._like())
        if adjoint_arg:
            x = matrix_transpose(x)
        return identity(self._matmul(x, adjoint), name=name)

    def matvec(self, x, adjoint=False, name="matvec"):
        """``op(A) @ x`` for vectors ``x`` ``[..., N]``."""
        x = convert_to_tensor(x, like=self._like())
        return identity(squeeze(self._matmul(expand_dims(x, -1), adjoint), -1), name=name)

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        """``X`` with ``op(A) @ X = op(rhs)``."""
        rhs = convert_to_tensor(rhs, like=self._like())
        if adjoint_arg:
            rhs = matrix_transpose(rhs)
        return identity(self._solve(rhs, adjoint), name=name)

    def solvevec(self, rhs, adjoint=False, name="solve"):
        """``x`` with ``op(A) @ x = rhs`` for vectors ``rhs`` ``[..., M]``."""
        rhs = convert_to_tensor(rhs, like=self._like())
        return identity(squeeze(self._solve(expand_dims(rhs, -1), adjoint), -1), name=name)

    def determinant(self, name="det"):
        """The determinants, ``batch_shape``."""
        self._require_square("determinant")
        return identity(self._determinant(), name=name)

    def log_abs_determinant(self, name="log_abs_det"):
        """The logs of the determinants' magnitudes, ``batch_shape``."""
        self._require_square("log_abs_determinant")
        return identity(self._log_abs_determinant(), name=name)

    def diag_part(self, name="diag_part"):
        """The main diagonals, ``[..., min(M, N)]``."""
        return identity(self._diag_part(), name=name)

    def trace(self, name="trace"):
        """The sums of the main diagonals, ``batch_shape``."""
        return identity(reduce_sum(self._diag_part(), -1), name=name)

    def add_to_tensor(self, x, name="add_to_tensor"):
        """``A + x`` as a dense tensor."""
        return identity(self._to_dense() + convert_to_tensor(x, like=self._like()), name=name)

    # -- what subclasses may refine ------------------------------------------------------
    def _determinant(self):
        return matrix_determinant(self._to_dense())

    def _diag_part(self):
        return matrix_diag_part(self._to_dense())

    def _like(self):
        return self._to_dense()

    def _require_square(self, what):
        if self.is_square is False:
            raise NotImplementedError(f"{self.name}.{what}: the operator is not square")


def _tensor(value, dtype, what):
    t = convert_to_tensor(value, dtype=dtype)
    if not t.dtype.is_floating:
        raise TypeError(f"{what}: the operator's tensor '{t.name}' must be floating point, "
                        f"got {t.dtype.name}")
    return t


class LinearOperatorFullMatrix(LinearOperator):
    """An operator given by its matrix ``[..., M, N]`` (``tf.linalg.LinearOperatorFullMatrix``)."""

    def __init__(self, matrix, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorFullMatrix"):
        self._matrix = _tensor(matrix, None, "LinearOperatorFullMatrix")
        if self._matrix.shape is not None and len(self._matrix.shape) < 2:
            raise ValueError(f"LinearOperatorFullMatrix: '{self._matrix.name}' must have rank "
                             f"2 or more, got shape {tuple(self._matrix.shape)}")
        super().__init__(self._matrix.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)

    def _shape(self):
        return tuple(self._matrix.shape)

    def _to_dense(self):
        return self._matrix

    def _matmul(self, x, adjoint):
        return matmul(self._matrix, x, transpose_a=adjoint)

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._matrix, rhs, adjoint=adjoint)

    def _log_abs_determinant(self):
        if self.is_positive_definite and self.is_self_adjoint:  # TF: through Cholesky
            return reduce_sum(log(matrix_diag_part(cholesky(self._matrix))), -1) * 2.0
        return slogdet(self._matrix).log_abs_determinant


class LinearOperatorDiag(LinearOperator):
    """The square operator ``diag(d)`` for ``diag`` ``[..., N]``
    (``tf.linalg.LinearOperatorDiag``)."""

    def __init__(self, diag, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, name="LinearOperatorDiag"):
        if is_square is False:
            raise ValueError("a diagonal operator is always square")
        self._diag = _tensor(diag, None, "LinearOperatorDiag")
        if self._diag.shape is not None and len(self._diag.shape) < 1:
            raise ValueError(f"LinearOperatorDiag: '{self._diag.name}' must have rank 1 or "
                             "more")
        super().__init__(self._diag.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        d = tuple(self._diag.shape)
        return d + d[-1:]

    def _to_dense(self):
        return matrix_diag(self._diag)

    def _like(self):
        return self._diag

    def _matmul(self, x, adjoint):
        return expand_dims(self._diag, -1) * x

    def _solve(self, rhs, adjoint):
        return rhs / expand_dims(self._diag, -1)

    def _determinant(self):
        return reduce_prod(self._diag, -1)

    def _log_abs_determinant(self):
        return reduce_sum(log(abs(self._diag)), -1)

    def _diag_part(self):
        return self._diag


class LinearOperatorLowerTriangular(LinearOperator):
    """The square operator of the lower triangle of ``tril`` ``[..., N, N]``; the rest of
    ``tril`` is ignored (``tf.linalg.LinearOperatorLowerTriangular``)."""

    def __init__(self, tril, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("a triangular operator is always square")
        self._tril = _tensor(tril, None, "LinearOperatorLowerTriangular")
        shape_ = self._tril.shape
        if shape_ is not None and (len(shape_) < 2 or None not in shape_[-2:]
                                   and shape_[-1] != shape_[-2]):
            raise ValueError(f"LinearOperatorLowerTriangular: '{self._tril.name}' must be "
                             f"square matrices, got shape {tuple(shape_)}")
        super().__init__(self._tril.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        return tuple(self._tril.shape)

    def _to_dense(self):
        return matrix_band_part(self._tril, -1, 0)

    def _like(self):
        return self._tril

    def _matmul(self, x, adjoint):
        return matmul(self._to_dense(), x, transpose_a=adjoint)

    def _solve(self, rhs, adjoint):
        return matrix_triangular_solve(self._tril, rhs, lower=True, adjoint=adjoint)

    def _determinant(self):
        return reduce_prod(matrix_diag_part(self._tril), -1)

    def _log_abs_determinant(self):
        return reduce_sum(log(abs(matrix_diag_part(self._tril))), -1)

    def _diag_part(self):
        return matrix_diag_part(self._tril)


class LinearOperatorIdentity(LinearOperator):
    """The identity ``[..., N, N]`` (``tf.linalg.LinearOperatorIdentity``), with
    ``batch_shape`` leading axes; ``num_rows`` an int."""

    def __init__(self, num_rows, batch_shape=None, dtype=None, is_non_singular=True,
                 is_self_adjoint=True, is_positive_definite=True, is_square=True,
                 assert_proper_shapes=False, name="LinearOperatorIdentity"):
        for flag, what in ((is_non_singular, "non-singular"), (is_self_adjoint,
                           "self-adjoint"), (is_positive_definite, "positive definite"),
                           (is_square, "square")):
            if not flag:
                raise ValueError(f"an identity operator is always {what}")
        self._rows = int(num_rows)
        if self._rows < 0:
            raise ValueError(f"LinearOperatorIdentity: num_rows must not be negative, got "
                             f"{num_rows}")
        self._batch = tuple(int(d) for d in batch_shape) if batch_shape is not None else ()
        super().__init__(dtype or dtypes.float32, True, True, True, True, name)

    def _shape(self):
        return self._batch + (self._rows, self._rows)

    def _to_dense(self):
        return eye(self._rows, batch_shape=self._batch or None, dtype=self.dtype)

    def _like(self):
        return eye(1, dtype=self.dtype)

    def _filled(self, value, dims):
        return convert_to_tensor(np.full(dims, value, self.dtype.as_numpy_dtype))

    def _broadcast(self, x):  # the identity of a batch broadcasts x over that batch
        return x + self._filled(0, self._batch + (1, 1)) if self._batch else x

    def _matmul(self, x, adjoint):
        return self._broadcast(x)

    def _solve(self, rhs, adjoint):
        return self._broadcast(rhs)

    def _determinant(self):
        return self._filled(1, self._batch)

    def _log_abs_determinant(self):
        return self._filled(0, self._batch)

    def _diag_part(self):
        return matrix_diag_part(self._to_dense())


__all__ = ["LinearOperator", "LinearOperatorDiag", "LinearOperatorFullMatrix",
           "LinearOperatorIdentity", "LinearOperatorLowerTriangular"]
