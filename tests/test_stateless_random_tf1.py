"""TF1's stateless random ops (``tf.random.stateless_*``, ``tf.random.split``,
``tf.random.fold_in``; gradflow/ops/stateless_random_ops.py).

The numbers cannot be TensorFlow's (TF draws with Philox; gradflow from NumPy's
generator seeded by the seed pair), so these tests check what TF1 fixes: shapes and
dtypes as TensorFlow 2.21 gives them (literals taken once from ``tensorflow.compat.v1``
in graph mode with ``/tmp/bench/bin/python``), that the numbers are a function of the
seed only (every run, every Session, every backend), the distributions' moments, and the
gradients: TensorFlow 2.21's gradients of ``stateless_parameterized_truncated_normal``
(``_TF_X``/``_TF_GRAD`` below: ``tf.gradients(x[i], [means, stddevs, minvals, maxvals])``
in float64 for seed ``[3, 4]``) are 1 in the means, ``(x - means) / stddevs`` in the
deviations and the quantile-fixed implicit gradients in the bounds, which
``_implicit_bounds`` reproduces from TF's samples and gradflow's gradients must follow.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf

r = gf.random

_M = [0.3, -0.5, 1.0, 0.0]
_S = [1.0, 2.0, 0.5, 1.5]
_LO = [-1.0, -2.0, 1.2, 0.5]
_HI = [2.0, 0.0, 3.0, 4.0]
# TensorFlow 2.21: stateless_parameterized_truncated_normal([4], [3, 4], _M, _S, _LO, _HI)
_TF_X = [-0.03108456, -0.30506426, 1.90388667, 1.03253431]
_TF_GRAD = [[1.0, -3.31084560e-01, 3.09228140e-01, 7.93196083e-02],
            [1.0, 9.74678715e-02, 1.22065077e-01, 8.17113376e-01],
            [1.0, 1.80777333e+00, 4.84504035e-01, 1.54298987e-03],
            [1.0, 6.88356205e-01, 7.92816073e-01, 1.22611192e-02]]


def _run(fetches, backend="numpy", feed=None):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


def _all():
    s = [1, 2]
    return {
        "normal": r.stateless_normal([3, 2], s, mean=gf.constant(0.3)),
        "uniform": r.stateless_uniform([3, 2], s),
        "uniform_int": r.stateless_uniform([3], s, minval=0, maxval=10, dtype=gf.int32),
        "uniform_full": r.stateless_uniform([3], s, minval=None, maxval=None,
                                            dtype=gf.int64),
        "tn": r.stateless_truncated_normal([3, 2], s),
        "cat": r.stateless_categorical([[0., 1.], [1., 0.]], 4, s),
        "mult": r.stateless_multinomial([[0., 1.], [1., 0.]], 4, s, output_dtype=gf.int32),
        "gamma": r.stateless_gamma([10, 2], s, alpha=[0.5, 1.5]),
        "gamma_b": r.stateless_gamma([10, 3, 2], s, alpha=[[1.], [2.], [3.]], beta=[1., 2.]),
        "pois": r.stateless_poisson([10, 2], s, lam=[1., 4.]),
        "pois_f": r.stateless_poisson([10, 2], s, lam=[1., 4.], dtype=gf.float32),
        "binom": r.stateless_binomial([10, 2], s, counts=[5., 10.], probs=0.5),
        "ptn": r.stateless_parameterized_truncated_normal([3, 2], s, means=0.3),
        "split": r.split(gf.constant([1, 2]), 3),
        "split64": r.split(gf.constant([1, 2], gf.int64)),
        "fold": r.fold_in(gf.constant([1, 2]), 7),
    }


# TensorFlow 2.21's static shapes and dtypes of the same calls
_TF_SHAPES = {
    "normal": ((3, 2), "float32"), "uniform": ((3, 2), "float32"),
    "uniform_int": ((3,), "int32"), "uniform_full": ((3,), "int64"),
    "tn": ((3, 2), "float32"), "cat": ((2, 4), "int64"), "mult": ((2, 4), "int32"),
    "gamma": ((10, 2), "float32"), "gamma_b": ((10, 3, 2), "float32"),
    "pois": ((10, 2), "int32"), "pois_f": ((10, 2), "float32"), "binom": ((10, 2), "int32"),
    "ptn": ((3, 2), "float32"), "split": ((3, 2), "int32"), "split64": ((2, 2), "int64"),
    "fold": ((2,), "int32"),
}


def test_shapes_and_dtypes_as_tensorflow_gives_them():
    for key, t in _all().items():
        assert (tuple(t.shape.as_list()), t.dtype.name) == _TF_SHAPES[key], key


def test_a_function_of_the_seed_only(backend):
    outs = _all()
    first = _run(outs)
    again = _run(_all(), backend)
    for key in outs:
        assert first[key].shape == _TF_SHAPES[key][0]
        np.testing.assert_array_equal(np.asarray(again[key]), first[key], err_msg=key)
    with gf.Session() as sess:
        seed = gf.placeholder(gf.int64, [2])
        x = r.stateless_normal([50], seed)
        a, b = sess.run(x, {seed: [1, 2]}), sess.run(x, {seed: [1, 2]})
        c = sess.run(x, {seed: [1, 3]})
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_moments_and_ranges():
    s = [7, 11]
    n = r.stateless_normal([20000], s, mean=2.0, stddev=3.0)
    t = r.stateless_truncated_normal([20000], s, stddev=2.0)
    u = r.stateless_uniform([20000], s, minval=-1.0, maxval=3.0)
    i = r.stateless_uniform([20000], s, minval=5, maxval=9, dtype=gf.int64)
    g = r.stateless_gamma([20000], s, alpha=4.0, beta=2.0)
    p = r.stateless_poisson([20000], s, lam=3.0)
    b = r.stateless_binomial([20000], s, counts=10.0, probs=0.3)
    c = r.stateless_categorical(gf.log([[0.2, 0.8]]), 20000, s)
    q = r.stateless_parameterized_truncated_normal([20000], s, 1.0, 2.0, 0.0, 10.0)
    v = _run([n, t, u, i, g, p, b, c, q])
    assert abs(v[0].mean() - 2.0) < 0.1 and abs(v[0].std() - 3.0) < 0.1
    assert np.abs(v[1]).max() <= 4.0 and abs(v[1].mean()) < 0.05
    assert v[2].min() >= -1.0 and v[2].max() < 3.0 and abs(v[2].mean() - 1.0) < 0.05
    assert set(np.unique(v[3])) == {5, 6, 7, 8}
    assert abs(v[4].mean() - 2.0) < 0.05  # alpha / beta
    assert abs(v[5].mean() - 3.0) < 0.1 and v[5].dtype == np.int32
    assert abs(v[6].mean() - 3.0) < 0.1
    assert abs(v[7].mean() - 0.8) < 0.02
    assert v[8].min() >= 0.0 and v[8].max() <= 10.0
    # the mean of N(1, 2) on [0, 10]: 1 + 2 (pdf(-0.5) - pdf(4.5)) / (Phi(4.5) - Phi(-0.5))
    pdf = math.exp(-0.125) / math.sqrt(2 * math.pi)
    assert abs(v[8].mean() - (1.0 + 2.0 * pdf / (0.5 * math.erfc(-4.5 / math.sqrt(2))
                                                   - 0.5 * math.erfc(0.5 / math.sqrt(2))))) < 0.05
    pairs = _run(r.split([5, 6], 4))
    assert pairs.shape == (4, 2) and len({tuple(x) for x in pairs}) == 4
    assert not np.array_equal(_run(r.fold_in([5, 6], 1)), _run(r.fold_in([5, 6], 2)))


def _implicit_bounds(x, m, s, lo, hi):
    """TF's gradients of a truncated normal sample in (means, stddevs, minvals, maxvals)."""
    def pdf(v):
        return np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi)

    def cdf(v):
        return 0.5 * np.vectorize(math.erfc)(-v / math.sqrt(2))

    a, b, z = (lo - m) / s, (hi - m) / s, (x - m) / s
    mass = cdf(b) - cdf(a)
    dudx = pdf(z) / s / mass
    dudlo = -pdf(a) / s / mass + (cdf(z) - cdf(a)) * pdf(a) / s / mass ** 2
    dudhi = -(cdf(z) - cdf(a)) * pdf(b) / s / mass ** 2
    return np.stack([np.ones_like(x), z, -dudlo / dudx, -dudhi / dudx], 1)


