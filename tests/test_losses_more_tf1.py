"""tf.losses.mean_pairwise_squared_error against TensorFlow 2.21.

The literals are TensorFlow 2.21's values (tf.compat.v1, graph mode), made once with
/tmp/bench/bin/python running the same calls on the same inputs, and the gradient of the
loss with weights W2 with respect to the predictions from tf.gradients.
"""

import numpy as np
import pytest

import gradflow as tf

L = np.array([[1., 2., 3.5], [0.5, -1., 2.], [3., 3., 0.]], np.float32)
P = np.array([[1.5, 1., 3.], [0., -1.5, 4.], [2., 3.25, 1.]], np.float32)
W1 = np.array([[1.], [0.5], [2.]], np.float32)
W2 = np.array([[1., 0., 1.], [1., 1., 1.], [0., 0., 2.]], np.float32)
TF_LOSSES = [7.375, 14.75, 7.333333492279053, 16.5, 0.0, 7.375]
TF_GRAD_W2 = [[8.0, -4.0, 0.0], [-5.0, -5.0, 10.0], [0.0, 0.0, 0.0]]


def test_mean_pairwise_squared_error_matches_tensorflow():
    with tf.Graph().as_default(), tf.Session() as s:
        lab, p = tf.constant(L), tf.constant(P)
        mpse = tf.losses.mean_pairwise_squared_error
        outs = [mpse(lab, p), mpse(lab, p, 2.0), mpse(lab, p, W1), mpse(lab, p, W2),
                mpse(lab, p, 0.0), mpse(tf.reshape(lab, (3, 3, 1)), tf.reshape(p, (3, 3, 1)))]
        grad = tf.gradients(outs[3], p)[0]
        got, g = s.run([outs, grad])
        assert np.allclose(got, TF_LOSSES, rtol=1e-6)
        assert np.allclose(g, TF_GRAD_W2, rtol=1e-6)
        assert len(tf.losses.get_losses()) == 6


def test_mean_pairwise_squared_error_rejects_weights_that_do_not_broadcast():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="weights"):
            tf.losses.mean_pairwise_squared_error(tf.constant(L), tf.constant(P),
                                                  tf.constant([1.0, 2.0]))
