"""The rest of ``tf.linalg``'s real ``LinearOperator`` family: operators built from other
operators (``Adjoint``, ``Inversion``, ``Composition``, ``BlockDiag``,
``BlockLowerTriangular``, ``Kronecker``, ``LowRankUpdate``) and structured ones
(``Householder``, ``Permutation``, ``ScaledIdentity``, ``Toeplitz``, ``Tridiag``,
``Zeros``). Each uses its structure where that is simple (a permutation gathers, a
reflection is its own inverse, a block diagonal works block by block, a scaled identity
multiplies) and its dense matrix otherwise; the results are TF's to rounding.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops.array_ops import matmul, reduce_sum, reshape
from gradflow.ops.index_ops import concat, gather, one_hot
from gradflow.ops.linalg_extra_ops import _tridiagonals, tridiagonal_dense, tridiagonal_matmul
from gradflow.ops.linear_operator import LinearOperator, _tensor
from gradflow.ops.manip_ops import invert_permutation
from gradflow.ops.math_ops import abs, log  # noqa: A004
from gradflow.ops.matrix_ops import matrix_inverse, matrix_solve, matrix_transpose, slogdet
from gradflow.ops.shape_ops import eye, pad
from gradflow.prim.array import expand_dims
from gradflow.prim.registry import convert_to_tensor

__all__ = ["LinearOperatorAdjoint", "LinearOperatorBlockDiag",
           "LinearOperatorBlockLowerTriangular", "LinearOperatorComposition",
           "LinearOperatorHouseholder", "LinearOperatorInversion", "LinearOperatorKronecker",
           "LinearOperatorLowRankUpdate", "LinearOperatorPermutation",
           "LinearOperatorScaledIdentity", "LinearOperatorToeplitz", "LinearOperatorTridiag",
           "LinearOperatorZeros"]


def _dims(op):
    rows, cols = op.shape[-2], op.shape[-1]
    if rows is None or cols is None:
        raise ValueError(f"{op.name}: the operator's matrix size must be known")
    return int(rows), int(cols)


def _operators(operators, what):
    ops = list(operators)
    if not ops or not all(isinstance(o, LinearOperator) for o in ops):
        raise TypeError(f"{what}: operators must be a non-empty list of LinearOperators")
    if len({o.dtype for o in ops}) != 1:
        raise TypeError(f"{what}: the operators must have one dtype, got "
                        f"{sorted(o.dtype.name for o in ops)}")
    return ops


class LinearOperatorAdjoint(LinearOperator):
    """The adjoint (transpose, for real matrices) of ``operator``."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self.operator = operator
        super().__init__(operator.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name or operator.name + "_adjoint")

    def _shape(self):
        s = self.operator._shape()
        return tuple(s[:-2]) + (s[-1], s[-2])

    def _to_dense(self):
        return matrix_transpose(self.operator.to_dense())

    def _matmul(self, x, adjoint):
        return self.operator._matmul(x, not adjoint)

    def _solve(self, rhs, adjoint):
        return self.operator._solve(rhs, not adjoint)

    def _determinant(self):
        return self.operator._determinant()

    def _log_abs_determinant(self):
        return self.operator._log_abs_determinant()

    def _diag_part(self):
        return self.operator._diag_part()


