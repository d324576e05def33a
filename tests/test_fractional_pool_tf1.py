"""``tf.nn.fractional_max_pool`` / ``fractional_avg_pool``. The regions are random (TF
draws them with Philox, gradflow on the host), so the pooling itself is checked on
TensorFlow 2.21's own regions: the program in ``_CASES`` order ran once on
``tensorflow.compat.v1`` in graph mode (``/tmp/bench/bin/python``), float64,
``deterministic=True, seed=7, seed2=3``; ``_TF`` holds per case the row and column
pooling sequences TF returned, and the sum and ``sum(v * sin(k))`` of the output and of
the gradient of ``sum(output * cos(k))`` in the input (k: flattened positions). The
sequences gradflow draws are checked for TF's rules, shapes and reproducibility.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.prim.registry import apply

_CASES = [(kind, ratio, pseudo, overlap) for kind in ("max", "avg")
          for ratio, pseudo, overlap in (([1.0, 1.44, 1.73, 1.0], False, False),
                                         ([1.0, 2.0, 1.5, 1.0], True, True),
                                         ([1.0, 1.7, 2.5, 1.0], True, False))]
_TF = [
    ([0, 2, 4, 6, 7], [0, 2, 4, 6, 8, 9], (62.43756101621376, 16.48798395770644),
     (-0.35445686695850287, 6.937725279541889)),
    ([0, 2, 4, 7], [0, 2, 4, 5, 7, 8, 9], (98.18736998842155, -1.14444036296167),
     (1.215935568646778, -4.692940020779497)),
    ([0, 2, 3, 5, 7], [0, 3, 6, 9], (57.90821233019949, 0.7470940865198838),
     (0.11693180738393527, 2.55730545697113)),
    ([0, 2, 4, 6, 7], [0, 2, 4, 6, 8, 9], (-2.381242741863771, 9.647905542101899),
     (-0.3544568669585033, 3.033587986060284)),
    ([0, 2, 4, 7], [0, 2, 4, 5, 7, 8, 9], (2.414874961955403, -1.2300227244242379),
     (1.215935568646778, -2.099939382319794)),
    ([0, 2, 3, 5, 7], [0, 3, 6, 9], (0.30450837098309336, -1.405161374873696),
     (0.1169318073839353, 0.03215386094042584)),
]


def _input():
    return np.random.RandomState(2).randn(2, 7, 9, 2)


def _checksums(v):
    return float(v.sum()), float((v * np.sin(np.arange(v.size)).reshape(v.shape)).sum())


def test_pooling_on_tensorflows_regions(backend):
    x = gf.constant(_input(), gf.float64)
    fetches = []
    for (kind, _, _, overlap), (rows, cols, _, _) in zip(_CASES, _TF):
        out = apply("fractional_pool", [x, gf.constant(rows, gf.int64),
                                        gf.constant(cols, gf.int64)],
                    kind=kind, overlapping=overlap)
        n = (len(rows) - 1) * (len(cols) - 1) * 4
        w = gf.constant(np.cos(np.arange(n)).reshape(out.shape.as_list()))
        fetches.append((out, gf.gradients(gf.reduce_sum(out * w), x)[0]))
    with gf.Session(backend=backend) as sess:
        values = sess.run(fetches)
    for (out, grad), (_, _, want_out, want_grad) in zip(values, _TF):
        assert _checksums(out) == pytest.approx(want_out, rel=1e-9, abs=1e-9)
        assert _checksums(grad) == pytest.approx(want_grad, rel=1e-9, abs=1e-9)


def test_drawn_regions_follow_tensorflows_rules(backend):
    x = gf.constant(_input(), gf.float64)
    gf.set_random_seed(4)
    results = []
    for kind, ratio, pseudo, overlap in _CASES:
        fn = gf.nn.fractional_max_pool if kind == "max" else gf.nn.fractional_avg_pool
        results.append(fn(x, ratio, pseudo_random=pseudo, overlapping=overlap))
    fixed = gf.nn.fractional_max_pool(x, [1.0, 1.5, 1.5, 1.0], deterministic=True, seed=3,
                                      seed2=1)
    with gf.Session(backend=backend) as sess:
        first, again = sess.run(results), sess.run(results)
        f1, f2 = sess.run(fixed), sess.run(fixed)
    with gf.Session() as sess:
        numpy_first = sess.run(results)
    for (rows, cols, _, _), (out, r, c) in zip(_TF, first):
        assert out.shape == (2, len(rows) - 1, len(cols) - 1, 2)  # TF's output shapes
        for seq, size in ((r, 7), (c, 9)):
            assert seq[0] == 0 and seq[-1] == size and np.all(np.diff(seq) >= 1)
    for a, b in zip(first, numpy_first):  # the same seed, the same regions on every backend
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[2], b[2])
    assert any(not np.array_equal(a[1], b[1]) or not np.array_equal(a[2], b[2])
               for a, b in zip(first, again))  # new regions every run
    for a, b in zip(f1, f2):
        np.testing.assert_array_equal(a, b)  # deterministic: the same every run
    # the random (not pseudo-random) sizes are floor or ceil of the ratio, as TF's
    assert set(np.diff(first[0][1]).tolist()) <= {1, 2}


def test_errors_as_tensorflow():
    x = gf.zeros([1, 6, 6, 1])
    with pytest.raises(ValueError, match="seed and seed2 must both be 0"):
        gf.nn.fractional_max_pool(x, [1.0, 1.5, 1.5, 1.0], seed=7)
    with pytest.raises(ValueError, match="pooling_ratio must be"):
        gf.nn.fractional_avg_pool(x, [2.0, 1.5, 1.5, 1.0])
