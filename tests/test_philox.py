"""The device generator (gradflow.backends.cuda.philox): the NumPy implementation against
Random123's published Philox4x32-10 answers, and the CUDA C kernels, compiled on the
host with g++ (tests/cuda_host.py), against the NumPy implementation bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

from gradflow.backends.cuda import philox

# Random123's kat_vectors for philox4x32 with 10 rounds: (counter, key, result)
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_numpy_philox_gives_the_published_answers(counter, key, expected):
    assert tuple(int(w) for w in philox.philox4x32(counter, key)) == expected
    # vectorized: the same answer in every lane of an array of counters
    lanes = philox.philox4x32([np.full(3, c, np.uint32) for c in counter], key)
    assert all((w == e).all() and w.dtype == np.uint32 for w, e in zip(lanes, expected))


def test_stream_layout_offsets_and_uniforms():
    words, offset = philox.bits(seed=5, offset=7, n=10)
    assert offset == 10 and words.dtype == np.uint32
    # block 8 of seed 5 is the counter (8, 0, 0, 0) under key (5, 0): elements 4..7
    assert list(words[4:8]) == list(philox.philox4x32((8, 0, 0, 0), (5, 0)))
    # a draw continues where the last one ended; a 64-bit offset carries into word 1
    again, _ = philox.bits(5, 0, 40)
    assert (again[28:38] == words).all()
    high, _ = philox.bits(5, 2**32 + 3, 4)
    assert list(high) == list(philox.philox4x32((3, 1, 0, 0), (5, 0)))
    u, _ = philox.uniform(5, 0, 100_000)
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(float(u.mean()) - 0.5) < 0.01
    assert (philox.to_uniform(np.array([0, 255, 256, 2**32 - 1], np.uint32))
            == np.array([0, 0, 2**-24, 1 - 2**-24], np.float32)).all()
    mask, _ = philox.dropout_mask(5, 0, 100_000, 0.8)
    assert set(np.unique(mask)) == {0.0, 1.0} and abs(float(mask.mean()) - 0.8) < 0.01


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return build(philox.CUDA_SOURCE, str(tmp_path_factory.mktemp("philox")))


@needs_gxx
@pytest.mark.parametrize("seed, offset, n, blocks", [
    (0, 0, 1, 1), (1, 0, 37, 3), (2**63 + 12345, 5, 1000, 4), (0xDEADBEEF, 2**32 - 2, 17, 2)])
def test_cuda_kernels_give_the_numpy_numbers_and_advance_the_offset(kernels, seed, offset,
                                                                     n, blocks):
    """Each launch of a kernel (a grid of ``blocks``) draws the next numbers: the state in
    device memory moves by ceil(n / 4) per launch, as a captured graph's replays would."""
    state = np.array([offset, 0], np.uint64)
    expected_offset = offset
    for _ in range(2):  # two "replays" of the same launches
        out = np.empty(n, np.uint32)
        launch(kernels, "gf_philox_bits", [seed, state, n, out], blocks)
        words, expected_offset = philox.bits(seed, expected_offset, n)
        np.testing.assert_array_equal(out, words)
        assert list(state) == [expected_offset, 0]
        uniforms = np.empty(n, np.float32)
        launch(kernels, "gf_philox_uniform_f32", [seed, state, n, uniforms], blocks)
        values, expected_offset = philox.uniform(seed, expected_offset, n)
        assert uniforms.tobytes() == values.tobytes()
        mask = np.empty(n, np.float32)
        launch(kernels, "gf_philox_dropout_mask", [seed, state, n, np.float32(0.7), mask],
               blocks)
        want, expected_offset = philox.dropout_mask(seed, expected_offset, n, 0.7)
        assert mask.tobytes() == want.tobytes()
        assert list(state) == [expected_offset, 0]
