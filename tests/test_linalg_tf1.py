"""TF1's matrix functions (gradflow/ops/matrix_ops.py) and LinearOperators against
TensorFlow 2.21: each expected value is what TF gave (``compat.v1``, graph mode, float64),
written in as a literal; on every CPU backend.

The literals were made once with TensorFlow 2.21 installed: the graph of ``_build`` below
written in TF1 (``tf.compat.v1.matrix_inverse``, ``svd``, ``qr``, ``self_adjoint_eig``...,
``tf.compat.v1.gradients`` for the ``g_*`` entries), run on the matrices ``A``, ``M``, ``B``,
printed with ``repr(array.tolist())``. Singular vectors and eigenvectors enter only through
their absolute values, since TF's signs are its library's and gradflow's follow its own rule.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError

A = np.array([[4.0, 1.0, -2.0], [1.0, 3.0, 0.5], [-2.0, 0.5, 5.0]])
M = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]])
B = np.array([[1.0, -1.0], [2.0, 0.0], [0.5, 3.0]])

TF = {
    "inv": [[0.36875, -0.15000000000000002, 0.1625],
            [-0.15000000000000002, 0.4, -0.1],
            [0.16250000000000003, -0.1, 0.275]],
    "det": 40.000000000000014,
    "logdet": 3.6888794541139367,
    "slog": 3.6888794541139367,
    "solve": [[0.15000000000000002, 0.11875000000000005],
              [0.6, -0.15000000000000005],
              [0.1, 0.6625000000000001]],
    "chol": [[2.0, 0.0, 0.0],
             [0.5, 1.6583123951777, 0.0],
             [-1.0, 0.6030226891555273, 1.9069251784911847]],
    "cs": [[0.15, 0.11874999999999991],
           [0.6, -0.14999999999999997],
           [0.09999999999999998, 0.6624999999999999]],
    "ts": [[0.25, -0.25],
           [0.5833333333333333, 0.08333333333333333],
           [0.1416666666666667, 0.4916666666666667]],
    "lstsq": [[0.769832325137429], [0.53223543482761]],
    "s": [4.592627998451132, 3.1871253611746653],
    "e": [1.584206693092626, 3.8393364524664833, 6.576456854440901],
    "qr_r": [[-3.2015621187164243, -0.3123475237772122], [0.0, 4.571918527750713]],
    "band": [[4.0, 1.0, 0.0], [0.0, 3.0, 0.5], [0.0, 0.0, 5.0]],
    "diag": [[1.0, 0.0], [0.0, 2.0]],
    "trace": 12.0,
    "pinv": [[0.08868144690781797, 0.2987164527421237, 0.030338389731621937],
             [0.09101516919486582, -0.061843640606767794, 0.18903150525087514]],
    "g_inv": [[-0.3687500000000001, 0.15000000000000008, -0.16250000000000006],
              [0.15000000000000008, -0.40000000000000013, 0.10000000000000002],
              [-0.16250000000000003, 0.10000000000000005, -0.275]],
    "g_det": [[14.750000000000005, -6.000000000000003, 6.500000000000003],
              [-6.000000000000003, 16.000000000000007, -4.000000000000002],
              [6.5000000000000036, -4.000000000000002, 11.000000000000005]],
    "g_chol": [[1.160688584616207, -0.16875546708518122, 0.23699943568982335],
               [-0.16875546708518122, 1.023070623672896, -0.3259756223339143],
               [0.23699943568982335, -0.3259756223339143, 1.3110110602126892]],
    "g_eigvec": [[-1.0891116789199309, 0.0, 0.0],
                 [-0.1594378094643357, 0.2438733147500601, 0.0],
                 [0.17128868991898671, -0.19869972023500448, 0.8452383641698713]],
    "g_eigval": [[0.20785867769344135, 0.0, 0.0],
                 [-2.1424462968191174, -0.8557126367496106, 0.0],
                 [-0.6588419519151754, -1.9700839748738173, 0.14785395905617013]],
    "g_svd": [[-1.3930004034520642, 0.3460952783456999],
              [-0.7933279765554132, -1.7580458510634218],
              [-0.6951245360239261, 0.7689532076629781]],
    "g_qr": [[-1.3473674739667965, -1.4683083832650108],
             [-0.19140324676082113, -1.4887412009827035],
             [-2.559969808934329, -0.937184502439455]],
    "g_solve": [[[-0.03660156250000002, -0.0721875, -0.09367187500000004],
                 [-0.0721875, -0.3825, 0.03937500000000005],
                 [-0.09367187500000004, 0.03937500000000005, -0.4489062500000001]],
                [[0.15000000000000002, 0.11875000000000005],
                 [0.6, -0.15000000000000005],
                 [0.1, 0.6625000000000001]]],
    "g_ts": [[[-0.015624999999999993, 0.0, 0.0],
              [-0.18749999999999997, -0.3708333333333332, 0.0],
              [0.12500000000000003, -0.10833333333333334, -0.3091666666666667]],
             [[0.1375, 0.07500000000000004], [0.6499999999999999, -0.1],
              [0.1, 0.6000000000000001]]],
    "g_lstsq": [[-0.28792203973616237, -0.17167328705627205],
                [-0.1222618318134231, -0.10643032409928989],
                [-0.058875459717149414, -0.07354029606532445]],
}
RTOL = 1e-12


def _build():
    a = gf.placeholder(gf.float64, [3, 3])
    m = gf.placeholder(gf.float64, [3, 2])
    b = gf.placeholder(gf.float64, [3, 2])
    s, u, v = gf.svd(m)
    q, r = gf.qr(m)
    e, w = gf.self_adjoint_eig(a)
    chol = gf.cholesky(a)
    outs = dict(
        inv=gf.matrix_inverse(a), det=gf.matrix_determinant(a), logdet=gf.linalg.logdet(a),
        slog=gf.linalg.slogdet(a)[1], solve=gf.matrix_solve(a, b), chol=chol,
        cs=gf.cholesky_solve(chol, b),
        ts=gf.matrix_triangular_solve(a, b, lower=False, adjoint=True),
        lstsq=gf.matrix_solve_ls(m, b[:, :1] * 0 + np.array([[1.0], [2.0], [3.0]]),
                                 l2_regularizer=0.1),
        s=s, e=e, qr_r=r, band=gf.matrix_band_part(a, 0, 1), diag=gf.diag(np.array([1.0, 2.0])),
        trace=gf.trace(a), pinv=gf.linalg.pinv(m),
        g_inv=gf.gradients(gf.reduce_sum(gf.matrix_inverse(a) * A), a)[0],
        g_det=gf.gradients(gf.matrix_determinant(a), a)[0],
        g_chol=gf.gradients(gf.reduce_sum(chol * A), a)[0],
        g_eigvec=gf.gradients(gf.reduce_sum(gf.abs(w) * A), a)[0],
        g_eigval=gf.gradients(gf.reduce_sum(e * np.array([1.0, -2.0, 0.5])), a)[0],
        g_svd=gf.gradients(gf.reduce_sum(s * np.array([1.0, -1.0])) + gf.reduce_sum(
            gf.abs(u) * B) + gf.reduce_sum(gf.abs(v) * np.array([[1.0, 2.0], [0.5, -1.0]])),
            m)[0],
        g_qr=gf.gradients(gf.reduce_sum(gf.abs(q) * B) + gf.reduce_sum(
            r * np.array([[1.0, 2.0], [0.0, -1.0]])), m)[0],
        g_solve=gf.gradients(gf.reduce_sum(gf.matrix_solve(a, b) * B), [a, b]),
        g_ts=gf.gradients(gf.reduce_sum(gf.matrix_triangular_solve(a, b) * B), [a, b]),
        g_lstsq=gf.gradients(gf.reduce_sum(gf.matrix_solve_ls(m, b, l2_regularizer=0.1)),
                             m)[0],
    )
    return outs, {a: A, m: M, b: B}


def test_values_and_gradients_match_tensorflow(backend):
    with gf.Graph().as_default():
        outs, feed = _build()
        with gf.Session(backend=backend) as sess:
            got = sess.run(outs, feed)
    for key, want in TF.items():
        pairs = zip(got[key], want) if key in ("g_solve", "g_ts") else [(got[key], want)]
        for g, w in pairs:
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w), rtol=RTOL,
                                       atol=1e-13, err_msg=key)


def test_singular_matrix_is_one_clear_error_on_every_backend(backend):
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float64, [2, 2], name="weights")
        with gf.Session(backend=backend) as sess:
            with pytest.raises(InvalidArgumentError, match="the matrix 'weights' is not "
                               "invertible"):
                sess.run(gf.matrix_inverse(x), {x: np.ones((2, 2))})
            with pytest.raises(InvalidArgumentError, match="the matrix 'weights' is not "
                               "positive definite"):
                sess.run(gf.cholesky(x), {x: -np.eye(2)})


def test_bad_shapes_fail_when_the_graph_is_built():
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="square"):
            gf.matrix_inverse(gf.zeros([2, 3], gf.float64))
        with pytest.raises(ValueError, match="batch shape"):
            gf.matrix_solve(gf.zeros([2, 3, 3]), gf.zeros([4, 3, 1]))
        with pytest.raises(TypeError, match="floating point"):
            gf.cholesky(gf.zeros([3, 3], gf.int32))
        with pytest.raises(NotImplementedError, match="known when the graph is built"):
            x = gf.placeholder(gf.float64, [None, None])
            gf.gradients(gf.reduce_sum(gf.svd(x)[1]), x)


def test_linear_operators(backend):
    rng = np.random.default_rng(4)
    full = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    d = rng.uniform(0.5, 2.0, (2, 3))
    rhs = rng.normal(size=(2, 3, 2))
    with gf.Graph().as_default():
        ops = {
            "full": (gf.linalg.LinearOperatorFullMatrix(full), full),
            "diag": (gf.linalg.LinearOperatorDiag(d), d[..., None] * np.eye(3)),
            "tril": (gf.linalg.LinearOperatorLowerTriangular(full), np.tril(full)),
            "eye": (gf.linalg.LinearOperatorIdentity(3, batch_shape=[2], dtype=gf.float64),
                    np.broadcast_to(np.eye(3), (2, 3, 3))),
        }
        fetch = {k: [op.to_dense(), op.matmul(rhs), op.matmul(rhs, adjoint=True),
                     op.solve(rhs), op.solvevec(rhs[..., 0]), op.determinant(),
                     op.log_abs_determinant(), op.trace(), op.matvec(rhs[..., 0])]
                 for k, (op, _) in ops.items()}
        for op, _ in ops.values():
            assert op.shape.as_list() == [2, 3, 3] and op.batch_shape.as_list() == [2]
            assert op.domain_dimension == 3 and op.range_dimension == 3 and op.is_square
        with gf.Session(backend=backend) as sess:
            got = sess.run(fetch)
    for k, (_, dense) in ops.items():
        want = [dense, dense @ rhs, np.swapaxes(dense, -1, -2) @ rhs,
                np.linalg.solve(dense, rhs), np.linalg.solve(dense, rhs)[..., 0],
                np.linalg.det(dense), np.linalg.slogdet(dense)[1],
                np.trace(dense, axis1=-2, axis2=-1), (dense @ rhs)[..., 0]]
        for i, (g, w) in enumerate(zip(got[k], want)):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{k} {i}")
