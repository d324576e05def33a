"""The GPU path of ``dynamic_rnn`` over a run-time length, on NumPy: a NumPy session given
the CuPy backend's LSTM kernel pass (``fuse_lstm_recurrence``) and its kernels' CUDA C
text (built by g++, ``test_cupy_emit_on_numpy.host_step_kernels``) unrolls the loop in
the plan of each fed length, runs one kernel per time step each way, and trains to the
numbers of the plain NumPy session (which runs the same unroll with NumPy's kernels)."""

from __future__ import annotations

import numpy as np
from test_cupy_emit_on_numpy import _HostKernel, host_step_kernels  # noqa: F401 - fixture

import gradflow as gf


def _dynamic_char_lstm(units):
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(2)
        ids = gf.placeholder(gf.int32, (None, None))
        emb = gf.get_variable("emb", (11, 5), dtype=gf.float64)
        outputs, _ = gf.nn.dynamic_rnn(gf.nn.rnn_cell.LSTMCell(units),
                                       gf.nn.embedding_lookup(emb, ids), dtype=gf.float64)
        logits = gf.layers.dense(gf.reshape(outputs, (-1, units)), 11)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.reshape(ids, (-1,)), logits=logits))
        step = gf.train.AdamOptimizer(1e-2).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, ids, loss, step, init


def test_the_gpu_path_of_a_run_time_length_trains_the_same(
        host_step_kernels, monkeypatch):  # noqa: F811 - the fixture
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    rng = np.random.default_rng(4)
    lengths = (5, 3)
    feeds = [rng.integers(0, 11, (4, t)).astype(np.int32) for t in lengths]

    def train(gpu_path):
        graph, ids, loss, step, init = _dynamic_char_lstm(9)
        with gf.Session(graph=graph) as sess:
            if gpu_path:
                monkeypatch.setattr(sess.backend, "kernel_passes", (fuse_lstm_recurrence,))
                for op, lower in host_step_kernels.LOWERINGS.items():
                    monkeypatch.setitem(sess.backend.overrides, op, lower)
            sess.run(init)
            return [sess.run([loss, step], {ids: f})[0] for f in feeds for _ in range(2)]

    want = train(False)
    _HostKernel.launched.clear()
    got = train(True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    kinds = [n.split("_")[2:4] for n in _HostKernel.launched]
    runs = 2  # per length
    assert kinds.count(["rec", "step"]) == runs * sum(lengths), kinds
    assert kinds.count(["rec", "grad"]) == runs * sum(t - 1 for t in lengths), kinds
