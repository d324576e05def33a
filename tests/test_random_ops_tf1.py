"""TF1's random ops whose distribution takes tensors (``tf.random_gamma``,
``tf.random_poisson``, ``tf.random.categorical``) and the ``tf.random`` namespace.

Random numbers cannot match TensorFlow's (another generator), so these tests check what
TF1 fixes: shapes and dtypes as TensorFlow 2.21 gives them (written in as literals,
taken once from ``tensorflow.compat.v1`` in graph mode), the distributions' moments, the
same numbers on every backend for a seed, and the gradient of a gamma draw in ``alpha``
(TF1's implicit reparameterization: ``RandomGammaGrad``, whose values against TF's are in
tests/op_specs_random.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.prim.registry import apply


def _run(fetches, backend="numpy", feed=None):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


def test_shapes_and_dtypes_as_tensorflow_gives_them():
    # TensorFlow 2.21: (10, 2), (10, 3, 2, 3), (5, 2) float32, int64, (1, 3) int64, int32
    assert gf.random_gamma([10], alpha=[0.5, 1.5]).shape.as_list() == [10, 2]
    g = gf.random_gamma([10, 3], alpha=[[1.0], [2.0]], beta=[3.0, 4.0, 5.0])
    assert g.shape.as_list() == [10, 3, 2, 3] and g.dtype is gf.float32
    p = gf.random_poisson([1.0, 4.0], [5])
    assert p.shape.as_list() == [5, 2] and p.dtype is gf.float32
    assert gf.random_poisson(2.0, [3], dtype=gf.int64).dtype is gf.int64
    c = gf.random.categorical([[0.0, 1.0]], 3)
    assert c.shape.as_list() == [1, 3] and c.dtype is gf.int64
    assert gf.random.categorical([[0.0, 1.0]], 3, dtype=gf.int32).dtype is gf.int32
    assert gf.random_gamma([2], alpha=gf.constant(1.0, gf.float64), dtype=gf.float64).dtype \
        is gf.float64
    unknown = gf.placeholder(gf.float32, [None, 2])
    assert gf.random_gamma([4], unknown).shape.as_list() == [4, None, 2]


def test_the_tf_random_namespace():
    r = gf.random
    assert r.normal is gf.random_normal and r.uniform is gf.random_uniform
    assert r.truncated_normal is gf.truncated_normal and r.shuffle is gf.random_shuffle
    assert r.gamma is gf.random_gamma and r.poisson is gf.random_poisson
    assert r.multinomial is gf.multinomial and r.set_random_seed is gf.set_random_seed
    assert r.log_uniform_candidate_sampler is gf.nn.log_uniform_candidate_sampler
    assert r.uniform_candidate_sampler is gf.nn.uniform_candidate_sampler
    assert r.get_seed(None) == (None, None)
    assert r.get_seed(3) == (87654321, 3)  # TF's default graph seed
    gf.set_random_seed(5)
    assert r.get_seed(3) == (5, 3)
    assert r.get_seed(None)[0] == 5
    x = r.uniform([2, 3], minval=0, maxval=4, dtype=gf.int32, seed=1)  # issue 47's idiom
    assert _run(x).dtype == np.int32


def test_moments(backend):
    n = 40000
    alpha = gf.constant([0.3, 2.0, 9.0])
    draws = _run({"gamma": gf.random_gamma([n], alpha, beta=2.0, seed=1),
                  "poisson": gf.random_poisson([0.5, 3.0, 40.0], [n], seed=2),
                  "cat": gf.random.categorical(gf.log([[0.2, 0.5, 0.3]]), n, seed=3)},
                 backend)
    g = draws["gamma"].astype(np.float64)
    np.testing.assert_allclose(g.mean(0), [0.15, 1.0, 4.5], rtol=0.03)
    np.testing.assert_allclose(g.var(0), [0.075, 0.5, 2.25], rtol=0.06)
    assert g.min() > 0
    p = draws["poisson"]
    assert np.all(p == np.round(p)) and p.min() >= 0
    np.testing.assert_allclose(p.mean(0), [0.5, 3.0, 40.0], rtol=0.03)
    np.testing.assert_allclose(p.var(0), [0.5, 3.0, 40.0], rtol=0.06)
    np.testing.assert_allclose(np.bincount(draws["cat"][0], minlength=3) / n, [0.2, 0.5, 0.3],
                               atol=0.01)


def test_a_seed_gives_the_same_numbers_on_every_backend():
    alpha = gf.placeholder(gf.float32, [3])
    fetches = [gf.random_gamma([4], alpha, seed=1), gf.random_poisson(alpha, [2], seed=2),
               gf.random.categorical([[0.0, 1.0, 2.0]], 6, seed=3),
               gf.random.shuffle(gf.range(8), seed=4)]
    feed = {alpha: np.array([0.4, 1.0, 6.0], np.float32)}
    runs = [_run(fetches, b, feed) for b in gf.backends.available()
            if b in ("numpy", "array_api_strict", "torch")]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    first, second = _run(fetches, "numpy", feed), _run(fetches, "numpy", feed)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    with gf.Session() as sess:  # new numbers every run
        one, two = sess.run(fetches[0], feed), sess.run(fetches[0], feed)
    assert not np.array_equal(one, two)


def test_gamma_draws_are_differentiable_in_alpha_and_beta(backend):
    alpha = gf.constant([0.5, 2.0, 7.0], gf.float64)
    beta = gf.constant([1.0, 3.0, 0.5], gf.float64)
    x = gf.random_gamma([5], alpha, beta=beta, dtype=gf.float64, seed=3)
    d_alpha, d_beta = gf.gradients(gf.reduce_sum(x), [alpha, beta])
    xv, da, db = _run([x, d_alpha, d_beta], backend)
    standard = xv * np.array([1.0, 3.0, 0.5])  # the draws at rate 1
    slope = _run(apply("random_gamma_grad", [gf.constant(np.broadcast_to(
        [0.5, 2.0, 7.0], (5, 3)).copy()), gf.constant(standard)]), backend)
    np.testing.assert_allclose(da, (slope / np.array([1.0, 3.0, 0.5])).sum(0), rtol=1e-10)
    np.testing.assert_allclose(db, (-xv / np.array([1.0, 3.0, 0.5])).sum(0), rtol=1e-10)
    # without beta the draw and its gradient come straight from the primitive
    y = gf.random_gamma([2], alpha, dtype=gf.float64, seed=4)
    assert gf.gradients(gf.reduce_sum(y), alpha)[0] is not None
    assert gf.gradients(gf.reduce_sum(gf.random_poisson(alpha, [2])), alpha)[0] is None


def test_bad_arguments_are_refused_when_the_graph_is_built():
    with pytest.raises(TypeError, match="random_gamma: dtype must be float16, float32"):
        gf.random_gamma([2], 1.0, dtype=gf.int32)
    with pytest.raises(TypeError, match="random_poisson: dtype must be"):
        gf.random_poisson(1.0, [2], dtype=gf.bool)
    with pytest.raises(ValueError, match="random_gamma: the shape must be known"):
        gf.random_gamma(gf.placeholder(gf.int32, [1]), 1.0)
    with pytest.raises(ValueError, match="multinomial: logits"):
        gf.random.categorical([0.0, 1.0], 2)
