"""gradflow.onnx: the example models, trained a couple of steps, exported and run by ONNX
Runtime (CPU) at two batch sizes, against gradflow's own outputs; onnx.checker passes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

import gradflow as gf

onnx = pytest.importorskip("onnx", reason="ONNX export needs the onnx package (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="the checks run the models in ONNX Runtime")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

import char_rnn  # noqa: E402
import mnist_cnn  # noqa: E402
import mnist_mlp  # noqa: E402


def _args(batch_norm=False):
    return argparse.Namespace(seed=0, lr=1e-3, decay=0.6, batch_norm=batch_norm,
                              distributed=False, logdir=None)


def _logits(graph):
    """The logits of an MNIST example: what its loss takes the log-softmax of."""
    return next(n for n in graph.nodes if n.type == "log_softmax").inputs[0]


def _check(sess, path, inputs, outputs, make_feed, tol=2e-5):
    """Export, check the model, and compare ONNX Runtime with the session at batches 3, 5."""
    model = gf.onnx.export(sess, inputs, outputs, str(path))
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"  # the batch dimension stays dynamic
    runtime = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (3, 5):
        feed = make_feed(batch)
        want = sess.run(list(outputs.values()), {inputs[k]: v for k, v in feed.items()})
        got = runtime.run(list(outputs), feed)
        for w, g in zip(want, got):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    return model


def _train_mnist(graph, m, image_shape, steps=2):
    sess = gf.Session(graph=graph, backend="numpy")
    sess.run(m["init"])
    rng = np.random.default_rng(1)
    for _ in range(steps):
        feed = {m["x"]: rng.random((8,) + image_shape, dtype=np.float32),
                m["y"]: rng.integers(0, 10, 8)}
        if m.get("training") is not None:
            feed[m["training"]] = True
        sess.run(m["train"], feed)
    return sess


def _images(shape):
    rng = np.random.default_rng(2)
    return lambda batch: {"x": rng.random((batch,) + shape, dtype=np.float32)}


def test_mnist_mlp(tmp_path):
    graph, m = mnist_mlp.build_model(_args(), 10)
    with _train_mnist(graph, m, (784,)) as sess:
        model = _check(sess, tmp_path / "mlp.onnx", {"x": m["x"]},
                       {"probs": m["probs"], "logits": _logits(graph)}, _images((784,)))
    ops = {n.op_type for n in model.graph.node}
    assert {"MatMul", "Relu", "Softmax"} <= ops
    names = {i.name for i in model.graph.initializer}
    assert "dense/kernel" in names and "dense_2/bias" in names  # variables as initializers


@pytest.mark.parametrize("batch_norm", [False, True], ids=["cnn", "batch_norm_cnn"])
def test_mnist_cnn(tmp_path, batch_norm):
    graph, m = mnist_cnn.build_model(_args(batch_norm), 10)
    with _train_mnist(graph, m, (28, 28, 1)) as sess:
        model = _check(sess, tmp_path / "cnn.onnx", {"x": m["x"]}, {"logits": _logits(graph)},
                       _images((28, 28, 1)))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 2 and ops.count("MaxPool") == 2
    # dropout (a random mask) and the batch statistics are gone: nothing random, no
    # reductions; batch norm in inference mode is one multiply and one add per channel
    assert not {"RandomUniformLike", "RandomUniform", "Floor", "ReduceSum", "ReduceMean"} & \
        set(ops)
    assert ops.count("Mul") == (2 if batch_norm else 0)


def test_char_lstm(tmp_path):
    config = dict(vocab_size=12, hidden=8, layers=2, embedding=6)
    graph, m = char_rnn.build_model(config, 4, 5.0, 0, dropout=0.2)
    rng = np.random.default_rng(3)
    with gf.Session(graph=graph, backend="numpy") as sess:
        sess.run(m["init"])
        for _ in range(2):
            feed = {m["x"]: rng.integers(0, 12, (3, 4)), m["y"]: rng.integers(0, 12, (3, 4)),
                    m["training"]: True}
            feed.update(char_rnn.state_feed(m["state_in"], char_rnn.zero_state(config, 3)))
            sess.run(m["train"], feed)
        inputs, outputs = {"x": m["sample_x"]}, {"probs": m["sample_probs"]}
        for i, ((c, h), (c_out, h_out)) in enumerate(zip(m["sample_in"], m["sample_out"])):
            inputs.update({f"c{i}": c, f"h{i}": h})
            outputs.update({f"c{i}_out": c_out, f"h{i}_out": h_out})

        def feed(batch):
            f = {"x": rng.integers(0, 12, (batch, 1))}
            f.update({k: rng.standard_normal((batch, 8), dtype=np.float32)
                      for k in inputs if k != "x"})
            return f

        model = _check(sess, tmp_path / "char.onnx", inputs, outputs, feed)
    assert {"Gather", "Tanh", "Softmax"} <= {n.op_type for n in model.graph.node}


def test_gru_and_conv_strides(tmp_path):
    """A GRU unrolled over three steps, and a VALID/SAME strided conv with average pooling."""
    x = gf.placeholder(gf.float32, (None, 3, 4), name="x")
    outs, state = gf.nn.static_rnn(gf.nn.rnn_cell.GRUCell(5), gf.unstack(x, axis=1),
                                   dtype=gf.float32)
    img = gf.placeholder(gf.float32, (None, 9, 9, 2), name="img")
    h = gf.layers.conv2d(img, 3, 3, strides=2, padding="same", activation=gf.nn.elu)
    h = gf.layers.conv2d(h, 4, 2, strides=1, padding="valid")
    h = gf.nn.avg_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    out = gf.reduce_max(gf.transpose(h, [0, 3, 1, 2])[:, 1:, ::-1], axis=[2, 3])
    rng = np.random.default_rng(4)
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        _check(sess, tmp_path / "mixed.onnx", {"x": x, "img": img},
               {"state": state, "last": outs[-1], "out": out},
               lambda b: {"x": rng.random((b, 3, 4), dtype=np.float32),
                          "img": rng.random((b, 9, 9, 2), dtype=np.float32)})


def test_nchw_convolution_and_pooling(tmp_path):
    """data_format="NCHW" layers export as Transposes around the NHWC convolution."""
    img = gf.placeholder(gf.float32, (None, 2, 7, 6), name="img")
    h = gf.layers.conv2d(img, 3, 3, padding="same", data_format="channels_first",
                         activation=gf.nn.relu)
    out = gf.layers.max_pooling2d(h, 2, 2, data_format="channels_first")
    rng = np.random.default_rng(5)
    with gf.Session(backend="numpy") as sess:
        sess.run(gf.global_variables_initializer())
        model = _check(sess, tmp_path / "nchw.onnx", {"img": img}, {"out": out},
                       lambda b: {"img": rng.random((b, 2, 7, 6), dtype=np.float32)})
    assert "Transpose" in {n.op_type for n in model.graph.node}


def test_unmapped_op_is_an_error_naming_it_and_the_line(tmp_path):
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    y = gf.cumsum(x, axis=1)  # no ONNX mapping in gradflow.onnx
    with gf.Session(backend="numpy") as sess:
        with pytest.raises(gf.onnx.ExportError, match=r"cumsum 'cumsum' \(created at .*"
                                                       r"test_onnx_export\.py:\d+\) has no ONNX"):
            gf.onnx.export(sess, {"x": x}, {"y": y}, str(tmp_path / "bad.onnx"))
    assert not (tmp_path / "bad.onnx").exists()


def test_live_dropout_and_missing_inputs_are_errors(tmp_path):
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    other = gf.placeholder(gf.float32, (None, 4), name="other")
    with gf.Session(backend="numpy") as sess:
        with pytest.raises(gf.onnx.ExportError, match="random"):
            gf.onnx.export(sess, {"x": x}, {"y": gf.nn.dropout(x, rate=0.5)},
                           str(tmp_path / "a.onnx"))
        with pytest.raises(gf.onnx.ExportError, match="'other'.*not among the inputs"):
            gf.onnx.export(sess, {"x": x}, {"y": x + other}, str(tmp_path / "b.onnx"))


def test_command_line_from_saved_model(tmp_path, capsys):
    from gradflow.onnx.__main__ import main

    graph, m = mnist_mlp.build_model(_args(), 10)
    with _train_mnist(graph, m, (784,), steps=1) as sess:
        gf.saved_model.simple_save(sess, str(tmp_path / "sm"), {"x": m["x"]},
                                   {"probs": m["probs"]})
        xb = np.random.default_rng(5).random((4, 784), dtype=np.float32)
        want = sess.run(m["probs"], {m["x"]: xb})
    assert main([str(tmp_path / "sm"), "-o", str(tmp_path / "cli.onnx")]) == 0
    got = ort.InferenceSession(str(tmp_path / "cli.onnx")).run(["probs"], {"x": xb})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_mnist_mlp_example_exports(tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    from test_examples import small_mnist

    small_mnist(monkeypatch)
    path = tmp_path / "model.onnx"
    mnist_mlp.main(["--batch-size", "16", "--epochs", "1", "--backend", "numpy",
                    "--out", str(tmp_path / "out"), "--export", str(path)])
    probs = ort.InferenceSession(str(path)).run(None, {"x": np.zeros((2, 784), np.float32)})[0]
    assert probs.shape == (2, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
