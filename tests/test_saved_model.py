"""TF1's tf.saved_model, tf.graph_util and write_graph/import_graph_def on gradflow's own
files: round trips across processes and backends, and clear errors for files from
another version or changed by hand."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradflow as gf
from gradflow.graph_io import GraphDefError, as_graph_def
from gradflow.saved_model import SavedModelError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import mnist_cnn  # noqa: E402

SERVING = gf.saved_model.tag_constants.SERVING


def _trained_bn_cnn():
    """The batch-norm CNN (cond on ``training``, dropout), two training steps done."""
    args = argparse.Namespace(seed=0, lr=1e-3, decay=0.6, batch_norm=True, distributed=False,
                              logdir=None)
    graph, m = mnist_cnn.build_model(args, 10)
    with graph.as_default():
        probs = gf.nn.softmax(next(n for n in graph.nodes if n.type == "log_softmax").inputs[0],
                              name="probs")
    sess = gf.Session(graph=graph, backend="numpy")
    sess.run(m["init"])
    rng = np.random.default_rng(0)
    for _ in range(2):
        sess.run(m["train"], {m["x"]: rng.random((6, 28, 28, 1), dtype=np.float32),
                              m["y"]: rng.integers(0, 10, 6), m["training"]: True})
    return sess, m["x"], probs


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A SavedModel of the trained batch-norm CNN, its input, and the outputs to expect."""
    folder = tmp_path_factory.mktemp("saved") / "model"
    gf.reset_default_graph()
    sess, x, probs = _trained_bn_cnn()
    images = np.random.default_rng(1).random((4, 28, 28, 1), dtype=np.float32)
    with sess:
        want = sess.run(probs, {x: images})
        gf.saved_model.simple_save(sess, str(folder), {"images": x}, {"probs": probs})
        frozen = gf.graph_util.convert_variables_to_constants(sess, sess.graph_def, ["probs"])
    gf.train.write_graph(frozen, str(folder.parent), "frozen.npz", as_text=False)
    return folder, images, want


_LOAD_AND_RUN = """
import sys, numpy as np, gradflow as gf
folder, images, out = sys.argv[1:4]
results = {}
for backend in sys.argv[4:]:
    with gf.Session(graph=gf.Graph(), backend=backend) as sess:
        meta = gf.saved_model.loader.load(sess, [gf.saved_model.tag_constants.SERVING], folder)
        key = gf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
        sig = meta.signature_def[key]
        x = sess.graph.get_tensor_by_name(sig.inputs["images"].name)
        probs = sess.graph.get_tensor_by_name(sig.outputs["probs"].name)
        results[backend] = sess.run(probs, {x: np.load(images)})
np.savez(out, **results)
"""


def test_saved_model_loads_in_a_fresh_process_on_any_backend(saved, tmp_path):
    """One new process loads the model on each CPU backend there is and runs it."""
    folder, images, want = saved
    names = [b for b in ("numpy", "array_api_strict", "torch")
             if gf.backends.available().get(b) is None]
    np.save(tmp_path / "images.npy", images)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", _LOAD_AND_RUN, str(folder),
                    str(tmp_path / "images.npy"), str(tmp_path / "out.npz"), *names],
                   check=True, env=env, timeout=300)
    with np.load(tmp_path / "out.npz") as got:
        assert sorted(got.files) == sorted(names)
        np.testing.assert_array_equal(got["numpy"], want)  # the same kernels: the same bits
        for name in names:
            np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


def test_builder_with_signatures_and_two_meta_graphs(tmp_path):
    x = gf.placeholder(gf.float32, (None, 3), name="x")
    w = gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
    y = gf.matmul(x, w, name="y")
    z = gf.nn.relu(y - 4.0, name="z")
    utils = gf.saved_model.utils
    sig = gf.saved_model.signature_def_utils.build_signature_def(
        inputs={"x": utils.build_tensor_info(x)}, outputs={"y": utils.build_tensor_info(y)},
        method_name=gf.saved_model.signature_constants.PREDICT_METHOD_NAME)
    other = gf.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"z": z})
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(w.assign(w * 2.0))
        builder = gf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))
        builder.add_meta_graph_and_variables(sess, [SERVING], signature_def_map={"y": sig})
        builder.add_meta_graph(["serve", "gpu"], signature_def_map={"z": other})
        builder.save()
    xb = np.ones((2, 3), np.float32)
    with gf.Session(graph=gf.Graph()) as sess:
        meta = gf.saved_model.loader.load(sess, ["gpu", "serve"], str(tmp_path / "m"))
        info = meta.signature_def["z"].outputs["z"]
        assert info.name == "z:0" and info.dtype == "float32" and info.tensor_shape == [None, 2]
        got = sess.run(sess.graph.get_tensor_by_name("z:0"),
                       {sess.graph.get_tensor_by_name("x:0"): xb})
    np.testing.assert_array_equal(got, np.maximum(xb @ (np.arange(6).reshape(3, 2) * 2) - 4, 0))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match=r"no meta graph with tags \['train'\]"):
        gf.saved_model.loader.load(sess, ["train"], str(tmp_path / "m"))
    with pytest.raises(AssertionError, match="already exists"):
        gf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))


