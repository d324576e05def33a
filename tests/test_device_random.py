"""Random ops drawn on the device (gradflow.backends.device_random): the CUDA C text of
random_uniform and of the fused dropout, compiled on the host with g++
(tests/cuda_host.py), gives the NumPy references' numbers bit for bit and advances the
stream's offset in "device memory" at every launch; the references follow the graph's
own dropout formula; and the device keys follow the Session's seeds."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

import gradflow as gf
from gradflow.backends import device_random, philox


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("device_random"))
    return {d: build(device_random.kernel_source(d), directory) for d in device_random.DTYPES}


CASES = [(0, 0, 1, 1), (7, 3, 37, 3), (2**64 - 1, 2**32 - 1, 1001, 4), (12345, 0, 0, 1)]


@needs_gxx
@pytest.mark.parametrize("dtype", device_random.DTYPES)
@pytest.mark.parametrize("seed, offset, n, blocks", CASES)
def test_uniform_kernel_gives_the_reference_numbers_and_advances(kernels, dtype, seed, offset,
                                                                 n, blocks):
    state = np.array([offset, 0], np.uint64)
    expected = offset
    for _ in range(3):  # three launches, as three replays of a captured graph
        out = np.empty(n, dtype)
        launch(kernels[dtype], device_random.uniform_kernel_name(dtype),
               [seed, state, n, -2.0, 3.0, out], blocks)
        want, expected = device_random.uniform_reference(seed, expected, n, -2.0, 3.0, dtype)
        assert out.tobytes() == want.tobytes()
        assert list(state) == [expected, 0]
    if n > 100:
        assert out.min() >= -2.0 and out.max() < 3.0


@needs_gxx
@pytest.mark.parametrize("dtype", device_random.DTYPES)
@pytest.mark.parametrize("seed, offset, n, blocks", CASES)
def test_dropout_kernel_gives_the_reference_and_advances(kernels, dtype, seed, offset, n,
                                                         blocks):
    rng = np.random.default_rng(seed % 1000)
    state = np.array([offset, 0], np.uint64)
    keep = np.array(0.7, dtype)
    expected = offset
    masks = []
    for _ in range(2):
        x = rng.standard_normal(n).astype(dtype)
        out = np.empty(n, dtype)
        launch(kernels[dtype], device_random.dropout_kernel_name(dtype),
               [seed, state, n, keep, x, out], blocks)
        want, expected = device_random.dropout_reference(seed, expected, x, keep)
        assert out.tobytes() == want.tobytes()
        assert list(state) == [expected, 0]
        kept = out != 0
        np.testing.assert_array_equal(out[kept], (x / keep)[kept])
        masks.append(kept)
    if n > 100:  # a new mask each launch, keeping about keep_prob of the units
        assert (masks[0] != masks[1]).any() and abs(masks[0].mean() - 0.7) < 0.05


def test_dropout_reference_is_the_graphs_dropout_on_the_same_uniforms():
    """The device kernel computes gf.nn.dropout's own formula: fed the stream's uniforms in
    place of its host draw, the graph gives the reference's numbers bit for bit."""
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)
    g = gf.Graph()
    with g.as_default():
        xs = gf.placeholder(gf.float32, x.shape)
        keep = gf.placeholder_with_default(np.float32(0.8), ())
        y = gf.nn.dropout(xs, keep_prob=keep)
    (draw,) = [n for n in g.nodes if n.opdef.kind == "random"]
    want, offset = device_random.dropout_reference(99, 5, x, 0.8)
    u, _ = philox.uniform(99, 5, x.size)
    with gf.Session(graph=g, backend="numpy") as sess:
        got = sess.run(y, {xs: x, draw: u.reshape(x.shape)})
    assert got.tobytes() == want.tobytes() and offset == 5 + philox.blocks_for(x.size)


def test_device_keys_follow_the_session_seeds():
    def key(graph_seed, op_seed, session_seed, index=3):
        g = gf.Graph()
        g.seed = graph_seed
        with g.as_default():
            u = gf.random_uniform((2,), seed=op_seed)
        with gf.Session(graph=g, backend="numpy", seed=session_seed) as sess:
            return device_random.device_seed(sess.host_rng(u))

    assert key(1, 2, None) == key(1, 2, 5) != key(1, 3, None)
    assert key(None, None, 7) == key(None, None, 7) != key(None, None, 8)
    assert key(None, None, None) != key(None, None, None)  # no seed anywhere: fresh entropy
    assert 0 <= key(1, 2, None) < 2**64


def test_grid_covers_every_counter_block_once():
    assert device_random.grid_for(0) == 1 and device_random.grid_for(4 * 256) == 1
    assert device_random.grid_for(4 * 256 + 1) == 2 and device_random.grid_for(10**9) == 1024


def test_random_source_leaves_to_the_host_what_the_device_does_not_draw():
    from gradflow.backends import cupy_random  # importable without CuPy

    g = gf.Graph()
    with g.as_default():
        normal = gf.random_normal((4, 5))
        half = gf.random_uniform((4, 5), dtype=gf.float16)
    with gf.Session(graph=g, backend="numpy") as sess:
        assert cupy_random.random_source(sess, normal) is None
        assert cupy_random.random_source(sess, half) is None
