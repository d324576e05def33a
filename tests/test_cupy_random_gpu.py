"""Random ops drawn on a GPU (gradflow.backends.cupy.random; skipped without CuPy and a
CUDA device): the NVRTC-compiled kernels give device_random's NumPy references bit for
bit, the offset advances on the device, and a captured graph draws new numbers at every
replay, the numbers of successive offsets."""

from __future__ import annotations

import numpy as np
import pytest

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import gradflow as gf  # noqa: E402
from gradflow.backends.cuda import device_random, philox  # noqa: E402
from gradflow.backends.cupy import random as cupy_random  # noqa: E402


@pytest.mark.parametrize("dtype", device_random.DTYPES)
def test_device_draws_are_the_references(dtype):
    stream = cupy_random.DeviceRandomStream(seed=2**63 + 11, offset=7)
    offset = 7
    for _ in range(2):
        got = stream.uniform((300, 77), dtype, -1.0, 2.0)
        want, offset = device_random.uniform_reference(2**63 + 11, offset, 300 * 77, -1.0, 2.0,
                                                       dtype)
        assert cp.asnumpy(got).tobytes() == want.tobytes() and stream.offset == offset
    x = cp.asarray(np.random.default_rng(0).standard_normal((513, 129)).astype(dtype))
    keep = cp.asarray(np.array(0.75, dtype))
    got = stream.dropout(x, keep)
    want, offset = device_random.dropout_reference(2**63 + 11, offset, cp.asnumpy(x), 0.75)
    assert cp.asnumpy(got).tobytes() == want.tobytes() and stream.offset == offset


def test_a_captured_draw_replays_with_new_numbers():
    seed = 1234
    stream = cupy_random.DeviceRandomStream(seed)
    x = cp.ones((256, 512), cp.float32)
    keep = cp.asarray(np.float32(0.5))
    cuda_stream = cp.cuda.Stream(non_blocking=True)
    with cuda_stream:
        stream.dropout(x, keep)  # compiles the module and allocates the output before capture
        cuda_stream.synchronize()
        offset = stream.offset
        cuda_stream.begin_capture()
        out = stream.dropout(x, keep)
        graph = cuda_stream.end_capture()
        seen = []
        for _ in range(3):
            graph.launch(cuda_stream)
            cuda_stream.synchronize()
            want, offset = device_random.dropout_reference(seed, offset, cp.asnumpy(x), 0.5)
            assert cp.asnumpy(out).tobytes() == want.tobytes()
            seen.append(cp.asnumpy(out))
    assert stream.offset == offset == 4 * philox.blocks_for(x.size)  # 1 eager + 3 replays
    assert not (seen[0] == seen[1]).all() and not (seen[1] == seen[2]).all()


def test_random_source_is_keyed_from_the_session_seed():
    g = gf.Graph()
    with g.as_default():
        u = gf.random_uniform((4, 5), minval=-1.0, maxval=1.0, seed=3)
    draws = []
    for _ in range(2):
        with gf.Session(graph=g, backend="cupy") as sess:
            source = cupy_random.random_source(sess, u)
            draws.append([cp.asnumpy(source()).copy() for _ in range(2)])
    assert (draws[0][0] == draws[1][0]).all() and (draws[0][1] == draws[1][1]).all()
    assert not (draws[0][0] == draws[0][1]).all()
    assert draws[0][0].min() >= -1.0 and draws[0][0].max() < 1.0


def test_a_sessions_dropout_is_one_drawing_kernel_with_the_reference_numbers():
    """On cupy the draw is a member of dropout's fused node (``absorb_draws``): one
    kernel draws, masks and scales, with the numbers of the node's own stream."""
    g = gf.Graph()
    with g.as_default():
        x = gf.placeholder(gf.float32, (32, 33))
        keep = gf.placeholder_with_default(np.float32(0.75), ())
        y = gf.nn.dropout(x, keep_prob=keep)
    (draw,) = [n for n in g.nodes if n.opdef.kind == "random"]
    xs = np.random.default_rng(0).standard_normal((32, 33)).astype(np.float32)
    with gf.Session(graph=g, backend="cupy", seed=5) as sess:
        plan = sess.describe_plan(y, {x: xs})
        assert "fused[random, divide, add, floor, multiply]" in plan, plan
        seed, offset = device_random.device_seed(sess.host_rng(draw)), 0
        for _ in range(3):
            got = sess.run(y, {x: xs})
            want, offset = device_random.dropout_reference(seed, offset, xs, 0.75)
            assert got.tobytes() == want.tobytes()
