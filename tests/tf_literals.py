"""Checking a result against TensorFlow's values written in as literals (the
``tests/test_*_tf1.py`` files of generated tables): the whole array where it is small
(``exact`` for integers and strings, ``values`` for floats), else its sum, an
index-weighted sum and its first 12 values."""

from __future__ import annotations

import numpy as np

import gradflow as gf


def checksum(v):
    """``(sum, index-weighted sum)`` of ``v`` in float64 (weights 1..7, repeating)."""
    flat = np.asarray(v, np.float64).ravel()
    return float(flat.sum()), float((flat * (1 + np.arange(flat.size) % 7)).sum())


def check(got, want, key, rtol, atol):
    """Assert that the array ``got`` is TensorFlow's ``want`` (a table entry)."""
    assert list(got.shape) == want["shape"], key
    assert str(got.dtype) == want["dtype"], key
    if "exact" in want:
        assert got.ravel().tolist() == want["exact"], key
    elif "values" in want:
        np.testing.assert_allclose(got.astype(np.float64).ravel(), want["values"],
                                   rtol=rtol, atol=atol, err_msg=key)
    else:
        total, weighted = checksum(got)
        scale = max(1.0, float(np.abs(got).sum()))
        assert abs(total - want["sum"]) <= rtol * 10 * scale, key
        assert abs(weighted - want["weighted"]) <= rtol * 70 * scale, key
        np.testing.assert_allclose(got.astype(np.float64).ravel()[:12], want["first"],
                                   rtol=rtol, atol=atol, err_msg=key)


def check_table(build, expected, key, backend, cache, rtol, atol):
    """Check the entry ``key`` of the table ``expected`` against the values ``build(gf)``
    gives on ``backend`` (``{name: tensor}``), the graph run once per backend (``cache``:
    a module-scoped dict, by the backend's name: the fixture makes a new array_api_strict
    backend object for every test)."""
    name = getattr(backend, "name", backend)
    if name not in cache:
        with gf.Session(backend=backend) as sess:
            cache[name] = {k: np.asarray(v) for k, v in sess.run(build(gf)).items()}
    check(cache[name][key], expected[key], key, rtol, atol)