class LinearOperatorInversion(LinearOperator):
    """The inverse of the square, non-singular ``operator``: its ``matmul`` is the
    operator's ``solve`` and the other way round."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        if operator.is_non_singular is False or operator.is_square is False:
            raise ValueError(f"LinearOperatorInversion: '{operator.name}' must be square "
                             "and non-singular")
        self.operator = operator
        super().__init__(operator.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name or operator.name + "_inv")

    def _shape(self):
        return self.operator._shape()

    def _to_dense(self):
        return matrix_inverse(self.operator.to_dense())

    def _matmul(self, x, adjoint):
        return self.operator._solve(x, adjoint)

    def _solve(self, rhs, adjoint):
        return self.operator._matmul(rhs, adjoint)

    def _determinant(self):
        return 1.0 / self.operator._determinant()

    def _log_abs_determinant(self):
        return -self.operator._log_abs_determinant()


class LinearOperatorComposition(LinearOperator):
    """The product ``operators[0] @ operators[1] @ ...``."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self.operators = _operators(operators, "LinearOperatorComposition")
        for left, right in zip(self.operators, self.operators[1:]):
            if None not in (left.shape[-1], right.shape[-2]) and \
                    int(left.shape[-1]) != int(right.shape[-2]):
                raise ValueError(f"LinearOperatorComposition: '{left.name}' takes vectors of "
                                 f"{left.shape[-1]}, '{right.name}' gives {right.shape[-2]}")
        super().__init__(self.operators[0].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_o_".join(o.name for o in self.operators))

    def _shape(self):
        first, last = self.operators[0]._shape(), self.operators[-1]._shape()
        return tuple(first[:-2]) + (first[-2], last[-1])

    def _to_dense(self):
        out = self.operators[-1].to_dense()
        for op in reversed(self.operators[:-1]):
            out = op._matmul(out, False)
        return out

    def _matmul(self, x, adjoint):
        ops = self.operators if adjoint else list(reversed(self.operators))
        for op in ops:
            x = op._matmul(x, adjoint)
        return x

    def _solve(self, rhs, adjoint):
        ops = list(reversed(self.operators)) if adjoint else self.operators
        for op in ops:
            rhs = op._solve(rhs, adjoint)
        return rhs

    def _determinant(self):
        return reduce_prod_list([op._determinant() for op in self.operators])

    def _log_abs_determinant(self):
        return sum(op._log_abs_determinant() for op in self.operators)


def reduce_prod_list(values):
    out = values[0]
    for v in values[1:]:
        out = out * v
    return out


def _split_rows(x, sizes):
    out, start = [], 0
    for size in sizes:
        out.append(x[..., start:start + size, :])
        start += size
    return out


class LinearOperatorBlockDiag(LinearOperator):
    """The block-diagonal operator of the square ``operators``."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, name=None):
        self.operators = _operators(operators, "LinearOperatorBlockDiag")
        self._sizes = [_dims(op) for op in self.operators]
        super().__init__(self.operators[0].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_ds_".join(o.name for o in self.operators))

    def _shape(self):
        batch = tuple(self.operators[0]._shape()[:-2])
        return batch + (sum(r for r, _ in self._sizes), sum(c for _, c in self._sizes))

    def _to_dense(self):
        total = sum(c for _, c in self._sizes)
        rows, start = [], 0
        for op, (_, cols) in zip(self.operators, self._sizes):
            dense = op.to_dense()
            edge = [[0, 0]] * (len(dense.shape) - 2)
            rows.append(pad(dense, edge + [[0, 0], [start, total - start - cols]]))
            start += cols
        return concat(rows, -2)

    def _matmul(self, x, adjoint):
        sizes = [r if adjoint else c for r, c in self._sizes]
        parts = _split_rows(x, sizes)
        return concat([op._matmul(p, adjoint) for op, p in zip(self.operators, parts)], -2)

    def _solve(self, rhs, adjoint):
        sizes = [c if adjoint else r for r, c in self._sizes]
        parts = _split_rows(rhs, sizes)
        return concat([op._solve(p, adjoint) for op, p in zip(self.operators, parts)], -2)

    def _determinant(self):
        return reduce_prod_list([op._determinant() for op in self.operators])

    def _log_abs_determinant(self):
        return sum(op._log_abs_determinant() for op in self.operators)

    def _diag_part(self):
        return concat([op._diag_part() for op in self.operators], -1)


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """The block lower-triangular operator of ``operators``, a list of rows of blocks:
    row ``i`` holds ``i + 1`` operators, the last of them square (the diagonal block)."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorBlockLowerTriangular"):
        self.operators = [list(row) for row in operators]
        if any(len(row) != i + 1 for i, row in enumerate(self.operators)):
            raise ValueError("LinearOperatorBlockLowerTriangular: row i of operators must "
                             "hold i + 1 operators")
        flat = _operators([op for row in self.operators for op in row],
                          "LinearOperatorBlockLowerTriangular")
        self._sizes = [_dims(row[-1])[1] for row in self.operators]
        super().__init__(flat[0].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        batch = tuple(self.operators[0][0]._shape()[:-2])
        return batch + (sum(self._sizes), sum(self._sizes))

    def _to_dense(self):
        total, rows = sum(self._sizes), []
        for row in self.operators:
            dense = concat([op.to_dense() for op in row], -1)
            edge = [[0, 0]] * (len(dense.shape) - 2)
            width = sum(self._sizes[:len(row)])
            rows.append(pad(dense, edge + [[0, 0], [0, total - width]]))
        return concat(rows, -2)

    def _matmul(self, x, adjoint):
        return matmul(self._to_dense(), x, transpose_a=adjoint)

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _determinant(self):
        return reduce_prod_list([row[-1]._determinant() for row in self.operators])

    def _log_abs_determinant(self):
        return sum(row[-1]._log_abs_determinant() for row in self.operators)


def _kron(a, b):
    """The Kronecker product of the matrices ``a`` ``[m, n]`` and ``b`` ``[p, q]``."""
    (m, n), (p, q) = a.shape[-2:], b.shape[-2:]
    out = expand_dims(expand_dims(a, -1), -3) * expand_dims(expand_dims(b, -3), -2)
    return reshape(out, [int(m) * int(p), int(n) * int(q)])


class LinearOperatorKronecker(LinearOperator):
    """The Kronecker product ``operators[0] (x) operators[1] (x) ...`` of unbatched
    operators."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None):
        self.operators = _operators(operators, "LinearOperatorKronecker")
        for op in self.operators:
            if len(op.shape) != 2:
                raise NotImplementedError(f"LinearOperatorKronecker: only unbatched "
                                          f"operators are supported, '{op.name}' has shape "
                                          f"{op.shape}")
        self._sizes = [_dims(op) for op in self.operators]
        super().__init__(self.operators[0].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square,
                         name or "_x_".join(o.name for o in self.operators))

    def _shape(self):
        return (int(np.prod([r for r, _ in self._sizes])),
                int(np.prod([c for _, c in self._sizes])))

    def _to_dense(self):
        out = self.operators[0].to_dense()
        for op in self.operators[1:]:
            out = _kron(out, op.to_dense())
        return out

    def _matmul(self, x, adjoint):
        return matmul(self._to_dense(), x, transpose_a=adjoint)

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _log_abs_determinant(self):
        total = int(np.prod([r for r, _ in self._sizes]))
        return sum(op._log_abs_determinant() * float(total // r)
                   for op, (r, _) in zip(self.operators, self._sizes))

    def _determinant(self):
        total = int(np.prod([r for r, _ in self._sizes]))
        out = None
        for op, (r, _) in zip(self.operators, self._sizes):
            part = op._determinant() ** float(total // r)
            out = part if out is None else out * part
        return out


class LinearOperatorLowRankUpdate(LinearOperator):
    """``base_operator + U diag(diag_update) V^T`` (``V`` defaults to ``U``, the diagonal
    to ones)."""

    def __init__(self, base_operator, u, diag_update=None, v=None,
                 is_diag_update_positive=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowRankUpdate"):
        self.base_operator = base_operator
        self.u = _tensor(u, base_operator.dtype, "LinearOperatorLowRankUpdate")
        self.v = self.u if v is None else _tensor(v, base_operator.dtype,
                                                  "LinearOperatorLowRankUpdate")
        self.diag_update = None if diag_update is None else \
            _tensor(diag_update, base_operator.dtype, "LinearOperatorLowRankUpdate")
        super().__init__(base_operator.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, is_square, name)

    def _shape(self):
        return self.base_operator._shape()

    def _scaled(self, t):
        return t if self.diag_update is None else t * expand_dims(self.diag_update, -2)

    def _to_dense(self):
        return self.base_operator.to_dense() + matmul(self._scaled(self.u), self.v,
                                                      transpose_b=True)

    def _matmul(self, x, adjoint):
        left, right = (self.v, self.u) if adjoint else (self.u, self.v)
        return self.base_operator._matmul(x, adjoint) + \
            matmul(self._scaled(left), matmul(right, x, transpose_a=True))

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _log_abs_determinant(self):
        return slogdet(self._to_dense()).log_abs_determinant


class LinearOperatorHouseholder(LinearOperator):
    """The reflection ``I - 2 v v^T / (v^T v)`` across the hyperplane orthogonal to
    ``reflection_axis`` ``v`` ``[..., N]``: its own inverse, determinant -1."""

    def __init__(self, reflection_axis, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorHouseholder"):
        self._axis = _tensor(reflection_axis, None, "LinearOperatorHouseholder")
        super().__init__(self._axis.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        s = tuple(self._axis.shape)
        return s + s[-1:]

    def _like(self):
        return self._axis

    def _unit(self):
        v = self._axis
        return v / expand_dims(reduce_sum(v * v, -1) ** 0.5, -1)

    def _to_dense(self):
        u = self._unit()
        n = int(self._axis.shape[-1])
        return eye(n, dtype=self.dtype) - 2.0 * expand_dims(u, -1) * expand_dims(u, -2)

    def _matmul(self, x, adjoint):
        u = expand_dims(self._unit(), -1)
        return x - 2.0 * u * reduce_sum(u * x, -2, keepdims=True)

    def _solve(self, rhs, adjoint):
        return self._matmul(rhs, adjoint)

    def _determinant(self):
        return reduce_sum(self._axis, -1) * 0.0 - 1.0

    def _log_abs_determinant(self):
        return reduce_sum(self._axis, -1) * 0.0


class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix ``P`` of ``perm`` ``[..., N]``: ``P[i, perm[i]] = 1``, so
    ``P @ x = x[perm]``."""

    def __init__(self, perm, dtype=dtypes.float32, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorPermutation"):
        self.perm = convert_to_tensor(perm)
        if not self.perm.dtype.is_integer or self.perm.shape is None or \
                len(self.perm.shape) != 1:
            raise ValueError(f"LinearOperatorPermutation: perm '{self.perm.name}' must be one "
                             "integer vector (batches are not supported)")
        super().__init__(dtype, is_non_singular, is_self_adjoint, is_positive_definite,
                         True, name)

    def _shape(self):
        n = self.perm.shape[0]
        return (n, n)

    def _like(self):
        return convert_to_tensor(np.zeros((), self.dtype.as_numpy_dtype))

    def _to_dense(self):
        return one_hot(self.perm, int(self.perm.shape[0]), dtype=self.dtype)

    def _matmul(self, x, adjoint):
        order = invert_permutation(self.perm) if adjoint else self.perm
        return gather(x, order, axis=len(x.shape) - 2)

    def _solve(self, rhs, adjoint):
        return self._matmul(rhs, not adjoint)

    def _determinant(self):
        return slogdet(self._to_dense()).sign

    def _log_abs_determinant(self):
        return convert_to_tensor(np.zeros((), self.dtype.as_numpy_dtype))


class LinearOperatorScaledIdentity(LinearOperator):
    """``multiplier`` times the ``num_rows`` x ``num_rows`` identity (``multiplier`` a
    scalar or a batch of them)."""

    def __init__(self, num_rows, multiplier, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorScaledIdentity"):
        self._rows = int(num_rows)
        self.multiplier = _tensor(multiplier, None, "LinearOperatorScaledIdentity")
        super().__init__(self.multiplier.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        return tuple(self.multiplier.shape) + (self._rows, self._rows)

    def _like(self):
        return self.multiplier

    def _factor(self):
        return expand_dims(expand_dims(self.multiplier, -1), -1)

    def _to_dense(self):
        return self._factor() * eye(self._rows, dtype=self.dtype)

    def _matmul(self, x, adjoint):
        return x * self._factor()

    def _solve(self, rhs, adjoint):
        return rhs / self._factor()

    def _determinant(self):
        return self.multiplier ** float(self._rows)

    def _log_abs_determinant(self):
        return log(abs(self.multiplier)) * float(self._rows)

    def _diag_part(self):
        return expand_dims(self.multiplier, -1) * convert_to_tensor(
            np.ones(self._rows, self.dtype.as_numpy_dtype))


class LinearOperatorToeplitz(LinearOperator):
    """The Toeplitz matrix of first column ``col`` and first row ``row`` (``[..., N]``
    each; ``row[0]`` is not used: the diagonal is ``col[0]``)."""

    def __init__(self, col, row, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorToeplitz"):
        self.col = _tensor(col, None, "LinearOperatorToeplitz")
        self.row = convert_to_tensor(row, like=self.col)
        if self.col.shape[-1] is None or self.col.shape[-1] != self.row.shape[-1]:
            raise ValueError(f"LinearOperatorToeplitz: col '{self.col.name}' and row "
                             f"'{self.row.name}' must have one known length")
        super().__init__(self.col.dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        s = tuple(self.col.shape)
        return s + s[-1:]

    def _like(self):
        return self.col

    def _to_dense(self):
        n = int(self.col.shape[-1])
        values = concat([self.row[..., :0:-1], self.col], -1)  # row[n-1] ... row[1], col
        index = np.arange(n)[:, None] - np.arange(n)[None, :] + (n - 1)
        return gather(values, index.astype(np.int32), axis=len(values.shape) - 1)

    def _matmul(self, x, adjoint):
        return matmul(self._to_dense(), x, transpose_a=adjoint)

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _log_abs_determinant(self):
        return slogdet(self._to_dense()).log_abs_determinant


class LinearOperatorTridiag(LinearOperator):
    """The tridiagonal matrices of ``diagonals``, in ``tf.linalg.tridiagonal_solve``'s
    formats (``'compact'`` ``[..., 3, N]``, ``'sequence'`` or ``'matrix'``)."""

    def __init__(self, diagonals, diagonals_format="compact", is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorTridiag"):
        self._parts = _tridiagonals(diagonals, diagonals_format, "LinearOperatorTridiag")
        self.diagonals_format = diagonals_format
        super().__init__(self._parts[1].dtype, is_non_singular, is_self_adjoint,
                         is_positive_definite, True, name)

    def _shape(self):
        s = tuple(self._parts[1].shape)
        return s + s[-1:]

    def _like(self):
        return self._parts[1]

    def _to_dense(self):
        return tridiagonal_dense(*self._parts)

    def _matmul(self, x, adjoint):
        sup, main, sub = self._parts
        if adjoint:  # the transpose swaps the off-diagonals, shifted by one place
            edge = [[0, 0]] * (len(main.shape) - 1)
            sup, sub = pad(sub[..., 1:], edge + [[0, 1]]), pad(sup[..., :-1], edge + [[1, 0]])
        return tridiagonal_matmul([sup, main, sub], x, diagonals_format="sequence")

    def _solve(self, rhs, adjoint):
        return matrix_solve(self._to_dense(), rhs, adjoint=adjoint)

    def _log_abs_determinant(self):
        return slogdet(self._to_dense()).log_abs_determinant

    def _diag_part(self):
        return self._parts[1]


class LinearOperatorZeros(LinearOperator):
    """The zero matrix ``[*batch_shape, num_rows, num_columns]`` (square by default):
    ``matmul`` gives zeros, the determinant is 0; it has no ``solve``."""

    def __init__(self, num_rows, num_columns=None, batch_shape=None, dtype=None,
                 is_non_singular=False, is_self_adjoint=True, is_positive_definite=False,
                 is_square=True, assert_proper_shapes=False, name="LinearOperatorZeros"):
        if is_non_singular or is_positive_definite:
            raise ValueError("a zero operator is always singular")
        self._rows = int(num_rows)
        self._cols = self._rows if num_columns is None else int(num_columns)
        self._batch = tuple(int(d) for d in batch_shape) if batch_shape is not None else ()
        super().__init__(dtype or dtypes.float32, False, is_self_adjoint, False,
                         self._rows == self._cols, name)

    def _shape(self):
        return self._batch + (self._rows, self._cols)

    def _zeros(self, dims):
        return convert_to_tensor(np.zeros(dims, self.dtype.as_numpy_dtype))

    def _like(self):
        return self._zeros(())

    def _to_dense(self):
        return self._zeros(self._shape())

    def _matmul(self, x, adjoint):
        rows = self._cols if adjoint else self._rows
        return matmul(self._zeros(self._batch + (rows, 1)), x[..., :1, :] * 0.0)

    def _solve(self, rhs, adjoint):
        raise NotImplementedError(f"{self.name}: a zero operator has no solve")

    def _determinant(self):
        return self._zeros(self._batch)

    def _log_abs_determinant(self):
        return log(self._zeros(self._batch))

    def _diag_part(self):
        return self._zeros(self._batch + (min(self._rows, self._cols),))