def _tamper(folder, tmp_path, change):
    """A copy of the SavedModel ``folder`` with ``change(doc)`` applied to its JSON."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    path = copy / "saved_model.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return copy


def _graph(doc):
    return doc["meta_graphs"][0]["graph"]["node"]


def _op(doc, op):
    return next(r for r in _graph(doc) if r["op"] == op)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(version=2), r"format version 2; this gradflow reads version 1; upgrade"),
    (lambda d: _graph(d)[3].update(op="os.system"), r"unknown op 'os\.system'"),
    (lambda d: _graph(d)[3].update(op="py_func"), r"'py_func', which is never loaded"),
    (lambda d: _graph(d)[-1]["attrs"].update(axis={"__reduce__": "x"}), r"bad attribute"),
    (lambda d: _op(d, "reshape")["attrs"].update(shape={"tuple": [-1, 5]}), r"file was changed"),
    (lambda d: _op(d, "relu")["attrs"].update(bogus=1), r"cannot be rebuilt.*bogus"),
    (lambda d: _graph(d)[-1].update(shape=[None, 11]), r"the file was changed"),
    (lambda d: _graph(d)[-1].update(inputs=["../../etc/passwd"]), r"reads '\.\./\.\./etc"),
], ids=["version", "unknown_op", "py_func", "attr", "reshape", "unknown_attr", "shape",
         "input"])
def test_tampered_saved_model_is_a_clear_error(saved, tmp_path, change, message):
    folder = _tamper(saved[0], tmp_path, change)
    with gf.Session(graph=gf.Graph()) as sess:
        with pytest.raises(SavedModelError, match=message) as err:
            gf.saved_model.loader.load(sess, [SERVING], str(folder))
    assert str(folder) in str(err.value)


def test_damaged_or_pickled_files_are_clear_errors(saved, tmp_path):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(saved[0], folder)
    variables = folder / "variables" / "variables.npz"
    np.savez(variables, __header__=np.array([{"evil": 1}], dtype=object))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match=r"variables\.npz is damaged.*pickle"):
        gf.saved_model.loader.load(sess, [SERVING], str(folder))
    (folder / "saved_model.json").write_bytes(b"{\"format\": ")
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match=r"saved_model\.json is damaged"):
        gf.saved_model.loader.load(sess, [SERVING], str(folder))


def test_frozen_graph_round_trip(saved):
    """convert_variables_to_constants of sess.graph_def, write_graph, ParseFromString."""
    folder, images, want = saved
    graph_def = gf.GraphDef()
    with open(folder.parent / "frozen.npz", "rb") as f:
        graph_def.ParseFromString(f.read())
    assert not [r for r in graph_def.node if r["op"] in ("variable", "cond")]
    with gf.Graph().as_default() as g:
        x, probs = gf.import_graph_def(graph_def, return_elements=["x:0", "probs:0"])
        assert probs.name == "import/probs"
    with gf.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(probs, {x: images}), want)


def test_whole_graph_with_variables_restored_from_a_checkpoint(tmp_path):
    x = gf.placeholder(gf.float32, (None, 2), name="x")
    w = gf.Variable(gf.random_normal((2, 2), seed=1), name="w")
    loss = gf.reduce_sum(gf.square(gf.matmul(x, w)), name="loss")
    train = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
    feed = {x: np.ones((1, 2), np.float32)}
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(train, feed)
        want = sess.run(loss, feed)
        ckpt = gf.train.Saver().save(sess, str(tmp_path / "ckpt" / "model"))
        gf.train.write_graph(sess.graph, str(tmp_path), "graph.json")
    with gf.Graph().as_default() as g:
        gf.import_graph_def(gf.GraphDef.read(tmp_path / "graph.json"), name="")
        saver = gf.train.Saver()
    with gf.Session(graph=g) as sess:
        saver.restore(sess, ckpt)
        assert sess.run(g.get_tensor_by_name("loss:0"),
                        {g.get_tensor_by_name("x:0"): feed[x]}) == want


def test_graph_errors_name_the_node():
    def keep(v):
        return v

    x = gf.placeholder(gf.float32, (None, 2), name="x")
    y = gf.py_func(keep, [x], gf.float32, name="callback")
    with pytest.raises(GraphDefError, match=r"py_func 'callback' .* cannot be written"):
        as_graph_def(output_node_names=[y.name])
    t = gf.placeholder(gf.bool, (), name="switch")
    z = gf.cond(t, lambda: x * 2.0, lambda: x)
    with gf.Session() as sess, pytest.raises(GraphDefError, match="depends on the input 'switch'"):
        gf.saved_model.simple_save(sess, "/nonexistent/never", {"x": x, "t": t}, {"z": z})
    assert not os.path.exists("/nonexistent/never")


def test_import_scope_and_name_clashes(saved):
    folder, images, want = saved
    with gf.Session(graph=gf.Graph()) as sess:
        meta = gf.saved_model.loader.load(sess, [SERVING], str(folder), import_scope="m")
        sig = meta.signature_def["serving_default"]
        assert sig.inputs["images"].name == "m/x:0"
        np.testing.assert_array_equal(
            sess.run(sig.outputs["probs"].name, {sig.inputs["images"].name: images}), want)
        with pytest.raises(SavedModelError, match="already has nodes under 'm/'"):
            gf.saved_model.loader.load(sess, [SERVING], str(folder), import_scope="m")
    with gf.Session(graph=gf.Graph()) as sess:
        gf.saved_model.loader.load(sess, [SERVING], str(folder))
        with pytest.raises(SavedModelError, match="already has a node named 'x'"):
            gf.saved_model.loader.load(sess, [SERVING], str(folder))