def test_parameterized_truncated_normal_gradients_as_tensorflow():
    m, s, lo, hi = (np.array(v) for v in (_M, _S, _LO, _HI))
    np.testing.assert_allclose(_implicit_bounds(np.array(_TF_X), m, s, lo, hi), _TF_GRAD,
                               rtol=1e-6, atol=1e-8)
    params = [gf.constant(v, gf.float64) for v in (_M, _S, _LO, _HI)]
    x = r.stateless_parameterized_truncated_normal([4], [3, 4], *params)
    grads = [gf.gradients(x[i], params) for i in range(4)]
    xv, gv = _run([x, grads])
    assert np.all((xv >= lo) & (xv <= hi))
    got = np.array([[gv[i][k][i] for k in range(4)] for i in range(4)])
    np.testing.assert_allclose(got, _implicit_bounds(xv, m, s, lo, hi), rtol=1e-6, atol=1e-8)


def test_gamma_gradients_reach_alpha_and_beta():
    alpha, beta = gf.constant([0.5, 2.0], gf.float64), gf.constant(2.0, gf.float64)
    x = r.stateless_gamma([5, 2], [1, 2], alpha=alpha, beta=beta, dtype=gf.float64)
    ga, gb, xv = _run(gf.gradients(gf.reduce_sum(x), [alpha, beta]) + [x])
    assert ga.shape == (2,) and np.all(ga > 0)
    np.testing.assert_allclose(gb, -np.sum(xv) / 2.0, rtol=1e-10)  # d(g / beta)/d beta
    m = gf.constant(0.5)
    n = r.stateless_normal([4], [1, 2], mean=m, stddev=2.0)
    assert _run(gf.gradients(gf.reduce_sum(n), m))[0] == pytest.approx(4.0)


