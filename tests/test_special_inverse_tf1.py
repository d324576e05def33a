"""The inverses of erf (``math.erfinv``, ``math.erfcinv``, ``math.ndtri``) against
TensorFlow 2.21 (``compat.v1``, graph mode): the expected values are TF's results for the
inputs below, written in as literals (values in float64 and float32, and ``tf.gradients``
in float64); on every CPU backend.

Where gradflow and TF differ, gradflow's value is the exact one (checked against mpmath
at 40 digits when the literals were taken) and the test says so.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf

inf, nan = math.inf, math.nan
X = [0.0, 1e-20, 0.3, 0.5, 0.9, 0.999999, 1 - 1e-16, 1.0, -0.7, 1.5, 2.0, 1e-300, -0.1]
# TF 2.21, float64. TF gives 0 for erfinv(1e-20) and erfinv(1e-300) (the exact values are
# 8.86e-21 and 8.86e-301), inf for erfinv(1 - 1e-16) (below 1: 5.8635847487551676) and
# 3.458910737260051 for erfinv(0.999999) (mpmath: 3.4589107372754988): these four entries
# are the exact values, not TF's
ERFINV = [0.0, 8.86226925452758e-21, 0.27246271472675443, 0.4769362762044699,
          1.1630871536766738, 3.4589107372754988, 5.8635847487551676, inf,
          -0.7328690779592171, nan, nan, 8.862269254527582e-301, -0.08885599049425769]
# TF gives -0.0 for erfcinv(1); gradflow gives 0.0 (equal as numbers)
ERFCINV = [inf, 6.601580622355143, 0.7328690779592171, 0.4769362762044699,
           0.08885599049425769, 8.862269254784742e-07, 9.839095376804143e-17, -0.0, nan,
           -0.4769362762044699, -inf, 26.209469960516124, nan]
NDTRI = [-inf, -9.262340089798409, -0.5244005127080409, 0.0, 1.2815515655446004,
         4.753424308817087, 8.209536151601387, inf, nan, nan, nan, -37.0470962993612, nan]
# tf.gradients at [0.1, 0.5, -0.8], [0.2, 1.0, 1.7] and [0.1, 0.5, 0.9]
GRAD_ERFINV = [0.8932517253051874, 1.1125848189719496, 2.0145683819335884]
GRAD_ERFCINV = [-2.014568381933588, -0.8862269254527579, -1.516363217333765]
GRAD_NDTRI = [5.698059856117003, 2.5066282746310002, 5.698059856117003]
# float32 at [0.1, 0.5, 0.9]
F32 = {"erfinv": [0.08885600417852402, 0.47693631052970886, 1.1630871295928955],
       "erfcinv": [1.1630871295928955, 0.47693631052970886, 0.08885600417852402],
       "ndtri": [-1.2815515995025635, 0.0, 1.2815511226654053]}
FNS = {"erfinv": gf.math.erfinv, "erfcinv": gf.math.erfcinv, "ndtri": gf.math.ndtri}


def _run(fetches, feed, backend):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("name,want", [("erfinv", ERFINV), ("erfcinv", ERFCINV),
                                       ("ndtri", NDTRI)])
def test_float64_values_are_tensorflows(name, want, backend):
    x = gf.placeholder(gf.float64, [None])
    y = FNS[name](x)
    assert y.dtype == gf.float64 and y.shape.as_list() == [None]
    got = _run(y, {x: np.array(X)}, backend)
    np.testing.assert_allclose(got, want, rtol=4e-15, atol=0.0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(F32))
def test_float32_values_are_tensorflows(name, backend):
    x = gf.placeholder(gf.float32, [None])
    got = _run(FNS[name](x), {x: np.array([0.1, 0.5, 0.9], np.float32)}, backend)
    assert got.dtype == np.float32
    # TF computes in float32 (ndtri(0.1) 3 ulps off); gradflow in float64, rounded once
    np.testing.assert_allclose(got, F32[name], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,at,want", [
    ("erfinv", [0.1, 0.5, -0.8], GRAD_ERFINV), ("erfcinv", [0.2, 1.0, 1.7], GRAD_ERFCINV),
    ("ndtri", [0.1, 0.5, 0.9], GRAD_NDTRI)])
def test_gradients_are_tensorflows(name, at, want, backend):
    x = gf.placeholder(gf.float64, [3])
    (grad,) = gf.gradients(gf.reduce_sum(FNS[name](x)), [x])
    np.testing.assert_allclose(_run(grad, {x: np.array(at)}, backend), want, rtol=1e-14)


def test_integer_input_is_refused_when_built():
    with pytest.raises(TypeError):
        gf.math.erfinv(gf.constant([1, 2]))
