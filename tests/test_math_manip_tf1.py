"""The math, bitwise and array-manipulation names of issue 47 against TensorFlow 2.21
(``tf.compat.v1``, graph mode): each case below is written once against the TF1 API and
run by both. The expected values (``EXPECTED``) are what TensorFlow 2.21 gave, pasted in
as literals; they were made once, with TensorFlow installed, by running every function of
``CASES`` with ``tf = tensorflow.compat.v1`` (eager execution off) in a ``Session`` and
printing ``value.tolist()`` of each fetched array (the block between the two ``cases``
markers is the whole of what ran). CI has no TensorFlow: it runs the same cases through
``import gradflow as tf`` on every CPU backend and compares.

Where gradflow differs from TF, a case says so in its comment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf

inf, nan, pi = math.inf, math.nan, math.pi

# -- cases --


def _f64(tf, values):
    return tf.constant(np.array(values, np.float64))


def _grads(tf, fn, values):
    x = _f64(tf, values)
    y = fn(x)
    return [y, tf.gradients(tf.reduce_sum(y * _f64(tf, np.linspace(0.5, 1.5, len(values)))),
                            x)[0]]


TRIG_X = [-0.9, -0.3, 0.0, 0.4, 0.8]
CASES = {
    "tan": lambda tf: _grads(tf, tf.tan, TRIG_X),
    "asin": lambda tf: _grads(tf, tf.asin, TRIG_X),
    "acos": lambda tf: _grads(tf, tf.math.acos, TRIG_X),
    "atan": lambda tf: _grads(tf, tf.atan, TRIG_X),
    "sinh": lambda tf: _grads(tf, tf.sinh, TRIG_X),
    "cosh": lambda tf: _grads(tf, tf.math.cosh, TRIG_X),
    "asinh": lambda tf: _grads(tf, tf.asinh, TRIG_X),
    "acosh": lambda tf: _grads(tf, tf.acosh, [1.2, 1.5, 3.0, 10.0]),
    "atanh": lambda tf: _grads(tf, tf.math.atanh, TRIG_X),
    "atan2": lambda tf: _atan2_grads(tf),
    "rint": lambda tf: [tf.rint(_f64(tf, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7]))],
    "nextafter": lambda tf: [tf.math.nextafter(tf.constant([1.0, 0.0], tf.float32),
                                               tf.constant([2.0, -1.0], tf.float32)),
                             tf.math.nextafter(_f64(tf, [1.0]), _f64(tf, [0.0]))],
    "div_no_nan": lambda tf: _no_nan(tf, tf.div_no_nan),
    "divide_no_nan": lambda tf: _no_nan(tf, tf.math.divide_no_nan),
    "multiply_no_nan": lambda tf: _no_nan(tf, tf.math.multiply_no_nan),
    "reciprocal_no_nan": lambda tf: [tf.math.reciprocal_no_nan(_f64(tf, [0.0, 2.0, -4.0]))],
    "xlog1py": lambda tf: [tf.math.xlog1py(_f64(tf, [0.0, 2.0, 0.5]), _f64(tf, [-1.0, 1.0, 3.0]))],
    "log_sigmoid": lambda tf: _grads(tf, tf.math.log_sigmoid, [-100.0, -1.0, 0.0, 2.0, 50.0]),
    "reduce_variance": lambda tf: [
        tf.math.reduce_variance(_f64(tf, [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])),
        tf.math.reduce_variance(_f64(tf, [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]), axis=1,
                                keepdims=True)],
    "reduce_std": lambda tf: [tf.math.reduce_std(_f64(tf, [[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]),
                                                 axis=0)],
    "reduce_euclidean_norm": lambda tf: [
        tf.math.reduce_euclidean_norm(tf.constant([[1, 2, 3], [1, 1, 1]])),
        tf.math.reduce_euclidean_norm(_f64(tf, [[3.0, 4.0], [1.0, 1.0]]), axis=1)],
    "lbeta": lambda tf: [tf.math.lbeta(_f64(tf, [[1.0, 2.0], [3.0, 4.0], [0.5, 0.5]]))],
    "polyval": lambda tf: [tf.math.polyval([_f64(tf, 2.0), _f64(tf, -1.0), _f64(tf, 3.0)],
                                           _f64(tf, [0.0, 1.0, 2.5]))],
    "cumulative_logsumexp": lambda tf: _clse(tf),
    "truncatediv": lambda tf: [tf.truncatediv(tf.constant([7, -7, 6, -6, 0]),
                                              tf.constant([2, 2, -4, 4, 3])),
                               tf.truncatediv(_f64(tf, [7.5, -7.5]), _f64(tf, [2.0, 2.0]))],
    "truncatemod": lambda tf: [tf.truncatemod(tf.constant([7, -7, 6, -6, 0]),
                                              tf.constant([2, 2, -4, 4, 3])),
                               tf.truncatemod(_f64(tf, [7.5, -7.5, 3.0]),
                                              _f64(tf, [2.0, 2.0, -2.0]))],
    "order": lambda tf: [tf.math.is_non_decreasing([1, 1, 2]),
                         tf.math.is_strictly_increasing([1, 1, 2]),
                         tf.math.is_strictly_increasing([[1.0, 2.0], [3.0, 4.0]])],
    "confusion_matrix": lambda tf: [
        tf.confusion_matrix([1, 2, 4], [2, 2, 4]),
        tf.math.confusion_matrix([0, 1, 1], [1, 1, 0], num_classes=3, weights=[0.5, 1.0, 2.0],
                                 dtype=tf.float32)],
    "bitwise": lambda tf: [
        tf.bitwise.bitwise_and(tf.constant([12, -10, 7]), tf.constant([6, 3, -1])),
        tf.bitwise.bitwise_or(tf.constant([12, -10, 7]), tf.constant([6, 3, -1])),
        tf.bitwise.bitwise_xor(tf.constant([12, -10, 7]), tf.constant([6, 3, -1])),
        tf.bitwise.invert(tf.constant([0, 5, 255], tf.uint8)),
        tf.bitwise.left_shift(tf.constant([1, -3, 5, 7]), tf.constant([40, 31, -2, 3])),
        tf.bitwise.right_shift(tf.constant([1, -3, 5, -64]), tf.constant([40, 31, -2, 3])),
        tf.bitwise.left_shift(tf.constant([1, 3, 5], tf.uint8), tf.constant([40, 7, 2], tf.uint8))],
    "roll": lambda tf: [tf.roll([0, 1, 2, 3, 4], 2, 0),
                        tf.roll(np.arange(6).reshape(2, 3), [1, -1, 3], [0, 1, 1]),
                        tf.manip.roll([[1, 2], [3, 4]], -3, 1)],
    "reverse_sequence": lambda tf: [
        tf.reverse_sequence([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], [2, 4, 0], seq_axis=1,
                            batch_axis=0),
        tf.reverse_sequence(np.arange(12).reshape(3, 2, 2), [1, 3], seq_axis=0, batch_axis=1)],
    "repeat": lambda tf: [tf.repeat([[1, 2], [3, 4]], [2, 3], axis=0),
                          tf.repeat([[1, 2], [3, 4]], 2),
                          tf.repeat([[1, 2], [3, 4]], [1, 0], axis=1)],
    "unique_with_counts": lambda tf: list(tf.unique_with_counts([1, 1, 2, 4, 4, 4, 7, 8, 8])),
    "searchsorted": lambda tf: [
        tf.searchsorted([[0.0, 1.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0]], [[2.0, 1.5], [0.0, 5.0]]),
        tf.searchsorted([[0.0, 1.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0]], [[2.0, 1.5], [0.0, 5.0]],
                        side="right", out_type=tf.int64)],
    "setdiff1d": lambda tf: list(tf.setdiff1d([1, 2, 3, 4, 5, 6, 3], [1, 3, 5])),
    "invert_permutation": lambda tf: [tf.invert_permutation([3, 4, 0, 2, 1])],
    "space_to_depth": lambda tf: [tf.space_to_depth(np.arange(32.0).reshape(1, 4, 4, 2), 2),
                                  tf.nn.depth_to_space(np.arange(16.0).reshape(1, 1, 2, 8), 2)],
    "space_to_batch": lambda tf: [
        tf.space_to_batch_nd(np.arange(12.0).reshape(1, 2, 3, 2), [2, 2], [[0, 0], [0, 1]]),
        tf.batch_to_space_nd(np.arange(16.0).reshape(4, 2, 2, 1), [2, 2], [[0, 1], [1, 0]]),
        tf.space_to_batch(np.arange(8.0).reshape(2, 2, 2, 1), [[1, 1], [0, 0]], 2),
        tf.batch_to_space(np.arange(8.0).reshape(4, 1, 2, 1), [[0, 0], [1, 1]], 2)],
    "xw_plus_b": lambda tf: [
        tf.nn.xw_plus_b(_f64(tf, [[1.0, 2.0]]), _f64(tf, [[1.0, -1.0], [0.5, -2.0]]),
                        _f64(tf, [0.5, 1.0])),
        tf.nn.relu_layer(_f64(tf, [[1.0, 2.0]]), _f64(tf, [[1.0, -1.0], [0.5, -2.0]]),
                         _f64(tf, [0.5, 1.0]))],
    "real_valued": lambda tf: [tf.math.angle(_f64(tf, [-1.0, 2.0, 0.0])),
                               tf.math.real(_f64(tf, [-1.0, 2.0])),
                               tf.math.imag(_f64(tf, [-1.0, 2.0])),
                               tf.math.conj(_f64(tf, [-1.0, 2.0])),
                               tf.math.scalar_mul(2.0, _f64(tf, [1.0, -3.0])),
                               tf.math.accumulate_n([_f64(tf, [1.0]), _f64(tf, [2.5])])],
}


def _atan2_grads(tf):
    y, x = _f64(tf, [1.0, -1.0, 2.0, 0.5]), _f64(tf, [-1.0, 0.5, 3.0, -2.0])
    out = tf.atan2(y, x)
    signed = tf.atan2(_f64(tf, [1.0, -1.0, 0.0, -0.0, 2.0]), _f64(tf, [-1.0, -1.0, -1.0, -1.0,
                                                                         0.5]))
    return [signed, out] + tf.gradients(tf.reduce_sum(out * _f64(tf, [1.0, 2.0, 3.0, 4.0])),
                                        [y, x])


def _no_nan(tf, fn):
    x, y = _f64(tf, [3.0, inf, nan, 1.0, -2.0]), _f64(tf, [0.0, 0.0, 0.0, 2.0, 0.5])
    out = fn(x, y)
    finite_x = _f64(tf, [3.0, 1.5, -1.0, 1.0, -2.0])
    return [out] + tf.gradients(tf.reduce_sum(fn(finite_x, y) * _f64(tf, [1.0, 2.0, 3.0, 4.0,
                                                                         5.0])), [finite_x, y])


def _clse(tf):
    x = _f64(tf, [[-1000.0, 0.0, 1.0, 3.0, 2.0], [0.5, -0.5, 700.0, 1.0, 0.0]])
    weights = _f64(tf, [[1.0, -2.0, 3.0, 0.5, 1.0], [2.0, 1.0, -1.0, 0.0, 1.0]])
    out = []
    for exclusive in (False, True):
        for reverse in (False, True):
            y = tf.math.cumulative_logsumexp(x, axis=1, exclusive=exclusive, reverse=reverse)
            out += [y, tf.gradients(tf.reduce_sum(tf.where(tf.is_finite(y), y * weights,
                                                           tf.zeros_like(y))), x)[0]]
    return out


# -- end of cases --

# what TensorFlow 2.21 gave: per case, (dtype, value) of each fetched array
EXPECTED = {
    'tan': [
        ('float64',
         [-1.2601582175503392, -0.30933624960962325, 0.0, 0.4227932187381618,
          1.0296385570503641]),
        ('float64',
         [1.2939993666298244, 0.8217666864919103, 1.0, 1.4734426322637186, 3.0902333372471342]),
    ],
    'asin': [
        ('float64',
         [-1.1197695149986342, -0.3046926540153975, 0.0, 0.41151684606748806,
          0.9272952180016123]),
        ('float64',
         [1.147078669352809, 0.7862136275414386, 1.0, 1.3638618139749523, 2.5000000000000004]),
    ],
    'acos': [
        ('float64',
         [2.6905658417935308, 1.8754889808102941, 1.5707963267948966, 1.1592794807274085,
          0.6435011087932843]),
        ('float64',
         [-1.147078669352809, -0.7862136275414386, -1.0, -1.3638618139749523,
          -2.5000000000000004]),
    ],
    'atan': [
        ('float64',
         [-0.7328151017865067, -0.2914567944778671, 0.0, 0.3805063771123649,
          0.6747409422235527]),
        ('float64',
         [0.27624309392265195, 0.6880733944954128, 1.0, 1.0775862068965516, 0.9146341463414633]),
    ],
    'sinh': [
        ('float64',
         [-1.0265167257081753, -0.3045202934471426, 0.0, 0.4107523258028155, 0.888105982187623]),
        ('float64',
         [0.7165431927243873, 0.7840038855966454, 1.0, 1.3513404647980687, 2.0061524194572673]),
    ],
    'cosh': [
        ('float64',
         [1.4330863854487745, 1.0453385141288605, 1.0, 1.081072371838455, 1.3374349463048447]),
        ('float64',
         [-0.5132583628540877, -0.22839022008535695, 0.0, 0.5134404072535194,
          1.3321589732814345]),
    ],
    'asinh': [
        ('float64',
         [-0.8088669356527824, -0.29567304756342244, 0.0, 0.39003531977071526,
          0.732668256045411]),
        ('float64',
         [0.3716470731235832, 0.7183697139158635, 1.0, 1.1605958636065743, 1.1713032141645454]),
    ],
    'acosh': [
        ('float64',
         [0.6223625037147786, 0.9624236501192069, 1.762747174039086, 2.993222846126381]),
        ('float64',
         [0.7537783614444092, 0.7453559924999298, 0.4124789556921527, 0.15075567228888181]),
    ],
    'atanh': [
        ('float64',
         [-1.4722194895832204, -0.3095196042031117, 0.0, 0.42364893019360184,
          1.0986122886681098]),
        ('float64',
         [2.6315789473684217, 0.8241758241758241, 1.0, 1.4880952380952381, 4.166666666666668]),
    ],
    'atan2': [
        ('float64',
         [2.356194490192345, -2.356194490192345, 3.141592653589793, -3.141592653589793,
          1.3258176636680326]),
        ('float64',
         [2.356194490192345, -1.1071487177940904, 0.5880026035475676, 2.896613990462929]),
        ('float64', [-0.5, 0.8, 0.6923076923076923, -1.8823529411764706]),
        ('float64', [-0.5, 1.6, -0.46153846153846156, -0.47058823529411764]),
    ],
    'rint': [
        ('float64', [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0]),
    ],
    'nextafter': [
        ('float32', [1.0000001192092896, -1.401298464324817e-45]),
        ('float64', [0.9999999999999999]),
    ],
    'div_no_nan': [
        ('float64', [0.0, 0.0, 0.0, 0.5, -4.0]),
        ('float64', [0.0, 0.0, 0.0, 2.0, 10.0]),
        ('float64', [0.0, 0.0, 0.0, -1.0, 40.0]),
    ],
    'divide_no_nan': [
        ('float64', [0.0, 0.0, 0.0, 0.5, -4.0]),
        ('float64', [0.0, 0.0, 0.0, 2.0, 10.0]),
        ('float64', [0.0, 0.0, 0.0, -1.0, 40.0]),
    ],
    'multiply_no_nan': [
        ('float64', [0.0, 0.0, 0.0, 2.0, -1.0]),
        ('float64', [0.0, 0.0, 0.0, 8.0, 2.5]),
        ('float64', [3.0, 3.0, -3.0, 4.0, -10.0]),
    ],
    'reciprocal_no_nan': [
        ('float64', [0.0, 0.5, -0.25]),
    ],
    'xlog1py': [
        ('float64', [0.0, 1.3862943611198906, 0.6931471805599453]),
    ],
    'log_sigmoid': [
        ('float64',
         [-100.0, -1.3132616875182228, -0.6931471805599453, -0.1269280110429725,
          -1.9287498479639178e-22]),
        ('float64', [0.5, 0.5482939339725037, 0.5, 0.14900365252764694, 2.8931247719458766e-22]),
    ],
    'reduce_variance': [
        ('float64', 6.666666666666667),
        ('float64', [[1.5555555555555554], [6.222222222222221]]),
    ],
    'reduce_std': [
        ('float64', [1.0, 1.5, 2.5]),
    ],
    'reduce_euclidean_norm': [
        ('int32', 4),
        ('float64', [5.0, 1.4142135623730951]),
    ],
    'lbeta': [
        ('float64', [-0.6931471805599453, -4.094344562222101, 1.1447298858494002]),
    ],
    'polyval': [
        ('float64', [3.0, 4.0, 13.0]),
    ],
    'cumulative_logsumexp': [
        ('float64',
         [[-1000.0, 0.0, 1.3132616875182228, 3.1698460195562856, 3.4401896985611953],
          [0.5, 0.8132616875182228, 700.0, 700.0, 700.0]]),
        ('float64',
         [[1.0, -1.1401120995428968, 2.3374176543243443, 1.0658116271286417,
           0.23688281808991013],
          [2.731058578630005, 0.2689414213699951, 0.0, 2.680137958338607e-304,
           9.85967654375977e-305]]),
        ('float64',
         [[3.4401896985611957, 3.4401896985611957, 3.4076059644443806, 3.313261687518223, 2.0],
          [700.0, 700.0, 700.0, 1.3132616875182228, 0.0]]),
        ('float64',
         [[0.0, -0.03205860328008499, 0.18294740076910881, 1.7173378967514958,
           1.6317733057594803],
          [3.2511716879837927e-304, 1.7940588355918312e-304, 1.9999999999998224,
           5.360275916676738e-304, 1.0]]),
        ('float64',
         [[-inf, -1000.0, 0.0, 1.3132616875182228, 3.1698460195562856],
          [-inf, 0.5, 0.8132616875182228, 700.0, 700.0]]),
        ('float64',
         [[-1.99999999999989, 3.1764807768190635, 0.47972448869959694, 0.8437947344813395, 0.0],
          [0.268941421369995, -0.2689414213699951, 1.0, 2.680137958338607e-304, 0.0]]),
        ('float64',
         [[3.4401896985611957, 3.4076059644443806, 3.313261687518223, 2.0, -inf],
          [700.0, 700.0, 1.3132616875182228, 0.0, -inf]]),
        ('float64',
         [[0.0, 0.032058603280084974, -0.09291682759872835, 1.5066080842283425,
           1.0542501400903],
          [0.0, 1.1960392237278925e-304, 2.9999999999998224, -0.7310585786300049,
           -0.2689414213699951]]),
    ],
    'truncatediv': [
        ('int32', [3, -3, -1, -1, 0]),
        ('float64', [3.0, -3.0]),
    ],
    'truncatemod': [
        ('int32', [1, -1, 2, -2, 0]),
        ('float64', [1.5, -1.5, 1.0]),
    ],
    'order': [
        ('bool', True),
        ('bool', False),
        ('bool', True),
    ],
    'confusion_matrix': [
        ('int32',
         [[0, 0, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 1]]),
        ('float32', [[0.0, 0.5, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 0.0]]),
    ],
    'bitwise': [
        ('int32', [4, 2, 7]),
        ('int32', [14, -9, -1]),
        ('int32', [10, -11, -8]),
        ('uint8', [255, 250, 0]),
        ('int32', [-2147483648, -2147483648, 5, 56]),
        ('int32', [0, -1, 5, -8]),
        ('uint8', [128, 128, 20]),
    ],
    'roll': [
        ('int32', [3, 4, 0, 1, 2]),
        ('int64', [[4, 5, 3], [1, 2, 0]]),
        ('int32', [[2, 1], [4, 3]]),
    ],
    'reverse_sequence': [
        ('int32', [[2, 1, 3, 4], [8, 7, 6, 5], [9, 10, 11, 12]]),
        ('int64', [[[0, 1], [10, 11]], [[4, 5], [6, 7]], [[8, 9], [2, 3]]]),
    ],
    'repeat': [
        ('int32', [[1, 2], [1, 2], [3, 4], [3, 4], [3, 4]]),
        ('int32', [1, 1, 2, 2, 3, 3, 4, 4]),
        ('int32', [[1], [3]]),
    ],
    'unique_with_counts': [
        ('int32', [1, 2, 4, 7, 8]),
        ('int32', [0, 0, 1, 2, 2, 2, 3, 4, 4]),
        ('int32', [2, 1, 3, 1, 2]),
    ],
    'searchsorted': [
        ('int32', [[2, 2], [0, 4]]),
        ('int64', [[4, 2], [0, 4]]),
    ],
    'setdiff1d': [
        ('int32', [2, 4, 6]),
        ('int32', [1, 3, 5]),
    ],
    'invert_permutation': [
        ('int32', [2, 4, 3, 0, 1]),
    ],
    'space_to_depth': [
        ('float64',
         [[[[0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0],
            [4.0, 5.0, 6.0, 7.0, 12.0, 13.0, 14.0, 15.0]],
           [[16.0, 17.0, 18.0, 19.0, 24.0, 25.0, 26.0, 27.0],
            [20.0, 21.0, 22.0, 23.0, 28.0, 29.0, 30.0, 31.0]]]]),
        ('float64',
         [[[[0.0, 1.0], [2.0, 3.0], [8.0, 9.0], [10.0, 11.0]],
           [[4.0, 5.0], [6.0, 7.0], [12.0, 13.0], [14.0, 15.0]]]]),
    ],
    'space_to_batch': [
        ('float64',
         [[[[0.0, 1.0], [4.0, 5.0]]], [[[2.0, 3.0], [0.0, 0.0]]], [[[6.0, 7.0], [10.0, 11.0]]],
          [[[8.0, 9.0], [0.0, 0.0]]]]),
        ('float64', [[[[4.0], [1.0], [5.0]], [[12.0], [9.0], [13.0]], [[6.0], [3.0], [7.0]]]]),
        ('float64',
         [[[[0.0]], [[2.0]]], [[[0.0]], [[6.0]]], [[[0.0]], [[3.0]]], [[[0.0]], [[7.0]]],
          [[[0.0]], [[0.0]]], [[[4.0]], [[0.0]]], [[[1.0]], [[0.0]]], [[[5.0]], [[0.0]]]]),
        ('float64', [[[[2.0], [1.0]], [[6.0], [5.0]]]]),
    ],
    'xw_plus_b': [
        ('float64', [[2.5, -4.0]]),
        ('float64', [[2.5, 0.0]]),
    ],
    'real_valued': [
        ('float64', [3.141592653589793, 0.0, 0.0]),
        ('float64', [-1.0, 2.0]),
        ('float64', [0.0, 0.0]),
        ('float64', [-1.0, 2.0]),
        ('float64', [2.0, -6.0]),
        ('float64', [3.5]),
    ],
}

# absolute tolerances of the cases where gradflow's results differ from TF's, and why:
# log_sigmoid's gradient at x = 50 is sigmoid(-50) = 1.9e-22 (times the weight 1.5);
# gradflow's sigmoid is its tanh form, 0.5 tanh(x / 2) + 0.5, exact to about 1e-17 in
# absolute terms but 0 that far in the tail, where TF's keeps the tiny value
ATOL = {"log_sigmoid": 1e-21}


def _run(name, backend):
    with gf.Graph().as_default():
        fetches = CASES[name](gf)
        with gf.Session(backend=backend) as sess:
            return sess.run(fetches)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name, backend):
    got = _run(name, backend)
    want = EXPECTED[name]
    assert len(got) == len(want)
    for i, (value, (dtype, expected)) in enumerate(zip(got, want)):
        value = np.asarray(value)
        assert value.dtype.name == dtype, (name, i)
        expected = np.asarray(expected, dtype)
        assert value.shape == expected.shape, (name, i)
        if value.dtype.kind == "f":
            rtol = 1e-12 if dtype == "float64" else 1e-6
            np.testing.assert_allclose(value, expected, rtol=rtol, atol=ATOL.get(name, 1e-300),
                                       equal_nan=True, err_msg=f"{name}[{i}]")
        else:
            np.testing.assert_array_equal(value, expected, err_msg=f"{name}[{i}]")
