"""``x[...]`` and ``strided_slice`` with scalar integer tensors among the bounds and
indices (a fed or dequeued position: the PTB tutorial's reader slices
``data[:, i * n:(i + 1) * n]``): NumPy's values for every key form, float64 gradients
against central differences, on every CPU backend, with known and unknown static
shapes."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

X = np.arange(4 * 6 * 3, dtype=np.float64).reshape(4, 6, 3) / 7


def _keys(i):
    """(gradflow key with the tensor ``i``, NumPy key with its value 2)."""
    return [
        ((slice(None), slice(i, i + 3)), (slice(None), slice(2, 5))),
        ((slice(None), slice(i * 2, None, 2)), (slice(None), slice(4, None, 2))),
        ((Ellipsis, slice(i - 3, i + 100)), (Ellipsis, slice(-1, 102))),
        ((i, slice(None), None, 1), (2, slice(None), None, 1)),
        ((slice(-i, None), -i), (slice(-2, None), -2)),
        ((slice(i + 10, None),), (slice(12, None),)),  # clamped: empty
    ]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("known", [True, False], ids=["known-shape", "unknown-shape"])
def test_tensor_bounds_give_numpys_values_and_gradients(backend, case, known):
    x = gf.placeholder(gf.float64, X.shape if known else None)
    i = gf.placeholder(gf.int32, ())
    if not known:
        x = gf.reshape(x, [4, 6, 3])  # a known rank, unknown sizes reach the slicing
        x = gf.placeholder_with_default(x, [None, None, None])
    ours, theirs = _keys(i)[case]
    y = x[ours]
    weights = np.random.default_rng(case).standard_normal(X[theirs].shape)
    loss = gf.reduce_sum(y * weights)
    grad = gf.gradients(loss, x)[0]
    with gf.Session(backend=backend) as sess:
        value, g = sess.run([y, grad], {x: X, i: 2})
        np.testing.assert_array_equal(value, X[theirs])
        numeric = np.zeros_like(X)
        for idx in np.ndindex(X.shape):
            moved = [X.copy(), X.copy()]
            moved[0][idx] += 1e-6
            moved[1][idx] -= 1e-6
            up, down = (float(sess.run(loss, {x: m, i: 2})) for m in moved)
            numeric[idx] = (up - down) / 2e-6
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_strided_slice_takes_tensor_bounds_and_its_masks():
    data = np.arange(40, dtype=np.int32).reshape(4, 10)
    i = gf.placeholder(gf.int32, ())
    d = gf.constant(data)
    window = gf.strided_slice(d, [0, i * 3], [4, (i + 1) * 3])
    shifted = gf.strided_slice(d, gf.stack([0, i * 3 + 1]), gf.stack([4, (i + 1) * 3 + 1]))
    row = gf.strided_slice(d, [i, 0], [i + 1, 5], shrink_axis_mask=1)
    tail = gf.strided_slice(d, [0, i], [0, 0], begin_mask=1, end_mask=3)
    with gf.Session() as sess:
        a, b, c, t = sess.run([window, shifted, row, tail], {i: 1})
    np.testing.assert_array_equal(a, data[:, 3:6])
    np.testing.assert_array_equal(b, data[:, 4:7])
    np.testing.assert_array_equal(c, data[1, 0:5])
    np.testing.assert_array_equal(t, data[:, 1:])


def test_tensor_bounds_that_cannot_work_say_why():
    x = gf.placeholder(gf.float32, (4, 6))
    i = gf.placeholder(gf.int32, ())
    with pytest.raises(ValueError, match="a slice's step must be a positive int, got -1"):
        x[:, i::-1]
    with pytest.raises(ValueError, match="slicing with tensor bounds needs a known rank"):
        gf.placeholder(gf.float32, None)[i:]
    with pytest.raises(IndexError, match="too many indices \\(3\\) for rank 2"):
        x[i, i, i]
    constant = gf.constant(2)
    assert x[:, constant:].op.type == "getitem"  # a constant bound stays a view
