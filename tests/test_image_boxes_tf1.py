"""tf.image's non_max_suppression family and combined_non_max_suppression against TensorFlow
2.21 (``compat.v1``, graph mode), on every CPU backend.

Each expected value is what TF 2.21 gave for the same graph (``build`` below, run with
``import tensorflow.compat.v1 as tf`` in place of gradflow), written in as a literal by a
one-off script: small results in full; for larger ones their shape, sum, an index-weighted
checksum (``sum(v * (1 + i % 7))`` over the flattened values) and their first 12 values.
"""

from __future__ import annotations

import numpy as np
import pytest
from tf_literals import check_table


def build(m):
    """The graph: the non-max-suppression family on seeded boxes (with tied scores, a box
    given by its other two corners)."""
    rng = np.random.RandomState(3)
    corner = rng.rand(30, 2).astype(np.float32)
    size = rng.rand(30, 2).astype(np.float32) * 0.4
    b = np.concatenate([corner, corner + size], 1).astype(np.float32)
    b[5] = b[5][[2, 3, 0, 1]]
    s = rng.rand(30).astype(np.float32)
    s[7] = s[10] = s[3]
    cb = rng.rand(2, 12, 1, 4).astype(np.float32)
    cb[..., 2:] = cb[..., :2] + rng.rand(2, 12, 1, 2).astype(np.float32) * 0.5
    cb2 = np.tile(cb, (1, 1, 3, 1))
    cb2[:, :, 1] += 0.05
    cs = rng.rand(2, 12, 3).astype(np.float32)
    b, s = m.constant(b), m.constant(s)
    im = m.image
    wi, ws = im.non_max_suppression_with_scores(b, s, 10, 0.4, 0.1, soft_nms_sigma=0.5)
    wi2, ws2 = im.non_max_suppression_with_scores(b, s, 20, 0.3, score_threshold=0.2)
    pi, pv = im.non_max_suppression_padded(b, s, 25, 0.3, pad_to_max_output_size=True)
    pi2, pv2 = im.non_max_suppression_padded(b, s, 25, 0.3)
    cn = im.combined_non_max_suppression(cb, cs, 4, 7, 0.4, 0.2)
    cn2 = im.combined_non_max_suppression(cb2, cs, 3, 20, 0.3, 0.1, pad_per_class=True,
                                          clip_boxes=False)
    out = dict(n1=im.non_max_suppression(b, s, 10),
               n2=im.non_max_suppression(b, s, 30, 0.2, 0.3),
               n3=im.non_max_suppression(b, s, 5, iou_threshold=0.7), wi=wi, ws=ws, wi2=wi2,
               ws2=ws2, pi=pi, pv=pv, pi2=pi2, pv2=pv2)
    out.update({f"cn{i}": v for i, v in enumerate(cn)})
    out.update({f"cnb{i}": v for i, v in enumerate(cn2)})
    return out


