"""The GRU and peephole-LSTM steps on a real GPU (skipped without CuPy and a CUDA
device): a small GRU and a peephole+clip LSTM train on CuPy, captured and not, to the
NumPy backend's numbers (float64 variables, float32 losses), through the generated step
kernels (``gradflow.backends.cupy.gru``, ``gradflow.backends.cupy.peephole``)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.capture import WARM_RUNS

cp = pytest.importorskip("cupy", reason="CuPy is not installed")
pytestmark = pytest.mark.gpu
if not cp.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

STEPS, TIME = WARM_RUNS + 3, 6
CELLS = {"gru": lambda: gf.nn.rnn_cell.GRUCell(16),
         "peephole": lambda: gf.nn.rnn_cell.LSTMCell(16, use_peepholes=True, cell_clip=1.0)}


def _train(cell, backend, dtype, capture=None):
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(3)
        ids = gf.placeholder(gf.int32, (None, TIME))
        emb = gf.get_variable("emb", (11, 8), dtype=dtype)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(TIME)]
        outputs, _ = gf.nn.static_rnn(CELLS[cell](), inputs, dtype=dtype)
        logits = gf.layers.dense(gf.concat(outputs, 0), 11)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.reshape(gf.transpose(ids), (-1,)), logits=logits))
        train = gf.train.AdamOptimizer(1e-2).minimize(loss)
        init = gf.global_variables_initializer()
        variables = gf.global_variables()
    feed = {ids: np.random.default_rng(1).integers(0, 11, (8, TIME)).astype(np.int32)}
    with gf.Session(graph=graph, backend=backend, capture=capture) as sess:
        sess.run(init)
        losses = [sess.run([train, loss], feed)[1] for _ in range(STEPS)]
        captured = [p.captured is not None for p in sess._plans.values()
                    if hasattr(p, "captured")]
        return [np.asarray(sess.run(v)) for v in variables], np.array(losses), captured


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_cupy_trains_to_numpys_numbers(cell):
    reference, _, _ = _train(cell, "numpy", gf.float64)
    for capture in (False, True):
        got, _, _ = _train(cell, "cupy", gf.float64, capture)
        for a, ref in zip(got, reference):
            np.testing.assert_allclose(a, ref, rtol=1e-9, atol=1e-12)
    _, want, _ = _train(cell, "numpy", gf.float32)
    _, losses, captured = _train(cell, "cupy", gf.float32, True)
    np.testing.assert_allclose(losses, want, rtol=2e-5)
    assert any(captured), captured


@pytest.mark.parametrize("cell, module", [("gru", "gru"), ("peephole", "peephole")])
def test_the_steps_run_the_generated_kernels(cell, module):
    import importlib

    kernels = importlib.import_module(f"gradflow.backends.cupy.{module}")._KERNELS
    _train(cell, "cupy", gf.float32, capture=False)
    assert kernels.made.get("float32"), kernels.made  # compiled (None: NVRTC refused)
