"""Random ops drawn on the device (gradflow.backends.cuda.device_random): the CUDA C text of
random_uniform and of the fused dropout, compiled on the host with g++
(tests/cuda_host.py), gives the NumPy references' numbers bit for bit and advances the
stream's offset in "device memory" at every launch; the references follow the graph's
own dropout formula; and the device keys follow the Session's seeds."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from cuda_host import build, launch, needs_gxx

import gradflow as gf
from gradflow.backends.cuda import device_random, philox
from gradflow.backends.cuda import kernels as cuda_kernels
from gradflow.backends.kernel_text import program_inputs
from gradflow.passes import optimize
from gradflow.passes.fusion import FUSED, absorb_draws, absorb_row_sums


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
    from gradflow.backends.cupy import random as cupy_random  # importable without CuPy

    g = gf.Graph()
    with g.as_default():
        normal = gf.random_normal((4, 5))
        half = gf.random_uniform((4, 5), dtype=gf.float16)
    with gf.Session(graph=g, backend="numpy") as sess:
        assert cupy_random.random_source(sess, normal) is None
        assert cupy_random.random_source(sess, half) is None


def _dropout_node(dtype, shape):
    """The fused node of a dropout over relu(x) once its draw is absorbed
    (``absorb_draws``); the gradient also reads the mask, a second output."""
    x = gf.placeholder(dtype, (None,) + shape[1:])
    keep = gf.placeholder_with_default(gf.constant(0.7, dtype), ())
    y = gf.nn.dropout(gf.nn.relu(x), keep_prob=keep)
    (gx,) = gf.gradients(gf.reduce_sum(y * y), [x])
    graph = optimize([y, gx], [x, keep], [shape, ()])
    absorb_draws(graph, lambda node: True)
    (node,) = [n for n in graph.nodes() if n.opdef is FUSED and any(
        m.opdef.kind == "random" for m in n.attrs["program"].members)]
    assert not [n for n in graph.nodes() if n.opdef.kind == "random"]  # none left alone
    return node


def _with_draws(program, arrays, draws):
    """The program's outputs by each member's NumPy function, the random members
    taking the arrays ``draws`` in turn."""
    values, drawn = list(arrays), iter(draws)
    for member, args in program.steps:
        values.append(next(drawn) if member.opdef.kind == "random" else np.asarray(
            member.opdef.bind(np, member.attrs)(*(values[a] for a in args))))
    return [values[program.num_inputs + k] for k in program.outputs]


@needs_gxx
@pytest.mark.parametrize("dtype", device_random.DTYPES)
@pytest.mark.parametrize("shape, blocks", [((8, 37), 3), ((1, 3), 1), ((300, 5), 2)])
def test_a_fused_dropout_draws_its_own_numbers_in_one_kernel(dtype, shape, blocks, tmp_path):
    """Dropout's draw, mask and scaling as one kernel (``print_draw_kernel``): the numbers
    of the stream's uniform draw followed by the fused program, bit for bit, a new
    mask at each launch, and the offset advanced as the draw's own kernel would."""
    with gf.Graph().as_default():
        node = _dropout_node(gf.as_dtype(dtype), shape)
    program = node.attrs["program"]
    kernel = cuda_kernels.print_draw_kernel(program, shape)
    assert kernel is not None and len(kernel.draws) == 1 and len(program.outputs) == 2
    lib = build(kernel.source, str(tmp_path))
    (member,) = [program.members[k] for k in kernel.draws]
    rng = np.random.default_rng(blocks)
    arrays = [np.full(i.shape, 0.7, dtype) if tuple(i.shape) == () else
              rng.standard_normal(tuple(i.shape)).astype(dtype)
              for i in program_inputs(program)]
    seed, offset = 2**63 + 11, 5
    state = np.array([offset, 0], np.uint64)
    masks = []
    for _ in range(2):
        outs = [np.full(shape, np.nan, dtype) for _ in program.outputs]
        launch(lib, kernel.name, [seed, state, kernel.size, kernel.columns, *arrays, *outs],
               blocks)
        u, offset = device_random.uniform_reference(seed, offset, kernel.size,
                                                    member.attrs["minval"],
                                                    member.attrs["maxval"], dtype)
        for got, want in zip(outs, _with_draws(program, arrays, [u.reshape(shape)])):
            assert got.tobytes() == np.ascontiguousarray(want, dtype).tobytes()
        assert list(state) == [offset, 0]
        masks.append(outs[0].copy())
    if math.prod(shape) > 100:
        assert (masks[0] != masks[1]).any()


