"""Initializers: variance scaling (TF 1.15 semantics), orthogonal, identity and the
``tf.initializers`` names; statistics over large draws, and the same numbers on every
backend for a seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf
from gradflow import initializers as init


def _draw(backend, initializer, shape, dtype=gf.float32):
    value = initializer(shape, dtype=dtype)
    with gf.Session(backend=backend) as sess:
        return sess.run(value)


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "untruncated_normal",
                                          "uniform"])
@pytest.mark.parametrize("mode,fan", [("fan_in", 3 * 3 * 40), ("fan_out", 3 * 3 * 60),
                                      ("fan_avg", 3 * 3 * 50)])
def test_variance_scaling_statistics(distribution, mode, fan):
    initializer = gf.variance_scaling_initializer(scale=2.0, mode=mode,
                                                  distribution=distribution, seed=3)
    value = _draw("numpy", initializer, (3, 3, 40, 60))
    std = math.sqrt(2.0 / fan)
    assert abs(value.mean()) < 0.05 * std
    assert value.std() == pytest.approx(std, rel=0.02)
    if distribution == "uniform":
        assert np.abs(value).max() <= math.sqrt(3) * std * (1 + 1e-6)
    elif distribution != "untruncated_normal":  # truncated at two of the widened stddevs
        assert np.abs(value).max() <= 2 * std / 0.87962566103423978 * (1 + 1e-6)
    else:
        assert np.abs(value).max() > 2 * std / 0.87962566103423978


def test_normal_is_the_truncated_alias():
    a = _draw("numpy", gf.variance_scaling_initializer(distribution="normal", seed=7), (50, 20))
    b = _draw("numpy", gf.variance_scaling_initializer(distribution="truncated_normal",
                                                       seed=7), (50, 20))
    np.testing.assert_array_equal(a, b)


def test_named_initializers_statistics():
    shape = (400, 300)
    cases = {"he_normal": 2 / 400, "he_uniform": 2 / 400, "lecun_normal": 1 / 400,
             "lecun_uniform": 1 / 400, "glorot_normal": 2 / 700, "glorot_uniform": 2 / 700}
    for name, variance in cases.items():
        value = _draw("numpy", getattr(init, name)(seed=1), shape)
        assert value.std() == pytest.approx(math.sqrt(variance), rel=0.02), name
        assert value.dtype == np.float32


@pytest.mark.parametrize("shape,gain", [((30, 20), 1.0), ((20, 30), 2.0),
                                        ((3, 3, 4, 16), 0.5)])
def test_orthogonal(backend, shape, gain):
    value = _draw(backend, gf.orthogonal_initializer(gain=gain, seed=5), shape,
                  dtype=gf.float64)
    assert value.shape == shape
    flat = value.reshape(-1, shape[-1])
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(len(gram)), atol=1e-10)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="at least two-dimensional"):
        gf.orthogonal_initializer()((5,))
    with pytest.raises(TypeError, match="non-floating"):
        gf.orthogonal_initializer(dtype=gf.int32)


def test_same_numbers_on_every_backend(backend):
    gf.set_random_seed(11)
    variables = [
        gf.get_variable("vs", (4, 5), initializer=gf.variance_scaling_initializer(seed=1)),
        gf.get_variable("he", (4, 5), initializer=init.he_uniform()),
        gf.get_variable("orth", (6, 4), initializer=init.orthogonal()),
        gf.get_variable("lecun", (2, 2, 3, 2), initializer=init.lecun_normal(seed=2)),
        gf.get_variable("glorot", (3, 2), initializer=init.glorot_normal()),
        gf.get_variable("untruncated", (5,), initializer=init.variance_scaling(
            distribution="untruncated_normal")),
    ]
    runs = []
    for name in ("numpy", backend):
        with gf.Session(backend=name) as sess:
            sess.run(gf.global_variables_initializer())
            runs.append(sess.run(variables))
    for a, b, v in zip(*runs, variables):
        np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=v.name)
    with gf.Session(backend=backend) as sess:  # the seeds make them repeatable
        sess.run(gf.global_variables_initializer())
        again = sess.run(variables)
    for a, b in zip(runs[1], again):
        np.testing.assert_array_equal(a, b)


def test_namespace_and_simple_initializers(backend):
    assert init.zeros is gf.zeros_initializer and init.ones is gf.ones_initializer
    assert init.constant is gf.constant_initializer
    assert init.random_normal is gf.random_normal_initializer
    assert init.random_uniform is gf.random_uniform_initializer
    assert init.truncated_normal is gf.truncated_normal_initializer
    assert init.variance_scaling is gf.variance_scaling_initializer
    assert gf.initializers.glorot_uniform is gf.glorot_uniform_initializer
    eye = gf.get_variable("eye", (2, 3), initializer=init.identity(gain=3.0))
    const = gf.get_variable("c", (2,), initializer=init.constant(1.5))
    local = gf.get_local_variable("l", (2,), initializer=init.ones())
    with gf.Session(backend=backend) as sess:
        sess.run([init.global_variables(), init.local_variables()])
        values = sess.run([eye, const, local])
    np.testing.assert_array_equal(values[0], 3.0 * np.eye(2, 3))
    np.testing.assert_array_equal(values[1], [1.5, 1.5])
    np.testing.assert_array_equal(values[2], [1.0, 1.0])


def test_variance_scaling_errors():
    with pytest.raises(ValueError, match="scale must be positive"):
        gf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="invalid mode"):
        gf.variance_scaling_initializer(mode="FAN_IN")
    with pytest.raises(ValueError, match="invalid distribution"):
        gf.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(TypeError, match="non-floating"):
        gf.variance_scaling_initializer()((2, 2), dtype=gf.int32)
