"""The CuPy backend's GRU step lowerings (``gradflow.backends.cupy.gru``) run on NumPy:
the kernels' CUDA C text compiled by g++ in CuPy's place, NumPy arrays for their
outputs. They give the ops' reference numbers, fall back to the Array API functions
for what the kernels do not take, and a NumPy session given them trains a GRU to the
plain session's numbers with four kernels a time step."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from array_api_compat import numpy as xp
from test_cupy_emit_on_numpy import _HostKernel

from gradflow.prim import gru as prim_gru


@pytest.fixture
def host_gru_kernels(monkeypatch, tmp_path):
    from cuda_host import GXX, build_printed

    from gradflow.backends.cuda import gru as cuda_gru
    from gradflow.backends.cupy import gru as cupy_gru

    if GXX is None:
        pytest.skip("g++ is not installed: the CUDA C text is compiled on the host with it")
    made = {}
    for dtype in ("float32", "float64"):
        built = build_printed(cuda_gru.step_sources(dtype), str(tmp_path))
        made[dtype] = {k: _HostKernel(lib, name) for k, (lib, name) in built.items()}
    monkeypatch.setitem(sys.modules, "cupy",
                        types.SimpleNamespace(empty=np.empty, copyto=np.copyto))
    monkeypatch.setattr(cupy_gru._KERNELS, "get", lambda dtype: made.get(np.dtype(dtype).name))
    _HostKernel.launched.clear()
    return cupy_gru


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_gru_lowerings_give_the_reference_numbers(host_gru_kernels, dtype):
    rng = np.random.default_rng(5)
    batch, units = 3, 4
    tol = 2e-6 if dtype == "float32" else 1e-14

    def u(*shape):
        return rng.uniform(-2, 2, shape).astype(dtype)

    gates = rng.uniform(0.05, 0.95, (batch, 2 * units)).astype(dtype)
    h = u(batch, units)
    cases = [("gru_gates_step", [u(batch, 2 * units), u(batch, 2 * units), u(2 * units), h]),
             ("gru_gates_step", [u(batch, 2 * units), u(2 * units), h]),
             ("gru_h_step", [u(batch, units), u(batch, units), u(units), gates, h]),
             ("gru_h_grads", [u(batch, units)] * 3 + [gates, u(batch, units), h]),
             ("gru_gates_grad", [u(batch, units), u(batch, 2 * units), gates, h]),
             ("gru_h_step", [u(batch, units), u(units), gates, h[:1]])]  # a broadcast state
    for op, inputs in cases:
        want = prim_gru.__dict__[f"_{op}_impl"](xp, *inputs)
        got = host_gru_kernels.LOWERINGS[op](xp)(*inputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    kinds = [n.split("_")[2] for n in _HostKernel.launched]
    assert kinds == ["gates", "gates", "h", "h", "gates"], kinds


def _char_gru(steps, units, seed=0):
    import gradflow as gf

    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        ids = gf.placeholder(gf.int32, [None, steps])
        emb = gf.get_variable("emb", [11, 6], dtype=gf.float64)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
        outputs, _ = gf.nn.static_rnn(gf.nn.rnn_cell.GRUCell(units), inputs, dtype=gf.float64)
        logits = gf.layers.dense(gf.concat(outputs, 0), 11)
        labels = gf.reshape(gf.transpose(ids), [-1])
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        step = gf.train.AdamOptimizer(1e-2).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, ids, loss, step, init


def test_a_numpy_session_given_the_gpu_gru_kernels_trains_the_same(host_gru_kernels,
                                                                   monkeypatch):
    import gradflow as gf

    steps = 5
    feed_ids = np.random.default_rng(1).integers(0, 11, (4, steps)).astype(np.int32)

    def train(gpu_path):
        graph, ids, loss, step, init = _char_gru(steps, 9)
        with gf.Session(graph=graph) as sess:
            if gpu_path:
                for op, lower in host_gru_kernels.LOWERINGS.items():
                    monkeypatch.setitem(sess.backend.overrides, op, lower)
            sess.run(init)
            return [sess.run([loss, step], {ids: feed_ids})[0] for _ in range(4)]

    want = train(False)
    _HostKernel.launched.clear()
    got = train(True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    kinds = [n.split("_", 2)[2].rsplit("_", 1)[0] for n in _HostKernel.launched]
    per_run = {k: kinds.count(k) // 4 for k in set(kinds)}
    assert per_run == {"gates_step3": steps, "h_step3": steps, "h_grads4": steps - 1,
                       "h_grads1": 1, "gates_grad": steps}, per_run
