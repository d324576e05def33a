"""TF1's ``tf.signal`` for real signals (``frame``, ``overlap_and_add``, ``hann_window``,
``hamming_window``, ``linear_to_mel_weight_matrix``, ``dct``/``idct`` of types 2 and 3,
``mfccs_from_log_mel_spectrograms``) against TensorFlow 2.21's values.

``EXPECTED`` holds TensorFlow 2.21's results (CPU, ``tf.compat.v1`` in graph mode,
``Session.run``) of the calls in ``_cases`` on the same inputs, made once with
TensorFlow installed (each array flattened, written with the fewest digits that give
its bits back) and pasted here; TensorFlow is not needed to run these tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

SIG = np.sin(np.arange(2 * 11) * 0.7).astype(np.float32).reshape(2, 11) + \
    (np.arange(22) % 3).astype(np.float32).reshape(2, 11) * 0.1
LOGMEL = np.cos(np.arange(3 * 6) * 0.9).astype(np.float32).reshape(3, 6)


def _cases():
    signal = gf.signal
    x = gf.constant(SIG)
    m = gf.constant(LOGMEL)
    return {
        "hann": signal.hann_window(8), "hann_sym": signal.hann_window(7, periodic=False),
        "hamming": signal.hamming_window(9),
        "hamming64": signal.hamming_window(6, dtype=gf.float64),
        "hann1": signal.hann_window(1),
        "frame": signal.frame(x, 4, 3),
        "frame_pad": signal.frame(x, 4, 3, pad_end=True, pad_value=-1.0),
        "frame_axis0": signal.frame(x, 2, 1, axis=0),
        "ola": signal.overlap_and_add(signal.frame(x, 4, 2), 2),
        "mel": signal.linear_to_mel_weight_matrix(5, 9, 8000, 100.0, 3500.0),
        "dct2": signal.dct(m), "dct2o": signal.dct(m, norm="ortho"),
        "dct3": signal.dct(m, type=3), "dct3o": signal.dct(m, type=3, norm="ortho"),
        "dct_n": signal.dct(m, n=4),
        "idct2": signal.idct(m), "idct3o": signal.idct(m, type=3, norm="ortho"),
        "mfcc": signal.mfccs_from_log_mel_spectrograms(m),
    }


EXPECTED = {
    'hann': ('float32', (8,), [
        0, 0.14644665, 0.5, 0.85355335, 1, 0.85355335, 0.5, 0.14644647
    ]),
    'hann_sym': ('float32', (7,), [
        0, 0.25, 0.75, 1, 0.74999994, 0.24999982, 0
    ]),
    'hamming': ('float32', (9,), [
        0.08000001, 0.21473092, 0.54, 0.8652691, 1, 0.8652691, 0.54, 0.21473077, 0.08000001
    ]),
    'hamming64': ('float64', (6,), [
        0.08000000000000002, 0.30999999999999994, 0.7699999999999999, 1, 0.7700000000000002,
        0.30999999999999994
    ]),
    'hann1': ('float32', (1,), [
        1
    ]),
    'frame': ('float32', (2, 3, 4), [
        0, 0.7442177, 1.1854497, 0.86320937, 0.86320937, 0.43498814, -0.15078323, -0.8715758,
        -0.8715758, -0.8824526, -0.43126667, 0.0168139, 1.1881683, 0.8545989, 0.41909835,
        -0.16647913, -0.16647913, -0.8796958, -0.8791777, -0.41813713, -0.41813713, 0.033623047,
        0.7695698, 1.1906074
    ]),
    'frame_pad': ('float32', (2, 4, 4), [
        0, 0.7442177, 1.1854497, 0.86320937, 0.86320937, 0.43498814, -0.15078323, -0.8715758,
        -0.8715758, -0.8824526, -0.43126667, 0.0168139, 0.0168139, 0.7569866, -1, -1, 1.1881683,
        0.8545989, 0.41909835, -0.16647913, -0.16647913, -0.8796958, -0.8791777, -0.41813713,
        -0.41813713, 0.033623047, 0.7695698, 1.1906074, 1.1906074, 0.8457468, -1, -1
    ]),
    'frame_axis0': ('float32', (1, 2, 11), [
        0, 0.7442177, 1.1854497, 0.86320937, 0.43498814, -0.15078323, -0.8715758, -0.8824526,
        -0.43126667, 0.0168139, 0.7569866, 1.1881683, 0.8545989, 0.41909835, -0.16647913,
        -0.8796958, -0.8791777, -0.41813713, 0.033623047, 0.7695698, 1.1906074, 0.8457468
    ]),
    'ola': ('float32', (2, 10), [
        0, 0.7442177, 2.3708994, 1.7264187, 0.8699763, -0.30156645, -1.7431515, -1.7649052,
        -0.43126667, 0.0168139, 1.1881683, 0.8545989, 0.8381967, -0.33295825, -1.7593915,
        -1.7583554, -0.83627427, 0.067246094, 0.7695698, 1.1906074
    ]),
    'mel': ('float32', (9, 5), [
        0, 0, 0, 0, 0, 0.5328974, 0.46710262, 0, 0, 0, 0, 0.27261218, 0.7273878, 0, 0, 0, 0,
        0.33970392, 0.6602961, 0, 0, 0, 0, 0.59869194, 0.40130806, 0, 0, 0, 0, 0.9839432, 0, 0,
        0, 0, 0.45862818, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    ]),
    'dct2': ('float32', (3, 6), [
        -1.234437, 4.8367486, 3.3263664, -1.3922123, 0.2082271, -0.21293056, 0.39807442,
        6.087438, -1.0726683, -1.752211, -0.067148, -0.2679904, 1.739747, 2.8905582, -4.6879964,
        -0.8320193, -0.29346353, -0.12725237
    ]),
    'dct2o': ('float32', (3, 6), [
        -0.2519784, 1.396249, 0.96023923, -0.40189704, 0.060109984, -0.061467756, 0.0812566,
        1.757292, -0.30965266, -0.50581974, -0.019383958, -0.077362165, 0.35512435, 0.8344323,
        -1.353308, -0.2401833, -0.08471562, -0.036734596
    ]),
    'dct3': ('float32', (3, 6), [
        -0.47709244, 5.2492676, 1.6898607, -0.6963266, 0.33776635, -0.103475414, 1.9041342,
        5.4728966, -2.1859307, -0.47433564, -0.5589899, -0.34961772, 2.8941734, 1.6979494,
        -4.464649, 0.0942119, -1.0473404, -0.34032458
    ]),
    'dct3o': ('float32', (3, 6), [
        -0.018151622, 1.6349062, 0.607394, -0.08143907, 0.2170779, 0.08970241, 0.62556845,
        1.6557815, -0.55513144, -0.061036687, -0.085474275, -0.025033792, 0.8122393, 0.46691924,
        -1.3120699, 0.003959934, -0.32557777, -0.12147995
    ]),
    'dct_n': ('float32', (3, 4), [
        0.9806715, 4.167919, -0.42211485, -0.11108647, 3.9987173, 1.9224168, -1.7211844,
        -0.051237762, 4.0952435, -1.7276301, -1.7627324, 0.04604605
    ]),
    'idct2': ('float32', (3, 6), [
        -0.47709244, 5.2492676, 1.6898607, -0.6963266, 0.33776635, -0.103475414, 1.9041342,
        5.4728966, -2.1859307, -0.47433564, -0.5589899, -0.34961772, 2.8941734, 1.6979494,
        -4.464649, 0.0942119, -1.0473404, -0.34032458
    ]),
    'idct3o': ('float32', (3, 6), [
        -0.2519784, 1.396249, 0.96023923, -0.40189704, 0.060109984, -0.061467756, 0.0812566,
        1.757292, -0.30965266, -0.50581974, -0.019383958, -0.077362165, 0.35512435, 0.8344323,
        -1.353308, -0.2401833, -0.08471562, -0.036734596
    ]),
    'mfcc': ('float32', (3, 6), [
        -0.35635126, 1.396249, 0.96023923, -0.40189704, 0.060109984, -0.061467756, 0.11491419,
        1.757292, -0.30965266, -0.50581974, -0.019383958, -0.077362165, 0.5022217, 0.8344323,
        -1.353308, -0.2401833, -0.08471562, -0.036734596
    ]),
}


def test_signal_functions_give_tensorflows_values(backend):
    graph = gf.Graph()
    with graph.as_default():
        cases = _cases()
    with gf.Session(graph=graph, backend=backend) as sess:
        got = sess.run(cases)
    assert sorted(got) == sorted(EXPECTED)
    for key, (dtype, shape, flat) in EXPECTED.items():
        value = got[key]
        assert value.dtype == np.dtype(dtype) and value.shape == shape, key
        expected = np.asarray(flat, dtype=dtype).reshape(shape)
        np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-6, err_msg=key)


def test_mfccs_of_frames_are_differentiable_in_the_signal():
    """A float64 finite-difference check of frame -> window -> dct -> overlap_and_add."""
    rng = np.random.default_rng(0)
    signal = rng.normal(size=(2, 12))
    weights = rng.normal(size=(2, 12))
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float64, [2, 12])
        frames = gf.signal.frame(x, 4, 2) * gf.signal.hann_window(4, dtype=gf.float64)
        back = gf.signal.overlap_and_add(gf.signal.mfccs_from_log_mel_spectrograms(frames), 2)
        loss = gf.reduce_sum(back * weights)
        grad, = gf.gradients(loss, [x])
        with gf.Session() as sess:
            analytic = sess.run(grad, {x: signal})
            numeric = np.zeros_like(signal)
            for index in np.ndindex(*signal.shape):
                step = np.zeros_like(signal)
                step[index] = 1e-6
                numeric[index] = (sess.run(loss, {x: signal + step})
                                  - sess.run(loss, {x: signal - step})) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


def test_bad_signal_arguments_fail_when_the_graph_is_built():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, [2, None], name="audio")
        with pytest.raises(ValueError, match="length of 'audio' along axis 1 must be known"):
            gf.signal.frame(x, 4, 2)
        with pytest.raises(ValueError, match="frame_length and frame_step must be positive"):
            gf.signal.frame(gf.constant(SIG), 0, 2)
        with pytest.raises(NotImplementedError, match="types 2 and 3"):
            gf.signal.dct(gf.constant(LOGMEL), type=1)
        with pytest.raises(ValueError, match="lower_edge_hertz < upper_edge_hertz"):
            gf.signal.linear_to_mel_weight_matrix(5, 9, 8000, 3000.0, 100.0)
        with pytest.raises(TypeError, match="dtype must be floating"):
            gf.signal.hann_window(4, dtype=gf.int32)
