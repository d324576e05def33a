"""The strings' hash buckets (Hash64, SipHash), fingerprint, string_strip and
unsorted_segment_join against TensorFlow 2.21 (``compat.v1``, graph mode), on every CPU
backend.

Each expected value is what TF 2.21 gave for the same graph (``build`` below, run with
``import tensorflow.compat.v1 as tf`` in place of gradflow), written in as a literal by a
one-off script: small results in full; for larger ones their shape, sum, an index-weighted
checksum (``sum(v * (1 + i % 7))`` over the flattened values) and their first 12 values.
"""

from __future__ import annotations

import numpy as np
import pytest
from tf_literals import check_table

WORDS = [b"", b"a", b"hello", b"hello world!", b"exactly8",
         b"a longer string of text, past sixty-four bytes, for the long path",
         "h\u00e9llo".encode()]


def build(m):
    """The graph: the hash buckets, fingerprints, strip and segment joins of strings."""
    words = m.constant(WORDS)
    table = m.constant([[b"a", b"b"], [b"c", b"d"], [b"e", b"f"]])
    return dict(
        h=m.strings.to_hash_bucket(words, 1000), h2=m.string_to_hash_bucket(words, 2**62),
        st=m.strings.to_hash_bucket_strong(words, 100, [1, 2]),
        st2=m.string_to_hash_bucket_strong(words, 2**40, [-5, 123456789]),
        ss=m.string_strip(m.constant([b"  a b ", b"\tx\n"])), fp=m.fingerprint(words),
        fp2=m.fingerprint(m.constant(np.arange(12, dtype=np.int32).reshape(3, 4))),
        fp3=m.fingerprint(m.constant(np.array([[b"a", b"b"], [b"c", b""]]))),
        fp4=m.fingerprint(m.constant(np.linspace(0, 1, 6).reshape(2, 3))),
        sj=m.strings.unsorted_segment_join(table, [1, 0, 1], 3, separator=":"),
        sj2=m.strings.unsorted_segment_join(words, [0, 1, 0, 1, 0, 2, 3], 5))


EXPECTED = {
    'fp': {
        'shape': [7, 8],
        'dtype': 'uint8',
        'exact': [
            79, 64, 144, 47, 59, 106, 225, 154, 227, 117, 223, 182, 101, 66, 69, 179, 232, 12,
            56, 49, 169, 229, 139, 180, 100, 207, 31, 17, 30, 233, 135, 63, 253, 232, 32, 204,
            185, 203, 48, 118, 124, 20, 244, 56, 245, 226, 212, 234, 247, 84, 151, 41, 208, 219,
            69, 237,
        ],
    },
    'fp2': {
        'shape': [3, 8],
        'dtype': 'uint8',
        'exact': [
            168, 6, 29, 191, 249, 65, 113, 58, 230, 5, 11, 85, 129, 59, 181, 8, 110, 98, 211,
            157, 58, 63, 248, 181,
        ],
    },
    'fp3': {
        'shape': [2, 8],
        'dtype': 'uint8',
        'exact': [
            122, 64, 59, 169, 136, 60, 55, 83, 101, 91, 225, 7, 52, 192, 29, 135,
        ],
    },
    'fp4': {
        'shape': [2, 8],
        'dtype': 'uint8',
        'exact': [
            150, 224, 163, 126, 101, 48, 24, 247, 224, 168, 175, 17, 63, 179, 165, 231,
        ],
    },
    'h': {
        'shape': [7],
        'dtype': 'int64',
        'exact': [
            899, 868, 938, 303, 526, 602, 997,
        ],
    },
    'h2': {
        'shape': [7],
        'dtype': 'int64',
        'exact': [
            105434511174508091, 2996632905371535868, 1331861223480393034, 488105371118328303,
            1875414794108121718, 3065168909943671794, 1575079946049097997,
        ],
    },
    'sj': {
        'shape': [3, 2],
        'dtype': 'object',
        'exact': [
            b'c', b'd', b'a:e', b'b:f', b'', b'',
        ],
    },
    'sj2': {
        'shape': [5],
        'dtype': 'object',
        'exact': [
            b'helloexactly8', b'ahello world!',
            b'a longer string of text, past sixty-four bytes, for the long path',
            b'h\xc3\xa9llo', b'',
        ],
    },
    'ss': {
        'shape': [2],
        'dtype': 'object',
        'exact': [
            b'a b', b'x',
        ],
    },
    'st': {
        'shape': [7],
        'dtype': 'int64',
        'exact': [
            35, 46, 22, 91, 53, 72, 32,
        ],
    },
    'st2': {
        'shape': [7],
        'dtype': 'int64',
        'exact': [
            148404497519, 453655125833, 908816781922, 207495439964, 5894529355, 1027193345356,
            549647780803,
        ],
    },
}


@pytest.fixture(scope="module")
def results(request):
    return {}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_matches_tensorflow(key, backend, results):
    check_table(build, EXPECTED, key, backend, results, rtol=0.0, atol=0.0)
