"""tf.metrics' streaming metrics at k, at thresholds and the rest, against TensorFlow 2.21.

REF holds TensorFlow 2.21's values (tf.compat.v1, graph mode), made once with
/tmp/bench/bin/python running the same inputs: for each metric, the names of its local
variables and, after each of two batches, (what ``update_op`` returned, the value read after).
"""


import math

import numpy as np
import pytest

import gradflow as tf

rng = np.random.RandomState(0)
P = np.round(rng.uniform(size=(2, 4, 5)), 3).astype(np.float32)   # two batches of 4x5 scores
L2 = np.array([[[0, 3], [2, 2], [4, 7], [1, -1]], [[1, 0], [3, 4], [0, 0], [2, 5]]], np.int64)
L1 = np.array([[0, 2, 4, 1], [1, 3, 0, 2]], np.int64)
LC = np.array([[1, 3, 0, 4], [0, 2, 1, 1]], np.int64)
W = np.array([[1., 0.5, 2., 0.], [1., 1., 0.25, 3.]], np.float32)
Y = np.round(rng.uniform(size=(2, 6)), 3).astype(np.float32)
Yhat = np.round(rng.uniform(size=(2, 6)), 3).astype(np.float32)
B = (rng.uniform(size=(2, 6)) > 0.5)

m = tf.metrics


def _run(build, feeds):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(f[0].dtype), f[0].shape) for f in feeds]
        value, update = build(*phs)
        names = [v.op.name for v in tf.local_variables()]
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            out = []
            for b in range(2):
                u = s.run(update, {p: f[b] for p, f in zip(phs, feeds)})
                out.append((np.asarray(u).tolist(), np.asarray(s.run(value)).tolist()))
    return names, out


TH = [0.1, 0.5, 0.8]
CASES = {
    "precision_at_k2_rank1": (lambda lab, p: m.precision_at_k(lab, p, 2), [L1, P]),
    "recall_at_k2_rank1_w": (lambda lab, p, w: m.recall_at_k(lab, p, 2, weights=w), [L1, P, W]),
    "precision_at_k2_class0": (lambda lab, p: m.precision_at_k(lab, p, 2, class_id=0), [L2, P]),
    "recall_at_k2_class2_w": (
        lambda lab, p, w: m.recall_at_k(lab, p, 2, class_id=2, weights=w), [L2, P, W]),
    "ap_at_k3_w": (lambda lab, p, w: m.average_precision_at_k(lab, p, 3, weights=w), [L2, P, W]),
    "sparse_precision_at_k2": (lambda lab, p: m.sparse_precision_at_k(lab, p, 2), [L2, P]),
    "sparse_ap_at_k2": (lambda lab, p: m.sparse_average_precision_at_k(lab, p, 2), [L2, P]),
    "precision_at_top_k": (lambda lab, p: m.precision_at_top_k(lab, tf.nn.top_k(p, 2)[1]), [L2, P]),
    "recall_at_top_k": (lambda lab, p: m.recall_at_top_k(lab, tf.nn.top_k(p, 3)[1], k=3), [L2, P]),
    "precision_at_thresholds_w": (
        lambda lab, p, w: m.precision_at_thresholds(lab, p, TH, weights=w), [B, Y, Yhat]),
    "sensitivity_at_specificity": (
        lambda lab, p: m.sensitivity_at_specificity(lab, p, 0.6), [B, Y]),
    "sensitivity_at_specificity_n7": (
        lambda lab, p: m.sensitivity_at_specificity(lab, p, 0.3, num_thresholds=7), [B, Y]),
    "specificity_at_sensitivity": (
        lambda lab, p: m.specificity_at_sensitivity(lab, p, 0.5), [B, Y]),
    "specificity_at_sensitivity_n5_w": (
        lambda lab, p, w: m.specificity_at_sensitivity(lab, p, 0.7, weights=w, num_thresholds=5),
        [B, Y, Yhat]),
    "root_mean_squared_error": (lambda a, b: m.root_mean_squared_error(a, b), [Y, Yhat]),
    "mean_relative_error": (lambda a, b: m.mean_relative_error(a, b, normalizer=a), [Y, Yhat]),
    "mean_relative_error_zero": (
        lambda a, b: m.mean_relative_error(a, b, normalizer=tf.floor(a * 2.0)), [Y, Yhat]),
    "mean_cosine_distance": (
        lambda a, b: m.mean_cosine_distance(tf.reshape(a, (3, 2)), tf.reshape(b, (3, 2)), dim=1),
        [Y, Yhat]),
    "percentage_below": (lambda a: m.percentage_below(a, 0.5), [Y]),
    "percentage_below_w": (lambda a, w: m.percentage_below(a, 0.5, weights=w), [Y, Yhat]),
    "mean_tensor": (lambda a: m.mean_tensor(a), [Y]),
    "mean_tensor_w": (lambda a, w: m.mean_tensor(a, weights=w), [Y, Yhat]),
    "mean_per_class_accuracy": (
        lambda lab, p: m.mean_per_class_accuracy(lab, tf.argmax(p, 1), 5), [LC, P]),
    "mean_per_class_accuracy_w": (
        lambda lab, p, w: m.mean_per_class_accuracy(lab, tf.argmax(p, 1), 5, weights=w),
        [LC, P, W]),
    "mean_iou": (lambda lab, p: m.mean_iou(lab, tf.argmax(p, 1), 5), [LC, P]),
    "mean_iou_w": (lambda lab, p, w: m.mean_iou(lab, tf.argmax(p, 1), 5, weights=w), [LC, P, W]),
}
for _k in (1, 2, 3):
    CASES[f"precision_at_k{_k}"] = (lambda lab, p, k=_k: m.precision_at_k(lab, p, k), [L2, P])
    CASES[f"recall_at_k{_k}"] = (lambda lab, p, k=_k: m.recall_at_k(lab, p, k), [L2, P])
    CASES[f"average_precision_at_k{_k}"] = (
        lambda lab, p, k=_k: m.average_precision_at_k(lab, p, k), [L2, P])
