"""``tf.nn.ctc_beam_search_decoder`` (and ``_v2``), ``ctc_loss_v2`` and
``ctc_unique_labels`` against TensorFlow 2.21's values: the literals below come from
``tensorflow.compat.v1`` in graph mode (``/tmp/bench/bin/python``), on the logits
``_logits()`` makes (NumPy's legacy ``RandomState(0)``: ``randn(6, 3, 4) * 2`` as
float32, then ``randn(8, 2, 5) * 3``), the same calls as here.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def _logits():
    rng = np.random.RandomState(0)
    x = rng.randn(6, 3, 4).astype(np.float32) * 2
    y = (rng.randn(8, 2, 5) * 3).astype(np.float32)
    return x, y


def _sparse(v):
    return v.indices.tolist(), v.values.tolist(), v.dense_shape.tolist()


_SEQ = [6, 4, 2]
# TensorFlow 2.21: ctc_beam_search_decoder(x, _SEQ, beam_width=5, top_paths=3, merge_repeated)
_TF_LOGP = [[-1.7963567, -2.416115, -2.5515115], [-0.8981246, -1.0756394, -2.6528568],
            [-0.672106, -1.0430592, -2.8324246]]
_TF_PATHS = {
    True: [([[0, 0], [0, 1], [1, 0], [2, 0]], [0, 1, 0, 2], [3, 2]),
           ([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0]], [0, 1, 0, 1, 1], [3, 2]),
           ([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1]], [0, 1, 0, 2, 0, 1, 2],
            [3, 3])],
    False: [([[0, 0], [0, 1], [1, 0], [2, 0]], [0, 1, 0, 2], [3, 2]),
            ([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0]], [0, 1, 1, 0, 1, 1], [3, 3]),
            ([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1]],
             [0, 1, 0, 2, 0, 1, 2], [3, 3])],
}
# ctc_beam_search_decoder_v2(x, _SEQ, beam_width=2, top_paths=2)
_TF_V2_LOGP = [[-2.0636845, -2.6819925], [-0.9155923, -1.1284928], [-0.7450746, -1.0430592]]
_TF_V2_PATHS = _TF_PATHS[False][:2]
# ctc_beam_search_decoder(y, [8, 7], beam_width=3)
_TF_Y_LOGP = [[-1.9011075], [-3.0649636]]
_TF_Y_PATH = ([[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [1, 0], [1, 1],
               [1, 2], [1, 3]], [0, 3, 1, 3, 1, 3, 2, 3, 1, 2, 0], [2, 7])
# ctc_loss_v2 of the first two sequences of x: see test_ctc_loss_v2_as_tensorflow
_TF_LOSSES = [[9.613802, 0.9175443], [11.609153, 0.8979808], [9.613803, 0.91754407],
              [3.1160789, 8.102237], [8.506056, 9.956232]]
_TF_GRAD_B1 = [[-0.15294677, 0.00286345, 0.13520063, 0.01488271],
               [-0.11946261, 0.02940248, 0.08289135, 0.00716866],
               [-0.41938612, 0.43100268, 0.0311026, -0.04271926],
               [0.00218455, 0.00117568, 0.00066322, -0.00402349],
               [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize("merge", [True, False])
def test_beam_search_as_tensorflow(backend, merge):
    x, _ = _logits()
    decoded, logp = gf.nn.ctc_beam_search_decoder(x, _SEQ, beam_width=5, top_paths=3,
                                                  merge_repeated=merge)
    assert len(decoded) == 3 and logp.shape.as_list() == [3, 3] and logp.dtype is gf.float32
    with gf.Session(backend=backend) as sess:
        dv, lv = sess.run([decoded, logp])
    np.testing.assert_allclose(lv, _TF_LOGP, rtol=1e-5)
    assert [_sparse(v) for v in dv] == _TF_PATHS[merge]


def test_beam_search_v2_and_a_wider_alphabet():
    x, y = _logits()
    d2, l2 = gf.nn.ctc_beam_search_decoder_v2(x, _SEQ, beam_width=2, top_paths=2)
    d3, l3 = gf.nn.ctc_beam_search_decoder(gf.placeholder_with_default(y, [None, 2, 5]),
                                           gf.constant([8, 7]), beam_width=3)
    with gf.Session() as sess:
        v2, lv2, v3, lv3 = sess.run([d2, l2, d3, l3])
    np.testing.assert_allclose(lv2, _TF_V2_LOGP, rtol=1e-5)
    assert [_sparse(v) for v in v2] == _TF_V2_PATHS
    np.testing.assert_allclose(lv3, _TF_Y_LOGP, rtol=1e-5)
    assert _sparse(v3[0]) == _TF_Y_PATH
    assert v3[0].values.dtype == np.int64


def test_beam_search_errors():
    x, _ = _logits()
    with pytest.raises(ValueError, match="top_paths <= beam_width"):
        gf.nn.ctc_beam_search_decoder(x, _SEQ, beam_width=2, top_paths=3)
    with pytest.raises(ValueError, match="must be \\[max_time, batch, num_classes\\]"):
        gf.nn.ctc_beam_search_decoder(x[0], [1, 1, 1])
    # TF: "Less leaves in the beam search than requested." (an empty sequence has one path)
    decoded, _ = gf.nn.ctc_beam_search_decoder(x, [6, 4, 0], beam_width=5, top_paths=3)
    with gf.Session() as sess, pytest.raises(InvalidArgumentError, match="fewer paths"):
        sess.run(decoded[0].values)


def test_ctc_loss_v2_as_tensorflow():
    x, _ = _logits()
    lab = np.array([[1, 2, 2], [3, 0, 0]], np.int32)
    logits = gf.constant(x[:, :2, :])
    losses = [
        gf.nn.ctc_loss_v2(lab, logits, [3, 1], [6, 4]),
        gf.nn.ctc_loss_v2(np.array([[1, 2, 2], [0, 0, 0]], np.int32), logits, [3, 1], [6, 4],
                          blank_index=3),
        gf.nn.ctc_loss_v2(gf.SparseTensor([[0, 0], [0, 1], [0, 2], [1, 0]], [1, 2, 2, 3],
                                          [2, 3]), logits, None, [6, 4], blank_index=0),
        gf.nn.ctc_loss_v2(gf.SparseTensor([[0, 0], [0, 1], [1, 0]], [0, 2, 1], [2, 2]),
                          logits, None, [6, 4], blank_index=-1),
        gf.nn.ctc_loss_v2(gf.constant(lab), gf.transpose(logits, [1, 0, 2]), [3, 1], [6, 4],
                          logits_time_major=False, blank_index=1),
    ]
    grad = gf.gradients(losses[0], logits)[0]
    with gf.Session() as sess:
        lv, gv = sess.run([losses, grad])
    np.testing.assert_allclose(lv, _TF_LOSSES, rtol=1e-5)
    np.testing.assert_allclose(gv[:, 1], _TF_GRAD_B1, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="blank_index must be given"):
        gf.nn.ctc_loss_v2(gf.SparseTensor([[0, 0]], [1], [1, 1]), logits, None, [6, 4])


def test_ctc_unique_labels_as_tensorflow():
    # TensorFlow 2.21: ([[3, 4, 0, 0], [1, 2, 0, 0]] int64, [[0, 1, 1, 0], [0, 0, 1, 2]] int32)
    labels, idx = gf.nn.ctc_unique_labels(gf.constant([[3, 4, 4, 3], [1, 1, 2, 0]]))
    assert labels.dtype is gf.int64 and idx.dtype is gf.int32
    with gf.Session() as sess:
        lv, iv = sess.run([labels, idx])
    assert lv.tolist() == [[3, 4, 0, 0], [1, 2, 0, 0]]
    assert iv.tolist() == [[0, 1, 1, 0], [0, 0, 1, 2]]