def test_widened_fused_nodes_run_in_turn_with_the_numbers_they_had(monkeypatch):
    """A backend whose kernels draw and sum rows gets the draw and the row sum as members
    of fused nodes (CuPy's ``kernel_passes``); where its printer declines (here: NumPy
    has none) the members run in turn, the draw through its own source: the same
    training numbers as without widening."""
    def train(widen):
        g = gf.Graph()
        with g.as_default():
            gf.set_random_seed(3)
            x = gf.placeholder(gf.float32, (None, 6))
            labels = gf.placeholder(gf.int64, (None,))
            keep = gf.placeholder_with_default(1.0, ())
            w = gf.Variable(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4))
            h = gf.nn.dropout(gf.nn.relu(gf.matmul(x, w)), keep_prob=keep)
            loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=h))
            step = gf.train.AdamOptimizer(0.1).minimize(loss)
            init = gf.global_variables_initializer()
        with gf.Session(graph=g, backend="numpy") as sess:
            if widen:
                monkeypatch.setattr(sess.backend, "kernel_passes", [absorb_row_sums, (
                    functools.partial(absorb_draws, draws_in_kernel=lambda node: True))])
            sess.run(init)
            feed = {x: np.arange(30, dtype=np.float32).reshape(5, 6) / 30, keep: 0.6,
                    labels: np.array([0, 3, 1, 2, 3])}
            for _ in range(3):
                sess.run(step, feed)
            plan = sess.describe_plan(step, feed)
            return sess.run(w), plan

    def draw_steps(plan):
        return [line for line in plan.splitlines() if line.split()[1:3] == ["random",
                                                                           "'random_uniform'"]]

    (plain, plain_plan), (widened, widened_plan) = train(False), train(True)
    assert len(draw_steps(plain_plan)) == 1 and not draw_steps(widened_plan)
    assert "fused[random, divide, add, floor, multiply" in widened_plan
    assert "fused[where, reduce_sum, exp, multiply, subtract, " in widened_plan
    assert "random 'random_uniform' (created at" in widened_plan  # the replay verdict
    assert plain.tobytes() == widened.tobytes()


def test_a_printed_kernel_that_does_not_compile_runs_its_ops_in_turn(caplog):
    """No GPU has compiled the draw and row kernels yet: text NVRTC rejects leaves the
    fused node to its members in turn, with a warning naming the ops."""
    from gradflow.backends.cupy import emit as cupy_emit  # importable without CuPy

    class Rejecting:
        class RawKernel:
            def __init__(self, *args, **kwargs):
                pass

            def compile(self):
                raise RuntimeError("NVRTC_ERROR_COMPILATION")

    with gf.Graph().as_default():
        node = _dropout_node(gf.float32, (4, 6))
    program = node.attrs["program"]
    printed = cuda_kernels.print_draw_kernel(program, (4, 6))
    with caplog.at_level("WARNING", logger="gradflow.cupy"):
        got = cupy_emit.raw_kernel(printed, program, Rejecting, 1, 256, (), lambda: "in turn")
    assert got == "in turn"
    assert "did not compile" in caplog.text and "NVRTC_ERROR_COMPILATION" in caplog.text
    assert "dropout" in caplog.text
