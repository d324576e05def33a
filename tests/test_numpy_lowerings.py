"""The NumPy backend's lowerings of matmul and the LSTM ops against the Array API impls."""

import array_api_compat.numpy as xp
import numpy as np
import pytest

from gradflow.backends import numpy_matmul, numpy_rnn
from gradflow.ops import rnn_ops
from gradflow.ops.array_ops import _matmul_impl

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("shapes", [((32, 512), (192, 512)), ((300, 16), (8, 16)),
                                    ((2, 5, 6), (2, 7, 6))])
def test_matmul_lowering(ta, tb, shapes):
    sa, sb = shapes
    a = _rand(*(sa[:-2] + sa[-2:][::-1] if ta else sa))
    b = _rand(*(sb if tb else sb[:-2] + sb[-2:][::-1]))
    want = _matmul_impl(xp, a, b, ta, tb)
    got = numpy_matmul.lower_matmul(xp, ta, tb)(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("batch_c", [4, 1])
def test_lstm_lowerings(batch_c):
    units = 5
    z, g4 = _rand(4, 4 * units), _rand(4, 4 * units)
    a = rnn_ops._lstm_gates_impl(xp, z, 1.0)
    np.testing.assert_allclose(numpy_rnn.lstm_gates(xp, 1.0)(z), a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(numpy_rnn.lstm_gates_grad(xp)(g4, a),
                               rnn_ops._lstm_gates_grad_impl(xp, g4, a), rtol=1e-6, atol=1e-6)
    g, c = _rand(4, units), _rand(batch_c, units)
    for wrt in ("gates", "state"):
        for lower, impl in ((numpy_rnn.lstm_c_grad, rnn_ops._lstm_c_grad_impl),
                            (numpy_rnn.lstm_h_grad, rnn_ops._lstm_h_grad_impl)):
            got, want = lower(xp, wrt)(g, a, c), impl(xp, g, a, c, wrt)
            assert got.shape == want.shape == ((4, 4 * units) if wrt == "gates" else c.shape)
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
