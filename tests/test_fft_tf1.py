"""TensorFlow 2.21's values for complex numbers and the Fourier transforms, as literals.

Made once with TensorFlow 2.21 (CPU, eager, ``tf.GradientTape``) by computing each case
below in TensorFlow and printing the results rounded to 12 decimals; TensorFlow is not
needed to run this file. TF's convention for complex gradients: that of a real loss with
respect to ``z`` is ``dL/d(re z) + i dL/d(im z)``, so the gradients of the real parts
below are the real parts of what flows back.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as tf

REF = {'CAST': [[0.30000001192092896, -0.4000000059604645, 1.0, 0.20000000298023224],
          [1.5, 0.10000000149011612, -0.6000000238418579, 0.8999999761581421]],
 'CPLX_GA': [[1.569299092225, 1.508503565533, -1.357451814055, 1.532909997527],
             [-0.816754446797, -0.876983071071, 0.242075517382, -1.359934575768]],
 'CPLX_GB': [[-0.560524340363, -0.520918449433, 2.027235544217, -0.201693343224],
             [3.338918148932, 0.825401049049, -1.686519961827, 1.884364481494]],
 'CPLX_LOSS': -4.946234802708785,
 'FFT2_GA': [[-2.133333333333, 0.0, -0.533333333333, -1.066666666667],
             [-4.266666666667, 0.0, 0.0, -0.0]],
 'FFT2_GB': [[2.133333333333, -1.066666666667, -0.533333333333, 0.0],
             [-4.266666666667, -0.0, 0.0, 0.0]],
 'FFT2_IM': [[0.8, 1.3, 0.2, -1.5], [2.0, 1.9, -1.4, 2.3]],
 'FFT2_RE': [[3.0, 2.3, 1.4, 0.5], [-0.8, -4.9, 1.6, -0.7]],
 'IRFFT': [[0.2375, -0.170342712475, -0.0625, -0.108210678119, 0.3375, 0.395342712475, -0.3625,
            0.033210678119],
           [0.2875, 0.01982233047, -0.0375, 0.602665042945, -0.2125, 0.05517766953, 0.7125,
            0.072334957055]],
 'IRFFT7': [[0.271428571429, -0.20374444069, -0.06769944347, -0.003398674309, 0.625897624154,
             -0.239307718786, -0.083175918328],
            [0.328571428571, -0.081550762234, 0.239946999115, 0.415287568219, -0.366407344486,
             0.805464457467, 0.158687653347]],
 'IRFFT7_GA': [[-0.538461538462, -0.153846153846, -0.153846153846, -0.153846153846],
               [0.538461538462, -0.153846153846, -0.153846153846, -0.153846153846]],
 'IRFFT7_GB': [[0.0, 0.319464830242, 0.122688213674, 0.035114380675],
               [0.0, 0.319464830242, 0.122688213674, 0.035114380675]],
 'IRFFT_GA': [[-0.533333333333, -0.133333333333, -0.133333333333, -0.133333333333],
              [0.533333333333, -0.133333333333, -0.133333333333, -0.133333333333]],
 'IRFFT_GB': [[0.0, 0.32189514165, 0.133333333333, 0.055228474983],
              [0.0, 0.32189514165, 0.133333333333, 0.055228474983]],
 'ISHIFT': [[2, 3, 0, 1], [6, 7, 4, 5], [10, 11, 8, 9]],
 'ISTFT': [0.0, 0.02128126285970211, 0.5927248597145081, 1.1299465894699097, 0.7349880933761597,
           0.14921671152114868, -0.27157580852508545, -0.2824525833129883, 0.1687333583831787,
           0.916813850402832, 1.6569863557815552, 2.088167905807495, 2.054598808288574,
           1.6190980672836304, 1.0335206985473633, 0.6203042268753052, 0.6208222508430481,
           1.0509264469146729, 0.9168115258216858, 0.07347795367240906],
 'ISTFT2': [0.0, 0.04651360586285591, 0.6668155193328857, 1.1632094383239746,
            0.4593675434589386, 0.08393444120883942, -0.27157577872276306, -0.17653286457061768,
            0.09491246938705444, 0.916813850402832, 1.035616397857666, 1.1745946407318115,
            2.054598808288574, 1.0119363069534302, 0.5813555121421814, 0.6203042268753052,
            0.38801389932632446, 0.6085479259490967, 1.8336232900619507, 1.6059808731079102,
            -4.4699999257602485e-09, -5.960000049043401e-09, 0.0, 0.0],
 'ISWF': [0.0, 0.140423397875, 0.510958323589, 0.872260419103, 0.958870939, 0.872260419103,
          0.510958323589, 0.140423397875],
 'RFFT8_GRAD': [[11.2, -4.829576720926, 15.466666666667, -0.296243387593, 16.0],
                [-0.6, 3.395262145876, -3.133333333333, 6.061928812542, -10.2]],
 'RFFT_GRAD': [10.2, -10.4, 19.2, -1.4, 13.8, -7.4],
 'RFFT_IM': [0.0, -0.346410161514, 1.212435565298, 0.0],
 'RFFT_LOSS': 37.96,
 'RFFT_RE': [2.0, -2.3, 0.2, 5.2],
 'SHIFT': [[10, 11, 8, 9], [2, 3, 0, 1], [6, 7, 4, 5]],
 'STFT2_ABS': [[2.7895922660827637, 1.5200601816177368, 0.05952334403991699],
               [0.18775559961795807, 0.6135804653167725, 0.13485103845596313],
               [2.2154905796051025, 1.780048131942749, 0.6261850595474243],
               [5.249295234680176, 2.6426727771759033, 0.19875749945640564],
               [2.265836238861084, 0.8606114983558655, 0.3286266624927521],
               [4.727402687072754, 2.7322819232940674, 0.8700944185256958],
               [0.6423924565315247, 0.6423924565315247, 0.6423924565315247]],
 'STFT_ABS': [[2.379774808883667, 2.069204092025757, 0.767296552658081, 0.013811685144901276,
               0.004075407981872559],
              [1.7305570840835571, 1.9157873392105103, 0.9064663052558899, 0.04338381811976433,
               0.007679581642150879],
              [6.789308071136475, 4.18002986907959, 0.794094443321228, 0.023851225152611732,
               0.010397194884717464],
              [4.120700836181641, 1.4417434930801392, 0.8517457246780396, 0.03567253798246384,
               0.011912107467651367]],
 'STFT_GRAD': [0.0, -0.284413605928421, 1.5376372337341309, 1.6103471517562866,
               2.4029593467712402, 0.49620410799980164, -0.5612323880195618, 0.8207888603210449,
               -0.006495058536529541, 2.056506395339966, 1.8238303661346436, 1.9300481081008911,
               2.8858256340026855, 1.010966420173645, 0.40667444467544556, 1.4000471830368042,
               0.6512788534164429, 1.945474624633789, 1.0696914196014404, 0.2297864407300949]}

TOL = dict(rtol=1e-9, atol=1e-9)
TOL32 = dict(rtol=2e-5, atol=2e-5)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


A = [[0.3, -0.4, 1.0, 0.2], [1.5, 0.1, -0.6, 0.9]]
B = [[0.7, 0.2, -0.3, 0.8], [-0.5, 0.4, 0.6, -1.1]]
W = np.linspace(-1, 1, 16).reshape(2, 8)
SIGNAL = (np.sin(np.arange(20) * 0.7) + 0.1 * np.arange(20)).astype(np.float32)


def _parts():
    return tf.constant(A, tf.float64), tf.constant(B, tf.float64)


def test_rfft_power_and_its_gradient():
    x = tf.constant([0.5, -1.2, 2.0, 0.3, 1.1, -0.7], tf.float64)
    s = tf.signal.rfft(x)
    loss = tf.reduce_sum(tf.abs(s) ** 2)
    re, im, value, grad = _run([tf.real(s), tf.imag(s), loss, tf.gradients(loss, x)[0]])
    np.testing.assert_allclose(re, REF["RFFT_RE"], **TOL)
    np.testing.assert_allclose(im, REF["RFFT_IM"], **TOL)
    np.testing.assert_allclose(value, REF["RFFT_LOSS"], **TOL)
    np.testing.assert_allclose(grad, REF["RFFT_GRAD"], **TOL)


@pytest.mark.parametrize("length, key", [(8, "IRFFT"), (7, "IRFFT7")])
def test_irfft_and_its_gradient(length, key):
    a, b = _parts()
    w = tf.constant(np.linspace(-1, 1, 2 * length).reshape(2, length))
    y = tf.signal.irfft(tf.complex(a, b), fft_length=[length])
    loss = tf.reduce_sum(y * w)
    value, ga, gb = _run([y, *tf.gradients(loss, [a, b])])
    np.testing.assert_allclose(value, REF[key], **TOL)
    np.testing.assert_allclose(ga, REF[key + "_GA"], **TOL)
    np.testing.assert_allclose(gb, REF[key + "_GB"], **TOL)


def test_fft2d_and_its_gradient():
    a, b = _parts()
    w = tf.constant(W)
    z = tf.signal.fft2d(tf.complex(a, b))
    loss = tf.reduce_sum(tf.real(z) * w[:, :4]) + tf.reduce_sum(tf.imag(z) * w[:, 4:])
    re, im, ga, gb = _run([tf.real(z), tf.imag(z), *tf.gradients(loss, [a, b])])
    np.testing.assert_allclose(re, REF["FFT2_RE"], **TOL)
    np.testing.assert_allclose(im, REF["FFT2_IM"], **TOL)
    np.testing.assert_allclose(ga, REF["FFT2_GA"], **TOL)
    np.testing.assert_allclose(gb, REF["FFT2_GB"], **TOL)


def test_abs_angle_conj_multiply_gradients():
    a, b = _parts()
    w = tf.constant(W)
    z = tf.complex(a, b)
    loss = tf.reduce_sum(tf.abs(z) * w[:, :4]) + tf.reduce_sum(tf.math.angle(z) * w[:, 4:]) \
        + tf.reduce_sum(tf.real(z * tf.conj(tf.complex(b, a))))
    value, ga, gb = _run([loss, *tf.gradients(loss, [a, b])])
    np.testing.assert_allclose(value, REF["CPLX_LOSS"], **TOL)
    np.testing.assert_allclose(ga, REF["CPLX_GA"], **TOL)
    np.testing.assert_allclose(gb, REF["CPLX_GB"], **TOL)


def test_rfft_padded_gradient():
    x = tf.constant([[0.5, -1.2, 2.0, 0.3, 1.1], [0.2, 0.4, -0.3, 0.9, -1.0]], tf.float64)
    s = tf.signal.rfft(x, fft_length=[8])
    loss = tf.reduce_sum(tf.imag(s) * tf.constant(W[:, :5])) + tf.reduce_sum(tf.real(s) ** 2)
    np.testing.assert_allclose(_run(tf.gradients(loss, x)[0]), REF["RFFT8_GRAD"], **TOL)


def test_stft_inverse_stft():
    sig = tf.constant(SIGNAL)
    st = tf.signal.stft(sig, 8, 4)
    inv = tf.signal.inverse_stft(st, 8, 4, window_fn=tf.signal.inverse_stft_window_fn(4))
    st2 = tf.signal.stft(sig, 6, 3, fft_length=5, pad_end=True)
    inv2 = tf.signal.inverse_stft(st2, 6, 3, fft_length=5)
    grad = tf.gradients(tf.reduce_sum(tf.abs(st)), sig)[0]
    found = _run([tf.abs(st), inv, tf.abs(st2), inv2, grad])
    for value, key in zip(found, ["STFT_ABS", "ISTFT", "STFT2_ABS", "ISTFT2", "STFT_GRAD"]):
        np.testing.assert_allclose(value, REF[key], **TOL32)
    assert st.dtype == tf.complex64


def test_shifts_cast_and_window():
    grid = tf.reshape(tf.range(12), [3, 4])
    shift, ishift, cast, window = _run([
        tf.signal.fftshift(grid), tf.signal.ifftshift(grid, axes=1),
        tf.cast(tf.complex(*_parts()), tf.float32),
        tf.signal.inverse_stft_window_fn(3)(8, tf.float64)])
    np.testing.assert_array_equal(shift, REF["SHIFT"])
    np.testing.assert_array_equal(ishift, REF["ISHIFT"])
    np.testing.assert_allclose(cast, REF["CAST"], **TOL32)
    assert cast.dtype == np.float32
    np.testing.assert_allclose(window, REF["ISWF"], **TOL)
