"""The peephole LSTM cell's CUDA C text (``gradflow.backends.cuda.lstm_peephole``),
compiled with g++ (tests/cuda_host.py) and run as a grid of 3 blocks, gives the ops'
reference numbers (``gradflow.prim.lstm_peephole``) in float32 and float64; the CuPy
lowerings (``gradflow.backends.cupy.peephole``) around that text, run on NumPy, train a
peephole LSTM to the plain NumPy session's numbers."""

from __future__ import annotations

import sys
import types

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build_printed, launch, needs_gxx
from test_cupy_emit_on_numpy import _HostKernel

from gradflow.backends.cuda import lstm_peephole as cuda_peep
from gradflow.prim import lstm_peephole as prim_peep

pytestmark = needs_gxx
TOLERANCE = {"float32": 3e-6, "float64": 1e-14}
BATCH, UNITS = 4, 5


@pytest.fixture(scope="module", params=["float32", "float64"])
def kernels(request, tmp_path_factory):
    dtype = request.param
    return dtype, build_printed(cuda_peep.sources(dtype), str(tmp_path_factory.mktemp(dtype)))


def _arrays(dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, (BATCH, 4 * UNITS)).astype(dtype),
            rng.uniform(-2, 2, (BATCH, UNITS)).astype(dtype),
            rng.uniform(-2, 2, (BATCH, UNITS)).astype(dtype),
            [rng.uniform(-1, 1, UNITS).astype(dtype) for _ in range(3)])


def _run(built, key, args, want, dtype, tail=()):
    lib, name = built[key]
    got = [np.full(w.shape, np.nan, dtype) for w in want]
    launch(lib, name, [*args, *got, BATCH, UNITS, *tail], blocks=3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("cell_clip", [None, 0.4])
def test_the_kernels_give_the_reference_numbers(kernels, cell_clip):
    dtype, built = kernels
    z, c, g, (w_i, w_f, w_o) = _arrays(dtype, 3)
    attrs = dict(forget_bias=0.7, cell_clip=cell_clip)
    scalar = np.dtype(dtype).type
    tail = (scalar(0.7), scalar(cell_clip or 0.0), np.int32(cell_clip is not None))
    _run(built, "c_forward", [z, c, w_i, w_f],
         [prim_peep._peep_c_impl(xp, z, c, w_i, w_f, **attrs)], dtype, tail)
    _run(built, "c_grads", [g, z, c, w_i, w_f],
         prim_peep._peep_c_grads_impl(xp, g, z, c, w_i, w_f, **attrs), dtype, tail)
    _run(built, "h_forward", [z, c, w_o], [prim_peep._peep_h_impl(xp, z, c, w_o)], dtype)
    _run(built, "h_grads", [g, z, c, w_o], prim_peep._peep_h_grads_impl(xp, g, z, c, w_o),
         dtype)


@pytest.mark.parametrize("cell_clip", [None, 0.4])
def test_the_step_kernels_give_the_reference_numbers(kernels, cell_clip):
    dtype, built = kernels
    z, c, g, (w_i, w_f, w_o) = _arrays(dtype, 4)
    rng = np.random.default_rng(5)
    attrs = dict(forget_bias=0.7, cell_clip=cell_clip)
    scalar = np.dtype(dtype).type
    tail = (scalar(0.7), scalar(cell_clip or 0.0), np.int32(cell_clip is not None))
    row = rng.uniform(-1, 1, 4 * UNITS).astype(dtype)
    y = rng.uniform(-1, 1, z.shape).astype(dtype)
    for terms in ([z, y, row], [z, row]):
        want = prim_peep._peep_step_impl(xp, *terms, c, w_i, w_f, w_o, **attrs)
        _run(built, "step", [z, y if len(terms) == 3 else z, row, np.int32(len(terms)), c,
                             w_i, w_f, w_o], want, dtype, tail)
    c_new = want[1]
    for count in (1, 3, 4):
        for carry in (False, True):
            parts = [rng.uniform(-1, 1, c.shape).astype(dtype) for _ in range(count)]
            inputs = parts + ([g] if carry else []) + [z, c, c_new, w_i, w_f, w_o]
            want = prim_peep._peep_step_grad_impl(xp, *inputs, **attrs, terms=count,
                                                  carry=carry)
            padded = parts + [parts[0]] * (4 - count)
            _run(built, "step_grad", padded + [np.int32(count), g if carry else parts[0],
                                               np.int32(carry), z, c, c_new, w_i, w_f, w_o],
                 want, dtype, tail)


def test_other_dtypes_have_no_kernels():
    assert cuda_peep.sources("float16") is None


@pytest.fixture
def host_peephole_kernels(monkeypatch, tmp_path):
    from gradflow.backends.cupy import peephole as cupy_peep

    made = {}
    for dtype in ("float32", "float64"):
        built = build_printed(cuda_peep.sources(dtype), str(tmp_path))
        made[dtype] = {k: _HostKernel(lib, name, all_blocks=True)
                       for k, (lib, name) in built.items()}
    monkeypatch.setitem(sys.modules, "cupy",
                        types.SimpleNamespace(empty=np.empty, copyto=np.copyto))
    monkeypatch.setattr(cupy_peep._KERNELS, "get", lambda dtype: made.get(np.dtype(dtype).name))
    _HostKernel.launched.clear()
    return cupy_peep


def test_a_numpy_session_given_the_gpu_peephole_kernels_trains_the_same(
        host_peephole_kernels, monkeypatch):
    import gradflow as gf

    steps = 4
    feed = np.random.default_rng(1).standard_normal((3, steps, 2))

    def train(gpu_path):
        graph = gf.Graph()
        with graph.as_default():
            gf.set_random_seed(2)
            x = gf.placeholder(gf.float64, (None, steps, 2))
            cell = gf.nn.rnn_cell.LSTMCell(6, use_peepholes=True, cell_clip=0.8)
            outputs, _ = gf.nn.static_rnn(cell, gf.unstack(x, axis=1), dtype=gf.float64)
            loss = gf.reduce_mean(gf.square(gf.concat(outputs, 0) - 0.3))
            step = gf.train.AdamOptimizer(1e-2).minimize(loss)
            init = gf.global_variables_initializer()
        with gf.Session(graph=graph) as sess:
            if gpu_path:
                for op, lower in host_peephole_kernels.LOWERINGS.items():
                    monkeypatch.setitem(sess.backend.overrides, op, lower)
            sess.run(init)
            return [sess.run([loss, step], {x: feed})[0] for _ in range(4)]

    want = train(False)
    _HostKernel.launched.clear()
    got = train(True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    kinds = [n.split("_", 3)[3].rsplit("_", 1)[0] for n in _HostKernel.launched]
    # one kernel a step each way; the first time step's backward is its two gradient
    # nodes (no one reads its cell state's gradient)
    per_run = {k: kinds.count(k) // 4 for k in set(kinds)}
    assert per_run == {"step": steps, "step_grad": steps - 1, "c_grads": 1, "h_grads": 1}, \
        per_run