for _n in ("precision", "recall", "true_positives", "false_positives", "true_negatives",
           "false_negatives"):
    CASES[f"{_n}_at_thresholds"] = (
        lambda lab, p, n=_n: getattr(m, f"{n}_at_thresholds")(lab, p, TH), [B, Y])


def _close(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("key", sorted(CASES))
def test_metric_matches_tensorflow(key):
    names, out = _run(*CASES[key])
    ref_names, ref_out = REF[key]
    assert names == ref_names
    for (u, v), (ru, rv) in zip(out, ref_out):
        assert _close(u, ru) and _close(v, rv), (key, out, ref_out)


SPARSE_IDX = [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [2, 0], [3, 0]]
SPARSE_VALS = [[0, 3, 2, 2, 1, 4, 1], [1, 0, 3, 4, 9, 0, 2]]
# TensorFlow 2.21's (update after batch 1, after batch 2, value), same script, SparseTensor labels
SPARSE_REF = {"precision": [0.125, 0.1875, 0.1875],
              "recall": [0.16666666666666666, 0.23076923076923078, 0.23076923076923078],
              "ap": [0.10416666666666666, 0.1909722222222222, 0.1909722222222222],
              "recall_class1": [0.0, 0.3333333333333333, 0.3333333333333333]}
SPARSE_BUILD = {"precision": lambda lab, p: m.precision_at_k(lab, p, 2),
                "recall": lambda lab, p: m.recall_at_k(lab, p, 2),
                "ap": lambda lab, p: m.average_precision_at_k(lab, p, 3),
                "recall_class1": lambda lab, p: m.recall_at_k(lab, p, 2, class_id=1)}


@pytest.mark.parametrize("key", sorted(SPARSE_REF))
def test_at_k_with_sparse_labels_matches_tensorflow(key):
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.int64, shape=[4, 3])
        p = tf.placeholder(tf.float32, [4, 5])
        value, update = SPARSE_BUILD[key](sp, p)
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            out = [float(s.run(update, {sp: tf.SparseTensorValue(SPARSE_IDX, SPARSE_VALS[b],
                                                                  [4, 3]), p: P[b]}))
                   for b in range(2)]
            out.append(float(s.run(value)))
    assert np.allclose(out, SPARSE_REF[key], rtol=1e-6)