def test_run_time_shapes():
    x = gf.placeholder(gf.float32, [None, 3])
    n = r.stateless_normal(gf.shape(x), [3, 4])
    logits = gf.placeholder(gf.float32, [None, 2])
    c = r.stateless_categorical(logits, 5, [3, 4])
    nv, cv = _run([n, c], feed={x: np.zeros((2, 3)), logits: np.zeros((4, 2))})
    assert nv.shape == (2, 3) and cv.shape == (4, 5)
    np.testing.assert_array_equal(nv, _run(r.stateless_normal([2, 3], [3, 4])))


def test_bad_input_raises_when_built():
    with pytest.raises(ValueError, match="must have shape \\[2\\]"):
        r.stateless_normal([3], [1, 2, 3])
    with pytest.raises(TypeError, match="must be int32 or int64"):
        r.stateless_normal([3], gf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="needs maxval"):
        r.stateless_uniform([3], [1, 2], dtype=gf.int32)
    with pytest.raises(ValueError, match="does not broadcast"):
        r.stateless_gamma([10, 3], [1, 2], alpha=[1.0, 2.0])
    with pytest.raises(TypeError, match="dtype must be"):
        r.stateless_normal([3], [1, 2], dtype=gf.int32)


def test_the_random_namespace_has_them():
    assert r.all_candidate_sampler is gf.nn.all_candidate_sampler
    for name in ("stateless_normal", "stateless_uniform", "stateless_truncated_normal",
                 "stateless_categorical", "stateless_multinomial", "stateless_gamma",
                 "stateless_poisson", "stateless_binomial",
                 "stateless_parameterized_truncated_normal", "split", "fold_in"):
        assert name in r.__all__ and callable(getattr(r, name))