EXPECTED = {
    'cn0': {
        'shape': [2, 7, 4],
        'dtype': 'float32',
        'sum': 30.302544852893334,
        'weighted': 125.3437059376156,
        'first': [
            0.20493976771831512, 0.2405703216791153, 0.6905508637428284, 0.4814935326576233,
            0.8290010690689087, 0.07403779774904251, 1.0, 0.18420596420764923,
            0.04549730569124222, 0.0556415393948555, 0.4354989230632782, 0.11236357688903809,
        ],
    },
    'cn1': {
        'shape': [2, 7],
        'dtype': 'float32',
        'values': [
            0.9826874732971191, 0.937595009803772, 0.8914545774459839, 0.8685546517372131,
            0.8239611983299255, 0.7908541560173035, 0.7696546912193298, 0.9989384412765503,
            0.9957863092422485, 0.9831618070602417, 0.9456073045730591, 0.9394034743309021,
            0.9204694032669067, 0.8202912211418152,
        ],
    },
    'cn2': {
        'shape': [2, 7],
        'dtype': 'float32',
        'values': [
            0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0, 2.0, 0.0, 0.0,
        ],
    },
    'cn3': {
        'shape': [2],
        'dtype': 'int32',
        'exact': [
            7, 7,
        ],
    },
    'cnb0': {
        'shape': [2, 9, 4],
        'dtype': 'float32',
        'sum': 41.985517388384324,
        'weighted': 168.46765889093513,
        'first': [
            0.20493976771831512, 0.2405703216791153, 0.6905508637428284, 0.4814935326576233,
            0.8790010809898376, 0.12403780221939087, 1.3427656888961792, 0.234205961227417,
            0.09549731016159058, 0.10564154386520386, 0.48549893498420715, 0.16236357390880585,
        ],
    },
    'cnb1': {
        'shape': [2, 9],
        'dtype': 'float32',
        'values': [
            0.9826874732971191, 0.937595009803772, 0.8914545774459839, 0.8685546517372131,
            0.8239611983299255, 0.7908541560173035, 0.7696546912193298, 0.7446114420890808,
            0.5769748687744141, 0.9989384412765503, 0.9957863092422485, 0.9831618070602417,
            0.9456073045730591, 0.9204694032669067, 0.8202912211418152, 0.7466710805892944,
            0.5744694471359253, 0.5728607177734375,
        ],
    },
    'cnb2': {
        'shape': [2, 9],
        'dtype': 'float32',
        'values': [
            0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 1.0, 1.0,
            1.0,
        ],
    },
    'cnb3': {
        'shape': [2],
        'dtype': 'int32',
        'exact': [
            9, 9,
        ],
    },
    'n1': {
        'shape': [10],
        'dtype': 'int32',
        'exact': [
            11, 6, 17, 20, 25, 13, 22, 1, 26, 28,
        ],
    },
    'n2': {
        'shape': [16],
        'dtype': 'int32',
        'exact': [
            11, 6, 20, 25, 13, 22, 1, 26, 28, 16, 5, 3, 7, 10, 27, 18,
        ],
    },
    'n3': {
        'shape': [5],
        'dtype': 'int32',
        'exact': [
            11, 6, 17, 20, 25,
        ],
    },
    'pi': {
        'shape': [25],
        'dtype': 'int32',
        'exact': [
            11, 6, 17, 20, 25, 13, 22, 1, 26, 28, 24, 16, 5, 2, 3, 7, 10, 27, 18, 4, 15, 0, 14,
            23, 29,
        ],
    },
    'pi2': {
        'shape': [25],
        'dtype': 'int32',
        'exact': [
            11, 6, 17, 20, 25, 13, 22, 1, 26, 28, 24, 16, 5, 2, 3, 7, 10, 27, 18, 4, 15, 0, 14,
            23, 29,
        ],
    },
    'pv': {
        'shape': [],
        'dtype': 'int32',
        'exact': [
            25,
        ],
    },
    'pv2': {
        'shape': [],
        'dtype': 'int32',
        'exact': [
            25,
        ],
    },
    'wi': {
        'shape': [10],
        'dtype': 'int32',
        'exact': [
            11, 6, 20, 17, 25, 13, 22, 28, 26, 1,
        ],
    },
    'wi2': {
        'shape': [20],
        'dtype': 'int32',
        'exact': [
            11, 6, 17, 20, 25, 13, 22, 1, 26, 28, 24, 16, 5, 2, 3, 7, 10, 27, 18, 4,
        ],
    },
    'ws': {
        'shape': [10],
        'dtype': 'float32',
        'values': [
            0.9597072005271912, 0.9564495086669922, 0.8608571887016296, 0.8530964851379395,
            0.8406359553337097, 0.7562789916992188, 0.7410824298858643, 0.7266897559165955,
            0.7246049046516418, 0.7240822315216064,
        ],
    },
    'ws2': {
        'shape': [20],
        'dtype': 'float32',
        'values': [
            0.9597072005271912, 0.9564495086669922, 0.8955703377723694, 0.8641196489334106,
            0.8414196372032166, 0.8374624252319336, 0.7410824298858643, 0.730708122253418,
            0.7271520495414734, 0.7266897559165955, 0.6949634552001953, 0.6919775009155273,
            0.6522231101989746, 0.6511227488517761, 0.47897830605506897, 0.47897830605506897,
            0.47897830605506897, 0.35910752415657043, 0.3406884968280792, 0.2747805118560791,
        ],
    },
}


@pytest.fixture(scope="module")
def results(request):
    return {}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_matches_tensorflow(key, backend, results):
    check_table(build, EXPECTED, key, backend, results, rtol=1e-06, atol=1e-07)