def test_precision_at_k_of_no_prediction_is_nan_and_bad_input_is_named():
    with tf.Graph().as_default():
        labels = tf.constant([[1], [2]], tf.int64)
        value, update = m.precision_at_k(labels, tf.constant([[0.1, 0.9, 0.0]] * 2), 1,
                                         class_id=0)
        with tf.Session() as s:
            s.run(tf.local_variables_initializer())
            assert math.isnan(s.run(update))
        with pytest.raises(ValueError, match="specificity"):
            m.sensitivity_at_specificity(tf.constant([True]), tf.constant([0.5]), 1.5)
        with pytest.raises(TypeError, match="labels"):
            m.recall_at_k(tf.constant([[0.5]]), tf.constant([[0.5, 0.2]]), 1)
        with pytest.raises(ValueError, match="static shape"):
            m.mean_tensor(tf.placeholder(tf.float32, [None, 2]))


REF = {'ap_at_k3_w': (['average_precision_at_3/max_1', 'average_precision_at_3/total'],
                [(0.08333333333333333, 0.08333333333333333),
                 (0.16666666666666669, 0.16666666666666669)]),
 'average_precision_at_k1': (['average_precision_at_1/max_1', 'average_precision_at_1/total'],
                             [(0.0, 0.0), (0.125, 0.125)]),
 'average_precision_at_k2': (['average_precision_at_2/max_1', 'average_precision_at_2/total'],
                             [(0.0625, 0.0625), (0.15625, 0.15625)]),
 'average_precision_at_k3': (['average_precision_at_3/max_1', 'average_precision_at_3/total'],
                             [(0.10416666666666666, 0.10416666666666666),
                              (0.19791666666666669, 0.19791666666666669)]),
 'false_negatives_at_thresholds': (['false_negatives/false_negatives'],
                                   [([0.0, 0.0, 2.0], [0.0, 0.0, 2.0]),
                                    ([0.0, 3.0, 6.0], [0.0, 3.0, 6.0])]),
 'false_positives_at_thresholds': (['false_positives/false_positives'],
                                   [([3.0, 1.0, 0.0], [3.0, 1.0, 0.0]),
                                    ([5.0, 1.0, 0.0], [5.0, 1.0, 0.0])]),
 'mean_cosine_distance': (['mean_cosine_distance/total', 'mean_cosine_distance/count'],
                          [(0.6129633188247681, 0.6129633188247681),
                           (0.6974878311157227, 0.6974878311157227)]),
 'mean_iou': (['mean_iou/total_confusion_matrix'],
              [([[0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                 [0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]],
                0.625),
               ([[1.0, 0.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0],
                 [0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]],
                0.699999988079071)]),
 'mean_iou_w': (['mean_iou/total_confusion_matrix'],
                [([[0.0, 0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                   [0.0, 0.0, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]],
                  0.4000000059604645),
                 ([[1.0, 0.0, 0.0, 2.0, 0.0], [0.0, 1.25, 0.0, 3.0, 0.0],
                   [0.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.5, 0.0],
                   [0.0, 0.0, 0.0, 0.0, 0.0]],
                  0.42959001660346985)]),
 'mean_per_class_accuracy': (['mean_accuracy/total', 'mean_accuracy/count'],
                             [([0.0, 1.0, 0.0, 1.0, 1.0], 0.6000000238418579),
                              ([0.5, 0.6666666865348816, 1.0, 1.0, 1.0], 0.8333333730697632)]),
 'mean_per_class_accuracy_w': (['mean_accuracy/total', 'mean_accuracy/count'],
                               [([0.0, 1.0, 0.0, 1.0, 0.0], 0.4000000059604645),
                                ([0.3333333432674408, 0.29411765933036804, 1.0, 1.0, 0.0],
                                 0.5254901647567749)]),
 'mean_relative_error': (['mean_relative_error/total', 'mean_relative_error/count'],
                         [(0.9231469631195068, 0.9231469631195068),
                          (0.8065807223320007, 0.8065807223320007)]),
 'mean_relative_error_zero': (['mean_relative_error/total', 'mean_relative_error/count'],
                              [(0.1535000056028366, 0.1535000056028366),
                               (0.08391666412353516, 0.08391666412353516)]),
 'mean_tensor': (['mean/total_tensor', 'mean/count_tensor'],
                 [([0.36000001430511475, 0.43700000643730164, 0.6980000138282776,
                    0.05999999865889549, 0.6669999957084656, 0.6710000038146973],
                   [0.36000001430511475, 0.43700000643730164, 0.6980000138282776,
                    0.05999999865889549, 0.6669999957084656, 0.6710000038146973]),
                  ([0.2849999964237213, 0.28299999237060547, 0.5065000057220459,
                    0.21199999749660492, 0.6184999942779541, 0.5550000071525574],
                   [0.2849999964237213, 0.28299999237060547, 0.5065000057220459,
                    0.21199999749660492, 0.6184999942779541, 0.5550000071525574])]),
 'mean_tensor_w': (['mean/total_tensor', 'mean/count_tensor'],
                   [([0.36000001430511475, 0.43700000643730164, 0.6980000138282776,
                      0.05999999865889549, 0.6669999957084656, 0.6710000038146973],
                     [0.36000001430511475, 0.43700000643730164, 0.6980000138282776,
                      0.05999999865889549, 0.6669999957084656, 0.6710000038146973]),
                    ([0.3119257390499115, 0.21979767084121704, 0.5325190424919128,
                      0.18339483439922333, 0.618388831615448, 0.589117705821991],
                     [0.3119257390499115, 0.21979767084121704, 0.5325190424919128,
                      0.18339483439922333, 0.618388831615448, 0.589117705821991])]),
 'percentage_below': (['percentage_below_threshold/total', 'percentage_below_threshold/count'],
                      [(0.5, 0.5), (0.6666666865348816, 0.6666666865348816)]),
 'percentage_below_w': (['percentage_below_threshold/total', 'percentage_below_threshold/count'],
                        [(0.5287404656410217, 0.5287404656410217),
                         (0.572118878364563, 0.572118878364563)]),
 'precision_at_k1': (['precision_at_1/true_positive_at_1', 'precision_at_1/false_positive_at_1'],
                     [(0.0, 0.0), (0.125, 0.125)]),
 'precision_at_k2': (['precision_at_2/true_positive_at_2', 'precision_at_2/false_positive_at_2'],
                     [(0.125, 0.125), (0.1875, 0.1875)]),
 'precision_at_k2_class0': (['precision_at_2_class0/true_positive_at_2_class0',
                             'precision_at_2_class0/false_positive_at_2_class0'],
                            [(0.0, 0.0), (0.3333333333333333, 0.3333333333333333)]),
 'precision_at_k2_rank1': (['precision_at_2/true_positive_at_2',
                            'precision_at_2/false_positive_at_2'],
                           [(0.125, 0.125), (0.125, 0.125)]),
 'precision_at_k3': (['precision_at_3/true_positive_at_3', 'precision_at_3/false_positive_at_3'],
                     [(0.16666666666666666, 0.16666666666666666),
                      (0.20833333333333334, 0.20833333333333334)]),
 'precision_at_thresholds': (['precision_at_thresholds/true_positives',
                              'precision_at_thresholds/false_positives'],
                             [([0.4000000059604645, 0.6666666865348816, 0.0],
                               [0.4000000059604645, 0.6666666865348816, 0.0]),
                              ([0.5454545617103577, 0.75, 0.0], [0.5454545617103577, 0.75, 0.0])]),
 'precision_at_thresholds_w': (['precision_at_thresholds/true_positives',
                                'precision_at_thresholds/false_positives'],
                               [([0.3909296989440918, 0.7730940580368042, 0.0],
                                 [0.3909296989440918, 0.7730940580368042, 0.0]),
                                ([0.5663650035858154, 0.8571428060531616, 0.0],
                                 [0.5663650035858154, 0.8571428060531616, 0.0])]),
 'precision_at_top_k': (['precision_at_k/true_positive_at_k',
                         'precision_at_k/false_positive_at_k'],
                        [(0.125, 0.125), (0.1875, 0.1875)]),
 'recall_at_k1': (['recall_at_1/true_positive_at_1', 'recall_at_1/false_negative_at_1'],
                  [(0.0, 0.0), (0.07142857142857142, 0.07142857142857142)]),
 'recall_at_k2': (['recall_at_2/true_positive_at_2', 'recall_at_2/false_negative_at_2'],
                  [(0.14285714285714285, 0.14285714285714285),
                   (0.21428571428571427, 0.21428571428571427)]),
 'recall_at_k2_class2_w': (['recall_at_2_class2/true_positive_at_2_class2',
                            'recall_at_2_class2/false_negative_at_2_class2'],
                           [(1.0, 1.0), (0.14285714285714285, 0.14285714285714285)]),
 'recall_at_k2_rank1_w': (['recall_at_2/true_positive_at_2', 'recall_at_2/false_negative_at_2'],
                          [(0.14285714285714285, 0.14285714285714285),
                           (0.17142857142857143, 0.17142857142857143)]),
 'recall_at_k3': (['recall_at_3/true_positive_at_3', 'recall_at_3/false_negative_at_3'],
                  [(0.2857142857142857, 0.2857142857142857),
                   (0.35714285714285715, 0.35714285714285715)]),
 'recall_at_thresholds': (['recall_at_thresholds/true_positives',
                           'recall_at_thresholds/false_negatives'],
                          [([1.0, 1.0, 0.0], [1.0, 1.0, 0.0]),
                           ([1.0, 0.5, 0.0], [1.0, 0.5, 0.0])]),
 'recall_at_top_k': (['recall_at_3/true_positive_at_3', 'recall_at_3/false_negative_at_3'],
                     [(0.2857142857142857, 0.2857142857142857),
                      (0.35714285714285715, 0.35714285714285715)]),
 'root_mean_squared_error': (['root_mean_squared_error/total', 'root_mean_squared_error/count'],
                             [(0.3938804864883423, 0.3938804864883423),
                              (0.31576111912727356, 0.31576111912727356)]),
 'sensitivity_at_specificity': (['sensitivity_at_specificity/true_positives',
                                 'sensitivity_at_specificity/false_negatives',
                                 'sensitivity_at_specificity/true_negatives',
                                 'sensitivity_at_specificity/false_positives'],
                                [(1.0, 1.0), (0.5, 0.5)]),
 'sensitivity_at_specificity_n7': (['sensitivity_at_specificity/true_positives',
                                    'sensitivity_at_specificity/false_negatives',
                                    'sensitivity_at_specificity/true_negatives',
                                    'sensitivity_at_specificity/false_positives'],
                                   [(1.0, 1.0), (1.0, 1.0)]),
 'sparse_ap_at_k2': (['average_precision_at_2/max_1', 'average_precision_at_2/total'],
                     [(0.0625, 0.0625), (0.15625, 0.15625)]),
 'sparse_precision_at_k2': (['precision_at_2/true_positive_at_2',
                             'precision_at_2/false_positive_at_2'],
                            [(0.125, 0.125), (0.1875, 0.1875)]),
 'specificity_at_sensitivity': (['specificity_at_sensitivity/true_positives',
                                 'specificity_at_sensitivity/false_negatives',
                                 'specificity_at_sensitivity/true_negatives',
                                 'specificity_at_sensitivity/false_positives'],
                                [(1.0, 1.0), (0.8333333134651184, 0.8333333134651184)]),
 'specificity_at_sensitivity_n5_w': (['specificity_at_sensitivity/true_positives',
                                      'specificity_at_sensitivity/false_negatives',
                                      'specificity_at_sensitivity/true_negatives',
                                      'specificity_at_sensitivity/false_positives'],
                                     [(0.831781804561615, 0.831781804561615),
                                      (0.8658536076545715, 0.8658536076545715)]),
 'true_negatives_at_thresholds': (['true_negatives/true_negatives'],
                                  [([1.0, 3.0, 4.0], [1.0, 3.0, 4.0]),
                                   ([1.0, 5.0, 6.0], [1.0, 5.0, 6.0])]),
 'true_positives_at_thresholds': (['true_positives/true_positives'],
                                  [([2.0, 2.0, 0.0], [2.0, 2.0, 0.0]),
                                   ([6.0, 3.0, 0.0], [6.0, 3.0, 0.0])])}
