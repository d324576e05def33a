"""TF1's special functions (gradflow/prim/special.py: erf, erfc, lgamma, digamma,
polygamma, math.xlogy, math.xdivy) against TensorFlow 2.21 (``compat.v1``, graph mode):
each expected value is what TF gave, written in as a literal; on every CPU backend. Where
scipy is installed, also against ``scipy.special`` on dense grids.

Where gradflow and TF differ, the test says so and why: gradflow's float64 results are
the more accurate ones there (checked against mpmath when the literals were taken).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf

inf, nan = math.inf, math.nan
# float64: TF's own results are a few ulps off in places (its digamma at 1.5 by 10 ulps);
# float32: TF computes in float32 with its own approximations, gradflow in float64 and
# rounds once
RTOL64, RTOL32, ATOL32 = 4e-15, 1e-6, 2e-8


def _run(fetches, feed, backend):
    with gf.Session(backend=backend) as sess:
        return sess.run(fetches, feed)


def _close(got, want, rtol, atol=0.0):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def _unary(fn, xs, dtype, backend):
    x = gf.placeholder(dtype, [None])
    y = fn(x)
    assert y.dtype == dtype and y.shape.as_list() == [None]
    out = _run(y, {x: np.array(xs, dtype)}, backend)
    assert out.dtype == np.dtype(dtype)
    return out


# -- erf and erfc ------------------------------------------------------------------------

ERF_X = [-30.0, -6.0, -3.0, -0.5, -1e-3, -0.0, 0.0, 1e-300, 1e-20, 0.1, 0.46875, 0.47, 1.0,
         2.0, 3.9, 4.0, 4.1, 5.0, 10.0, 20.0, 26.0, 26.5, 27.0, 27.3, 28.0, inf, -inf, nan]
# TF 2.21 gives nan for erf(+-inf) in float64 (its float32 kernel, and TF1's, give +-1):
# gradflow gives +-1 in both; those two entries are the exact values, not TF's
ERF_64 = [
    -1.0, -1.0, -0.9999779095030015, -0.5204998778130466, -0.0011283787909692363, -0.0,
    0.0, 1.1283791670955126e-300, 1.1283791670955125e-20, 0.1124629160182849,
    0.492613473217938, 0.49374505088608206, 0.8427007929497148, 0.9953222650189527,
    0.9999999652077514, 0.9999999845827421, 0.9999999932999724, 0.9999999999984626, 1.0,
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, nan]
# erfc(27) is 5.2e-319, a subnormal that TF flushes to 0 (hence the atol)
ERFC_64 = [
    2.0, 2.0, 1.9999779095030015, 1.5204998778130467, 1.0011283787909693, 1.0, 1.0, 1.0,
    1.0, 0.8875370839817152, 0.507386526782062, 0.5062549491139179, 0.15729920705028522,
    0.004677734981047266, 3.4792248597231765e-08, 1.5417257900280017e-08,
    6.7000276540849175e-09, 1.5374597944280347e-12, 2.0884875837625443e-45,
    5.3958656116079026e-176, 5.663192408856143e-296, 2.210907664263734e-307, 0.0, 0.0, 0.0,
    0.0, 2.0, nan]
ERF_32 = [
    -1.0, -1.0, -0.9999780058860779, -0.5204998850822449, -0.001128378789871931, -0.0, 0.0,
    0.0, 1.128379045568606e-20, 0.11246291548013687, 0.49261346459388733,
    0.49374502897262573, 0.8427008390426636, 0.9953223466873169, 1.0, 1.0, 1.0, 1.0, 1.0,
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0, nan]
ERFC_32 = [
    2.0, 2.0, 1.999977946281433, 1.5204999446868896, 1.0011284351348877, 1.0, 1.0, 1.0,
    1.0, 0.8875370621681213, 0.5073865652084351, 0.5062549114227295, 0.1572992205619812,
    0.004677735269069672, 3.479222243640834e-08, 1.5417258580896487e-08,
    6.700032084694385e-09, 1.537460046427408e-12, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    2.0, nan]


def test_erf_and_erfc_match_tensorflow(backend):
    _close(_unary(gf.erf, ERF_X, "float64", backend), ERF_64, RTOL64)
    _close(_unary(gf.math.erfc, ERF_X, "float64", backend), ERFC_64, RTOL64, atol=1e-300)
    _close(_unary(gf.math.erf, ERF_X, "float32", backend), ERF_32, RTOL32, ATOL32)
    _close(_unary(gf.erfc, ERF_X, "float32", backend), ERFC_32, RTOL32, atol=1e-44)
    signs = np.signbit(_unary(gf.erf, [-0.0, 0.0], "float64", backend))
    assert signs.tolist() == [True, False]  # erf(-0) = -0, as TF


# -- lgamma ------------------------------------------------------------------------------

LGAMMA_X = [-inf, -1e20, -100.5, -3.0, -2.5, -2.0, -1.5, -1.0, -0.5, -1e-300, -0.0, 0.0,
            1e-300, 1e-8, 0.5, 1 - 1e-10, 1.0, 1 + 1e-10, 1.5, 2 - 1e-10, 2.0, 2 + 1e-10, 2.5,
            3.0, 10.0, 10.5, 100.0, 1e10, 1e300, 2.55e305, 1e307, inf, nan]
LGAMMA_64 = [
    inf, inf, -364.90096830942736, inf, -0.05624371649767407, inf, 0.8600470153764809, inf,
    1.2655121234846454, 690.7755278982137, inf, inf, 690.7755278982137, 18.42068073818021,
    0.5723649429247001, 5.7721571274281786e-11, 0.0, -5.772157125783244e-11,
    -0.12078223763524522, -4.2278437004755317e-11, 0.0, 4.2278437011204657e-11,
    0.2846828704729192, 0.6931471805599453, 12.80182748008147, 13.940625219403762,
    359.13420536957545, 220258509288.81058, 6.897755278982137e+302,
    1.7906725941420033e+308, inf, inf, nan]
LGAMMA_32 = [
    inf, inf, -364.90093994140625, inf, -0.056243713945150375, inf, 0.8600470423698425,
    inf, 1.2655121088027954, inf, inf, inf, inf, 18.42068099975586, 0.5723649263381958,
    0.0, 0.0, 0.0, -0.12078223377466202, 0.0, 0.0, 0.0, 0.28468286991119385,
    0.6931471824645996, 12.801827430725098, 13.94062614440918, 359.13421630859375,
    220258500608.0, inf, inf, inf, inf, nan]


def test_lgamma_matches_tensorflow(backend):
    """log|Gamma(x)|: +inf at 0, -1, -2, ... (and -inf), relative accuracy next to the
    zeros at 1 and 2, Stirling up to the overflow at 2.55e305."""
    with np.errstate(over="ignore"):  # float32 inputs of 1e300 and more are inf
        x32 = np.array(LGAMMA_X, np.float64).astype(np.float32)
    _close(_unary(gf.lgamma, LGAMMA_X, "float64", backend), LGAMMA_64, RTOL64)
    _close(_unary(gf.math.lgamma, x32, "float32", backend), LGAMMA_32, RTOL32, ATOL32)


# -- digamma and polygamma -----------------------------------------------------------------

DIGAMMA_X = [-inf, -100.5, -3.0, -2.5, -1.0, -0.5, -1e-10, -0.0, 0.0, 1e-300, 1e-10, 0.5,
             1.0, 1.4616321449683622, 1.5, 2.0, 10.0, 100.0, 1e10, 1e300, inf, nan]
# at 1.4616321449683622 (the double next to digamma's zero) TF gives -4.4e-16 and gradflow
# -9.24e-17, psi'(x0) (x - x0) to 3 digits: the atol covers TF's absolute error there
DIGAMMA_64 = [
    nan, 4.615124601338064, nan, 1.1031566406452433, nan, 0.03648997397857645,
    9999999999.422785, nan, nan, -9.999999999999999e+299, -10000000000.577215,
    -1.9635100260214227, -0.5772156649015323, -4.440892098500626e-16, 0.03648997397857645,
    0.42278433509846747, 2.2517525890667214, 4.600161852738088, 23.025850929890456,
    690.7755278982137, inf, nan]
DIGAMMA_32 = [
    nan, 4.615124702453613, nan, 1.1031568050384521, nan, 0.03648996353149414,
    10000000000.0, nan, nan, nan, -10000000000.0, -1.9635107517242432, -0.5772159099578857,
    0.0, 0.03648996353149414, 0.4227842092514038, 2.2517526149749756, 4.600162029266357,
    23.025850296020508, inf, inf, nan]


def test_digamma_matches_tensorflow(backend):
    """nan at the poles 0, -1, -2, ... (and -inf), as TF; reflection below 0."""
    with np.errstate(over="ignore"):
        x32 = np.array(DIGAMMA_X, np.float64).astype(np.float32)
    got = _unary(gf.digamma, DIGAMMA_X, "float64", backend)
    _close(got, DIGAMMA_64, RTOL64, atol=4e-16)
    assert abs(got[13] - -9.2413e-17) < 1e-20  # mpmath: -9.24126552e-17
    _close(_unary(gf.math.digamma, x32, "float32", backend), DIGAMMA_32, RTOL32, ATOL32)


POLYGAMMA_A = [0.0, 1.0, 2.0, 3.0, 0.5, -1.0]
POLYGAMMA_X = [-2.5, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 10.0, 1e5, inf]
POLYGAMMA_64 = [
    [1.1031566406452433, nan, nan, 0.03648997397857645, nan, -1.9635100260214227,
     -0.5772156649015323, 0.42278433509846747, 2.2517525890667214, 11.512920464961896, inf],
    [9.539246644989124, inf, inf, 8.934802200544679, inf, 4.93480220054468,
     1.6449340668482266, 0.6449340668482266, 0.10516633568168576, 1.0000050000166665e-05,
     0.0],
    [-0.1082040516417282, nan, nan, -0.82879664423432, nan, -16.828796644234316,
     -2.404113806319188, -0.4041138063191886, -0.011049834970802069, -1.00001000005e-10,
     -0.0],
    [194.74787621918756, inf, inf, 193.40909103400242, inf, 97.40909103400242,
     6.493939402266829, 0.4939394022668293, 0.0023199013042898686, 2.0000300002e-15, 0.0],
    [nan] * 11,  # a order that is not a whole number
    [nan] * 11,  # a negative order
]


def test_polygamma_matches_tensorflow(backend):
    """Broadcasting orders against arguments; at the poles +inf for odd orders and nan for
    even ones (TF's Hurwitz zeta), nan for orders that are negative or not whole."""
    a = gf.placeholder(gf.float64, [None, 1])
    x = gf.placeholder(gf.float64, [None])
    y = gf.polygamma(a, x)
    assert y.shape.as_list() == [None, None]
    got = _run(y, {a: np.array(POLYGAMMA_A)[:, None], x: POLYGAMMA_X}, backend)
    _close(got, POLYGAMMA_64, 2e-14)
    assert np.signbit(got[2, -1]) and not np.signbit(got[3, -1])  # -0.0 and 0.0 at inf
    assert gf.math.polygamma(gf.placeholder(gf.float32, [3, 1]),
                             gf.placeholder(gf.float32, [4])).shape.as_list() == [3, 4]


# -- gradients -------------------------------------------------------------------------------

GRAD_X = [-2.5, -0.5, 0.3, 1.0, 1.5, 2.0, 7.0]
ERF_GRAD = [0.00217828423035271, 0.8787825789354448, 1.031260909618963, 0.41510749742059466,
            0.11893028922362936, 0.020666985354092053, 5.9159629580030695e-22]
ERF_GRAD2 = [0.01089142115176355, 0.8787825789354448, -0.6187565457713778,
             -0.8302149948411893, -0.3567908676708881, -0.08266794141636821,
             -8.282348141204298e-21]
# d lgamma = digamma, d digamma = trigamma = polygamma(1, .), d trigamma = polygamma(2, .)
DIGAMMA_AT = [1.1031566406452433, 0.03648997397857645, -3.502524222200133,
              -0.5772156649015323, 0.03648997397857645, 0.42278433509846747, 1.8727843350984674]
TRIGAMMA_AT = [9.539246644989124, 8.934802200544679, 12.245364546107734, 1.6449340668482266,
               0.9348022005446793, 0.6449340668482266, 0.15354517795933756]
TETRAGAMMA_AT = [-0.1082040516417282, -0.82879664423432, -75.27253658872601,
                 -2.404113806319188, -0.8287966442343201, -0.4041138063191886,
                 -0.023530472985855234]
GRADS = {
    "erf": (gf.erf, ERF_GRAD, ERF_GRAD2),
    "erfc": (gf.erfc, [-g for g in ERF_GRAD], [-g for g in ERF_GRAD2]),
    "lgamma": (gf.lgamma, DIGAMMA_AT, TRIGAMMA_AT),
    "digamma": (gf.digamma, TRIGAMMA_AT, TETRAGAMMA_AT),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_first_and_second_gradients_match_tensorflow(name, backend):
    fn, first, second = GRADS[name]
    x = gf.placeholder(gf.float64, [None])
    (g,) = gf.gradients(fn(x), [x])
    (g2,) = gf.gradients(g, [x])
    got, got2 = _run([g, g2], {x: GRAD_X}, backend)
    _close(got, first, 1e-14)
    _close(got2, second, 1e-14)


def test_gradients_at_the_poles_and_of_polygamma_match_tensorflow(backend):
    x = gf.placeholder(gf.float64, [None])
    a = gf.placeholder(gf.float64, [])
    grads = [gf.gradients(f(x), [x])[0] for f in (gf.erf, gf.lgamma, gf.digamma)]
    ga, gx = gf.gradients(gf.polygamma(a, x), [a, x])
    assert ga is None  # TF: no gradient for the order
    got = _run(grads + [gx], {x: [0.0, -1.0, -0.0], a: 1.0}, backend)
    _close(got[0], [1.1283791670955126, 0.4151074974205947, 1.1283791670955126], 1e-15)
    _close(got[1], [nan, nan, nan], 0)  # digamma's nan at the poles
    _close(got[2], [inf, inf, inf], 0)  # trigamma's +inf there
    _close(got[3], [nan, nan, nan], 0)  # polygamma(2, .): nan at the poles (even order)
    y = gf.polygamma(1.0, x)
    (g1,) = gf.gradients(y, [x])
    _close(_run(g1, {x: [-2.5, 0.3, 1.0, 7.0]}, backend),
           [-0.1082040516417282, -75.27253658872601, -2.404113806319188,
            -0.023530472985855234], 1e-14)


# -- xlogy and xdivy (TF 1.14+) ---------------------------------------------------------------

XY_X = [0.0, 0.0, 0.0, 1.0, -2.0, 3.0, 0.0, 2.0]
XY_Y = [0.0, 2.0, nan, 0.0, 3.0, -1.0, inf, inf]
XLOGY = ([0.0, 0.0, 0.0, -inf, -2.197224577336219, nan, 0.0, inf],  # value
         [0.0, 0.0, 0.0, -inf, 1.0986122886681096, nan, 0.0, inf],  # d/dx
         [0.0, 0.0, 0.0, inf, -0.6666666666666666, -3.0, 0.0, 0.0])  # d/dy
XDIVY = ([0.0, 0.0, 0.0, inf, -0.6666666666666666, -3.0, 0.0, 0.0],
         [0.0, 0.0, 0.0, inf, 0.3333333333333333, -1.0, 0.0, 0.0],
         [-0.0, -0.0, -0.0, -inf, 0.2222222222222222, -3.0, -0.0, -0.0])


@pytest.mark.parametrize("name", ["xlogy", "xdivy"])
def test_xlogy_and_xdivy_match_tensorflow(name, backend):
    """0 where x is 0, whatever y (0, nan, inf); TF's gradients, 0 there too."""
    x = gf.placeholder(gf.float64, [None])
    y = gf.placeholder(gf.float64, [None])
    z = getattr(gf.math, name)(x, y)
    got = _run([z] + gf.gradients(z, [x, y]), {x: XY_X, y: XY_Y}, backend)
    for g, want in zip(got, XLOGY if name == "xlogy" else XDIVY):
        _close(g, want, 1e-15)


def test_xlogy_broadcasts_and_sums_its_gradients_back(backend):
    x = gf.placeholder(gf.float64, [2, 3])
    y = gf.placeholder(gf.float64, [3])
    z = gf.math.xlogy(x, y)
    assert z.shape.as_list() == [2, 3]
    grads = gf.gradients(gf.reduce_sum(z * [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), [x, y])
    got = _run([z] + grads, {x: [[0.0, 1.5, 0.0], [-2.0, 0.0, 0.5]], y: [0.7, 2.0, 1.3]},
               backend)
    _close(got[0], [[0.0, 1.0397207708399179, 0.0], [0.7133498878774649, 0.0,
                                                     0.13118213223374553]], 1e-15)
    _close(got[1], [[0.0, 1.3862943611198906, 0.0], [-1.4266997757549298, 0.0,
                                                     1.5741855868049464]], 1e-15)
    _close(got[2], [-11.428571428571429, 1.5, 2.3076923076923075], 1e-15)


# -- dtypes and errors -----------------------------------------------------------------------


def test_float16_keeps_its_dtype_and_values(backend):
    if getattr(backend, "name", backend) == "array_api_strict":
        pytest.skip("array_api_strict has no float16")
    x = gf.placeholder(gf.float16, [None])
    ys = [gf.erf(x), gf.lgamma(x)]
    assert [y.dtype for y in ys] == [gf.float16, gf.float16]
    got = _run(ys, {x: np.array([0.5, 2.0, 30.0], np.float16)}, backend)
    assert [g.dtype for g in got] == [np.float16, np.float16]
    _close(got[0], [0.5205, 0.995, 1.0], 1e-3)  # TF: [0.5205 0.995 ...]
    _close(got[1], [0.5723, 0.0, 71.25], 1e-3)  # TF: [0.5723 0. 71.25]


@pytest.mark.parametrize("fn", [gf.erf, gf.erfc, gf.lgamma, gf.digamma])
def test_integer_input_is_a_type_error_naming_the_tensor(fn):
    with pytest.raises(TypeError, match="'counts'.*int32|must be floating point"):
        fn(gf.placeholder(gf.int32, [2], name="counts"))


def test_polygamma_needs_one_dtype_and_xlogy_floats():
    with pytest.raises(TypeError, match="same dtype"):
        gf.polygamma(gf.constant(1.0, gf.float32), gf.constant([1.0], gf.float64))
    with pytest.raises(TypeError, match="'n'.*int32"):
        gf.math.xlogy(gf.placeholder(gf.int32, [2], name="n"), 2)


# -- against scipy.special, where it is installed ----------------------------------------------


def _grid(rng, lo, hi, n=400):
    return np.sort(rng.uniform(lo, hi, n))


def test_against_scipy_on_dense_grids(backend):
    """Within 1e-14 of scipy (45 ulps; gradflow is within a few ulps of mpmath there),
    except scipy's erfc beyond 4, which is itself up to ~300 ulps off (mpmath), its gammaln
    next to 1 and 2, which is accurate only absolutely (4000 ulps off at 1.0001, where
    gradflow is exact: test_lgamma_matches_tensorflow), and the reflection below 0, which
    loses relative accuracy next to the zeros of lgamma and digamma (as TF's): an absolute
    bound there."""
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(7)
    both_sides = np.concatenate([_grid(rng, 0.001, 30), 10 ** _grid(rng, 1, 300),
                                 _grid(rng, -30, 0) + 1e-3])
    cases = [
        (gf.erf, special.erf, np.concatenate([_grid(rng, -6, 6), 10 ** _grid(rng, -300, 0)]),
         1e-14),
        (gf.erfc, special.erfc, _grid(rng, -6, 4), 1e-14),
        (gf.erfc, special.erfc, _grid(rng, 4, 26.5), 1e-13),  # scipy is 0 from 26.6
        (gf.lgamma, special.gammaln, both_sides, (1e-14, 4e-16)),
        (gf.digamma, special.psi, both_sides, 1e-14),
        (lambda x: gf.polygamma(1.0, x), lambda x: special.polygamma(1, x),
         np.concatenate([_grid(rng, 0.001, 30), _grid(rng, -30, 0) + 1e-3]), 1e-14),
        (lambda x: gf.polygamma(3.0, x), lambda x: special.polygamma(3, x),
         _grid(rng, 0.01, 30), 1e-14),
    ]
    x = gf.placeholder(gf.float64, [None])
    ys = [fn(x) for fn, *_ in cases]
    with gf.Session(backend=backend) as sess:
        for y, (_, ref, xs, tol) in zip(ys, cases):
            rtol, atol = tol if isinstance(tol, tuple) else (tol, 0.0)
            want = ref(xs)
            got = sess.run(y, {x: xs})
            excess = np.abs(got - want) - (2e-13 * (xs < 0) + atol + rtol * np.abs(want))
            worst = int(np.argmax(excess))
            assert excess[worst] <= 0, (f"{ref}: at x={xs[worst]!r} got {got[worst]!r}, "
                                        f"scipy {want[worst]!r}")
